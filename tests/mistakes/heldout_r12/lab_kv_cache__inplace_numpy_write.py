"""Lab: kv-cache — one decoding step of causal self-attention with a key/value cache.

NNDL §8.3 (self-attention); Vaswani et al. 2017 (the decoder's masked self-attention). A
decoder that generates one token at a time would recompute the keys and values of every
earlier token at every step. Under a causal mask they never change, so they are computed once
and kept in a cache; each step writes the new token's key and value at its position
`cache_update_index` and attends over the positions ≤ that index only:

    out = Σ_{j ≤ index} softmax_j(q · k_j / √d) v_j

The cache is one tensor, laid out as attnkit's and keras-hub's:

    cache[:, 0] = keys, cache[:, 1] = values,  shape (B, 2, L, H, d)

(B sequences, L positions, H heads of size d). Positions after the index hold zeros or stale
entries of an earlier sequence: they must get exactly zero weight.

Grade your work with `grader check kv-cache`. The functions are called with NumPy arrays in
float64 (and once in float32); return tensors (or arrays) of the same dtype, and leave the
arguments unchanged. Decoding a whole sequence step by step must give the full causal pass.
Keep the names and the signatures below. NumPy is graded the same as keras.ops here; in a
Keras decoder the cache is a tensor, which cannot be written in place: `ops.slice_update`
returns a new one, keeps gradients and compiles, as attnkit's and keras-hub's caches do.

Parts: update_cache 3, attend_cached 4, incremental_attention 3 — 10 points.
"""

import math

import numpy as np

from keras import ops


def update_cache(cache, key, value, cache_update_index):
    """The cache with the new token's key and value written at its position.

    Args:
        cache: (B, 2, L, H, d), keys in cache[:, 0] and values in cache[:, 1].
        key: (B, 1, H, d), the new token's key (one per head).
        value: (B, 1, H, d), its value.
        cache_update_index: int, the new token's position, 0 <= index < L.

    Returns:
        A new (B, 2, L, H, d) tensor: key at [:, 0, index], value at [:, 1, index], every
        other entry as in `cache` (which itself must not change).
    """
    cache = np.asarray(cache)
    cache[:, 0, cache_update_index] = np.asarray(key)[:, 0]
    cache[:, 1, cache_update_index] = np.asarray(value)[:, 0]
    return cache


def attend_cached(query, cache, cache_update_index):
    """One decoding step: the new token's query attends over the cached positions ≤ index.

    Args:
        query: (B, 1, H, d), the query of the token at position `cache_update_index`.
        cache: (B, 2, L, H, d), with the keys and values of positions 0..index written
            (the token's own included); later positions hold anything.
        cache_update_index: int, the token's position.

    Returns:
        (B, 1, H, d): per example and head, Σ_{j ≤ index} softmax_j(q·k_j / √d) v_j.
    """
    keys, values = cache[:, 0], cache[:, 1]  # (B, L, H, d)
    depth, length = query.shape[-1], cache.shape[2]
    scores = ops.einsum("bqhd,bkhd->bhqk", query, keys) / math.sqrt(depth)  # (B, H, 1, L)
    visible = ops.arange(length) <= cache_update_index  # (L,)
    weights = ops.softmax(ops.where(visible, scores, float("-inf")), axis=-1)
    return ops.einsum("bhqk,bkhd->bqhd", weights, values)


def incremental_attention(query, key, value, max_length):
    """Causal self-attention over a whole sequence, decoded one token at a time.

    Start from an empty cache (zeros, (B, 2, max_length, H, d)); for t = 0, 1, ..., T − 1 write
    token t's key and value at position t (`update_cache`) and attend with its query
    (`attend_cached`). The result must equal the full causal pass, where output t attends to
    positions 0..t.

    Args:
        query, key, value: (B, T, H, d), the whole sequence's projected queries, keys, values.
        max_length: int >= T, the positions the cache holds.

    Returns:
        (B, T, H, d): the T steps' outputs in order.
    """
    batch, steps, heads, depth = query.shape
    cache = np.zeros((batch, 2, max_length, heads, depth), dtype=query.dtype)
    outputs = []
    for t in range(steps):
        cache = update_cache(cache, key[:, t : t + 1], value[:, t : t + 1], t)
        outputs.append(attend_cached(query[:, t : t + 1], cache, t))
    return ops.concatenate(outputs, axis=1)
