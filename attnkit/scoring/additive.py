"""Additive (Bahdanau, "concat") score: NNDL (8.2)."""

import keras
from keras import ops

from attnkit import precision
from attnkit.checks import check_positive_int, get_initializer
from attnkit.scoring.base import BaseScore, check_rank


@keras.saving.register_keras_serializable(package="attnkit")
class AdditiveScore(BaseScore):
    """Additive attention score (Bahdanau's "concat", a one-hidden-layer network).

    s(q, k) = vᵀ tanh(W_q q + W_k k)

    with `query_kernel` W_q of shape `(d_q, units)`, `key_kernel` W_k of shape
    `(d_k, units)` and `score_vector` v of shape `(units,)`. Queries and keys may differ in
    size. Every query is paired with every key by broadcasting
    `(B, Tq, 1, units) + (B, 1, Tk, units)`, so memory grows as `B·Tq·Tk·units`.

    Args:
        units: positive int, the size of the hidden layer (the length of v).
        kernel_initializer: initializer of the three weights. Defaults to
            `"glorot_uniform"`.
        **kwargs: base layer keyword arguments, such as `name` and `dtype`.

    Call arguments:
        query: tensor of shape `(batch_size, Tq, d_q)`.
        key: tensor of shape `(batch_size, Tk, d_k)`.

    Returns:
        Scores of shape `(batch_size, Tq, Tk)`.

    Source: NNDL (8.2); Bahdanau et al. 2015; d2l "additive attention".
    """

    def __init__(self, units, kernel_initializer="glorot_uniform", **kwargs):
        super().__init__(**kwargs)
        check_positive_int("units", units)
        self.units = units
        self.kernel_initializer = get_initializer("kernel_initializer", kernel_initializer)

    def build(self, query_shape, key_shape):
        query_shape, key_shape = check_rank(query_shape, key_shape)
        self.query_kernel = self.add_weight(
            name="query_kernel",
            shape=(query_shape[-1], self.units),
            initializer=self.kernel_initializer,
        )
        self.key_kernel = self.add_weight(
            name="key_kernel",
            shape=(key_shape[-1], self.units),
            initializer=self.kernel_initializer,
        )
        self.score_vector = self.add_weight(
            name="score_vector",
            shape=(self.units,),
            initializer=self.kernel_initializer,
        )

    def call(self, query, key):
        dtype = query.dtype
        q = precision.matmul(query, ops.cast(self.query_kernel, dtype))  # (B, Tq, u)
        k = precision.matmul(key, ops.cast(self.key_kernel, dtype))  # (B, Tk, u)
        features = precision.tanh(ops.expand_dims(q, -2) + ops.expand_dims(k, -3))  # (B, Tq, Tk, u)
        v = ops.expand_dims(ops.cast(self.score_vector, dtype), -1)  # (u, 1)
        return ops.squeeze(precision.matmul(features, v), -1)

    def get_config(self):
        config = super().get_config()
        config.update(
            {
                "units": self.units,
                "kernel_initializer": keras.initializers.serialize(self.kernel_initializer),
            }
        )
        return config
