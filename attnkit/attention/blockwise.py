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
from attnkit.checks import check_positive_int

__all__ = ["blockwise_attention"]


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
    block_size=512,
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
        block_size: int, keys per block (the memory/time trade-off).

    Returns:
        Tensor `(batch_size, Tq, num_heads, d_v)`.
    """
    check_positive_int("block_size", block_size)
    total = key.shape[1]
    if total is None:
        raise ValueError(
            "blockwise attention needs a static number of keys. "
            f"Received: key with shape {tuple(key.shape)}"
        )
    blocks = [(start, min(start + block_size, total)) for start in range(0, total, block_size)]
    depth = query.shape[-1]
    scale = 1.0 / math.sqrt(depth)
    dtype = keras.backend.standardize_dtype(query.dtype)
    compute = "float32" if dtype in ("float16", "bfloat16") else dtype

    def block_mask(start, stop):
        """(B or 1, 1, Tq or 1, block) boolean, or None: the one mask path, per block."""
        mask = masking.attention_mask(
            query[:, :, 0],  # (B, Tq, d): only the shapes matter
            key[:, start:stop, 0],
            query_mask=query_mask,
            key_mask=None if key_mask is None else key_mask[:, start:stop],
            key_lengths=key_lengths,
            attention_mask=None if attention_mask is None else attention_mask[..., start:stop],
            use_causal_mask=use_causal_mask,
            key_start=start,
        )
        return None if mask is None else ops.expand_dims(mask, -3)

    fill = masking.large_negative_number(compute)

    def block_inputs(k, v, start, stop, after):
        """One block of keys and values, usable only once everything in `after` (the previous
        block's results) exists. A graph executor would otherwise run the blocks in any order
        and keep many blocks' (Tq × block) tensors alive at once, which is the memory this path
        saves. The NaN test never fires; it is there to make the dependency."""
        flag = ops.isnan(sum(ops.reshape(tensor, (-1,))[:1] for tensor in after))
        gate = lambda block: ops.where(flag, ops.zeros_like(block), block)  # noqa: E731
        return gate(k[:, start:stop]), gate(v[:, start:stop])

    def forward(q, k, v):
        q32 = ops.cast(q, compute) * scale
        k32, v32 = ops.cast(k, compute), ops.cast(v, compute)
        shape = ops.shape(q32)
        b, t_q, heads = shape[0], shape[1], shape[2]
        running_max = ops.full((b, heads, t_q, 1), fill, dtype=compute)
        normaliser = ops.zeros((b, heads, t_q, 1), dtype=compute)
        accumulated = ops.zeros((b, heads, t_q, v.shape[-1]), dtype=compute)
        for start, stop in blocks:
            k_block, v_block = block_inputs(k32, v32, start, stop, after=[accumulated])
            s = ops.einsum("bqhd,bkhd->bhqk", q32, k_block)
            mask = block_mask(start, stop)
            if mask is not None:
                s = ops.where(mask, s, fill)
            new_max = ops.maximum(running_max, ops.max(s, axis=-1, keepdims=True))
            p = ops.exp(s - new_max)
            if mask is not None:
                p = ops.where(mask, p, 0.0)
            rescale = ops.exp(running_max - new_max)
            normaliser = normaliser * rescale + ops.sum(p, axis=-1, keepdims=True)
            accumulated = accumulated * rescale + ops.einsum("bhqk,bkhd->bhqd", p, v_block)
            running_max = new_max
        kept = normaliser > 0
        safe = ops.where(kept, normaliser, 1.0)
        output = ops.where(kept, accumulated / safe, 0.0)  # (B, H, Tq, d_v)
        logsumexp = ops.where(kept, running_max + ops.log(safe), fill)
        return ops.transpose(output, (0, 2, 1, 3)), logsumexp, kept

    def backward(q, k, v, output, logsumexp, kept, upstream):
        q32 = ops.cast(q, compute) * scale
        k32, v32 = ops.cast(k, compute), ops.cast(v, compute)
        d_out = ops.cast(upstream, compute)  # (B, Tq, H, d_v)
        delta = ops.expand_dims(ops.transpose(ops.sum(d_out * output, axis=-1), (0, 2, 1)), -1)
        d_query = ops.zeros_like(q32)
        d_keys, d_values = [], []
        for start, stop in blocks:
            k_block, v_block = block_inputs(
                k32, v32, start, stop, after=[delta, d_query, *d_keys[-1:], *d_values[-1:]]
            )
            s = ops.einsum("bqhd,bkhd->bhqk", q32, k_block)
            mask = block_mask(start, stop)
            p = ops.where(kept, ops.exp(s - logsumexp), 0.0)
            if mask is not None:
                p = ops.where(mask, p, 0.0)
            d_values.append(ops.einsum("bhqk,bqhd->bkhd", p, d_out))
            d_p = ops.einsum("bqhd,bkhd->bhqk", d_out, v_block)
            d_s = p * (d_p - delta)
            d_query = d_query + ops.einsum("bhqk,bkhd->bqhd", d_s, k_block)
            d_keys.append(ops.einsum("bhqk,bqhd->bkhd", d_s, q32))
        d_query = d_query * scale
        return (
            ops.cast(d_query, q.dtype),
            ops.cast(ops.concatenate(d_keys, axis=1), k.dtype),
            ops.cast(ops.concatenate(d_values, axis=1), v.dtype),
        )

    if keras.backend.backend() not in ("tensorflow", "jax"):
        return ops.cast(forward(query, key, value)[0], query.dtype)

    @ops.custom_gradient
    def attend(q, k, v):
        # TensorFlow's eager tape would otherwise record the blocks as well and keep every
        # block's weights alive until the gradient is taken; the gradient is ours anyway.
        output, logsumexp, kept = forward(*(ops.stop_gradient(t) for t in (q, k, v)))

        def gradient(*args, upstream=None):
            if upstream is None:
                (upstream,) = args
            return backward(q, k, v, output, logsumexp, kept, upstream)

        return ops.cast(output, q.dtype), gradient

    return attend(query, key, value)
