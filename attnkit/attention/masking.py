"""The one mask path of `attnkit`: padding masks, valid lengths, causal masks, masked softmax.

Every layer in `attnkit` turns its masks into a single boolean tensor with
`attention_mask(...)` (the attention layers hold their mask arguments in one `Masks` until a path
asks for the keep-mask, whole or one block of keys at a time) and normalises its scores with
`masked_softmax(...)`. Masks follow the
Keras convention: boolean, `True` where a position is kept (attended to), `False` where it is
masked out.

Source: d2l "masked softmax" (valid lengths); the note on why `-inf` masking gives NaN for a
fully masked row, and why the fill value must fit in the compute dtype.
"""

import dataclasses

import keras
from keras import ops

__all__ = [
    "Masks",
    "attention_mask",
    "causal_mask",
    "combine_masks",
    "large_negative_number",
    "length_mask",
    "masked_softmax",
]

_LOW_PRECISION = ("float16", "bfloat16")


def _dtype_name(x):
    return keras.backend.standardize_dtype(x.dtype)


def large_negative_number(dtype):
    """The finite fill value used for masked scores in `dtype`.

    `-3e4` for float16 (its largest finite value is 65504, so `-1e9` would overflow to
    `-inf`), `-1e9` for every other floating dtype (the value Keras's own attention layers use).

    Args:
        dtype: a dtype name or dtype object.

    Returns:
        A Python float.
    """
    if keras.backend.standardize_dtype(dtype) == "float16":
        return -3e4
    return -1e9


def _static_rank(x):
    shape = getattr(x, "shape", None)
    return None if shape is None else len(shape)


def length_mask(lengths, maxlen, start=0):
    """Boolean mask that keeps the first `lengths[b]` positions of each sequence.

    `mask[b, j] = start + j < lengths[b]` (d2l's valid lengths).

    Args:
        lengths: integer tensor of shape `(batch_size,)`, the valid length of each sequence.
        maxlen: int (or scalar integer tensor), the padded sequence length (or the length of
            the block of positions that starts at `start`).
        start: int, the position of the first column (a block of keys starts there).

    Returns:
        Boolean tensor of shape `(batch_size, maxlen)`.
    """
    lengths = ops.convert_to_tensor(lengths)
    rank = _static_rank(lengths)
    if rank != 1:
        raise ValueError(
            "`lengths` must have shape (batch_size,). "
            f"Received: lengths with shape {tuple(lengths.shape)}"
        )
    positions = ops.arange(maxlen, dtype="int32") + start
    lengths = ops.cast(lengths, "int32")
    return ops.less(ops.expand_dims(positions, 0), ops.expand_dims(lengths, -1))


def causal_mask(query_length, key_length, key_start=0):
    """Boolean causal mask: query `i` may attend to key `j` only when `j <= i`.

    Top-left aligned, as the `use_causal_mask` option of `keras.layers.MultiHeadAttention`
    (the lower triangle of a `(Tq, Tk)` matrix of ones).

    Args:
        query_length: int (or scalar integer tensor), Tq.
        key_length: int (or scalar integer tensor), Tk (or the length of a block of keys).
        key_start: int, the position of the first key (a block of keys starts there).

    Returns:
        Boolean tensor of shape `(Tq, Tk)`.
    """
    rows = ops.expand_dims(ops.arange(query_length, dtype="int32"), -1)
    cols = ops.expand_dims(ops.arange(key_length, dtype="int32") + key_start, 0)
    return ops.less_equal(cols, rows)


def combine_masks(*masks):
    """Logical AND of every mask that is not `None`, with broadcasting.

    Args:
        *masks: boolean (or 0/1) tensors, or `None`.

    Returns:
        A boolean tensor of the broadcast shape, or `None` when every mask is `None`.
    """
    result = None
    for mask in masks:
        if mask is None:
            continue
        mask = ops.cast(mask, "bool")
        result = mask if result is None else ops.logical_and(result, mask)
    return result


def attention_mask(
    query,
    key,
    *,
    query_mask=None,
    key_mask=None,
    key_lengths=None,
    attention_mask=None,
    use_causal_mask=False,
    key_start=0,
):
    """Combines every kind of mask into one boolean mask over `(B, Tq, Tk)`.

    With `key_start`, `key` is the block of keys that starts at that position (blockwise
    attention asks for the mask one block at a time): `key_mask` and `attention_mask` are then
    the block's columns, and lengths and the causal mask count from `key_start`.

    Args:
        query: tensor of shape `(B, Tq, d_q)`; only its shape is used.
        key: tensor of shape `(B, Tk, d_k)`; only its shape is used.
        query_mask: optional boolean tensor `(B, Tq)`, `False` for padded queries
            (their rows get all-zero weights).
        key_mask: optional boolean tensor `(B, Tk)`, `False` for padded keys.
        key_lengths: optional integer tensor `(B,)`, the number of valid keys of each example
            (d2l's `valid_lens`).
        attention_mask: optional boolean tensor `(B, Tq, Tk)` or `(Tq, Tk)`.
        use_causal_mask: bool, whether query `i` may only see keys `j <= i`.

    Returns:
        A boolean tensor broadcastable to `(B, Tq, Tk)`, or `None` when there is nothing to
        mask.
    """
    parts = []
    if query_mask is not None:
        if _static_rank(query_mask) != 2:
            raise ValueError(
                "`query_mask` must have shape (batch_size, Tq). "
                f"Received: query_mask with shape {tuple(query_mask.shape)}"
            )
        parts.append(ops.expand_dims(ops.cast(query_mask, "bool"), -1))
    if key_mask is not None:
        if _static_rank(key_mask) != 2:
            raise ValueError(
                "`key_mask` must have shape (batch_size, Tk). "
                f"Received: key_mask with shape {tuple(key_mask.shape)}"
            )
        parts.append(ops.expand_dims(ops.cast(key_mask, "bool"), -2))
    if key_lengths is not None:
        key_lengths = ops.convert_to_tensor(key_lengths)
        if _static_rank(key_lengths) != 1:
            raise ValueError(
                "`key_lengths` must have shape (batch_size,). "
                f"Received: key_lengths with shape {tuple(key_lengths.shape)}"
            )
        block = length_mask(key_lengths, ops.shape(key)[-2], start=key_start)
        parts.append(ops.expand_dims(block, -2))
    if attention_mask is not None:
        if _static_rank(attention_mask) not in (2, 3):
            raise ValueError(
                "`attention_mask` must have shape (batch_size, Tq, Tk) or (Tq, Tk). "
                f"Received: attention_mask with shape {tuple(attention_mask.shape)}"
            )
        parts.append(ops.cast(attention_mask, "bool"))
    if use_causal_mask:
        parts.append(causal_mask(ops.shape(query)[-2], ops.shape(key)[-2], key_start=key_start))
    return combine_masks(*parts)


@dataclasses.dataclass(frozen=True, eq=False)
class Masks:
    """The mask arguments of one attention call, as given, until a path asks for its keep-mask.

    The attention layers take the same five (`query_mask`, `value_mask`, `key_lengths`,
    `attention_mask`, `use_causal_mask`, in the order of their call arguments); holding them
    here costs nothing, so a path that never forms the `(B, Tq, Tk)` scores (blockwise) never
    forms the `(B, Tq, Tk)` mask either: it asks for one block of keys at a time.

    Attributes:
        query_mask: optional boolean `(B, Tq)`, `False` for padded queries.
        key_mask: optional boolean `(B, Tk)`, `False` for padded keys (a layer's
            `value_mask`).
        key_lengths: optional integer `(B,)`, the number of valid keys.
        attention_mask: optional boolean `(B, Tq, Tk)` or `(Tq, Tk)`.
        use_causal_mask: bool, whether query `i` may only see keys `j <= i`.
    """

    query_mask: object = None
    key_mask: object = None
    key_lengths: object = None
    attention_mask: object = None
    use_causal_mask: bool = False

    def keep(self, query, key, start=0, stop=None):
        """The keep-mask of keys `[start, stop)` (all of them by default), broadcastable to
        `(B, Tq, stop - start)`, or `None` when nothing is masked.

        Args:
            query: tensor `(B, Tq, ...)` (e.g. with heads); only its shape is used.
            key: tensor `(B, Tk, ...)` of all the keys; only its shape is used.
            start: int, the first key of the block.
            stop: optional int, the end of the block (exclusive); `None` for Tk.
        """
        query, key = _positions(query), _positions(key)
        if start == 0 and stop is None:
            return attention_mask(query, key, **self._arguments())
        stop = ops.shape(key)[1] if stop is None else stop

        def columns(mask):
            return None if mask is None else mask[..., start:stop]

        return attention_mask(
            query,
            key[:, start:stop],
            query_mask=self.query_mask,
            key_mask=columns(self.key_mask),
            key_lengths=self.key_lengths,
            attention_mask=columns(self.attention_mask),
            use_causal_mask=self.use_causal_mask,
            key_start=start,
        )

    def _arguments(self):
        return {field.name: getattr(self, field.name) for field in dataclasses.fields(self)}


def _positions(x):
    """`x` of shape `(B, T, ...)` cut to `(B, T, d)`: the shape `attention_mask` reads."""
    while len(x.shape) > 3:
        x = x[..., 0, :]
    return x


def masked_softmax(scores, mask=None, axis=-1):
    """Softmax over `axis` that gives masked positions exactly zero weight.

    p_j = exp(s_j) / Σ_{i kept} exp(s_i) for kept j, p_j = 0 for masked j; a row in which
    every position is masked gives all zeros (not NaN), and so does its gradient.

    The softmax is computed in float32 when `scores` are float16 or bfloat16 (otherwise in the
    dtype of `scores`). Masked scores are replaced by a large *finite* negative number that
    fits the compute dtype (`large_negative_number`), never `-inf`: with `-inf` a fully
    masked row would give `exp(-inf - (-inf)) = NaN`. The probabilities are then multiplied
    out with `where(mask, p, 0)`, so masked positions are exactly zero even in a fully
    masked row, where the softmax of the fill values is uniform.

    Args:
        scores: floating tensor, e.g. `(B, Tq, Tk)`.
        mask: optional boolean tensor broadcastable to `scores`, `True` where kept.
        axis: the axis to normalise over (the keys), default `-1`.

    Returns:
        Tensor of the shape and dtype of `scores`.
    """
    scores = ops.convert_to_tensor(scores)
    dtype = _dtype_name(scores)
    compute_dtype = "float32" if dtype in _LOW_PRECISION else dtype
    x = ops.cast(scores, compute_dtype)
    if mask is None:
        return ops.cast(_softmax(x, axis), dtype)
    mask = ops.cast(mask, "bool")
    fill = ops.cast(large_negative_number(compute_dtype), compute_dtype)
    probs = _softmax(ops.where(mask, x, fill), axis)
    probs = ops.where(mask, probs, ops.zeros_like(probs))
    return ops.cast(probs, dtype)


def _softmax(x, axis):
    # The backend's fused softmax keeps only its output for the backward pass (the written-out
    # form below keeps three tensors of the scores' size); written out only where
    # `keras.ops.softmax` would warn: an axis of size 1 (a single key), a legitimate case here.
    if x.shape[axis] not in (None, 1):
        return ops.softmax(x, axis=axis)
    shifted = x - ops.stop_gradient(ops.max(x, axis=axis, keepdims=True))
    e = ops.exp(shifted)
    return e / ops.sum(e, axis=axis, keepdims=True)
