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
as everywhere in attnkit (the masks come from `attention_mask`, one block at a time).

On the TensorFlow and JAX backends the backward pass above is a custom gradient; on PyTorch the
blocks are differentiated as written (exact, but the memory saving is then forward-only).

Reference: Rabe & Staats 2021, "Self-attention does not need O(n²) memory"; Dao et al. 2022,
"FlashAttention" (the same recurrences, here written with `keras.ops`).
"""

from __future__ import annotations

import math

import keras
from keras import ops

from attnkit.attention import masking
from attnkit.checks import check_optional_positive_int

__all__ = ["blockwise_attention", "default_block_size"]

SMALLEST_DEFAULT_BLOCK = 128
MOST_DEFAULT_BLOCKS = 16


def default_block_size(num_keys):
    """Keys per block when none is given: 128, or more for long sequences so that there are
    at most 16 blocks.

    Small blocks stay in the CPU's caches (with XLA on this project's 2-core machine, blocks
    of 128 keys ran 1.1-1.3x faster than blocks of 512 at T = 1024 and 2048); the cap on the
    number of blocks bounds the size of the graph, in which every block is unrolled.
    """
    return max(SMALLEST_DEFAULT_BLOCK, -(-num_keys // MOST_DEFAULT_BLOCKS))


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
    check_optional_positive_int("block_size", block_size)
    total = key.shape[1]
    if total is None:
        raise ValueError(
            "blockwise attention needs a static number of keys. "
            f"Received: key with shape {tuple(key.shape)}"
        )
    block_size = block_size or default_block_size(total)
    blocks = [(start, min(start + block_size, total)) for start in range(0, total, block_size)]
    depth = query.shape[-1]
    scale = 1.0 / math.sqrt(depth)
    dtype = keras.backend.standardize_dtype(query.dtype)
    compute = "float32" if dtype in ("float16", "bfloat16") else dtype

    def block_mask(q, k, start, stop):
        """(B or 1, 1, Tq or 1, block) boolean, or None: the one mask path, per block."""
        mask = masking.attention_mask(
            q[:, :, 0],  # (B, Tq, d): only the shapes matter; the arguments of the pass, not
            k[:, start:stop, 0],  # `query`/`key`, which JAX would see escape into the gradient
            query_mask=query_mask,
            key_mask=None if key_mask is None else key_mask[:, start:stop],
            key_lengths=key_lengths,
            attention_mask=None if attention_mask is None else attention_mask[..., start:stop],
            use_causal_mask=use_causal_mask,
            key_start=start,
        )
        return None if mask is None else ops.expand_dims(mask, -3)

    fill = masking.large_negative_number(compute)

    def block_inputs(tensors, start, stop, after):
        """The key-axis slice [start, stop) of each of `tensors` (key axis last), usable only
        once everything in `after` (the previous block's results) exists. A graph executor
        would otherwise run the blocks in any order and keep many blocks' (Tq × block) tensors
        alive at once, which is the memory this path saves. The NaN test never fires; it is
        there to make the dependency."""
        flag = ops.isnan(sum(ops.reshape(tensor, (-1,))[:1] for tensor in after))
        return [
            ops.where(flag, ops.zeros_like(block), block)
            for block in (tensor[..., start:stop] for tensor in tensors)
        ]

    def heads_first(tensor):
        """(B, T, H, d) -> (B, H, T, d), cast to the compute dtype."""
        return ops.transpose(ops.cast(tensor, compute), (0, 2, 1, 3))

    def keys_last(tensor):
        """(B, T, H, d) -> (B, H, d, T): the layout in which every per-block product below
        is a plain batched matmul, with no (Tq × block) tensor ever transposed."""
        return ops.transpose(ops.cast(tensor, compute), (0, 2, 3, 1))

    def forward(q, k, v):
        q_h = heads_first(q) * scale  # (B, H, Tq, d)
        k_t, v_t = keys_last(k), keys_last(v)  # (B, H, d, Tk)
        b, heads, t_q = ops.shape(q_h)[0], ops.shape(q_h)[1], ops.shape(q_h)[2]
        running_max = ops.full((b, heads, t_q, 1), fill, dtype=compute)
        normaliser = ops.zeros((b, heads, t_q, 1), dtype=compute)
        accumulated = ops.zeros((b, heads, t_q, v.shape[-1]), dtype=compute)
        for start, stop in blocks:
            k_block, v_block = block_inputs([k_t, v_t], start, stop, after=[accumulated])
            s = ops.matmul(q_h, k_block)  # (B, H, Tq, block)
            mask = block_mask(q, k, start, stop)
            if mask is not None:
                s = ops.where(mask, s, fill)
            new_max = ops.maximum(running_max, ops.max(s, axis=-1, keepdims=True))
            p = ops.exp(s - new_max)
            if mask is not None:
                p = ops.where(mask, p, 0.0)
            rescale = ops.exp(running_max - new_max)
            normaliser = normaliser * rescale + ops.sum(p, axis=-1, keepdims=True)
            accumulated = accumulated * rescale + ops.matmul(p, ops.swapaxes(v_block, -1, -2))
            running_max = new_max
        kept = normaliser > 0
        safe = ops.where(kept, normaliser, 1.0)
        output = ops.where(kept, accumulated / safe, 0.0)  # (B, H, Tq, d_v)
        # A query with no key gets a log-normaliser so large that every e^(s - L) is 0.
        logsumexp = ops.where(kept, running_max + ops.log(safe), -fill)
        return ops.transpose(output, (0, 2, 1, 3)), logsumexp

    def backward(q, k, v, output, logsumexp, upstream):
        q_h = heads_first(q) * scale  # (B, H, Tq, d)
        d_out = heads_first(upstream)  # (B, H, Tq, d_v)
        delta = ops.sum(d_out * heads_first(output), axis=-1, keepdims=True)  # (B, H, Tq, 1)
        # One extra column folds a subtraction into each product: [q, -L]·[k, 1] = s - L and
        # [dO, -D]·[v, 1] = dP - D, which saves two passes over every (Tq × block) tensor.
        k_t, v_t = keys_last(k), keys_last(v)  # (B, H, d, Tk)
        ones = ops.ones_like(k_t[:, :, :1])
        q_minus_l = ops.concatenate([q_h, -logsumexp], axis=-1)
        k_and_1 = ops.concatenate([k_t, ones], axis=-2)
        d_out_minus_d = ops.concatenate([d_out, -delta], axis=-1)
        v_and_1 = ops.concatenate([v_t, ones], axis=-2)
        q_t, d_out_t = ops.swapaxes(q_h, -1, -2), ops.swapaxes(d_out, -1, -2)  # (B, H, d, Tq)
        d_query = ops.zeros_like(q_h)
        d_keys, d_values = [], []  # blocks of (B, H, d, block)
        for start, stop in blocks:
            k_block, v_block = block_inputs(
                [k_and_1, v_and_1],
                start,
                stop,
                after=[delta, d_query, *d_keys[-1:], *d_values[-1:]],
            )
            p = ops.exp(ops.matmul(q_minus_l, k_block))  # (B, H, Tq, block)
            mask = block_mask(q, k, start, stop)
            if mask is not None:
                p = ops.where(mask, p, 0.0)
            d_values.append(ops.matmul(d_out_t, p))
            d_s = p * ops.matmul(d_out_minus_d, v_block)
            d_query = d_query + ops.matmul(d_s, ops.swapaxes(k_block[:, :, :-1], -1, -2))
            d_keys.append(ops.matmul(q_t, d_s))

        def back(blocks_t, like):  # blocks of (B, H, d, block) -> (B, Tk, H, d)
            return ops.cast(ops.transpose(ops.concatenate(blocks_t, -1), (0, 3, 1, 2)), like)

        d_query = ops.transpose(d_query * scale, (0, 2, 1, 3))
        return ops.cast(d_query, q.dtype), back(d_keys, k.dtype), back(d_values, v.dtype)

    if keras.backend.backend() not in ("tensorflow", "jax"):
        return ops.cast(forward(query, key, value)[0], query.dtype)

    @ops.custom_gradient
    def attend(q, k, v):
        # TensorFlow's eager tape would otherwise record the blocks as well and keep every
        # block's weights alive until the gradient is taken; the gradient is ours anyway.
        output, logsumexp = forward(*(ops.stop_gradient(t) for t in (q, k, v)))

        def gradient(*args, upstream=None):
            if upstream is None:
                (upstream,) = args
            return backward(q, k, v, output, logsumexp, upstream)

        return ops.cast(output, q.dtype), gradient

    return attend(query, key, value)
