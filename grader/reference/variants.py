"""Independent float64 NumPy references for the kernel-regression, seq2seq, pointer,
structured and hierarchical layers (plain loops over the formulas, not the layers' code)."""

import itertools

import numpy as np

from grader.reference.attention import as64


def sigmoid(x):
    return 1.0 / (1.0 + np.exp(-x))


def softmax_kept(scores, keep):
    """Softmax of a 1-D score vector over the kept entries; zeros if none is kept."""
    scores, keep = as64(scores), np.asarray(keep, bool)
    out = np.zeros(scores.shape)
    if keep.any():
        e = np.exp(scores[keep] - scores[keep].max())
        out[keep] = e / e.sum()
    return out


# ----------------------------------------------------------------------- RNN cells
def gru_step(x, h, kernel, recurrent_kernel, bias):
    """One step of a Keras GRU cell (reset_after=True, gates z, r, h in that order)."""
    x, h = as64(x), as64(h)
    kernel, recurrent_kernel, bias = as64(kernel), as64(recurrent_kernel), as64(bias)
    u = h.shape[-1]
    gx = x @ kernel + bias[0]
    gh = h @ recurrent_kernel + bias[1]
    z = sigmoid(gx[:u] + gh[:u])
    r = sigmoid(gx[u : 2 * u] + gh[u : 2 * u])
    candidate = np.tanh(gx[2 * u :] + r * gh[2 * u :])
    return z * h + (1.0 - z) * candidate


def lstm_step(x, h, c, kernel, recurrent_kernel, bias):
    """One step of a Keras LSTM cell (gates i, f, c, o in that order); returns (h, c)."""
    x, h, c = as64(x), as64(h), as64(c)
    u = h.shape[-1]
    g = x @ as64(kernel) + h @ as64(recurrent_kernel) + as64(bias)
    i = sigmoid(g[:u])
    f = sigmoid(g[u : 2 * u])
    c = f * c + i * np.tanh(g[2 * u : 3 * u])
    o = sigmoid(g[3 * u :])
    return o * np.tanh(c), c


def cell_weights(cell):
    """The kernel, recurrent kernel and bias of a Keras GRU/LSTM cell, as float64 arrays."""
    return as64(cell.kernel.numpy()), as64(cell.recurrent_kernel.numpy()), as64(cell.bias.numpy())


def gru_sequence(xs, weights, keep=None, h0=None, reverse=False):
    """Runs a GRU over the kept steps of one sequence xs (T, d); returns (outputs, h_last).

    Outputs at dropped steps are zeros (the masked outputs of a Keras RNN inside
    Bidirectional); with `reverse`, the sequence is read backwards and the outputs are
    given back in the original order.
    """
    xs = as64(xs)
    t_len = xs.shape[0]
    units = weights[1].shape[0]
    keep = np.ones(t_len, bool) if keep is None else np.asarray(keep, bool)
    h = np.zeros(units) if h0 is None else as64(h0)
    outputs = np.zeros((t_len, units))
    order = range(t_len - 1, -1, -1) if reverse else range(t_len)
    for t in order:
        if keep[t]:
            h = gru_step(xs[t], h, *weights)
            outputs[t] = h
    return outputs, h


# ------------------------------------------------------------------ the five layers
def nadaraya_watson(x, x_i, y_i, kernel, bandwidth, keep=None):
    """f(x) = Σ K((x-x_i)/h) y_i / Σ K((x-x_j)/h) with the textbook kernels (constants kept).

    x (B, Tq), x_i (B, Tk), y_i (B, Tk) or (B, Tk, d); keep (B, Tq, Tk). Returns
    (predictions, weights); a query whose kernel sum is 0 gets zero weights.
    """
    x, x_i = as64(x), as64(x_i)
    b_size, tq = x.shape
    tk = x_i.shape[1]
    keep = np.ones((b_size, tq, tk), bool) if keep is None else np.asarray(keep, bool)
    weights = np.zeros((b_size, tq, tk))
    for b in range(b_size):
        for i in range(tq):
            k = np.zeros(tk)
            if kernel == "gaussian" and keep[b, i].any():
                # In log space, shifted by the largest: far from every key, exp(-u²/2) alone
                # underflows to 0 while the normalised weights are still well defined.
                logs = -(((x[b, i] - x_i[b]) / bandwidth) ** 2) / 2
                logs = np.where(keep[b, i], logs, -np.inf)
                k = np.exp(logs - logs.max())
            for j in range(tk):
                if not keep[b, i, j] or kernel == "gaussian":
                    continue
                u = (x[b, i] - x_i[b, j]) / bandwidth
                if kernel == "boxcar":
                    k[j] = 0.5 if abs(u) <= 1 else 0.0
                else:  # epanechnikov
                    k[j] = 0.75 * (1 - u**2) if abs(u) <= 1 else 0.0
            if k.sum() > 0:
                weights[b, i] = k / k.sum()
    return pool(weights, y_i), weights


def parametric_nadaraya_watson(x, x_i, y_i, w, keep=None):
    """softmax(-½((x - x_i) w)²) pooling, computed as a ratio of exponentials."""
    x, x_i = as64(x), as64(x_i)
    b_size, tq = x.shape
    tk = x_i.shape[1]
    keep = np.ones((b_size, tq, tk), bool) if keep is None else np.asarray(keep, bool)
    weights = np.zeros((b_size, tq, tk))
    for b in range(b_size):
        for i in range(tq):
            e = np.array([np.exp(-0.5 * ((x[b, i] - x_i[b, j]) * w) ** 2) for j in range(tk)])
            e = e * keep[b, i]
            if e.sum() > 0:
                weights[b, i] = e / e.sum()
    return pool(weights, y_i), weights


def pool(weights, values):
    """Σ_j α_ij v_j for values (B, Tk) or (B, Tk, d)."""
    values = as64(values)
    if values.ndim == 2:
        return np.einsum("bij,bj->bi", weights, values)
    return np.einsum("bij,bjd->bid", weights, values)


def crf_marginals_brute_force(unary, transition, keep):
    """p(z_i = 1) of a binary linear chain over the kept positions, by enumerating all z.

    unary (Tk,) = θ_i(1) (θ_i(0) = 0); transition (2, 2) indexed [z_i, z_next]; the chain
    links consecutive kept positions. Dropped positions get 0.
    """
    unary, transition = as64(unary), as64(transition)
    kept = [j for j in range(len(unary)) if keep[j]]
    marginals = np.zeros(len(unary))
    if not kept:
        return marginals
    configurations = list(itertools.product((0, 1), repeat=len(kept)))
    energies = []
    for z in configurations:
        energy = sum(unary[j] for j, zj in zip(kept, z, strict=True) if zj)
        energy += sum(transition[z[k], z[k + 1]] for k in range(len(z) - 1))
        energies.append(energy)
    probabilities = np.exp(np.array(energies) - max(energies))  # shifted: no overflow
    total = probabilities.sum()
    for z, p in zip(configurations, probabilities, strict=True):
        for j, zj in zip(kept, z, strict=True):
            if zj:
                marginals[j] += p
    return marginals / total


def additive(q, k, query_kernel, key_kernel, score_vector):
    """vᵀ tanh(W_qᵀ q + W_kᵀ k) for single vectors."""
    return float(np.tanh(as64(q) @ as64(query_kernel) + as64(k) @ as64(key_kernel)) @ score_vector)


def bahdanau_decoder(w, tokens, enc, keep=None, s0=None, greedy=None):
    """The Bahdanau decoder of one batch, step by step.

    w: dict with embedding (V, E), query_kernel, key_kernel, score_vector, cell
    (kernel, recurrent_kernel, bias), out_kernel (units + d_enc, V), out_bias (V,).
    tokens (B, T_out) for teacher forcing, or `greedy=(start, steps, end_or_None)`.
    Returns (logits (B, T, V), attention (B, T, T_in), final states (B, units), tokens).
    """
    enc = as64(enc)
    b_size, t_in, _ = enc.shape
    units = w["cell"][1].shape[0]
    keep = np.ones((b_size, t_in), bool) if keep is None else np.asarray(keep, bool)
    steps = tokens.shape[1] if greedy is None else greedy[1]
    logits = np.zeros((b_size, steps, w["out_bias"].shape[0]))
    attention = np.zeros((b_size, steps, t_in))
    states = np.zeros((b_size, units))
    produced = np.zeros((b_size, steps), int)
    for b in range(b_size):
        s = np.zeros(units) if s0 is None else as64(s0[b])
        previous = None if greedy is None else greedy[0]
        done = False
        for t in range(steps):
            y_prev = tokens[b, t] if greedy is None else previous
            e = np.array(
                [
                    additive(s, enc[b, j], w["query_kernel"], w["key_kernel"], w["score_vector"])
                    for j in range(t_in)
                ]
            )
            alpha = softmax_kept(e, keep[b])
            context = alpha @ enc[b]
            s = gru_step(np.concatenate([w["embedding"][y_prev], context]), s, *w["cell"])
            logits[b, t] = np.concatenate([s, context]) @ w["out_kernel"] + w["out_bias"]
            attention[b, t] = alpha
            if greedy is not None:
                token = int(np.argmax(logits[b, t]))
                if done:
                    token = greedy[2]
                    attention[b, t] = 0.0
                elif greedy[2] is not None and token == greedy[2]:
                    done = True
                produced[b, t] = token
                previous = token
        states[b] = s
    return logits, attention, states, produced


def luong(w, h, hbar, score, mode, window, keep=None, query_positions=None):
    """Luong attention for one batch: returns (h̃ (B,Tq,u), weights (B,Tq,Tk), p (B,Tq)).

    w: dict of float64 arrays: `combine` (d_s + d_h, u); the score's weights (`kernel` for
    general and location, `query_kernel`, `key_kernel`, `score_vector` for concat);
    `position_hidden` (d_h, u) and `position_output` (u, 1) for local-p. keep (B, Tk) are
    the valid source positions.
    """
    h, hbar = as64(h), as64(hbar)
    b_size, tq, _ = h.shape
    tk = hbar.shape[1]
    keep = np.ones((b_size, tk), bool) if keep is None else np.asarray(keep, bool)
    out = np.zeros((b_size, tq, w["combine"].shape[1]))
    weights = np.zeros((b_size, tq, tk))
    centres = np.zeros((b_size, tq))
    sigma = window / 2.0
    for b in range(b_size):
        for t in range(tq):
            q = h[b, t]
            if score == "dot":
                e = np.array([q @ hbar[b, s] for s in range(tk)])
            elif score == "general":
                e = np.array([q @ w["kernel"] @ hbar[b, s] for s in range(tk)])
            elif score == "concat":
                e = np.array(
                    [
                        additive(
                            q, hbar[b, s], w["query_kernel"], w["key_kernel"], w["score_vector"]
                        )
                        for s in range(tk)
                    ]
                )
            else:
                e = (q @ w["kernel"])[:tk]
            allowed = keep[b].copy()
            p = None
            if mode == "local-m":
                p = float(t if query_positions is None else query_positions[b, t])
            elif mode == "local-p":
                length = keep[b].sum()
                hidden = np.tanh(q @ w["position_hidden"])
                p = float(length * sigmoid(hidden @ w["position_output"][:, 0]))
            if p is not None:
                centres[b, t] = p
                allowed &= np.array([abs(s - p) <= window for s in range(tk)])
            a = softmax_kept(e, allowed)
            if mode == "local-p":
                a = a * np.array([np.exp(-((s - p) ** 2) / (2 * sigma**2)) for s in range(tk)])
            weights[b, t] = a
            context = a @ hbar[b]
            out[b, t] = np.tanh(np.concatenate([context, q]) @ w["combine"])
    return out, weights, centres


def pointer_network(w, x, keep=None, targets=None, steps=None, mask_chosen=True):
    """Pointer network of one batch, step by step: returns (probabilities, chosen indices).

    w: dict with `encoder` and `decoder` LSTM weights (kernel, recurrent kernel, bias),
    `query_kernel` (applied to the decoder state d_m), `key_kernel` (to the encoder states
    e_n), `score_vector`, and `start` (d,). Teacher forcing with `targets` (B, M); greedy
    decoding for `steps` steps otherwise.
    """
    x = as64(x)
    b_size, n, _ = x.shape
    units = w["encoder"][1].shape[0]
    keep = np.ones((b_size, n), bool) if keep is None else np.asarray(keep, bool)
    steps = targets.shape[1] if targets is not None else steps
    probs = np.zeros((b_size, steps, n))
    chosen_indices = np.zeros((b_size, steps), int)
    for b in range(b_size):
        h, c = np.zeros(units), np.zeros(units)
        enc = np.zeros((n, units))
        for j in range(n):
            if keep[b, j]:
                h, c = lstm_step(x[b, j], h, c, *w["encoder"])
                enc[j] = h
        previous = as64(w["start"])
        chosen = np.zeros(n, bool)
        for m in range(steps):
            h, c = lstm_step(previous, h, c, *w["decoder"])
            s = np.array(
                [
                    additive(h, enc[j], w["query_kernel"], w["key_kernel"], w["score_vector"])
                    for j in range(n)
                ]
            )
            allowed = keep[b] & ~chosen if mask_chosen else keep[b]
            probs[b, m] = softmax_kept(s, allowed)
            index = int(targets[b, m]) if targets is not None else int(np.argmax(probs[b, m]))
            chosen_indices[b, m] = index
            chosen[index] = True
            previous = x[b, index]
    return probs, chosen_indices


def hierarchical(w, x, keep):
    """Hierarchical attention of one batch of embeddings x (B, S, W, E), keep (B, S, W).

    w: dict with `word_fw`, `word_bw`, `sentence_fw`, `sentence_bw` (GRU weights),
    `word_kernel`, `word_bias`, `word_context`, `sentence_kernel`, `sentence_bias`,
    `sentence_context`. Returns (documents, word weights, sentence weights).
    """
    x, keep = as64(x), np.asarray(keep, bool)
    b_size, s_size, w_size, _ = x.shape
    units = w["word_fw"][1].shape[0]
    documents = np.zeros((b_size, 2 * units))
    word_weights = np.zeros((b_size, s_size, w_size))
    sentence_weights = np.zeros((b_size, s_size))
    for b in range(b_size):
        sentences = np.zeros((s_size, 2 * units))
        for s in range(s_size):
            forward, _ = gru_sequence(x[b, s], w["word_fw"], keep[b, s])
            backward, _ = gru_sequence(x[b, s], w["word_bw"], keep[b, s], reverse=True)
            h = np.concatenate([forward, backward], axis=-1)
            u = np.tanh(h @ w["word_kernel"] + w["word_bias"])
            alpha = softmax_kept(u @ w["word_context"], keep[b, s])
            word_weights[b, s] = alpha
            sentences[s] = alpha @ h
        sentence_keep = keep[b].any(axis=-1)
        forward, _ = gru_sequence(sentences, w["sentence_fw"], sentence_keep)
        backward, _ = gru_sequence(sentences, w["sentence_bw"], sentence_keep, reverse=True)
        h = np.concatenate([forward, backward], axis=-1)
        u = np.tanh(h @ w["sentence_kernel"] + w["sentence_bias"])
        alpha = softmax_kept(u @ w["sentence_context"], sentence_keep)
        sentence_weights[b] = alpha
        documents[b] = alpha @ h
    return documents, word_weights, sentence_weights
