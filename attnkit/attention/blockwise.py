"""Exact attention in key blocks, without the (Tq × Tk) score tensor in either pass.

The forward pass walks over blocks of keys keeping, for every query, a running maximum m, a
running normaliser l and a running weighted sum (the online softmax):

    s_j = q k_jᵀ / √d          (one block of scores, masked)
    m' = max(m, max_j s_j)
    l  ← l e^(m − m') + Σ_j e^(s_j − m')
    o  ← o e^(m − m') + Σ_j e^(s_j − m') v_j
    output = o / l,            L = m + log l   (kept for the backward pass)

The backward pass recomputes each block's weights p_j = e^(s_j − L) instead of storing them:

    D = Σ (dO ⊙ O)             (one number per query)
    dV_j = p_jᵀ dO,  dS_j = p_j ⊙ (dO v_jᵀ − D),  dQ += dS_j k_j / √d,  dK_j = dS_jᵀ q / √d

so both passes hold O(Tq × block) scores at a time. The result equals softmax(QKᵀ/√d)V up to
rounding; masked keys get zero weight and a query whose keys are all masked gets a zero output,
as everywhere in attnkit (the masks come from `Masks.keep`, one block at a time).

`blockwise_forward` and `blockwise_backward` are the two passes; `attend_in_blocks` joins them
with `keras.ops.custom_gradient`; `blockwise_attention` takes the masks as the layers do.
Blocks are computed in the inputs' dtype (float32 for float16 and bfloat16), with every constant
in it and the products of `attnkit.precision`, so float64 stays float64 on every backend.

Reference: Rabe & Staats 2021, "Self-attention does not need O(n²) memory"; Dao et al. 2022,
"FlashAttention" (the same recurrences, here written with `keras.ops`).
"""

from __future__ import annotations

import dataclasses
import math

import keras
from keras import ops

from attnkit import precision
from attnkit.attention import masking
from attnkit.checks import check_optional_positive_int

__all__ = [
    "BlockPlan",
    "attend_in_blocks",
    "blockwise_attention",
    "blockwise_backward",
    "blockwise_forward",
    "default_block_size",
]

SMALLEST_DEFAULT_BLOCK = 128
MOST_DEFAULT_BLOCKS = 16


def default_block_size(num_keys):
    """Keys per block when none is given: 128, or more for long sequences so that there are
    at most 16 blocks.

    Small blocks stay in the CPU's caches (see the README's benchmarks); the cap on the number
    of blocks bounds the size of the graph, in which every block is unrolled.
    """
    return max(SMALLEST_DEFAULT_BLOCK, -(-num_keys // MOST_DEFAULT_BLOCKS))


@dataclasses.dataclass(frozen=True)
class BlockPlan:
    """How one call walks over its keys.

    Attributes:
        bounds: tuple of `(start, stop)`, the blocks of keys in order.
        scale: float, 1/√d, the scale of the scores.
        dtype: str, the dtype the blocks are computed in.
    """

    bounds: tuple
    scale: float
    dtype: str

    @classmethod
    def make(cls, query, key, block_size=None):
        """The plan for `query (B, Tq, H, d)` and `key (B, Tk, H, d)`: blocks of `block_size`
        keys (`default_block_size(Tk)` when `None`)."""
        check_optional_positive_int("block_size", block_size)
        total = key.shape[1]
        if total is None:
            raise ValueError(
                "blockwise attention needs a static number of keys. "
                f"Received: key with shape {tuple(key.shape)}"
            )
        block_size = block_size or default_block_size(total)
        bounds = tuple(
            (start, min(start + block_size, total)) for start in range(0, total, block_size)
        )
        dtype = keras.backend.standardize_dtype(query.dtype)
        dtype = "float32" if dtype in ("float16", "bfloat16") else dtype
        return cls(bounds, 1.0 / math.sqrt(query.shape[-1]), dtype)

    def constant(self, value):
        """`value` as a scalar tensor of the compute dtype (`attnkit.precision.constant`)."""
        return precision.constant(value, self.dtype)

    @property
    def fill(self):
        """The score given to masked keys."""
        return masking.large_negative_number(self.dtype)


def _heads_first(tensor, dtype):
    """(B, T, H, d) -> (B, H, T, d), cast to `dtype`."""
    return ops.transpose(ops.cast(tensor, dtype), (0, 2, 1, 3))


def _keys_last(tensor, dtype):
    """(B, T, H, d) -> (B, H, d, T): the layout in which every per-block product is a plain
    batched matmul, with no (Tq × block) tensor ever transposed."""
    return ops.transpose(ops.cast(tensor, dtype), (0, 2, 3, 1))


def _joined(blocks, dtype):
    """Blocks of (B, H, d, block) -> (B, Tk, H, d), in `dtype`: the layout of the inputs."""
    return ops.cast(ops.transpose(ops.concatenate(blocks, -1), (0, 3, 1, 2)), dtype)


def _block_inputs(tensors, start, stop, after):
    """The key-axis slice [start, stop) of each of `tensors` (key axis last), usable only once
    everything in `after` (the previous block's results) exists. A graph executor would
    otherwise run the blocks in any order and keep many blocks' (Tq × block) tensors alive at
    once, which is the memory this path saves. The NaN test never fires; it is there to make
    the dependency."""
    flag = ops.isnan(sum(ops.reshape(tensor, (-1,))[:1] for tensor in after))
    return [
        ops.where(flag, ops.zeros_like(block), block)
        for block in (tensor[..., start:stop] for tensor in tensors)
    ]


def _block_mask(masks, query, key, start, stop):
    """(B or 1, 1, Tq or 1, block) boolean, or None: the keep-mask of one block, every head."""
    mask = masks.keep(query, key, start, stop)
    return None if mask is None else ops.expand_dims(mask, -3)


def blockwise_forward(query, key, value, masks, plan):
    """The forward pass: the online softmax over the blocks of `plan`.

    Args:
        query: tensor `(B, Tq, H, d)`; key: `(B, Tk, H, d)`; value: `(B, Tk, H, d_v)`.
        masks: a `masking.Masks`, asked for one block at a time.
        plan: the `BlockPlan`.

    Returns:
        `(output, logsumexp)`: the output `(B, Tq, H, d_v)` in `plan.dtype`, and
        L = log Σ_j e^(s_j) over the kept keys, `(B, H, Tq, 1)` (a query with no kept key gets
        a value so large that every e^(s - L) is 0).
    """
    dtype, fill = plan.dtype, plan.constant(plan.fill)
    zero, one = plan.constant(0.0), plan.constant(1.0)
    q_h = _heads_first(query, dtype) * plan.constant(plan.scale)  # (B, H, Tq, d)
    k_t, v_t = _keys_last(key, dtype), _keys_last(value, dtype)  # (B, H, d, Tk)
    b, heads, t_q = ops.shape(q_h)[0], ops.shape(q_h)[1], ops.shape(q_h)[2]
    running_max = ops.full((b, heads, t_q, 1), fill, dtype=dtype)
    normaliser = ops.zeros((b, heads, t_q, 1), dtype=dtype)
    accumulated = ops.zeros((b, heads, t_q, value.shape[-1]), dtype=dtype)
    for start, stop in plan.bounds:
        k_block, v_block = _block_inputs([k_t, v_t], start, stop, after=[accumulated])
        s = precision.matmul(q_h, k_block)  # (B, H, Tq, block)
        mask = _block_mask(masks, query, key, start, stop)
        if mask is not None:
            s = ops.where(mask, s, fill)
        new_max = precision.maximum(running_max, ops.max(s, axis=-1, keepdims=True))
        p = ops.exp(s - new_max)
        if mask is not None:
            p = ops.where(mask, p, zero)
        rescale = ops.exp(running_max - new_max)
        normaliser = normaliser * rescale + ops.sum(p, axis=-1, keepdims=True)
        accumulated = accumulated * rescale + precision.matmul(p, ops.swapaxes(v_block, -1, -2))
        running_max = new_max
    kept = normaliser > zero
    safe = ops.where(kept, normaliser, one)
    output = ops.where(kept, accumulated / safe, zero)  # (B, H, Tq, d_v)
    logsumexp = ops.where(kept, running_max + ops.log(safe), -fill)
    return ops.transpose(output, (0, 2, 1, 3)), logsumexp


def blockwise_backward(query, key, value, output, logsumexp, upstream, masks, plan):
    """The backward pass: each block's weights recomputed from L, never stored.

    Args:
        query, key, value, masks, plan: as given to `blockwise_forward`.
        output, logsumexp: what `blockwise_forward` returned.
        upstream: tensor `(B, Tq, H, d_v)`, the gradient of the loss with respect to the output.

    Returns:
        The gradients `(d_query, d_key, d_value)`, in the dtypes of `query`, `key`, `value`.
    """
    dtype = plan.dtype
    q_h = _heads_first(query, dtype) * plan.constant(plan.scale)  # (B, H, Tq, d)
    d_out = _heads_first(upstream, dtype)  # (B, H, Tq, d_v)
    delta = ops.sum(d_out * _heads_first(output, dtype), axis=-1, keepdims=True)  # (B, H, Tq, 1)
    # One extra column folds a subtraction into each product: [q, -L]·[k, 1] = s - L and
    # [dO, -D]·[v, 1] = dP - D, which saves two passes over every (Tq × block) tensor.
    k_t, v_t = _keys_last(key, dtype), _keys_last(value, dtype)  # (B, H, d, Tk)
    ones = ops.ones_like(k_t[:, :, :1])
    q_minus_l = ops.concatenate([q_h, -ops.cast(logsumexp, dtype)], axis=-1)
    k_and_1 = ops.concatenate([k_t, ones], axis=-2)
    d_out_minus_d = ops.concatenate([d_out, -delta], axis=-1)
    v_and_1 = ops.concatenate([v_t, ones], axis=-2)
    q_t, d_out_t = ops.swapaxes(q_h, -1, -2), ops.swapaxes(d_out, -1, -2)  # (B, H, d, Tq)
    zero = plan.constant(0.0)
    d_query = ops.zeros_like(q_h)
    d_keys, d_values = [], []  # blocks of (B, H, d, block)
    for start, stop in plan.bounds:
        k_block, v_block = _block_inputs(
            [k_and_1, v_and_1],
            start,
            stop,
            after=[delta, d_query, *d_keys[-1:], *d_values[-1:]],
        )
        p = ops.exp(precision.matmul(q_minus_l, k_block))  # (B, H, Tq, block)
        mask = _block_mask(masks, query, key, start, stop)
        if mask is not None:
            p = ops.where(mask, p, zero)
        d_values.append(precision.matmul(d_out_t, p))
        d_s = p * precision.matmul(d_out_minus_d, v_block)
        d_query = d_query + precision.matmul(d_s, ops.swapaxes(k_block[:, :, :-1], -1, -2))
        d_keys.append(precision.matmul(q_t, d_s))

    d_query = ops.transpose(d_query * plan.constant(plan.scale), (0, 2, 1, 3))
    return (
        ops.cast(d_query, query.dtype),
        _joined(d_keys, key.dtype),
        _joined(d_values, value.dtype),
    )


def attend_in_blocks(query, key, value, masks=None, block_size=None):
    """Blockwise attention with the masks of a `masking.Masks`: `blockwise_forward`, with
    `blockwise_backward` as its gradient (`keras.ops.custom_gradient`, on every backend).

    Args:
        query: tensor `(B, Tq, H, d)`; key: `(B, Tk, H, d)`; value: `(B, Tk, H, d_v)`.
        masks: optional `masking.Masks`.
        block_size: optional positive int, keys per block (`default_block_size(Tk)` if `None`).

    Returns:
        Tensor `(B, Tq, H, d_v)` of the dtype of `query`.
    """
    masks = masking.Masks() if masks is None else masks
    plan = BlockPlan.make(query, key, block_size)

    @ops.custom_gradient
    def attend(q, k, v):
        # The passes see the arguments of `attend`, never `query` and `key` (JAX would see them
        # escape into the gradient); TensorFlow's eager tape would otherwise record the blocks
        # as well and keep every block's weights alive until the gradient is taken.
        output, logsumexp = blockwise_forward(
            *(ops.stop_gradient(t) for t in (q, k, v)), masks, plan
        )

        def gradient(*args, upstream=None):
            if upstream is None:  # TensorFlow and JAX pass it alone; PyTorch after (q, k, v)
                (upstream,) = args
            return blockwise_backward(q, k, v, output, logsumexp, upstream, masks, plan)

        return ops.cast(output, q.dtype), gradient

    return attend(query, key, value)


def blockwise_attention(
    query,
    key,
    value,
    *,
    query_mask=None,
    key_mask=None,
    key_lengths=None,
    attention_mask=None,
    use_causal_mask=False,
    block_size=None,
):
    """Multi-head scaled dot-product attention computed in blocks of keys.

    Same result as `multi_head_scaled_dot_attention` (without dropout and without returning
    the weights, which this path never forms).

    Args:
        query: tensor `(batch_size, Tq, num_heads, d_k)`, projected queries.
        key: tensor `(batch_size, Tk, num_heads, d_k)`, projected keys.
        value: tensor `(batch_size, Tk, num_heads, d_v)`, projected values.
        query_mask: optional boolean `(batch_size, Tq)`; masked queries give zero outputs.
        key_mask: optional boolean `(batch_size, Tk)`, `False` for padded keys.
        key_lengths: optional integer `(batch_size,)`, the number of valid keys.
        attention_mask: optional boolean `(batch_size, Tq, Tk)` or `(Tq, Tk)` (this one is
            given whole, so it costs Tq × Tk booleans).
        use_causal_mask: bool, whether query i only sees keys j <= i.
        block_size: positive int, keys per block (the memory/time trade-off), or `None`
            (the default) for `default_block_size(Tk)`.

    Returns:
        Tensor `(batch_size, Tq, num_heads, d_v)`.
    """
    masks = masking.Masks(query_mask, key_mask, key_lengths, attention_mask, use_causal_mask)
    return attend_in_blocks(query, key, value, masks, block_size)
