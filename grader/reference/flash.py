"""Independent float64 NumPy references for blockwise attention with an online softmax (lab
flash, the forward pass of FlashAttention: Milakov and Gimelshein 2018; Rabe and Staats 2021;
Dao et al. 2022). Loops over the batch, queries and keys, from the recurrences, not from
attnkit's blockwise attention. Parameters are named like the grader's case arrays; the
arguments after the maths' own are what a known mistake changes (see
grader.vocabulary.spec.Mistake.of).

The online softmax's state is one array (B, Tq, 2 + d_v) per query: state[..., 0] the running
maximum m of the scores seen so far, state[..., 1] the running sum l = Σ_j e^(s_j − m),
state[..., 2:] the running unnormalised output o = Σ_j e^(s_j − m) v_j. The empty state (no
key seen) is m = −∞, l = 0, o = 0.
"""

import math

import numpy as np


def as64(x):
    """A float64 COPY of x: the grader's mutant search (grader.engine.search) runs edited
    copies of these functions on the case's own arrays, and an edit that writes into a view of
    an argument must not change the case."""
    return np.array(x, dtype=np.float64)


def empty_state(batch, queries, value_dim):
    """The state before any key: m = −∞, l = 0, o = 0."""
    state = np.zeros((batch, queries, 2 + value_dim))
    state[..., 0] = -np.inf
    return state


def online_softmax_step(
    state,
    query,
    key_block,
    value_block,
    scaled=True,
    running_max=True,
    rescale_sum=True,
    rescale_output=True,
):
    """The state after one more block of keys, query by query:

        s_j = q·k_j / √d,   m' = max(m, max_j s_j),
        l' = l e^(m − m') + Σ_j e^(s_j − m'),   o' = o e^(m − m') + Σ_j e^(s_j − m') v_j.

    Known mistakes: the scores not `scaled` by 1/√d, m' the block's maximum alone (not the
    `running_max`), the old sum or output not rescaled by e^(m − m') (`rescale_sum`,
    `rescale_output`)."""
    state, query = as64(state), as64(query)
    key_block, value_block = as64(key_block), as64(value_block)
    batch, queries, depth = query.shape
    new = np.zeros_like(state)
    for b in range(batch):
        for i in range(queries):
            scores = np.array([query[b, i] @ key for key in key_block[b]])
            if scaled:
                scores = scores / math.sqrt(depth)
            old_max, old_sum, old_output = state[b, i, 0], state[b, i, 1], state[b, i, 2:]
            new_max = max(old_max, scores.max()) if running_max else scores.max()
            with np.errstate(over="ignore", invalid="ignore"):  # the block-max mistake's
                decay = np.exp(old_max - new_max) if old_max > -np.inf else 0.0
                weights = np.exp(scores - new_max)
                new[b, i, 0] = new_max
                new[b, i, 1] = old_sum * (decay if rescale_sum else 1.0) + weights.sum()
                new[b, i, 2:] = old_output * (decay if rescale_output else 1.0)
                new[b, i, 2:] += sum(w * v for w, v in zip(weights, value_block[b], strict=True))
    return new


def flash_forward(state, query, key, value, block_size, resumed=True, carried=True):
    """The states (n_blocks, B, Tq, 2 + d_v) after each block of `block_size` keys (the last
    block shorter where block_size does not divide Tk), from `state`. Known mistakes: the given
    state not `resumed` (the empty state instead), the state not `carried` from one block to
    the next (each block from the given state)."""
    state, key, value = as64(state), as64(key), as64(value)
    start = state if resumed else empty_state(*state.shape[:2], state.shape[2] - 2)
    states, current = [], start
    for first in range(0, key.shape[1], block_size):
        blocks = key[:, first : first + block_size], value[:, first : first + block_size]
        current = online_softmax_step(current if carried else start, query, *blocks)
        states.append(current)
    return np.stack(states)


def attention(query, key, value, normalised=True):
    """softmax(q·k_j / √d) v_j summed over all keys, query by query (the exact attention the
    blocks must give); without `normalised`, the weights e^(s_j − max s) are not divided by
    their sum (a known mistake)."""
    query, key, value = as64(query), as64(key), as64(value)
    batch, queries, depth = query.shape
    out = np.zeros((batch, queries, value.shape[-1]))
    for b in range(batch):
        for i in range(queries):
            scores = key[b] @ query[b, i] / math.sqrt(depth)
            weights = np.exp(scores - scores.max())
            if normalised:
                weights = weights / weights.sum()
            out[b, i] = weights @ value[b]
    return out


def logsumexp(query, key, shifted=True):
    """L = log Σ_j e^(s_j) over all keys, (B, Tq), computed as max + log Σ e^(s_j − max);
    without `shifted`, the maximum is not added back (log l alone: a known mistake)."""
    query, key = as64(query), as64(key)
    batch, queries, depth = query.shape
    out = np.zeros((batch, queries))
    for b in range(batch):
        for i in range(queries):
            scores = key[b] @ query[b, i] / math.sqrt(depth)
            top = scores.max()
            out[b, i] = math.log(np.exp(scores - top).sum()) + (top if shifted else 0.0)
    return out


def block_weights(query, key_block, logsumexp, within_block=False, scaled=True):
    """The softmax weights of one block of keys, recomputed from the saved L: p_j =
    e^(q·k_j / √d − L), (B, Tq, block). Known mistakes: normalised `within_block` (a softmax
    over the block's keys alone), the scores not `scaled` by 1/√d."""
    query, key_block, logsumexp = as64(query), as64(key_block), as64(logsumexp)
    batch, queries, depth = query.shape
    out = np.zeros((batch, queries, key_block.shape[1]))
    for b in range(batch):
        for i in range(queries):
            scores = key_block[b] @ query[b, i]
            if scaled:
                scores = scores / math.sqrt(depth)
            if within_block:
                weights = np.exp(scores - scores.max())
                out[b, i] = weights / weights.sum()
            else:
                out[b, i] = np.exp(scores - logsumexp[b, i])
    return out


def resumes(state):
    """Whether the state is not the empty one (earlier keys were seen)."""
    return bool(np.all(np.isfinite(np.asarray(state)[..., 0])))


def several_blocks(key, block_size):
    """Whether the keys make two blocks or more."""
    return np.shape(key)[1] > block_size


def several_features(query):
    """Whether d > 1 (else scaling by 1/√d changes nothing)."""
    return np.shape(query)[-1] > 1


def other_keys(query, key_block, logsumexp):
    """Whether L holds keys outside the block (else a softmax within the block is right)."""
    return not np.allclose(logsumexp, globals()["logsumexp"](query, key_block))
