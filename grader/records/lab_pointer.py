"""Lab pointer: pointer scores, greedy decoding that masks chosen positions, the likelihood."""

from __future__ import annotations

import numpy as np

from grader.engine.spec import FUNCTION, LAYER, Case, Exercise, Mistake, Part, Property

# (B, N, M, d_e, d_d, units): batch 1 and several, M != N, d_e != d_d, and M == N with
# d_e == d_d (where swapped axes or swapped matrices run without error).
SCORE_SHAPES = [(2, 5, 3, 4, 3, 6), (1, 1, 1, 1, 1, 2), (2, 4, 4, 5, 5, 3), (3, 6, 2, 2, 7, 4)]
# (B, M, N, offset): offset -3 makes every score negative.
DECODE_SHAPES = [(2, 5, 5, 0.0), (1, 1, 1, 0.0), (3, 3, 6, 0.0), (2, 6, 6, -3.0), (1, 8, 8, 0.0)]
LIKELIHOOD_SHAPES = [(2, 5, 5), (1, 1, 1), (3, 3, 6), (1, 7, 7)]


# --- cases ---------------------------------------------------------------------------------


def _score_case(rng, shapes, dtype="float64"):
    b, n, m, d_e, d_d, units = shapes
    sizes = f"d={d_e}" if d_e == d_d else f"d_e={d_e} d_d={d_d}"
    label = f"B={b} N={n} M={m} {sizes} units={units}" + (f" {dtype}" if dtype != "float64" else "")
    return Case(
        target="PointerScores",
        kind=LAYER,
        label=label,
        inputs={
            "encoder_states": rng.standard_normal((b, n, d_e)),
            "decoder_states": rng.standard_normal((b, m, d_d)),
        },
        params={"units": units},
        weights={
            "W_1": rng.standard_normal((d_e, units)) / np.sqrt(d_e),
            "W_2": rng.standard_normal((d_d, units)) / np.sqrt(d_d),
            "v": rng.standard_normal(units),
        },
        upstream=rng.standard_normal((b, m, n)),
        dtype=dtype,
    )


def score_cases(rng, hidden=False):
    if hidden:
        shapes = [tuple(int(x) for x in rng.integers(1, 7, size=6)) for _ in range(3)]
    else:
        shapes = SCORE_SHAPES
    cases = [_score_case(rng, s) for s in shapes]
    cases.append(_score_case(rng, (2, 5, 4, 3, 4, 5), dtype="float32"))
    return cases


def _pointer_scores(rng, b, m, n, offset=0.0):
    """Scores with a strong preference per position, so that an unmasked argmax repeats."""
    favourite = 2.0 * rng.standard_normal((b, 1, n))
    return rng.standard_normal((b, m, n)) + favourite + offset


def decode_cases(rng, hidden=False):
    if hidden:
        shapes = []
        for _ in range(3):
            n = int(rng.integers(2, 10))
            shapes.append((int(rng.integers(1, 4)), int(rng.integers(1, n + 1)), n, 0.0))
        shapes.append((2, 5, 5, -3.0))
    else:
        shapes = DECODE_SHAPES
    cases = []
    for b, m, n, offset in shapes:
        label = f"B={b} M={m} N={n}" + (" every score negative" if offset < 0 else "")
        cases.append(
            Case(
                target="greedy_decode",
                kind=FUNCTION,
                label=label,
                inputs={"scores": _pointer_scores(rng, b, m, n, offset)},
            )
        )
    return cases


def likelihood_cases(rng, hidden=False):
    if hidden:
        shapes = []
        for _ in range(3):
            n = int(rng.integers(1, 9))
            shapes.append((int(rng.integers(1, 4)), int(rng.integers(1, n + 1)), n))
    else:
        shapes = LIKELIHOOD_SHAPES
    cases = []
    for index, (b, m, n) in enumerate([*shapes, (2, 4, 6)]):
        stability = index == len(shapes)
        targets = np.stack([rng.permutation(n)[:m] for _ in range(b)]).astype(np.int64)
        scores = _pointer_scores(rng, b, m, n)
        if stability:
            scores = 1000.0 + 5.0 * scores
        label = f"B={b} M={m} N={n}" + (
            " scores near 1000 (numerical stability)" if stability else ""
        )
        cases.append(
            Case(
                target="sequence_log_likelihood",
                kind=FUNCTION,
                label=label,
                inputs={"scores": scores, "targets": targets},
            )
        )
    return cases


# --- the reference in NumPy, with the known mistakes as switches ----------------------------


def _scores(case, tanh=True, swap=False, softmax=False):
    x, w = case.inputs, case.weights
    W_1, W_2 = (w["W_2"], w["W_1"]) if swap else (w["W_1"], w["W_2"])
    if (
        W_1.shape[0] != x["encoder_states"].shape[-1]
        or W_2.shape[0] != x["decoder_states"].shape[-1]
    ):
        return None
    hidden = (x["encoder_states"] @ W_1)[:, None, :, :] + (x["decoder_states"] @ W_2)[:, :, None, :]
    scores = (np.tanh(hidden) if tanh else hidden) @ w["v"]
    if softmax:
        shifted = np.exp(scores - scores.max(axis=-1, keepdims=True))
        return shifted / shifted.sum(axis=-1, keepdims=True)
    return scores


def _swapped_axes(case):
    scores = _scores(case)
    return np.swapaxes(scores, 1, 2) if scores.shape[1] == scores.shape[2] else None


def _greedy(case, mask="all", fill=-np.inf, origin=0):
    """mask: "all" chosen positions (right), "none", or only the "previous" step's choice."""
    scores = case.inputs["scores"]
    batch, steps, n = scores.shape
    chosen = np.zeros((batch, n), dtype=bool)
    indices = np.zeros((batch, steps), dtype=np.int64)
    for m in range(steps):
        best = np.where(chosen, fill, scores[:, m]).argmax(axis=-1)
        indices[:, m] = best
        if mask == "previous":
            chosen[:] = False
        if mask != "none":
            chosen[np.arange(batch), best] = True
    return indices + origin


def _distinct_positions(case, output):
    output = np.asarray(output)
    batch, steps, n = case.inputs["scores"].shape
    if output.shape != (batch, steps):
        return None  # the shape check already says what is wrong
    if np.any(output != np.round(output)) or np.any((output < 0) | (output >= n)):
        return f"every index must be a whole number in [0, {n}), got {output.tolist()}"
    for b, row in enumerate(output.astype(np.int64)):
        seen = {}
        for m, j in enumerate(row.tolist()):
            if j in seen:
                return (
                    f"example {b} chooses position {j} twice (steps {seen[j]} and {m}): mask "
                    "the positions already chosen"
                    + (", so that the result is a permutation" if steps == n else "")
                )
            seen[j] = m
    return None


def _log_likelihood(case, mask=True, reduce="sum"):
    scores, targets = case.inputs["scores"], case.inputs["targets"]
    n = scores.shape[-1]
    one_hot = np.eye(n, dtype=bool)[targets]
    earlier = np.cumsum(one_hot, axis=1) - one_hot > 0
    masked = np.where(earlier, -np.inf, scores) if mask else scores
    top = masked.max(axis=-1, keepdims=True)
    log_norm = top[..., 0] + np.log(np.exp(masked - top).sum(axis=-1))
    terms = np.take_along_axis(scores, targets[..., None], axis=-1)[..., 0] - log_norm
    return terms.mean(axis=-1) if reduce == "mean" else terms.sum(axis=-1)


RECORD = Exercise(
    id="pointer",
    title="Lab: Pointer networks, scores over input positions and greedy decoding",
    file="lab_pointer.py",
    section="NNDL 8.2.1.5, (8.12)-(8.15)",
    timeout=15.0,
    summary=(
        "Write the pointer scores u_j = vᵀ tanh(W_1 e_j + W_2 d) over the input positions as "
        "a Keras layer, greedy decoding that never points at a position twice (so that a "
        "sorting network outputs a permutation), and the log-likelihood of a target sequence "
        "of positions by the chain rule, with the earlier targets masked."
    ),
    parts=(
        Part(
            name="PointerScores",
            points=4,
            targets=("PointerScores",),
            make_cases=score_cases,
            description="PointerScores.call: u = vᵀ tanh(W_1 e_j + W_2 d_m), (B, M, N).",
            mistakes=(
                Mistake(
                    "tanh missing",
                    "The scores are vᵀ(W_1 e_j + W_2 d_m) without the tanh: the part that "
                    "depends on d_m is then the same for every position j, and the pointer "
                    "could not depend on the decoder state.",
                    lambda case: _scores(case, tanh=False),
                ),
                Mistake(
                    "probabilities instead of scores",
                    "These are softmax probabilities: PointerScores returns the raw scores u "
                    "(logits); the softmax (and its masking) comes later.",
                    lambda case: _scores(case, softmax=True),
                ),
                Mistake(
                    "W_1 and W_2 swapped",
                    "The projections are swapped: W_1 projects the encoder states e_j (the "
                    "inputs pointed at), W_2 the decoder states d_m.",
                    lambda case: _scores(case, swap=True),
                ),
                Mistake(
                    "steps and positions swapped",
                    "The result is u[b, j, m]: rows must be the output steps m and columns the "
                    "input positions j, so broadcast as (B, M, 1, units) + (B, 1, N, units).",
                    _swapped_axes,
                ),
            ),
        ),
        Part(
            name="greedy_decode",
            points=4,
            targets=("greedy_decode",),
            make_cases=decode_cases,
            description=(
                "greedy_decode: argmax over the positions not chosen yet; each row holds "
                "distinct positions (a permutation when M = N)."
            ),
            mistakes=(
                Mistake(
                    "chosen positions not masked",
                    "Each step took the plain argmax of its scores, so a position can be "
                    "chosen twice: set the scores of the positions chosen at earlier steps to "
                    "-∞ before the argmax.",
                    lambda case: _greedy(case, mask="none"),
                ),
                Mistake(
                    "only the previous choice masked",
                    "Only the position chosen at the step just before was masked: every "
                    "position chosen at ANY earlier step must be excluded.",
                    lambda case: _greedy(case, mask="previous"),
                ),
                Mistake(
                    "masked with 0 instead of -∞",
                    "The chosen positions' scores were set to 0, which still beats every "
                    "negative score: mask with -∞ (or remove the positions).",
                    lambda case: _greedy(case, fill=0.0),
                ),
                Mistake(
                    "indices counted from 1",
                    "The indices count from 1: positions are 0, ..., N-1.",
                    lambda case: _greedy(case, origin=1),
                ),
            ),
            properties=(
                Property(
                    "distinct positions (a permutation when M = N)",
                    _distinct_positions,
                ),
            ),
        ),
        Part(
            name="sequence_log_likelihood",
            points=2,
            targets=("sequence_log_likelihood",),
            make_cases=likelihood_cases,
            description=(
                "sequence_log_likelihood: Σ_m log p(c_m | c_<m, x), earlier targets masked, "
                "stable for large scores."
            ),
            mistakes=(
                Mistake(
                    "earlier targets not masked",
                    "Each step's softmax ran over all N positions: the positions already "
                    "chosen at earlier steps (c_1, ..., c_{m-1}) must be excluded, as in "
                    "decoding.",
                    lambda case: _log_likelihood(case, mask=False),
                ),
                Mistake(
                    "probability instead of log",
                    "This is the probability p(c_1, ..., c_M | x) itself: return its "
                    "logarithm, the sum of the log-probabilities of the steps.",
                    lambda case: np.exp(_log_likelihood(case)),
                ),
                Mistake(
                    "mean instead of sum",
                    "The log-probabilities of the steps were averaged: the chain rule "
                    "multiplies the probabilities, so their logarithms add up.",
                    lambda case: _log_likelihood(case, reduce="mean"),
                ),
                Mistake(
                    "sign flipped",
                    "This is the negative log-likelihood (the training loss): return "
                    "log p, which is <= 0.",
                    lambda case: -_log_likelihood(case),
                ),
            ),
        ),
    ),
)
