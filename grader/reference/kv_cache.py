"""Independent float64 NumPy references for incremental decoding with a key/value cache (lab
kv-cache): the cache's update, one decoding step of causal self-attention over it, a whole
sequence decoded step by step, and the full causal pass it must equal. Loops over the batch,
heads and positions, from the formulas. Their parameters are named like the grader's case
arrays; the arguments after the maths' own are what a known mistake changes (see
grader.vocabulary.spec.Mistake.of).

The cache is laid out as attnkit's and keras-hub's: cache[:, 0] the keys, cache[:, 1] the
values, shape (B, 2, L, H, d).
"""

import math

import numpy as np

from grader.reference.attention import as64, softmax


def update_cache(cache, key, value, cache_update_index, swapped=False, offset=0, everywhere=False):
    """A new cache: the key (B, 1, H, d) at cache[:, 0, index], the value at cache[:, 1, index],
    every other entry as it was. Known mistakes: key and value `swapped`, written at index +
    `offset`, written at `everywhere` (every position)."""
    new = as64(cache).copy()
    key, value = as64(key), as64(value)
    if swapped:
        key, value = value, key
    where = slice(None) if everywhere else cache_update_index + offset
    for b in range(new.shape[0]):
        new[b, 0, where] = key[b, 0]
        new[b, 1, where] = value[b, 0]
    return new


def attend_cached(query, cache, cache_update_index, visible="<=", scaled=True, values=1):
    """The output (B, 1, H, d) of the query of the token at position `cache_update_index`:
    per example and head, softmax over the positions j ≤ index of q·k_j / √d, times v_j.
    Known mistakes: `visible` "all" (later positions not masked) or "<" (its own position
    masked), not `scaled` by 1/√d, the weights applied to slot `values` 0 (the keys)."""
    query, cache = as64(query), as64(cache)
    batch, _, length, heads, depth = cache.shape
    seen = {"<=": cache_update_index + 1, "<": cache_update_index, "all": length}[visible]
    out = np.zeros_like(query)
    for b in range(batch):
        for h in range(heads):
            scores = np.array([query[b, 0, h] @ cache[b, 0, j, h] for j in range(seen)])
            if scaled:
                scores = scores / math.sqrt(depth)
            weights = softmax(scores)
            out[b, 0, h] = sum(weights[j] * cache[b, values, j, h] for j in range(seen))
    return out


def causal_attention(query, key, value, causal=True):
    """The full causal pass over a sequence (B, T, H, d): output t of each example and head is
    softmax over j ≤ t of q_t·k_j / √d, times v_j (all T positions without `causal`)."""
    query, key, value = as64(query), as64(key), as64(value)
    batch, steps, heads, depth = query.shape
    out = np.zeros_like(query)
    for b in range(batch):
        for h in range(heads):
            for t in range(steps):
                seen = t + 1 if causal else steps
                scores = np.array([query[b, t, h] @ key[b, j, h] for j in range(seen)])
                weights = softmax(scores / math.sqrt(depth))
                out[b, t, h] = sum(weights[j] * value[b, j, h] for j in range(seen))
    return out


def incremental_attention(
    query, key, value, max_length, kept=True, advanced=True, written_first=True
):
    """The sequence (B, T, H, d) decoded one token at a time: from an empty (zero) cache of
    `max_length` positions, token t's key and value written at position t, then its query
    attended over positions ≤ t. Known mistakes: the cache not `kept` from one step to the
    next (a new empty cache each step), the index not `advanced` (always 0), the token's key
    and value not `written_first` (its query attends before they are in the cache)."""
    query, key, value = as64(query), as64(key), as64(value)
    batch, steps, heads, depth = query.shape
    cache = np.zeros((batch, 2, max_length, heads, depth))
    outputs = []
    for t in range(steps):
        index = t if advanced else 0
        if not kept:
            cache = np.zeros_like(cache)
        if written_first:
            cache = update_cache(cache, key[:, t : t + 1], value[:, t : t + 1], index)
        outputs.append(attend_cached(query[:, t : t + 1], cache, index))
        if not written_first:
            cache = update_cache(cache, key[:, t : t + 1], value[:, t : t + 1], index)
    return np.concatenate(outputs, axis=1)


def later_positions(cache, cache_update_index):
    """Whether the cache holds positions after `cache_update_index` (to be masked, or where a
    late write lands)."""
    return cache_update_index + 1 < np.shape(cache)[2]


def earlier_positions(cache_update_index):
    """Whether the token has earlier positions to attend to besides its own."""
    return cache_update_index > 0


def several_features(query):
    """Whether d > 1 (else scaling by 1/√d changes nothing)."""
    return np.shape(query)[-1] > 1


def several_steps(query):
    """Whether the sequence has two tokens or more."""
    return np.shape(query)[1] > 1
