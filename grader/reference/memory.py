"""External memory: cosine addressing, NTM read/write and addressing, memory networks (MemN2N).

Each function follows the formula of the paper or the book, written from scratch with Python
loops over examples, slots and heads; none imports attnkit.
"""

import numpy as np

from grader.reference.attention import as64, masked_softmax, sigmoid
from grader.reference.recurrent import lstm_step


def softplus(x):
    return np.log1p(np.exp(as64(x)))


#: CosineScore documents x̂ = x / sqrt(Σ x² + ε) with ε = 1e-12 (a zero vector scores 0); the
#: NTM memory starts at 1e-6 per entry, where that ε is not negligible in float64.
COSINE_EPSILON = 1e-12


def cosine(u, v):
    """uᵀv / (sqrt(‖u‖² + ε) sqrt(‖v‖² + ε))."""
    u, v = as64(u), as64(v)
    return float(
        np.dot(u, v) / np.sqrt((np.dot(u, u) + COSINE_EPSILON) * (np.dot(v, v) + COSINE_EPSILON))
    )


def read(memory, weights):
    """r = Σ_i w_i m_i for weights (N,) or (H, N) and memory (N, d) of one example."""
    memory, weights = as64(memory), as64(weights)
    if weights.ndim == 1:
        return sum(weights[i] * memory[i] for i in range(len(weights)))
    return np.stack([read(memory, w) for w in weights])


def write(memory, weights, erase, add):
    """Erase/add write of one example; weights (H, N), erase and add (H, d)."""
    memory = as64(memory).copy()
    weights, erase, add = as64(weights), as64(erase), as64(add)
    new = np.zeros_like(memory)
    for i in range(memory.shape[0]):
        keep = np.ones(memory.shape[1])
        added = np.zeros(memory.shape[1])
        for h in range(weights.shape[0]):
            keep = keep * (1.0 - weights[h, i] * erase[h])
            added = added + weights[h, i] * add[h]
        new[i] = memory[i] * keep + added
    return new


def content_addressing(memory, key, beta, keep=None):
    """w_i = softmax_i(β cos(k, M_i)) for one head of one example."""
    scores = np.array([beta * cosine(as64(key), as64(m)) for m in memory])
    return masked_softmax(scores, keep)


def circular_shift(weights, shift):
    """w̃_i = Σ_j w_j s((i − j) mod N), with s indexed by offsets −k..k."""
    weights, shift = as64(weights), as64(shift)
    n, k = len(weights), len(shift) // 2
    kernel = np.zeros(n)  # kernel[o mod N] accumulates s at offset o
    for index, value in enumerate(shift):
        kernel[(index - k) % n] += value
    return np.array([sum(weights[j] * kernel[(i - j) % n] for j in range(n)) for i in range(n)])


def sharpen(weights, gamma):
    powered = as64(weights) ** gamma
    total = powered.sum()
    return powered / total if total > 0 else np.zeros_like(powered)


def address(memory, previous, key, beta, gate, shift, gamma):
    wc = content_addressing(memory, key, beta)
    wg = gate * wc + (1.0 - gate) * as64(previous)
    return sharpen(circular_shift(wg, shift), gamma)


def ntm_sequence(inputs, w, cfg):
    """Runs the NTM of Graves et al. 2014 (as specified in NTMCell's docstring) in float64.

    Args:
        inputs: (B, T, input_dim).
        w: dict of weights: controller (`kernel`, `recurrent_kernel`, `bias` or `kernel`,
            `bias`), `head_kernel`, `head_bias`, `out_kernel`, `out_bias`.
        cfg: dict with `units, memory_size, memory_width, controller, controller_units,
            num_read_heads, num_write_heads, shift_range`.

    Returns:
        outputs (B, T, units), read weights (B, T, R, N), write weights (B, T, H, N),
        final memory (B, N, W).
    """
    inputs = as64(inputs)
    b_size, steps, _ = inputs.shape
    n, width = cfg["memory_size"], cfg["memory_width"]
    r_heads, w_heads, units = cfg["num_read_heads"], cfg["num_write_heads"], cfg["units"]
    shifts = 2 * cfg["shift_range"] + 1
    p_read = width + 3 + shifts
    p_write = p_read + 2 * width
    outputs = np.zeros((b_size, steps, units))
    all_read_w = np.zeros((b_size, steps, r_heads, n))
    all_write_w = np.zeros((b_size, steps, w_heads, n))
    memories = []
    for b in range(b_size):
        memory = np.full((n, width), 1e-6)
        start = np.zeros(n)
        start[0] = 1.0
        read_w = [start.copy() for _ in range(r_heads)]
        write_w = [start.copy() for _ in range(w_heads)]
        reads = [np.zeros(width) for _ in range(r_heads)]
        h = np.zeros(cfg["controller_units"])
        c = np.zeros(cfg["controller_units"])
        for t in range(steps):
            x = np.concatenate([inputs[b, t], *reads])
            if cfg["controller"] == "lstm":
                h, c = lstm_step(x, h, c, w["kernel"], w["recurrent_kernel"], w["bias"])
            else:
                h = np.tanh(x @ as64(w["kernel"]) + as64(w["bias"]))
            params = h @ as64(w["head_kernel"]) + as64(w["head_bias"])

            def head(p, previous, memory=memory):
                return address(
                    memory,
                    previous,
                    np.tanh(p[:width]),
                    softplus(p[width]),
                    sigmoid(p[width + 1]),
                    masked_softmax(p[width + 3 : width + 3 + shifts]),
                    1.0 + softplus(p[width + 2]),
                )

            read_w = [
                head(params[r * p_read : (r + 1) * p_read], read_w[r]) for r in range(r_heads)
            ]
            reads = [read(memory, wr) for wr in read_w]
            erase, add = [], []
            new_write_w = []
            for hd in range(w_heads):
                p = params[r_heads * p_read + hd * p_write : r_heads * p_read + (hd + 1) * p_write]
                new_write_w.append(head(p, write_w[hd]))
                erase.append(sigmoid(p[p_read : p_read + width]))
                add.append(np.tanh(p[p_read + width : p_read + 2 * width]))
            write_w = new_write_w
            memory = write(memory, np.array(write_w), np.array(erase), np.array(add))
            y = np.concatenate([h, *reads]) @ as64(w["out_kernel"]) + as64(w["out_bias"])
            outputs[b, t] = y
            all_read_w[b, t] = read_w
            all_write_w[b, t] = write_w
        memories.append(memory)
    return outputs, all_read_w, all_write_w, np.array(memories)


def position_encoding(sentence_length, dim):
    """l_kj = (1 − j/J) − (k/d)(1 − 2j/J), j and k from 1; returned as (J, d)."""
    out = np.zeros((sentence_length, dim))
    for j in range(1, sentence_length + 1):
        for k in range(1, dim + 1):
            out[j - 1, k - 1] = (1 - j / sentence_length) - (k / dim) * (
                1 - 2 * j / sentence_length
            )
    return out


def memn2n(story, question, w, hops, tying, temporal, encoding, projection, keep_slots=None):
    """Sukhbaatar et al. 2015 forward pass, example by example; returns (logits, attention).

    `w` holds the weights by name (`embedding_0..K`, `temporal_0..K` for adjacent tying;
    `embedding_a/b/c`, `temporal_a/c`, `answer_kernel` for layer-wise; `hop_kernel`).
    """
    story, question = np.asarray(story), np.asarray(question)
    b_size, slots, length = story.shape
    logits, attention = [], []

    def embed(tokens, matrix):
        matrix = as64(matrix)
        pe = position_encoding(len(tokens), matrix.shape[1]) if encoding == "position" else None
        total = np.zeros(matrix.shape[1])
        for j, token in enumerate(tokens):
            if token != 0:
                total = total + (matrix[token] * pe[j] if pe is not None else matrix[token])
        return total

    for b in range(b_size):
        if tying == "adjacent":
            u = embed(question[b], w["embedding_0"])
        else:
            u = embed(question[b], w["embedding_b"])
        keep = np.array([np.any(story[b, i] != 0) for i in range(slots)])
        if keep_slots is not None:
            keep &= np.asarray(keep_slots[b], bool)
        hop_attention = []
        for k in range(hops):
            if tying == "adjacent":
                a, c = w[f"embedding_{k}"], w[f"embedding_{k + 1}"]
                ta = w.get(f"temporal_{k}") if temporal else None
                tc = w.get(f"temporal_{k + 1}") if temporal else None
            else:
                a, c = w["embedding_a"], w["embedding_c"]
                ta = w.get("temporal_a") if temporal else None
                tc = w.get("temporal_c") if temporal else None
            m = [
                embed(story[b, i], a) + (as64(ta[i]) if ta is not None else 0) for i in range(slots)
            ]
            cs = [
                embed(story[b, i], c) + (as64(tc[i]) if tc is not None else 0) for i in range(slots)
            ]
            p = masked_softmax(np.array([np.dot(mi, u) for mi in m]), keep)
            o = sum(p[i] * cs[i] for i in range(slots))
            hop_attention.append(p)
            if k < hops - 1:
                u = (u @ as64(w["hop_kernel"]) if projection else u) + o
        final = u + o
        if tying == "adjacent":
            logits.append(as64(w[f"embedding_{hops}"]) @ final)
        else:
            logits.append(final @ as64(w["answer_kernel"]))
        attention.append(hop_attention)
    return np.array(logits), np.array(attention)
