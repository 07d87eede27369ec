"""Attention in sequence-to-sequence models: additive scores, a Bahdanau decoder, Luong's global
and local attention.

The functions of the labs (`bahdanau_context`, `bahdanau_alignment`, `luong_global`,
`local_p_weights`, `local_p_attention`) name their parameters like the arrays of the grader's
cases, and each known mistake is one of their arguments changed (`Mistake.of`).
"""

import numpy as np

from grader.i18n import _
from grader.reference.attention import (
    additive_scores,
    as64,
    attend,
    bilinear_scores,
    dot_scores,
    location_scores,
    masked_attention,
    masked_softmax,
    rounding,
    scaled_dot_scores,
    sigmoid,
    softmax,
)
from grader.reference.recurrent import gru_step


def additive(q, k, query_kernel, key_kernel, score_vector):
    """vᵀ tanh(W_qᵀ q + W_kᵀ k) for single vectors."""
    pair = additive_scores(
        as64(q)[None, None], as64(k)[None, None], query_kernel, key_kernel, score_vector
    )
    return float(pair[0, 0, 0])


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
    if score == "location":
        e = location_scores(h, w["kernel"], tk)
    elif score == "concat":
        e = additive_scores(h, hbar, w["query_kernel"], w["key_kernel"], w["score_vector"])
    else:
        e = luong_scores(h, hbar, score, w.get("kernel"))
    if mode == "global":
        centres = np.zeros((b_size, tq))
        weights = masked_softmax(e, keep[:, None, :])
    else:
        if mode == "local-m":
            centres = np.arange(tq) if query_positions is None else query_positions
        else:
            length = keep.sum(-1)[:, None]
            kernel, vector = w["position_hidden"], w["position_output"][:, 0]
            centres = predicted_positions(h, kernel, vector, length)
        centres = np.broadcast_to(as64(centres), (b_size, tq))
        weights = local_p_weights(e, centres, window, keep, gaussian=mode == "local-p")
    return attentional_state(attend(weights, hbar), h, w["combine"]), weights, centres


# ---- the labs: Bahdanau's decoder step and alignment, Luong's global and local-p attention ----


def bahdanau_context(
    previous_state,
    encoder_states,
    source_lengths,
    W_s,
    W_h,
    v,
    tanh="of the sum",
    extra=0,
    masking="before",
    weights="softmax",
):
    """c = Σ_j α_j h_j, α the softmax of e_j = vᵀ tanh(W_sᵀ s + W_hᵀ h_j) over the valid
    positions j < source_lengths: (B, d_s), (B, T, d_h), (B,) -> (B, d_h).

    Known mistakes: `tanh`, `extra`, `masking` as `additive_scores` and `masked_attention` take
    them, source_lengths None (no mask); weights "ones" (every α_j = 1, a softmax over an axis
    of size 1) or "scores" (α_j = e_j, no softmax).
    """
    scores = additive_scores(as64(previous_state)[:, None, :], encoder_states, W_s, W_h, v, tanh)
    alpha = {"ones": np.ones_like(scores), "scores": scores}.get(weights)
    if alpha is None:
        alpha = masked_attention(scores, source_lengths, extra=extra, masking=masking)
    return attend(alpha, encoder_states)[:, 0, :]


def padded(source_lengths, encoder_states):
    """Whether some example is shorter than the encoder states (a padding mistake shows)."""
    return bool(np.any(np.asarray(source_lengths) < np.shape(encoder_states)[1]))


def bahdanau_alignment(
    decoder_states,
    encoder_states,
    source_lengths,
    W_s,
    W_h,
    v,
    offset=0,
    axis=-1,
    masking="before",
    normalised=True,
):
    """α (B, T_out, T_in) of a whole output sentence: row t - 1 the masked softmax of the
    additive scores of s_{t-1} (decoder_states (B, T_out + 1, d_s) holds s_0 .. s_{T_out}).

    Known mistakes: offset 1 (the queries s_t), source_lengths None (no mask), the softmax
    along another `axis` ("fill only" masking: a fully masked column comes out uniform), the
    raw scores (not `normalised`).
    """
    steps = np.shape(decoder_states)[1] - 1
    queries = as64(decoder_states)[:, offset : offset + steps]
    scores = additive_scores(queries, encoder_states, W_s, W_h, v)
    if not normalised:
        return scores
    return masked_attention(scores, source_lengths, axis=axis, masking=masking)


def rows_are_distributions(source_lengths, output):
    """Property of `bahdanau_alignment`: None when every row of `output` (B, T_out, T_in) sums
    to 1 and is 0 on the padding, else what is wrong."""
    lengths = np.asarray(source_lengths)
    output = np.asarray(output, dtype=np.float64)
    if output.ndim != 3 or output.shape[0] != lengths.shape[0]:
        return None  # the shape check already says what is wrong
    padding = np.abs(np.where(np.arange(output.shape[-1]) < lengths[:, None, None], 0.0, output))
    if padding.max(initial=0.0) > 1e-9:
        b, t, j = (int(i) for i in np.argwhere(padding > 1e-9)[0])
        return _(
            "example {example}, output step {step} gives weight {weight:.3g} to source position "
            "{position}, which is padding (length {length}): padded positions must get weight 0",
            example=b,
            step=t + 1,
            weight=output[b, t, j],
            position=j,
            length=int(lengths[b]),
        )
    sums = output.sum(axis=-1)
    if not np.allclose(sums, 1.0, atol=1e-6):
        b, t = (int(i) for i in np.argwhere(~np.isclose(sums, 1.0, atol=1e-6))[0])
        return _(
            "the weights of example {example}, output step {step} sum to {total:.6g}, not 1: "
            "each row is a softmax over the source positions",
            example=b,
            step=t + 1,
            total=sums[b, t],
        )
    return None


def luong_scores(
    query,
    encoder_states,
    score,
    W_a=None,
    v_a=None,
    scaled=False,
    keys_first=False,
    tanh="of the sum",
):
    """Luong's scores (B, Tq, S) of the decoder states h_t against the encoder states h̄_s:
    "dot" h_tᵀh̄_s (divided by √d when `scaled`, a known mistake), "general" h_tᵀ W_a h̄_s,
    "concat" v_aᵀ tanh(W_aᵀ[h_t; h̄_s]) (see `concat_scores` for its mistakes)."""
    if score == "dot":
        return (scaled_dot_scores if scaled else dot_scores)(query, encoder_states)
    if score == "general":
        return bilinear_scores(query, encoder_states, W_a)
    return concat_scores(query, encoder_states, W_a, v_a, keys_first, tanh)


def concat_scores(query, encoder_states, W_a, v_a, keys_first=False, tanh="of the sum"):
    """v_aᵀ tanh(W_aᵀ[h_t; h̄_s]): the first d_h rows of W_a take h_t, the others h̄_s. Known
    mistakes: keys_first ([h̄_s; h_t]), tanh None."""
    split = np.shape(encoder_states if keys_first else query)[-1]
    first, second = (W_a[split:], W_a[:split]) if keys_first else (W_a[:split], W_a[split:])
    return additive_scores(query, encoder_states, first, second, v_a, tanh)


def attentional_state(context, query, W_c, context_first=True, tanh=True):
    """h̃ = tanh(W_cᵀ[c; h]). Known mistakes: [h; c] (not `context_first`), no tanh."""
    joined = np.concatenate([context, as64(query)] if context_first else [as64(query), context], -1)
    hidden = joined @ as64(W_c)
    return np.tanh(hidden) if tanh else hidden


def luong_global(
    query,
    encoder_states,
    W_c,
    score,
    W_a=None,
    v_a=None,
    context_first=True,
    state_tanh=True,
    **scoring,
):
    """Luong's global attention: h̃_t = tanh(W_cᵀ[c_t; h_t]), c_t the softmax of `luong_scores`
    over every source position times the encoder states: (B, Tq, d_h), (B, S, d_s) -> (B, Tq, u).
    Known mistakes: those of `attentional_state`, and of `luong_scores` in `scoring` (scaled,
    keys_first, tanh)."""
    scores = luong_scores(query, encoder_states, score, W_a, v_a, **scoring)
    weights = softmax(scores)
    context = attend(weights, encoder_states)
    return attentional_state(context, query, W_c, context_first, state_tanh)


def local_p_weights(
    scores,
    positions,
    window,
    keep=None,
    sigma=None,
    gaussian=True,
    doubled=True,
    masking="before",
    origin=0,
    renormalised=False,
):
    """Local attention weights (B, Tq, S): the softmax of `scores` over the window
    |s - p_t| <= D (and `keep`, the valid positions), zero elsewhere, times the Gaussian
    exp(-(s - p_t)²/(2σ²)), σ = D/2, s = 0 .. S-1.

    Known mistakes: another `sigma`, no Gaussian, σ² for 2σ² (not `doubled`), masking "after"
    (softmax over every position, then the window), None (no window), positions from `origin` 1,
    the weights times the Gaussian `renormalised` to sum to 1 (the Gaussian inside the softmax).
    """
    distance = np.arange(np.shape(scores)[-1]) + origin - as64(positions)[..., None]
    inside = np.abs(distance) <= window
    if keep is not None:
        inside &= np.asarray(keep, bool)[:, None, :]
    mask = inside if masking else None
    aligned = masked_attention(scores, mask=mask, masking=masking or "before")
    if not gaussian:
        return aligned
    sigma = window / 2 if sigma is None else sigma
    weighted = aligned * np.exp(-(distance**2) / ((2.0 if doubled else 1.0) * sigma**2))
    if renormalised:
        return weighted / weighted.sum(axis=-1, keepdims=True)
    return weighted


def zero_outside_window(positions, window, scores, output, dtype="float64"):
    """Property of `local_p_weights`: None when `output` is 0 outside |s - p_t| <= D (up to
    the rounding of the case's dtype at the weights' magnitude)."""
    output = np.asarray(output, dtype=np.float64)
    if output.shape != np.shape(scores):
        return None  # the shape check already says what is wrong
    distance = np.arange(output.shape[-1])[None, None, :] - positions[:, :, None]
    outside = (np.abs(distance) > window) & (np.abs(output) > rounding(dtype, scores))
    if outside.any():
        b, t, s = (int(i) for i in np.argwhere(outside)[0])
        return _(
            "example {example}, query {query}: position {position} is {distance:.3g} away from "
            "p_t = {center:.4g}, outside the window D = {window}, yet has weight {weight:.3g}: "
            "local-p attention gives exactly 0 outside |s - p_t| <= D",
            example=b,
            query=t,
            position=s,
            distance=abs(distance[b, t, s]),
            center=positions[b, t],
            window=window,
            weight=output[b, t, s],
        )
    return None


def predicted_positions(query, W_p, v_p, length, tanh=True):
    """p_t = S·sigmoid(v_pᵀ tanh(W_pᵀ h_t)) (B, Tq), S = `length`. Known mistake: no tanh."""
    hidden = as64(query) @ as64(W_p)
    return length * sigmoid((np.tanh(hidden) if tanh else hidden) @ as64(v_p))


def local_p_attention(
    query,
    encoder_states,
    W_p,
    v_p,
    W_c,
    window,
    scaled_position=True,
    position_tanh=True,
    context_first=True,
    sigma=None,
    gaussian=True,
):
    """Luong's local-p attention with the dot score: (B, Tq, d), (B, S, d) -> h̃ (B, Tq, u).

    Known mistakes: p_t not times S (not `scaled_position`), no tanh in p_t, [h_t; c_t], and
    another `sigma` or no Gaussian (see `local_p_weights`).
    """
    length = np.shape(encoder_states)[1] if scaled_position else 1.0
    positions = predicted_positions(query, W_p, v_p, length, position_tanh)
    scores = dot_scores(query, encoder_states)
    alpha = local_p_weights(scores, positions, window, sigma=sigma, gaussian=gaussian)
    return attentional_state(attend(alpha, encoder_states), query, W_c, context_first)
