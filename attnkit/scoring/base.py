"""Shared plumbing of the score layers (shape checks, output shape, mask handling)."""

import keras

_LOW_PRECISION = ("float16", "bfloat16")


def _as_shape(shape, name):
    if shape is None:
        raise ValueError(f"`{name}` must be a shape tuple. Received: {name}={shape}")
    return tuple(shape)


def check_rank(query_shape, key_shape):
    """Validates `query_shape` (B, Tq, d_q) and `key_shape` (B, Tk, d_k); returns tuples."""
    query_shape = _as_shape(query_shape, "query_shape")
    key_shape = _as_shape(key_shape, "key_shape")
    if len(query_shape) < 3:
        raise ValueError(
            f"`query` must have shape (batch_size, Tq, d_q). Received: query_shape={query_shape}"
        )
    if len(key_shape) != len(query_shape):
        raise ValueError(
            "`key` must have the same rank as `query`, shape (batch_size, Tk, d_k). "
            f"Received: query_shape={query_shape}, key_shape={key_shape}"
        )
    return query_shape, key_shape


def check_same_size(layer_name, query_shape, key_shape):
    """Raises when the static feature sizes of queries and keys differ."""
    d_q, d_k = query_shape[-1], key_shape[-1]
    if d_q is not None and d_k is not None and d_q != d_k:
        raise ValueError(
            f"{layer_name} needs queries and keys of the same size (d_q == d_k); use "
            "BilinearScore or AdditiveScore for different sizes. "
            f"Received: query_shape={query_shape}, key_shape={key_shape}"
        )


def work_dtype(dtype):
    """float32 for float16/bfloat16 inputs, the dtype itself otherwise."""
    dtype = keras.backend.standardize_dtype(dtype)
    return "float32" if dtype in _LOW_PRECISION else dtype


class BaseScore(keras.layers.Layer):
    """Base class of the score layers: `call(query, key) -> (B, Tq, Tk)`.

    Not registered and not exported; it only holds what every score shares: the output shape,
    the rank checks, and a `compute_mask` that returns `None` (a score matrix carries no Keras
    mask, and a query that carries one does not trigger a "mask destroyed" warning).
    """

    def build(self, query_shape, key_shape):
        check_rank(query_shape, key_shape)

    def compute_output_shape(self, query_shape, key_shape):
        query_shape, key_shape = check_rank(query_shape, key_shape)
        return (*query_shape[:-1], key_shape[-2])

    def compute_mask(self, query, previous_mask=None):
        return None
