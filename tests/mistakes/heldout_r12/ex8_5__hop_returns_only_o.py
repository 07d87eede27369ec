"""Exercise 8-5 — two ways to use an external memory: memory-network hops and NTM addressing.

NNDL §8.5 (memory-augmented neural networks): §8.5.1 the end-to-end memory network (Sukhbaatar
et al. 2015) and §8.5.2 the neural Turing machine (Graves et al. 2014). The book's exercise 8-5
asks what the two have in common and how they differ in the way they operate on their external
memory. You write the read mechanism of each as code here, then compare them in words in
`answers/8-5.md`.

An end-to-end memory network (MemN2N) only READS a memory that is fixed for the whole question,
by content, several times (hops). Each memory slot i has an input (addressing) vector a_i and an
output vector c_i:

    p = softmax(A q)      o = Σ_i p_i c_i      q ← q + o          (one hop)

A neural Turing machine (NTM) READS AND WRITES its memory M at every time step, and finds WHERE
with a four-step address that mixes content and location:

    w^c = softmax(β cos(k, M_i))            content: which rows look like the key
    w^g = g w^c + (1 − g) w_prev             interpolation with last step's weights
    w̃_i = Σ_o s_o w^g_(i − o) mod N          circular shift by a distribution over offsets
    w_i = w̃_i^γ / Σ_j w̃_j^γ                 sharpening

Grade your work with `grader check 8-5`. Values are compared with the reference in float64 over
many random arguments and shapes (batch 1 and several, one memory slot, width 1, N = 2 slots
where a shift wraps around at once). The two given layers, `MemN2NRead` and `NTMAddressing`,
run your functions so that the grader can also compare their GRADIENTS with respect to every
input (and their float32 dtype): write these functions with `keras.ops` (a round trip through
NumPy cuts the gradient). Keep the names and signatures below; every function takes a batch.

Parts: memn2n_hop 2, memn2n_read 1, content_weights 2, interpolate and sharpen 1,
circular_shift 2, ntm_address 2 — 10 points; the written comparison goes to the instructor.
"""

import keras
from keras import ops

# --------------------------------------------------------------------------------------------
# End-to-end memory network (NNDL §8.5.1): read-only, content-based, several hops.
# --------------------------------------------------------------------------------------------


def memn2n_hop(query, memory_in, memory_out):
    """One hop of an end-to-end memory network: read the memory, add what was read to the query.

    p_i = softmax_i(a_iᵀ q)       (a_i = memory_in[b, i], the addressing vectors)
    o   = Σ_i p_i c_i             (c_i = memory_out[b, i], the output vectors)
    return q + o                  (the query of the next hop)

    Args:
        query: q, shape (B, d).
        memory_in: the addressing memory A, shape (B, n, d): n slots.
        memory_out: the output memory C, shape (B, n, d).

    Returns:
        The next query q + o, shape (B, d). The softmax runs over the n slots of each batch row.
    """
    q = ops.convert_to_tensor(query)
    relevance = ops.einsum("bd,bnd->bn", q, ops.convert_to_tensor(memory_in))
    attention = ops.softmax(relevance, axis=-1)
    read_out = ops.einsum("bn,bnd->bd", attention, ops.convert_to_tensor(memory_out))
    return read_out


def memn2n_read(query, memory_in, memory_out, hops):
    """`hops` hops of `memn2n_hop` with the same memories (layer-wise weight tying).

    q^(1) = query;  q^(k+1) = q^(k) + o^(k)  for k = 1 .. hops;  return q^(hops + 1).

    The network's answer module then predicts from what this returns: Sukhbaatar et al.'s
    â = softmax(W (o^(K) + q^(K))) takes exactly q^(K+1).

    Args:
        query: shape (B, d).
        memory_in, memory_out: shape (B, n, d) each, the same at every hop.
        hops: int K ≥ 1.

    Returns:
        Shape (B, d).
    """
    next_query = query
    for _ in range(int(hops)):
        next_query = memn2n_hop(next_query, memory_in, memory_out)
    return next_query


class MemN2NRead(keras.layers.Layer):
    """Given: not part of the exercise. `memn2n_read` as a layer, so that gradients are checked.

    Call arguments: query (B, d), memory_in (B, n, d), memory_out (B, n, d).
    """

    def __init__(self, hops=1, **kwargs):
        super().__init__(**kwargs)
        self.hops = hops

    def call(self, query, memory_in, memory_out):
        return memn2n_read(query, memory_in, memory_out, self.hops)


# --------------------------------------------------------------------------------------------
# Neural Turing machine addressing (NNDL §8.5.2; Graves et al. 2014, §3.3): content, then
# location. Memory M has N rows (slots) of width W; one head, one weighting per batch row.
# --------------------------------------------------------------------------------------------


def content_weights(memory, key, beta):
    """Content addressing: cosine similarity of the key with every row, times β, softmax.

    w^c_i = exp(β K(k, M_i)) / Σ_j exp(β K(k, M_j)),    K(u, v) = uᵀv / (‖u‖ ‖v‖)

    β ≥ 0 is the key strength: β = 0 gives uniform weights, a large β focuses on the best row.
    The grader uses β up to about a thousand: use a numerically stable softmax. It never passes
    an all-zero row or key (an epsilon of 1e-8 or less in the norms does no harm).

    Args:
        memory: M, shape (B, N, W).
        key: k, shape (B, W).
        beta: β, shape (B,): one per batch row.

    Returns:
        w^c, shape (B, N); each row sums to 1.
    """
    rows, probe = ops.convert_to_tensor(memory), ops.convert_to_tensor(key)
    similarity = ops.einsum("bnw,bw->bn", rows, probe)
    similarity = similarity / (ops.norm(rows, axis=-1) * ops.norm(probe, axis=-1)[:, None])
    strength = ops.cast(ops.convert_to_tensor(beta), rows.dtype)[:, None]
    return ops.softmax(strength * similarity, axis=-1)


def interpolate(w_content, w_previous, gate):
    """Interpolation gate: w^g = g w^c + (1 − g) w_prev.

    g = 1 keeps the content weights; g = 0 ignores the content and keeps last step's weights
    (so that location-based addressing can go on from where it was).

    Args:
        w_content: w^c, shape (B, N).
        w_previous: w_prev, shape (B, N).
        gate: g in [0, 1], shape (B,).

    Returns:
        w^g, shape (B, N).
    """
    w_content = ops.convert_to_tensor(w_content)
    g = ops.cast(ops.convert_to_tensor(gate), w_content.dtype)[:, None]
    return g * w_content + (1.0 - g) * ops.convert_to_tensor(w_previous)


def circular_shift(weights, shift):
    """Location addressing: a circular convolution of the weights with a shift distribution.

    w̃_i = Σ_{o=−k}^{k} s_o w_{(i − o) mod N}

    `shift` has 2k + 1 entries per row, for the offsets −k, …, +k in that order: shift[:, j] is
    the probability of offset j − k. With 3 entries (the usual case) the order is (−1, 0, +1).
    Offset +1 moves the focus one slot FORWARD: with s = (0, 0, 1), w̃_i = w_(i−1), so the weight
    of slot i lands on slot i + 1, and the weight of the last slot on slot 0 (the memory is a
    ring: indices wrap around modulo N, even when N is smaller than 2k + 1).

    Args:
        weights: w^g, shape (B, N).
        shift: s, shape (B, 2k + 1), rows summing to 1.

    Returns:
        w̃, shape (B, N).
    """
    weights = ops.convert_to_tensor(weights)
    shift = ops.cast(ops.convert_to_tensor(shift), weights.dtype)
    width = shift.shape[-1]
    shifted = [ops.roll(weights, j - width // 2, axis=-1) for j in range(width)]
    return ops.einsum("bj,jbn->bn", shift, ops.stack(shifted))


def sharpen(weights, gamma):
    """Sharpening: w_i = w̃_i^γ / Σ_j w̃_j^γ, with γ ≥ 1.

    The shift blurs the focus; raising to a power γ and renormalising sharpens it again.

    Args:
        weights: w̃, shape (B, N), entries > 0.
        gamma: γ ≥ 1, shape (B,).

    Returns:
        w, shape (B, N); each row sums to 1.
    """
    weights = ops.convert_to_tensor(weights)
    exponent = ops.cast(ops.convert_to_tensor(gamma), weights.dtype)[:, None]
    raised = ops.power(weights, exponent)
    return raised / ops.sum(raised, axis=-1, keepdims=True)


def ntm_address(memory, key, beta, gate, w_previous, shift, gamma):
    """The whole NTM addressing of one head: content → interpolation → shift → sharpening.

    w = sharpen(circular_shift(interpolate(content_weights(M, k, β), w_prev, g), s), γ)

    Args:
        memory: (B, N, W); key: (B, W); beta, gate, gamma: (B,); w_previous: (B, N);
        shift: (B, 2k + 1), offsets −k..k as in `circular_shift`.

    Returns:
        The head's weights w, shape (B, N). Gradients w.r.t. every argument are checked.
    """
    focus = content_weights(memory, key, beta)
    focus = interpolate(focus, w_previous, gate)
    focus = circular_shift(focus, shift)
    return sharpen(focus, gamma)


class NTMAddressing(keras.layers.Layer):
    """Given: not part of the exercise. `ntm_address` as a layer, so that gradients are checked.

    Call arguments: memory, key, beta, gate, w_previous, shift, gamma as in `ntm_address`.
    """

    def call(self, memory, key, beta, gate, w_previous, shift, gamma):
        return ntm_address(memory, key, beta, gate, w_previous, shift, gamma)
