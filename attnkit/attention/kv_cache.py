"""The key/value cache of incremental decoding.

A decoder that generates one token at a time would recompute the keys and values of every
earlier token at every step; they do not change (the causal mask keeps earlier positions from
seeing later ones), so they are computed once and kept. The cache is one tensor (so that it can
be passed through `keras.ops.while_loop` and compiled with XLA), laid out as keras-hub's:

    cache[:, 0] = keys, cache[:, 1] = values,  shape (batch_size, 2, max_length, H_kv, d_head)

with the projected (and, with rotary positions, rotated) keys and values of the positions
written so far; the rest is zeros, hidden by the attention's mask.
"""

from keras import ops

__all__ = ["empty_cache", "write_cache"]


def empty_cache(batch_size, max_length, num_key_value_heads, head_dim, dtype="float32"):
    """A cache of zeros, shape `(batch_size, 2, max_length, num_key_value_heads, head_dim)`.

    Args:
        batch_size: int, the number of sequences decoded together.
        max_length: int, the number of positions the cache holds.
        num_key_value_heads: int, the key/value heads of the attention layer.
        head_dim: int, the size of each head's keys and values.
        dtype: the dtype of the cache (the layer's compute dtype).
    """
    return ops.zeros((batch_size, 2, max_length, num_key_value_heads, head_dim), dtype=dtype)


def write_cache(cache, key, value, index):
    """The cache with `key` and `value` written at positions `index … index + T − 1`.

    Args:
        cache: tensor `(batch_size, 2, max_length, H_kv, d_head)`.
        key: tensor `(batch_size, T, H_kv, d_head)`, the new positions' projected keys.
        value: tensor `(batch_size, T, H_kv, d_head)`, their projected values.
        index: int or scalar integer tensor, the position of the first new token.

    Returns:
        The updated cache (a new tensor; the argument is unchanged).
    """
    update = ops.stack([key, value], axis=1)  # (B, 2, T, H_kv, d_head)
    zero = ops.zeros((), "int32")
    start = [zero, zero, ops.cast(index, "int32"), zero, zero]
    return ops.slice_update(cache, start, ops.cast(update, cache.dtype))
