"""Content-based reading and erase/add writing of an external memory (NNDL 8.5).

An external memory is a tensor `M` of shape `(B, N, d)`: N slots (memory cells) of width d per
example. Reading is attention over the slots (NNDL 8.5, memory-augmented neural networks):

    α_i = softmax_i(s(m_i, q)),    r = Σ_i α_i m_i

with any `attnkit` score s, and writing is the erase/add rule of the Neural Turing Machine
(Graves et al. 2014, §3.2):

    m_i ← m_i ⊙ (1 − α_i e) + α_i a,   e ∈ [0, 1]^d (erase vector), a ∈ R^d (add vector)

These are plain functions written with `keras.ops`, so gradients flow to the memory, the
query, the erase and the add vectors (and to the weights of the score, when it has any).
Padded memory slots are masked through the one mask path of `attnkit.attention.masking`: they
get exactly zero weight, are never read and never written.
"""

import inspect

import keras
from keras import ops

from attnkit import precision
from attnkit.attention import masking
from attnkit.scoring.registry import resolve_score

__all__ = ["memory_address", "memory_read", "memory_write"]


def _shape(x):
    return tuple(x.shape)


def check_memory(memory, name="memory"):
    """Checks that `memory` has shape `(B, N, d)` with N ≥ 1 when N is known; returns it."""
    memory = ops.convert_to_tensor(memory)
    shape = _shape(memory)
    if len(shape) != 3:
        raise ValueError(
            f"`{name}` must have shape (batch_size, memory_size, width). "
            f"Received: {name} with shape {shape}"
        )
    if shape[1] == 0:
        raise ValueError(
            f"`{name}` must have at least one memory slot (memory_size >= 1). "
            f"Received: {name} with shape {shape}, memory_size=0"
        )
    if shape[2] == 0:
        raise ValueError(
            f"`{name}` must have a width of at least 1. Received: {name} with shape {shape}"
        )
    return memory


def _resolve_score(score, dtype):
    # A score made here takes the dtype of the memory (not the global policy), so that a
    # float64 memory is addressed in float64.
    layer = resolve_score(score, "score", dtype=keras.backend.standardize_dtype(dtype))
    if not isinstance(score, keras.layers.Layer):
        # A score made from a name or a config is a new layer on every call: fine for the
        # scores without weights, wrong for those with weights (random weights each call).
        layer._attnkit_from_name = True
    return layer


def _slot_mask(memory, memory_mask, memory_lengths):
    """(B, N) boolean mask of the kept slots, or None."""
    parts = []
    if memory_mask is not None:
        memory_mask = ops.convert_to_tensor(memory_mask)
        if len(_shape(memory_mask)) != 2:
            raise ValueError(
                "`memory_mask` must have shape (batch_size, memory_size). "
                f"Received: memory_mask with shape {_shape(memory_mask)}"
            )
        parts.append(ops.cast(memory_mask, "bool"))
    if memory_lengths is not None:
        memory_lengths = ops.convert_to_tensor(memory_lengths)
        if len(_shape(memory_lengths)) != 1:
            raise ValueError(
                "`memory_lengths` must have shape (batch_size,). "
                f"Received: memory_lengths with shape {_shape(memory_lengths)}"
            )
        parts.append(masking.length_mask(memory_lengths, ops.shape(memory)[1]))
    return masking.combine_masks(*parts)


def memory_address(
    memory,
    query,
    score="dot",
    *,
    keys=None,
    memory_mask=None,
    memory_lengths=None,
    sharpness=None,
):
    """Content-based addressing weights α_i = softmax_i(s(k_i, q)) over the memory slots.

    The keys k_i are the memory slots m_i themselves unless separate `keys` are given (an
    addressing memory, as the memory A of the end-to-end memory network). Masked slots get
    exactly zero weight; a fully masked memory gives all-zero weights, never NaN.

    Args:
        memory: tensor of shape `(batch_size, memory_size, width)`. Only its slot count is
            used here (and it is the key when `keys` is None).
        query: tensor of shape `(batch_size, d_q)` (one query) or `(batch_size, Tq, d_q)`.
        score: the score function s: a score layer instance (e.g. `attnkit.CosineScore()`),
            or the name of a score without weights (`"dot"`, `"scaled_dot"`, `"cosine"`).
            Defaults to `"dot"`. A score with weights (bilinear, additive, location) must be
            passed as an instance, so that its weights persist between calls.
        keys: optional tensor of shape `(batch_size, memory_size, d_k)`, the addressing keys;
            defaults to `memory`.
        memory_mask: optional boolean tensor `(batch_size, memory_size)`, `False` for padded
            slots.
        memory_lengths: optional integer tensor `(batch_size,)`, the number of real slots.
        sharpness: optional per-query sharpness β of shape `(batch_size,)` for a single query
            or `(batch_size, Tq)`, passed to the score (only `CosineScore` takes one: the NTM
            key strength).

    Returns:
        Weights α of shape `(batch_size, memory_size)` for a single query, or
        `(batch_size, Tq, memory_size)`, in the dtype of `memory`.

    Source: NNDL 8.5 (memory-augmented networks: content-based addressing of the memory).
    """
    memory = check_memory(memory)
    keys = memory if keys is None else check_memory(keys, "keys")
    query = ops.convert_to_tensor(query)
    rank = len(_shape(query))
    if rank not in (2, 3):
        raise ValueError(
            "`query` must have shape (batch_size, d_q) or (batch_size, Tq, d_q). "
            f"Received: query with shape {_shape(query)}"
        )
    n_mem, n_keys = _shape(memory)[1], _shape(keys)[1]
    if n_mem is not None and n_keys is not None and n_mem != n_keys:
        raise ValueError(
            "`keys` and `memory` must have the same number of slots. "
            f"Received: keys with shape {_shape(keys)}, memory with shape {_shape(memory)}"
        )
    single = rank == 2
    if single:
        query = ops.expand_dims(query, 1)
        if sharpness is not None:
            sharpness = ops.expand_dims(ops.convert_to_tensor(sharpness), 1)
    layer = _resolve_score(score, keys.dtype)
    score_kwargs = {}
    if sharpness is not None:
        if "sharpness" not in inspect.signature(layer.call).parameters:
            raise ValueError(
                "`sharpness` is only accepted with a score that takes a per-query sharpness "
                f"(CosineScore). Received: score={type(layer).__name__}, sharpness given"
            )
        score_kwargs["sharpness"] = sharpness
    query = ops.cast(query, keys.dtype)
    scores = layer(query, keys, **score_kwargs)
    if getattr(layer, "_attnkit_from_name", False) and layer.weights:
        raise ValueError(
            "A score with weights must be passed as a layer instance, so that its weights "
            f"persist between calls. Received: score={score!r}"
        )
    slots = _slot_mask(memory, memory_mask, memory_lengths)
    mask = None if slots is None else ops.expand_dims(slots, 1)
    weights = masking.masked_softmax(ops.cast(scores, memory.dtype), mask)
    return weights[:, 0, :] if single else weights


def memory_read(
    memory,
    query,
    score="dot",
    *,
    keys=None,
    memory_mask=None,
    memory_lengths=None,
    sharpness=None,
    return_weights=False,
):
    """Reads an external memory by content: r = Σ_i softmax_i(s(k_i, q)) m_i.

    α_i = softmax_i(s(k_i, q)),   r = Σ_i α_i m_i,   with k_i = m_i unless `keys` are given.

    A soft, differentiable read: gradients flow to the memory, the query (and the keys and
    the score's weights). Padded slots (`memory_mask`, `memory_lengths`) get zero weight;
    a fully masked memory reads a zero vector.

    Args:
        memory: tensor of shape `(batch_size, memory_size, width)`, the slots m_i.
        query: tensor of shape `(batch_size, d_q)` or `(batch_size, Tq, d_q)`.
        score: the score s; see `memory_address`. Defaults to `"dot"`.
        keys: optional tensor `(batch_size, memory_size, d_k)`, separate addressing keys
            (key-value read, as memory A / memory C of the end-to-end memory network).
        memory_mask: optional boolean tensor `(batch_size, memory_size)`.
        memory_lengths: optional integer tensor `(batch_size,)`.
        sharpness: optional per-query β `(batch_size,)` or `(batch_size, Tq)` for
            `CosineScore` (NTM key strength).
        return_weights: bool, whether to also return the addressing weights α.

    Returns:
        The read vector r of shape `(batch_size, width)` for a single query or
        `(batch_size, Tq, width)`; with `return_weights=True` also α of shape
        `(batch_size, memory_size)` or `(batch_size, Tq, memory_size)`.

    Source: NNDL 8.5 (memory-augmented networks: reading by attention over memory slots).
    """
    memory = check_memory(memory)
    weights = memory_address(
        memory,
        query,
        score,
        keys=keys,
        memory_mask=memory_mask,
        memory_lengths=memory_lengths,
        sharpness=sharpness,
    )
    if len(_shape(weights)) == 2:
        read = ops.sum(ops.expand_dims(weights, -1) * memory, axis=1)
    else:
        read = precision.matmul(weights, memory)
    if return_weights:
        return read, weights
    return read


def memory_write(memory, weights, erase, add, *, memory_mask=None, memory_lengths=None):
    """Writes to an external memory with the erase/add rule of the Neural Turing Machine.

    m_i ← m_i ⊙ (1 − α_i e) + α_i a

    With H write heads (weights `(B, H, N)`, erase and add `(B, H, d)`), the erasures multiply
    and the additions sum, as in Graves et al. 2014 §3.2:
    m_i ← m_i ⊙ Π_h (1 − α_{h,i} e_h) + Σ_h α_{h,i} a_h.
    A slot is erased where both its weight and the erase vector are 1, and left untouched
    where its weight is 0. Masked slots (`memory_mask`, `memory_lengths`) are never written.

    Args:
        memory: tensor of shape `(batch_size, memory_size, width)`.
        weights: the write weights α, shape `(batch_size, memory_size)` or
            `(batch_size, heads, memory_size)` (e.g. from `memory_address` or the NTM
            addressing functions).
        erase: the erase vector e, entries in [0, 1], shape `(batch_size, width)` or
            `(batch_size, heads, width)`.
        add: the add vector a, shape `(batch_size, width)` or `(batch_size, heads, width)`.
        memory_mask: optional boolean tensor `(batch_size, memory_size)`.
        memory_lengths: optional integer tensor `(batch_size,)`.

    Returns:
        The new memory, of shape `(batch_size, memory_size, width)`.

    Source: NNDL 8.5 (writing an external memory); Graves et al. 2014 §3.2 (erase and add).
    """
    memory = check_memory(memory)
    weights, erase, add = (ops.convert_to_tensor(x) for x in (weights, erase, add))
    w_shape, e_shape, a_shape, m_shape = map(_shape, (weights, erase, add, memory))
    if len(w_shape) not in (2, 3):
        raise ValueError(
            "`weights` must have shape (batch_size, memory_size) or "
            f"(batch_size, heads, memory_size). Received: weights with shape {w_shape}"
        )
    for name, shape in (("erase", e_shape), ("add", a_shape)):
        if len(shape) != len(w_shape):
            raise ValueError(
                f"`{name}` must have shape (batch_size, width) for weights of shape "
                "(batch_size, memory_size), or (batch_size, heads, width) for weights of "
                f"shape (batch_size, heads, memory_size). Received: {name} with shape "
                f"{shape}, weights with shape {w_shape}"
            )
        if shape[-1] is not None and m_shape[-1] is not None and shape[-1] != m_shape[-1]:
            raise ValueError(
                f"`{name}` must have the width of the memory ({m_shape[-1]}). "
                f"Received: {name} with shape {shape}, memory with shape {m_shape}"
            )
    if w_shape[-1] is not None and m_shape[1] is not None and w_shape[-1] != m_shape[1]:
        raise ValueError(
            "`weights` must have one entry per memory slot. "
            f"Received: weights with shape {w_shape}, memory with shape {m_shape}"
        )
    if len(w_shape) == 3:
        for name, shape in (("erase", e_shape), ("add", a_shape)):
            if shape[1] is not None and w_shape[1] is not None and shape[1] != w_shape[1]:
                raise ValueError(
                    f"`weights` and `{name}` must have the same number of heads. "
                    f"Received: weights with shape {w_shape}, {name} with shape {shape}"
                )
    dtype = memory.dtype
    weights, erase, add = (ops.cast(x, dtype) for x in (weights, erase, add))
    if len(w_shape) == 2:
        weights, erase, add = (ops.expand_dims(x, 1) for x in (weights, erase, add))
    slots = _slot_mask(memory, memory_mask, memory_lengths)
    if slots is not None:
        weights = ops.where(ops.expand_dims(slots, 1), weights, ops.zeros_like(weights))
    # (B, H, N, 1) * (B, H, 1, d) -> (B, H, N, d)
    w = ops.expand_dims(weights, -1)
    keep = ops.prod(1.0 - w * ops.expand_dims(erase, 2), axis=1)
    added = ops.sum(w * ops.expand_dims(add, 2), axis=1)
    return memory * keep + added
