"""Attention in sequence-to-sequence models: additive scores, a Bahdanau decoder, Luong's global
and local attention."""

import numpy as np

from grader.reference.attention import as64, masked_softmax, sigmoid
from grader.reference.recurrent import gru_step


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
            alpha = masked_softmax(e, keep[b])
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
            a = masked_softmax(e, allowed)
            if mode == "local-p":
                a = a * np.array([np.exp(-((s - p) ** 2) / (2 * sigma**2)) for s in range(tk)])
            weights[b, t] = a
            context = a @ hbar[b]
            out[b, t] = np.tanh(np.concatenate([context, q]) @ w["combine"])
    return out, weights, centres
