"""Additive (Bahdanau-style) attention with Keras's weights: NNDL (8.2) without projections."""

import keras
from keras import ops

from attnkit import precision
from attnkit.attention.attention import Attention

__all__ = ["AdditiveAttention"]


@keras.saving.register_keras_serializable(package="attnkit")
class AdditiveAttention(Attention):
    """Additive attention with one learned vector: a drop-in for
    `keras.layers.AdditiveAttention`.

    s(q, k) = Σ_d w_d tanh(q_d + k_d),  α = softmax_j(s(q, k_j)),  att = Σ_j α_j v_j

    with the learned vector w = `scale` of shape `(dim,)` (glorot-uniform) when `use_scale`,
    else w = 1. This is the book's additive score vᵀ tanh(W_q q + W_k k) (NNDL (8.2)) with
    W_q = W_k = I: queries and keys must already live in one space of size `dim`. For the
    book's form, with its own projections `W_q`, `W_k` and `v` (queries and keys of
    different sizes), use `Attention(score=AdditiveScore(units))`
    (`attnkit.scoring.AdditiveScore`). Every query is paired with every key by
    broadcasting `(B, Tq, 1, dim) + (B, 1, Tk, dim)`, so memory grows as `B·Tq·Tk·dim`.

    Masks, dropout, the list-style call and the returned weights are `Attention`'s.
    Differences from Keras's layer: `docs/keras_differences.md`.

    Args:
        use_scale: bool, whether the summed tanh features are weighted by the learned
            vector `scale`. Defaults to `True`.
        dropout: float in [0, 1), dropout rate applied to the attention weights during
            training. Defaults to 0.
        seed: optional int, the seed of the dropout.
        **kwargs: base layer keyword arguments, such as `name` and `dtype`.

    Call arguments:
        The same as `Attention`'s: `layer([query, value])`, `layer([query, value, key],
        mask=[query_mask, value_mask])` or `layer(query, value, key=None, ...)`, with
        `query (batch_size, Tq, dim)`, `value (batch_size, Tk, d_v)`,
        `key (batch_size, Tk, dim)`.

    Returns:
        The attention output `(batch_size, Tq, d_v)`, and, when
        `return_attention_scores=True`, also the weights `(batch_size, Tq, Tk)` (after
        dropout).

    Source: NNDL (8.2); Bahdanau et al. 2015.
    """

    def __init__(self, use_scale=True, dropout=0.0, **kwargs):
        for name in ("score", "score_mode"):
            if name in kwargs:
                raise ValueError(
                    f"AdditiveAttention has its own score; `{name}` is `Attention`'s "
                    f"argument. Received: {name}={kwargs[name]!r}"
                )
        super().__init__(use_scale=use_scale, dropout=dropout, **kwargs)

    def _build_score_weights(self, query_shape):
        if self.use_scale:
            self.scale = self.add_weight(
                name="scale",
                shape=(query_shape[-1],),
                initializer="glorot_uniform",
                dtype=self.dtype,
            )

    def _calculate_scores(self, query, key):
        dtype = query.dtype
        # Every query with every key: (..., Tq, 1, dim) + (..., 1, Tk, dim).
        features = precision.tanh(
            ops.expand_dims(query, -2) + ops.expand_dims(ops.cast(key, dtype), -3)
        )
        if self.scale is not None:
            features = features * ops.cast(self.scale, dtype)
        return ops.sum(features, -1)

    def get_config(self):
        config = super().get_config()
        del config["score_mode"], config["score"]
        return config
