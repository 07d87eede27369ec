"""Soft attention and key-value attention over any score function: NNDL (8.6)-(8.10)."""

import keras
from keras import ops

from attnkit import precision
from attnkit.attention import masking
from attnkit.attention.scored import ScoredAttention, attention_output_spec
from attnkit.checks import check_rate, check_seed


@keras.saving.register_keras_serializable(package="attnkit")
class Attention(ScoredAttention):
    """Attention pooling over any score function: soft attention and key-value attention.

    α = softmax_j(s(q, k_j)),  att((K, V), q) = Σ_j α_j v_j

    With `key=None` the keys are the values (soft attention, NNDL (8.6)-(8.7):
    att(X, q) = Σ_n α_n x_n); with a separate `key` it is key-value attention
    (NNDL (8.9)-(8.10)). The score s is any layer that maps `(query, key)` to `(B, Tq, Tk)`
    scores, e.g. from `attnkit.scoring`. All masks (Keras padding masks, valid lengths,
    explicit attention masks, the causal mask) go through `attnkit.attention.masking`:
    masked keys get exactly zero weight and a fully masked row gives zero weights and a zero
    output, never NaN. The softmax is computed in float32 under mixed precision.

    Args:
        score: the score function: a layer instance (e.g. `AdditiveScore(units=16)`), a name
            accepted by `attnkit.scoring.get_score` (`"dot"`, `"scaled_dot"`, `"bilinear"`,
            `"cosine"`) or a layer config dict. Defaults to `"scaled_dot"`.
        dropout: float in [0, 1), dropout rate applied to the attention weights during
            training. Defaults to 0.
        seed: optional int, the seed of the dropout.
        **kwargs: base layer keyword arguments, such as `name` and `dtype`.

    Call arguments:
        query: tensor of shape `(batch_size, Tq, d_q)`.
        value: tensor of shape `(batch_size, Tk, d_v)`.
        key: optional tensor of shape `(batch_size, Tk, d_k)`; defaults to `value`.
        query_mask: optional boolean tensor `(batch_size, Tq)`; `False` rows get zero weights.
            Filled in automatically from a Keras mask carried by `query`.
        value_mask: optional boolean tensor `(batch_size, Tk)`, the key padding mask
            (`False` keys get zero weight). Filled in automatically from a Keras mask carried
            by `value` (e.g. after `Embedding(mask_zero=True)`).
        key_lengths: optional integer tensor `(batch_size,)`, the number of valid keys.
        attention_mask: optional boolean tensor `(batch_size, Tq, Tk)` or `(Tq, Tk)`.
        use_causal_mask: bool, whether query i may only attend to keys j <= i.
        return_attention_scores: bool, whether to also return the attention weights.
        training: bool, whether dropout is applied.

    Returns:
        The attention output of shape `(batch_size, Tq, d_v)`, and, when
        `return_attention_scores=True`, also the attention weights α of shape
        `(batch_size, Tq, Tk)` (before dropout). The output carries the query's Keras mask.

    Source: NNDL (8.6)-(8.7) (soft attention) and (8.9)-(8.10) (key-value attention).
    """

    def __init__(self, score="scaled_dot", dropout=0.0, seed=None, **kwargs):
        super().__init__(score, **kwargs)
        self.dropout = check_rate("dropout", dropout)
        self.seed = check_seed(seed)
        self.seed_generator = keras.random.SeedGenerator(seed) if self.dropout > 0 else None

    def build(self, query_shape, value_shape, key_shape=None):
        self._build_score(query_shape, value_shape, key_shape)

    def call(
        self,
        query,
        value,
        key=None,
        query_mask=None,
        value_mask=None,
        key_lengths=None,
        attention_mask=None,
        use_causal_mask=False,
        return_attention_scores=False,
        training=None,
    ):
        if key is None:
            key = value
        masks = masking.Masks(query_mask, value_mask, key_lengths, attention_mask, use_causal_mask)
        scores, mask = self._scores_and_mask(query, key, masks)
        weights = masking.masked_softmax(scores, mask)
        pooled_weights = weights
        if training and self.dropout > 0:
            pooled_weights = keras.random.dropout(
                weights, rate=self.dropout, seed=self.seed_generator
            )
        output = precision.matmul(pooled_weights, ops.cast(value, weights.dtype))
        if return_attention_scores:
            return output, weights
        return output

    def compute_output_shape(self, query_shape, value_shape, key_shape=None):
        return (*tuple(query_shape)[:-1], tuple(value_shape)[-1])

    def compute_output_spec(
        self,
        query,
        value,
        key=None,
        query_mask=None,
        value_mask=None,
        key_lengths=None,
        attention_mask=None,
        use_causal_mask=False,
        return_attention_scores=False,
        training=None,
    ):
        return attention_output_spec(
            self, query, value, key, return_attention_scores, lambda q, k: (*q[:-1], k[-2])
        )

    def get_config(self):
        config = super().get_config()
        config.update({"dropout": self.dropout, "seed": self.seed})
        return config
