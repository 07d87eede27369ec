"""Pointer networks: attention scores over input positions, decoded greedily or scored."""

import numpy as np

from grader.i18n import N_, _
from grader.reference.attention import as64, masked_softmax, softmax
from grader.reference.recurrent import lstm_step
from grader.reference.seq2seq import additive


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
            probs[b, m] = masked_softmax(s, allowed)
            index = int(targets[b, m]) if targets is not None else int(np.argmax(probs[b, m]))
            chosen_indices[b, m] = index
            chosen[index] = True
            previous = x[b, index]
    return probs, chosen_indices


# ---- the forms of lab pointer, with the student's names -------------------------------------
# Keyword arguments with defaults name the parts of a formula that a known mistake gets wrong.


def pointer_scores(
    encoder_states,
    decoder_states,
    W_1,
    W_2,
    v,
    tanh=True,
    probabilities=False,
    swap_projections=False,
    steps_first=True,
):
    """u[b, m, j] = vᵀ tanh(W_1ᵀ e_j + W_2ᵀ d_m), (B, N, d_e) and (B, M, d_d) -> (B, M, N).

    Without `tanh`, vᵀ(W_1ᵀ e_j + W_2ᵀ d_m); with `probabilities`, their softmax over the
    positions j; with `swap_projections`, W_2 projects e_j and W_1 d_m; without `steps_first`,
    u[b, j, m]."""
    W_1, W_2 = (W_2, W_1) if swap_projections else (W_1, W_2)
    hidden = (as64(encoder_states) @ W_1)[:, None, :, :] + (as64(decoder_states) @ W_2)[:, :, None]
    scores = (np.tanh(hidden) if tanh else hidden) @ as64(v)
    scores = softmax(scores) if probabilities else scores
    return scores if steps_first else np.swapaxes(scores, 1, 2)


def greedy_decode(scores, masked="all", fill=-np.inf, origin=0):
    """Greedy decoding, (B, M, N) scores -> (B, M) indices counted from `origin`: at each step
    the argmax over the positions not chosen yet, whose scores are set to `fill`. `masked`:
    "all" chosen positions, only the "previous" step's choice, or "none"."""
    scores = as64(scores)
    batch, steps, n = scores.shape
    chosen = np.zeros((batch, n), dtype=bool)
    indices = np.zeros((batch, steps), dtype=np.int64)
    for m in range(steps):
        best = np.where(chosen, fill, scores[:, m]).argmax(axis=-1)
        indices[:, m] = best
        if masked == "previous":
            chosen[:] = False
        if masked != "none":
            chosen[np.arange(batch), best] = True
    return indices + origin


def sequence_log_likelihood(scores, targets, mask=True, reduce="sum", log=True):
    """log p(c_1, ..., c_M | x) = Σ_m log softmax(scores[b, m], c_<m masked)[c_m], (B,): a
    log-sum-exp shifted by the maximum. `mask` the earlier targets (True), only the previous
    step's ("previous"), or none (False); `reduce` "sum" or "mean", without `log` the
    probability itself."""
    scores, targets = as64(scores), np.asarray(targets)
    one_hot = np.eye(scores.shape[-1], dtype=bool)[targets]
    earlier = np.cumsum(one_hot, axis=1) - one_hot > 0
    if mask == "previous":
        earlier = np.zeros_like(one_hot)
        earlier[:, 1:] = one_hot[:, :-1]
    masked = np.where(earlier, -np.inf, scores) if mask else scores
    top = masked.max(axis=-1, keepdims=True)
    log_norm = top[..., 0] + np.log(np.exp(masked - top).sum(axis=-1))
    terms = np.take_along_axis(scores, targets[..., None], axis=-1)[..., 0] - log_norm
    total = terms.mean(axis=-1) if reduce == "mean" else terms.sum(axis=-1)
    return total if log else np.exp(total)


def three_steps(targets):
    """Whether the targets have at least three steps (else masking the previous one is all)."""
    return np.shape(targets)[1] >= 3


def distinct_positions(scores, output):
    """What is wrong with decoded indices that are not distinct positions in [0, N) (None if
    they are, or if their shape is wrong: the shape check says so)."""
    output = np.asarray(output)
    batch, steps, n = scores.shape
    if output.shape != (batch, steps):
        return None
    if np.any(output != np.round(output)) or np.any((output < 0) | (output >= n)):
        return _(
            "every index must be a whole number in [0, {n}), got {indices}",
            n=n,
            indices=output.tolist(),
        )
    for b, row in enumerate(output.astype(np.int64)):
        seen = {}
        for m, j in enumerate(row.tolist()):
            if j in seen:
                template = _CHOSEN_TWICE_PERMUTATION if steps == n else _CHOSEN_TWICE
                return _(template, example=b, position=j, first=seen[j], second=m)
            seen[j] = m
    return None


_CHOSEN_TWICE = N_(
    "example {example} chooses position {position} twice (steps {first} and {second}): mask the "
    "positions already chosen"
)
_CHOSEN_TWICE_PERMUTATION = N_(
    "example {example} chooses position {position} twice (steps {first} and {second}): mask the "
    "positions already chosen, so that the result is a permutation"
)


def positive_log_likelihood(output):
    """What is wrong with log-likelihoods above 0 (None if none is, up to rounding): log p
    of a probability p <= 1 is never positive."""
    try:
        output = np.asarray(output, dtype=np.float64)
    except (TypeError, ValueError):
        return None  # not numbers: the output check says so
    if output.size == 0 or not np.any(output > 1e-9):
        return None
    return _(
        "a log-likelihood of {value:.4g} > 0: log p(c_1, ..., c_M | x) is the logarithm of a "
        "probability, at most 1, so it is never positive (the negative log-likelihood is the "
        "loss, not the likelihood)",
        value=float(np.nanmax(output)),
    )
