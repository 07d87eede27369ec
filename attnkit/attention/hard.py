"""Hard attention: select one input instead of averaging them, NNDL 8.2.1.1 (8.8)."""

import keras
from keras import ops

from attnkit import precision
from attnkit.attention import masking
from attnkit.attention.scored import ScoredAttention
from attnkit.checks import check_bool, check_choice, check_seed

__all__ = ["HardAttention"]

_MODES = ("argmax", "sample")


@keras.saving.register_keras_serializable(package="attnkit")
class HardAttention(ScoredAttention):
    """Hard attention: each query selects one value, the most attended one or a sampled one.

    α = softmax_j(s(q, k_j)),  ĵ = argmax_j α_j  (or ĵ ~ Categorical(α)),  att((K, V), q) = v_ĵ

    `mode="argmax"` picks the key with the largest weight, NNDL (8.8) (the first one on a
    tie); `mode="sample"` draws ĵ from the distribution α (Xu et al.'s stochastic hard
    attention), with `keras.random.categorical` and the layer's seed. Masked keys are never
    picked (all masks go through `attnkit.attention.attention_mask`). A query whose keys
    are all masked selects nothing: its index is -1 and its output is a zero vector.

    Why plain hard attention cannot be trained by backpropagation: the output v_ĵ depends on
    the query and the keys only through the index ĵ, a piecewise-constant function of the
    scores. Its derivative is zero wherever it is defined, so no gradient reaches the query,
    the keys or the score's weights (TensorFlow reports the gradient as `None`); only the
    selected value v_ĵ gets one. Xu et al. 2015 train the sampling version with a
    REINFORCE-style estimator instead. With `straight_through=True` the layer uses the
    straight-through estimator (Bengio et al. 2013): the forward pass uses the one-hot
    selection e_ĵ, the backward pass the gradient of the soft weights α,

        w = e_ĵ + (α − stop_gradient(α)),  output = Σ_j w_j v_j,

    so the output is still exactly v_ĵ, while the query, keys and score weights get the
    gradient of soft attention Σ_j α_j v_j.

    Args:
        score: the score function: a layer instance (e.g. `AdditiveScore(units=16)`), a name
            accepted by `attnkit.scoring.get_score` (`"dot"`, `"scaled_dot"`, `"bilinear"`,
            `"cosine"`) or a layer config dict. Defaults to `"scaled_dot"`.
        mode: `"argmax"` (default) or `"sample"`.
        straight_through: bool, whether gradients flow to the scores through the
            straight-through estimator. Defaults to `False`.
        seed: optional int, the seed of the sampling in `mode="sample"`.
        **kwargs: base layer keyword arguments, such as `name` and `dtype`.

    Call arguments:
        query: tensor of shape `(batch_size, Tq, d_q)`.
        value: tensor of shape `(batch_size, Tk, d_v)`.
        key: optional tensor of shape `(batch_size, Tk, d_k)`; defaults to `value`.
        query_mask: optional boolean tensor `(batch_size, Tq)`; `False` rows select nothing.
            Filled in automatically from a Keras mask carried by `query`.
        value_mask: optional boolean tensor `(batch_size, Tk)`, the key padding mask. Filled
            in automatically from a Keras mask carried by `value`.
        key_lengths: optional integer tensor `(batch_size,)`, the number of valid keys.
        attention_mask: optional boolean tensor `(batch_size, Tq, Tk)` or `(Tq, Tk)`.
        use_causal_mask: bool, whether query i may only select keys j <= i.
        return_attention_scores: bool, whether to also return the soft weights α.
        training: accepted for a uniform call signature; the layer behaves the same in
            training and inference (`mode` decides between argmax and sampling).

    Returns:
        A tuple `(selected, indices)`: the selected values of shape `(batch_size, Tq, d_v)`
        and their positions, an int32 tensor of shape `(batch_size, Tq)` (-1 for a fully
        masked row); with `return_attention_scores=True`, also the soft weights α of shape
        `(batch_size, Tq, Tk)`. The selected values carry the query's Keras mask.

    Source: NNDL 8.2.1.1, equation (8.8); Xu et al. 2015, "Show, attend and tell",
    stochastic hard attention.
    """

    def __init__(
        self, score="scaled_dot", mode="argmax", straight_through=False, seed=None, **kwargs
    ):
        super().__init__(score, **kwargs)
        self.mode = check_choice("mode", mode, _MODES)
        self.straight_through = check_bool("straight_through", straight_through)
        self.seed = check_seed(seed)
        self.seed_generator = keras.random.SeedGenerator(seed) if mode == "sample" else None

    def build(self, query_shape, value_shape, key_shape=None):
        self._build_score(query_shape, value_shape, key_shape)

    def _select(self, scores, mask):
        """The index ĵ of every query, (B, Tq) int32, and whether the row has a key."""
        # In float32, so that float16 rounding cannot create ties that the scores lack.
        scores = ops.cast(scores, "float32")
        if mask is None:
            keep = ops.ones_like(scores, dtype="bool")
        else:
            keep = ops.broadcast_to(ops.cast(mask, "bool"), ops.shape(scores))
        fill = ops.full_like(scores, masking.large_negative_number("float32"))
        masked_scores = ops.where(keep, scores, fill)
        if self.mode == "argmax":
            # argmax_j α_j = argmax_j s_j: the softmax is increasing.
            indices = ops.argmax(masked_scores, axis=-1)
        else:
            # Categorical(softmax(s)) = Categorical(α): the masked scores are the logits.
            shape = ops.shape(scores)
            logits = ops.reshape(masked_scores, (-1, shape[-1]))
            draws = keras.random.categorical(logits, 1, seed=self.seed_generator, dtype="int32")
            indices = ops.reshape(draws, shape[:-1])
        indices = ops.cast(indices, "int32")
        has_key = ops.any(keep, axis=-1)
        return ops.where(has_key, indices, ops.full_like(indices, -1))

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
        indices = self._select(scores, mask)
        # e_ĵ as a row of Tk numbers; an index of -1 gives a zero row.
        positions = ops.arange(ops.shape(scores)[-1], dtype="int32")
        one_hot = ops.cast(ops.equal(ops.expand_dims(indices, -1), positions), weights.dtype)
        if self.straight_through:
            # Forward: e_ĵ exactly (α − α = 0); backward: the gradient of α.
            selection = one_hot + (weights - ops.stop_gradient(weights))
        else:
            selection = one_hot
        selected = precision.matmul(selection, ops.cast(value, selection.dtype))
        if return_attention_scores:
            return selected, indices, weights
        return selected, indices

    def compute_output_shape(self, query_shape, value_shape, key_shape=None):
        query_shape = tuple(query_shape)
        return (*query_shape[:-1], tuple(value_shape)[-1]), query_shape[:-1]

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
        key = value if key is None else key
        selected_shape, indices_shape = self.compute_output_shape(
            query.shape, value.shape, key.shape
        )
        outputs = (
            keras.KerasTensor(selected_shape, dtype=self.compute_dtype),
            keras.KerasTensor(indices_shape, dtype="int32"),
        )
        if return_attention_scores:
            weights = keras.KerasTensor(
                (*tuple(query.shape)[:-1], tuple(key.shape)[-2]), dtype=self.compute_dtype
            )
            return (*outputs, weights)
        return outputs

    def get_config(self):
        config = super().get_config()
        config.update(
            {
                "mode": self.mode,
                "straight_through": self.straight_through,
                "seed": self.seed,
            }
        )
        return config
