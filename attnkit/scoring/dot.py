"""Dot-product scores: NNDL (8.3) and the scaled version NNDL (8.4)."""

import math

import keras
from keras import ops

from attnkit import precision
from attnkit.scoring.base import BaseScore, check_rank, check_same_size


@keras.saving.register_keras_serializable(package="attnkit")
class DotScore(BaseScore):
    """Dot-product attention score (Luong's "dot").

    s(q, k) = qᵀ k

    Queries and keys must have the same feature size; for different sizes use
    `BilinearScore` or `AdditiveScore`. The score has no weights.

    Args:
        **kwargs: base layer keyword arguments, such as `name` and `dtype`.

    Call arguments:
        query: tensor of shape `(batch_size, Tq, d)`.
        key: tensor of shape `(batch_size, Tk, d)`.

    Returns:
        Scores of shape `(batch_size, Tq, Tk)`.

    Source: NNDL (8.3); Luong et al. 2015, "dot".
    """

    def __init__(self, **kwargs):
        super().__init__(**kwargs)

    def build(self, query_shape, key_shape):
        query_shape, key_shape = check_rank(query_shape, key_shape)
        check_same_size(type(self).__name__, query_shape, key_shape)

    def call(self, query, key):
        return precision.matmul(query, ops.swapaxes(key, -1, -2))

    def get_config(self):
        return super().get_config()


@keras.saving.register_keras_serializable(package="attnkit")
class ScaledDotScore(BaseScore):
    """Scaled dot-product attention score (Vaswani et al. 2017).

    s(q, k) = qᵀ k / √d, with d the key size.

    Dividing by √d keeps the variance of the scores near 1 when the components of q and k are
    independent with unit variance, so the softmax does not saturate for large d. The query is
    scaled before the product, which keeps float16 products in range. The score has no
    weights.

    Args:
        **kwargs: base layer keyword arguments, such as `name` and `dtype`.

    Call arguments:
        query: tensor of shape `(batch_size, Tq, d)`.
        key: tensor of shape `(batch_size, Tk, d)`.

    Returns:
        Scores of shape `(batch_size, Tq, Tk)`.

    Source: NNDL (8.4); Vaswani et al. 2017.
    """

    def __init__(self, **kwargs):
        super().__init__(**kwargs)

    def build(self, query_shape, key_shape):
        query_shape, key_shape = check_rank(query_shape, key_shape)
        check_same_size(type(self).__name__, query_shape, key_shape)

    def call(self, query, key):
        d = key.shape[-1]
        if d is not None:
            scale = precision.constant(1.0 / math.sqrt(d), query.dtype)
        else:
            scale = ops.cast(ops.rsqrt(ops.cast(ops.shape(key)[-1], "float32")), query.dtype)
        return precision.matmul(query * scale, ops.swapaxes(key, -1, -2))

    def get_config(self):
        return super().get_config()
