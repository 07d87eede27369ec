"""External memory: cosine addressing, NTM read/write and addressing, memory networks (MemN2N),
and the neural stack of Grefenstette et al. 2015.

Each function follows the formula of the paper or the book, written from scratch (Python loops
over examples, slots and heads where that keeps it obviously right); none imports attnkit. The
functions of exercises 8-4 and 8-5 take a batch, their parameters are named like the arrays of
those exercises' cases, and their options are the known mistakes (`Mistake.of`).
"""

import numpy as np

from grader.i18n import _
from grader.reference.attention import as64, masked_softmax, sigmoid, softmax
from grader.reference.recurrent import lstm_step


def softplus(x):
    return np.log1p(np.exp(as64(x)))


#: CosineScore documents x̂ = x / sqrt(Σ x² + ε) with ε = 1e-12 (a zero vector scores 0); the
#: NTM memory starts at 1e-6 per entry, where that ε is not negligible in float64.
COSINE_EPSILON = 1e-12


def cosine_rows(memory, key, row_norms=True, key_norm=True, epsilon=0.0):
    """cos(k, M_i) = k·M_i / (sqrt(‖k‖² + ε) sqrt(‖M_i‖² + ε)) for every row: memory (B, N, W),
    key (B, W) -> (B, N). Without `row_norms` or `key_norm`, that norm is left out."""
    memory, key = as64(memory), as64(key)
    scores = np.einsum("bnw,bw->bn", memory, key)
    if row_norms:
        scores = scores / np.sqrt(np.sum(memory * memory, axis=-1) + epsilon)
    if key_norm:
        scores = scores / np.sqrt(np.sum(key * key, axis=-1) + epsilon)[:, None]
    return scores


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
    """w_i = softmax_i(β cos(k, M_i)) for one head of one example, with CosineScore's ε."""
    scores = cosine_rows(as64(memory)[None], as64(key)[None], epsilon=COSINE_EPSILON)[0]
    return masked_softmax(beta * scores, keep)


def circular_shift(
    weights, shift, direction=1, wrap=True, centred=True, hard=False, beyond_ring=True
):
    """w̃_i = Σ_o s_o w_((i − o) mod N), s indexed by the offsets o = −k..k; one shift per row
    of a batch. The mistakes of exercise 8-5: `direction` −1 moves the other way, no `wrap`
    loses what passes an end, not `centred` reads entry j as offset j, `hard` rolls by the most
    likely offset only, not `beyond_ring` leaves the weights unshifted for an offset |o| ≥ N
    (a slice by the raw offset, which Python clamps)."""
    weights, shift = as64(weights), as64(shift)
    if weights.ndim > 1:
        rows = zip(weights, shift, strict=True)
        return np.stack(
            [circular_shift(w, s, direction, wrap, centred, hard, beyond_ring) for w, s in rows]
        )
    if hard:
        shift = np.eye(len(shift))[np.argmax(shift)]
    n, k = len(weights), len(shift) // 2 if centred else 0
    out = np.zeros(n)
    for index, value in enumerate(shift):
        offset = direction * (index - k)
        if not beyond_ring and abs(offset) >= n:
            offset = 0
        for i in range(n):
            j = (i - offset) % n if wrap else i - offset
            if 0 <= j < n:
                out[i] += value * weights[j]
    return out


def sharpen(weights, gamma, renormalise=True, power=True):
    """w_i^γ / Σ_j w_j^γ along the last axis (zeros where all are 0), γ a number or one per row.
    Mistakes of exercise 8-5: not `renormalise`d, w^γ alone; not a `power`, softmax(γ w)."""
    weights, gamma = as64(weights), as64(gamma)[..., None]
    if not power:
        return softmax(gamma * weights)
    powered = weights**gamma
    if not renormalise:
        return powered
    total = powered.sum(axis=-1, keepdims=True)
    return np.divide(powered, total, out=np.zeros_like(powered), where=total > 0)


def interpolate(w_content, w_previous, gate):
    """w^g = g w^c + (1 − g) w_prev, g a number or one per row."""
    gate = as64(gate)[..., None]
    return gate * as64(w_content) + (1.0 - gate) * as64(w_previous)


#: The location steps of NTM addressing, in order, after the content weights.
NTM_STEPS = ("interpolate", "shift", "sharpen")


def locate(focus, w_previous, gate, shift, gamma, steps=NTM_STEPS):
    """The content weights `focus` through the `steps` of NTM addressing, in that order (a step
    left out is skipped, a step moved is out of order: the mistakes of exercise 8-5)."""
    for step in steps:
        if step == "interpolate":
            focus = interpolate(focus, w_previous, gate)
        elif step == "shift":
            focus = circular_shift(focus, shift)
        else:
            focus = sharpen(focus, gamma)
    return focus


def address(memory, previous, key, beta, gate, shift, gamma):
    return locate(content_addressing(memory, key, beta), previous, gate, shift, gamma)


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


# --- exercise 8-4: content read, erase/add write and a neural stack, on a batch -----------------


def memory_read(memory, query, weighting="softmax", axis=-1, scaled=False, address_only=False):
    """r = Σ_i α_i m_i, α_i = softmax_i(m_i · q): memory (B, N, d), query (B, d) -> (B, d), or
    α (B, N) itself if `address_only`. The mistakes of exercise 8-4: `weighting` "scores" (the
    raw m_i · q) or "uniform" (1/N each), the softmax along `axis` 0 (the batch), the scores
    `scaled` by 1/√d."""
    memory = as64(memory)
    scores = np.einsum("bnd,bd->bn", memory, as64(query))
    if scaled:
        scores = scores / np.sqrt(memory.shape[-1])
    if weighting == "scores":
        alpha = scores
    elif weighting == "uniform":
        alpha = np.full(scores.shape, 1.0 / scores.shape[1])
    else:
        alpha = softmax(scores, axis=axis)
    return alpha if address_only else np.einsum("bn,bnd->bd", alpha, memory)


def memory_write(
    memory, weights, erase, add, erase_weights=None, add_weights=None, add_first=False
):
    """m_i ⊙ (1 − α_i e) + α_i a for every slot: memory (B, N, d), weights α (B, N), erase e and
    add a (B, d). The mistakes of exercise 8-4: `erase_weights` or `add_weights` in place of α in
    one term (1: not weighted, 0: nothing erased), adding before erasing (`add_first`)."""
    alpha = as64(weights)[..., None]
    erase_alpha = alpha if erase_weights is None else as64(erase_weights)[..., None]
    add_alpha = alpha if add_weights is None else as64(add_weights)[..., None]
    keep = 1.0 - erase_alpha * as64(erase)[:, None, :]
    added = add_alpha * as64(add)[:, None, :]
    return (as64(memory) + added) * keep if add_first else as64(memory) * keep + added


def strength_above(strengths, from_bottom=False):
    """Σ_{j>i} s_j for every element i along the last axis (index −1 is the top of the stack),
    or Σ_{j<i} s_j `from_bottom`."""
    strengths = as64(strengths)
    if from_bottom:
        return np.cumsum(strengths, axis=-1) - strengths
    return np.cumsum(strengths[..., ::-1], axis=-1)[..., ::-1] - strengths


def stack_pop(strengths, pop, from_bottom=False, passed_on=True, clamp=True):
    """s_i ← max(0, s_i − max(0, u − Σ_{j>i} s_j)): strengths (B, T), pop u (B,). The mistakes
    of exercise 8-4: popped `from_bottom`, u taken from every element (not `passed_on` down
    from the top), the result not clamped at 0."""
    strengths = as64(strengths)
    above = strength_above(strengths, from_bottom) if passed_on else 0.0
    left = strengths - np.maximum(0.0, as64(pop)[..., None] - above)
    return np.maximum(0.0, left) if clamp else left


def stack_read(values, strengths, from_bottom=False, capped=True, clamp=True):
    """Σ_i min(s_i, max(0, 1 − Σ_{j>i} s_j)) v_i: values (B, T, m), strengths (B, T). The
    mistakes of exercise 8-4: read `from_bottom`, not `capped` at one unit (Σ s_i v_i), the
    room 1 − Σ_{j>i} s_j not clamped at 0."""
    strengths = as64(strengths)
    share = strengths
    if capped:
        room = 1.0 - strength_above(strengths, from_bottom)
        share = np.minimum(strengths, np.maximum(0.0, room) if clamp else room)
    return np.einsum("bt,btm->bm", share, as64(values))


def neural_stack(values, pushes, pops, steps=("pop", "push", "read"), carry=True):
    """The read at every step of a neural stack that starts empty: values (B, T, m), pushes and
    pops (B, T) -> (B, T, m). At step t, in the order of `steps`: pop u_t, push v_t with
    strength d_t, read. The mistakes of exercise 8-4: another order, a stack that does not
    `carry` its strengths from step to step (pops 0: pops ignored)."""
    values, pushes = as64(values), as64(pushes)
    pops = np.broadcast_to(as64(pops), pushes.shape)
    strengths, reads = pushes[:, :0], []
    for t in range(pushes.shape[1]):
        if not carry:
            strengths = pushes[:, :0]
        bottom = t - strengths.shape[1]  # the index of the value at the bottom of the stack
        for step in steps:
            if step == "pop":
                strengths = stack_pop(strengths, pops[:, t])
            elif step == "push":
                strengths = np.concatenate([strengths, pushes[:, t : t + 1]], axis=1)
            else:
                held = values[:, bottom : bottom + strengths.shape[1]]
                reads.append(stack_read(held, strengths))
    return np.stack(reads, axis=1)


def address_problem(memory, output):
    """Property of `memory_read`'s weights α (B, N): None when they are positive and sum to one
    over the slots of each example, else what is wrong."""
    alpha = np.asarray(output, dtype=np.float64)
    if alpha.shape != np.shape(memory)[:2]:
        return None  # a wrong shape is reported by the output check
    if np.any(alpha < -1e-12):
        return _("some weights are negative: softmax weights are positive")
    if not np.allclose(alpha.sum(axis=-1), 1.0, rtol=0, atol=1e-6):
        return _(
            "the weights of an example do not sum to one over the slots: the softmax must "
            "normalise over the N slots (the last axis)"
        )
    return None


def read_problem(memory, output):
    """Property of `memory_read`'s read (B, d): None when it lies within the range of the slots
    of its example (a convex combination of them), else what is wrong."""
    memory, read = as64(memory), np.asarray(output, dtype=np.float64)
    if read.shape != memory.shape[::2]:
        return None
    slack = 1e-6 * max(1.0, float(np.abs(memory).max()))
    if np.all(read >= memory.min(axis=1) - slack) and np.all(read <= memory.max(axis=1) + slack):
        return None
    return _(
        "the read lies outside the range of the slots: a read with weights that are positive "
        "and sum to one is a convex combination of the slots"
    )


def pop_problem(strengths, pop, output):
    """Property of `stack_pop`: None when the new strengths `output` lie in [0, s_i] and
    min(u, Σ s_i) was removed in total, else what is wrong."""
    strengths, new = as64(strengths), np.asarray(output, dtype=np.float64)
    if new.shape != strengths.shape:
        return None
    if np.any(new < -1e-9) or np.any(new > strengths + 1e-9):
        return _("a strength went negative or grew: a pop only removes strength, down to 0")
    removed = strengths.sum(axis=-1) - new.sum(axis=-1)
    if not np.allclose(removed, np.minimum(pop, strengths.sum(axis=-1)), rtol=0, atol=1e-6):
        return _(
            "a pop of strength u must remove exactly min(u, Σ s_i) in total: u if the stack "
            "holds that much, else everything"
        )
    return None


# --- exercise 8-5: memory-network hops and NTM addressing, on a batch --------------------------


def memn2n_hop(query, memory_in, memory_out, residual=True, normalised=True):
    """q + Σ_i p_i c_i, p = softmax_i(a_iᵀ q): query (B, d), memory_in A and memory_out C
    (B, n, d). The mistakes of exercise 8-5: not `residual` (o alone), not `normalised` (the raw
    scores as weights)."""
    query = as64(query)
    scores = np.einsum("bd,bnd->bn", query, as64(memory_in))
    read = np.einsum("bn,bnd->bd", softmax(scores) if normalised else scores, as64(memory_out))
    return query + read if residual else read


def memn2n_read(query, memory_in, memory_out, hops, extra_hops=0):
    """`hops` hops of `memn2n_hop` with the same memories; `extra_hops` more or fewer (a mistake
    of exercise 8-5)."""
    for _hop in range(int(hops) + extra_hops):
        query = memn2n_hop(query, memory_in, memory_out)
    return as64(query)


def content_weights(memory, key, beta, row_norms=True, key_norm=True, axis=-1):
    """softmax_i(β cos(k, M_i)) over the N rows: memory (B, N, W), key (B, W), β (B,) or a
    number. The mistakes of exercise 8-5: no `row_norms` or no `key_norm` in the cosine (the dot
    product without both), the softmax along `axis` 0 (the batch)."""
    scores = cosine_rows(memory, key, row_norms, key_norm)
    return softmax(as64(beta)[..., None] * scores, axis=axis)


def ntm_address(memory, key, beta, gate, w_previous, shift, gamma, steps=NTM_STEPS):
    """NTM addressing of one head for a batch: content weights, then the location `steps`."""
    return locate(content_weights(memory, key, beta), w_previous, gate, shift, gamma, steps)
