"""Lab: flash — exact attention in blocks of keys with an online softmax (FlashAttention's forward).

NNDL §8.2 (attention pooling) and §8.3; Milakov and Gimelshein 2018 (online softmax); Rabe and
Staats 2021; Dao et al. 2022 (FlashAttention). Attention softmax(QKᵀ/√d)V builds a (Tq, Tk)
matrix of scores. It need not: walk over the keys one block at a time, keeping for every query
a running maximum m, a running sum l and a running unnormalised output o. After a block with
scores s_j = q·k_j / √d:

    m' = max(m, max_j s_j)
    l' = l e^(m − m') + Σ_j e^(s_j − m')
    o' = o e^(m − m') + Σ_j e^(s_j − m') v_j

and after the last block, output = o / l and L = m + log l = log Σ_j e^(s_j), the
log-sum-exp that the backward pass saves to recompute any block's weights p_j = e^(s_j − L)
without the whole softmax. Subtracting the running maximum keeps every e^(·) ≤ 1: scores of
±1000 do not overflow.

The state of one query is one row: state[..., 0] = m, state[..., 1] = l, state[..., 2:] = o,
shape (B, Tq, 2 + d_v); `empty_state` (given) is the state before any key (m = −∞, l = 0,
o = 0).

Grade your work with `grader check flash`. The functions are called with NumPy arrays in
float64 (and once in float32). The grader gives `online_softmax_step` and `block_weights` one
block of keys at a time, with states and log-sum-exps it computed from keys it does not send;
`flash_forward` must return the state after EVERY block, starting from a given state; the
layer's gradients are taken through your `flash_attention`. Keep the names and signatures.

Parts: online_softmax_step 3, flash_forward 3, output and log-sum-exp 2, block_weights 1,
gradients 1 — 10 points.
"""

import math

import keras
from keras import ops


def empty_state(query, value):
    """Given: not part of the exercise. The state before any key, (B, Tq, 2 + d_v): m = −∞,
    l = 0, o = 0, in the query's dtype."""
    batch, queries = ops.shape(query)[0], ops.shape(query)[1]
    running_max = ops.full((batch, queries, 1), float("-inf"), dtype=query.dtype)
    return ops.concatenate(
        [running_max, ops.zeros((batch, queries, 1 + ops.shape(value)[-1]), query.dtype)], -1
    )


def online_softmax_step(state, query, key_block, value_block):
    """The state after one more block of keys.

    Args:
        state: (B, Tq, 2 + d_v), [m, l, o] of the keys seen so far (or the empty state).
        query: (B, Tq, d). key_block: (B, Bk, d). value_block: (B, Bk, d_v).

    Returns:
        (B, Tq, 2 + d_v): [m', l', o'] with s_j = q·k_j / √d over the block's keys,
        m' = max(m, max_j s_j), l' = l e^(m − m') + Σ_j e^(s_j − m'),
        o' = o e^(m − m') + Σ_j e^(s_j − m') v_j. Never compute e^(s_j) unshifted.
    """
    running_max, running_sum, output = state[..., 0], state[..., 1], state[..., 2:]
    depth = ops.shape(query)[-1]
    scores = ops.matmul(query, ops.transpose(key_block, (0, 2, 1))) / math.sqrt(depth)
    new_max = ops.maximum(running_max, ops.max(scores, axis=-1))  # (B, Tq)
    decay = ops.exp(running_max - new_max)  # e^(−∞) = 0 after the empty state
    weights = ops.exp(scores - new_max[..., None])  # (B, Tq, Bk), each ≤ 1
    new_sum = running_sum * decay + ops.sum(weights, axis=-1)
    new_output = output * decay[..., None] + ops.matmul(weights, value_block)
    return ops.concatenate([new_max[..., None], new_sum[..., None], new_output], axis=-1)


def flash_forward(state, query, key, value, block_size):
    """Walk over the keys in blocks of `block_size`, from `state`.

    Args:
        state: (B, Tq, 2 + d_v), the state of keys seen before these (or the empty state).
        query: (B, Tq, d). key: (B, Tk, d). value: (B, Tk, d_v).
        block_size: keys per block; the last block is shorter where it does not divide Tk.

    Returns:
        (n_blocks, B, Tq, 2 + d_v): the state after each block, n_blocks = ⌈Tk / block_size⌉.
    """
    states = []
    for start in range(0, ops.shape(key)[1], block_size):
        end = start + block_size
        state = online_softmax_step(state, query, key[:, start:end], value[:, start:end])
        states.append(state)
    return ops.stack(states)


def flash_attention(query, key, value, block_size):
    """softmax(QKᵀ/√d)V computed in blocks of keys: (B, Tq, d), (B, Tk, d), (B, Tk, d_v) ->
    (B, Tq, d_v), the final state's o / l (from the empty state)."""
    final = flash_forward(empty_state(query, value), query, key, value, block_size)[-1]
    return final[..., 2:] / final[..., 1:2]


def saved_logsumexp(query, key, value, block_size):
    """The log-sum-exp the backward pass saves: L = m + log l of the final state, (B, Tq),
    equal to log Σ_j e^(s_j) over all keys."""
    final = flash_forward(empty_state(query, value), query, key, value, block_size)[-1]
    return final[..., 0] + ops.log(final[..., 1])


def block_weights(query, key_block, logsumexp):
    """One block's attention weights recomputed from the saved log-sum-exp (the backward pass).

    Args:
        query: (B, Tq, d). key_block: (B, Bk, d), some of the keys.
        logsumexp: (B, Tq), L of ALL the keys (most of which this block does not hold).

    Returns:
        (B, Tq, Bk): p_j = e^(q·k_j / √d − L), the block's columns of the full softmax.
    """
    depth = ops.shape(query)[-1]
    scores = ops.matmul(query, ops.transpose(key_block, (0, 2, 1)))
    return ops.exp(scores - logsumexp[..., None])


class FlashAttention(keras.layers.Layer):
    """Given: not part of the exercise. Your `flash_attention` as a layer, so that the grader
    takes its gradients with respect to the query, the key and the value."""

    def __init__(self, block_size=2, **kwargs):
        super().__init__(**kwargs)
        self.block_size = block_size

    def call(self, query, key, value):
        return flash_attention(query, key, value, self.block_size)
