"""Lab bahdanau: one decoder step of Bahdanau attention, its padding mask, the alignment matrix."""

from __future__ import annotations

import numpy as np

from grader.engine.spec import FUNCTION, LAYER, Case, Exercise, Mistake, Part, Property

# (B, T, d_s, d_h, units): batch 1 and several, d_s != d_h, T = 1, and d_s == d_h (where
# swapped projection matrices run without error and must be told apart by their values).
STEP_SHAPES = [(2, 5, 3, 4, 6), (1, 1, 1, 1, 1), (3, 4, 5, 5, 3), (1, 7, 2, 6, 4)]
PADDED_SHAPES = [(3, 6, 3, 4, 5), (2, 5, 4, 4, 3), (4, 3, 2, 5, 4)]
# (B, T_out, T_in, d_s, d_h, units)
ALIGNMENT_SHAPES = [(2, 4, 6, 3, 5, 4), (1, 1, 1, 2, 2, 3), (3, 5, 3, 4, 4, 6)]


# --- cases ---------------------------------------------------------------------------------


def _weights(rng, d_s, d_h, units):
    return {
        "W_s": rng.standard_normal((d_s, units)) / np.sqrt(d_s),
        "W_h": rng.standard_normal((d_h, units)) / np.sqrt(d_h),
        "v": rng.standard_normal(units),
    }


def _lengths(rng, batch, steps, padded):
    if not padded or steps == 1:
        return np.full(batch, float(steps))
    lengths = rng.integers(1, steps + 1, size=batch)
    lengths[0] = 1  # a sentence of one token: all the weight on position 0
    if batch > 1:
        lengths[1] = int(rng.integers(2, steps)) if steps > 2 else 1  # strictly padded
    return lengths.astype(np.float64)


def _step_case(rng, shapes, padded, dtype="float64"):
    b, t, d_s, d_h, units = shapes
    lengths = _lengths(rng, b, t, padded)
    label = f"B={b} T={t} d_s={d_s} d_h={d_h} units={units}"
    if padded:
        label += f" lengths={[int(n) for n in lengths]}"
    if dtype != "float64":
        label += f" {dtype}"
    return Case(
        target="BahdanauAttentionStep",
        kind=LAYER,
        label=label,
        inputs={
            "previous_state": rng.standard_normal((b, d_s)),
            "encoder_states": rng.standard_normal((b, t, d_h)),
            "source_lengths": lengths,
        },
        params={"units": units},
        weights=_weights(rng, d_s, d_h, units),
        upstream=rng.standard_normal((b, d_h)),
        dtype=dtype,
    )


def _random_shapes(rng, count, low_t=1):
    return [
        (
            int(rng.integers(1, 5)),
            int(rng.integers(low_t, 9)),
            int(rng.integers(1, 7)),
            int(rng.integers(1, 7)),
            int(rng.integers(1, 7)),
        )
        for _ in range(count)
    ]


def step_cases(rng, hidden=False):
    shapes = _random_shapes(rng, 3) if hidden else STEP_SHAPES
    cases = [_step_case(rng, s, padded=False) for s in shapes]
    cases.append(_step_case(rng, (2, 4, 3, 5, 4), padded=False, dtype="float32"))
    return cases


def padded_cases(rng, hidden=False):
    shapes = _random_shapes(rng, 3, low_t=3) if hidden else PADDED_SHAPES
    cases = [_step_case(rng, s, padded=True) for s in shapes]
    cases.append(_step_case(rng, (3, 5, 4, 3, 4), padded=True, dtype="float32"))
    return cases


def alignment_cases(rng, hidden=False):
    if hidden:
        shapes = [tuple(int(n) for n in rng.integers(1, 7, size=6)) for _ in range(3)]
    else:
        shapes = ALIGNMENT_SHAPES
    cases = []
    for b, t_out, t_in, d_s, d_h, units in shapes:
        lengths = _lengths(rng, b, t_in, padded=True).astype(np.int64)
        cases.append(
            Case(
                target="alignment",
                kind=FUNCTION,
                label=(
                    f"B={b} T_out={t_out} T_in={t_in} d_s={d_s} d_h={d_h} units={units} "
                    f"lengths={lengths.tolist()}"
                ),
                inputs={
                    "decoder_states": rng.standard_normal((b, t_out + 1, d_s)),
                    "encoder_states": rng.standard_normal((b, t_in, d_h)),
                    "source_lengths": lengths,
                    **_weights(rng, d_s, d_h, units),
                },
            )
        )
    return cases


# --- the reference in NumPy, with the known mistakes as switches ----------------------------


def _scores(queries, keys, W_s, W_h, v, tanh=True):
    hidden = (queries @ W_s)[:, :, None, :] + (keys @ W_h)[:, None, :, :]
    return (np.tanh(hidden) if tanh else hidden) @ v


def _softmax(scores, axis=-1):
    shifted = np.exp(scores - scores.max(axis=axis, keepdims=True))
    return shifted / shifted.sum(axis=axis, keepdims=True)


def _valid(lengths, steps, extra=0):
    return np.arange(steps)[None, None, :] < (np.asarray(lengths)[:, None, None] + extra)


def _masked_softmax(scores, lengths, mask="before", axis=-1):
    """mask: "before" (right), "none", "after" (zeroed after the softmax), "inclusive"."""
    if mask == "none":
        return _softmax(scores, axis)
    if mask == "after":
        return _softmax(scores, axis) * _valid(lengths, scores.shape[-1])
    valid = _valid(lengths, scores.shape[-1], extra=1 if mask == "inclusive" else 0)
    return _softmax(np.where(valid, scores, -1e9), axis)


def _context(case, tanh=True, mask="before", swap=False, weights="softmax"):
    x, w = case.inputs, case.weights
    W_s, W_h = (w["W_h"], w["W_s"]) if swap else (w["W_s"], w["W_h"])
    if (
        W_s.shape[0] != x["previous_state"].shape[-1]
        or W_h.shape[0] != x["encoder_states"].shape[-1]
    ):
        return None
    scores = _scores(x["previous_state"][:, None, :], x["encoder_states"], W_s, W_h, w["v"], tanh)
    if weights == "ones":
        alpha = np.ones_like(scores)
    elif weights == "scores":
        alpha = scores
    else:
        alpha = _masked_softmax(scores, x["source_lengths"], mask)
    return (alpha @ x["encoder_states"])[:, 0, :]


def _padded_only(compute):
    """A padding mistake, shown only where some example is really padded."""

    def wrapped(case):
        lengths = np.asarray(case.inputs["source_lengths"])
        steps = case.inputs["encoder_states"].shape[1]
        return compute(case) if np.any(lengths < steps) else None

    return wrapped


def _alignment(case, shift=0, mask="before", axis=-1, softmax=True):
    x = case.inputs
    states = x["decoder_states"]
    queries = states[:, 1:] if shift else states[:, :-1]
    scores = _scores(queries, x["encoder_states"], x["W_s"], x["W_h"], x["v"])
    if not softmax:
        return scores
    return _masked_softmax(scores, x["source_lengths"], mask, axis)


def _rows_are_distributions(case, output):
    lengths = np.asarray(case.inputs["source_lengths"])
    output = np.asarray(output, dtype=np.float64)
    if output.ndim != 3 or output.shape[0] != lengths.shape[0]:
        return None  # the shape check already says what is wrong
    valid = _valid(lengths, output.shape[-1])
    padding = np.abs(np.where(valid, 0.0, output)).max(initial=0.0)
    if padding > 1e-9:
        b, t, j = (int(i) for i in np.argwhere(np.abs(np.where(valid, 0.0, output)) > 1e-9)[0])
        return (
            f"example {b}, output step {t + 1} gives weight {output[b, t, j]:.3g} to source "
            f"position {j}, which is padding (length {int(lengths[b])}): padded positions must "
            "get weight 0"
        )
    sums = output.sum(axis=-1)
    if not np.allclose(sums, 1.0, atol=1e-6):
        b, t = (int(i) for i in np.argwhere(~np.isclose(sums, 1.0, atol=1e-6))[0])
        return (
            f"the weights of example {b}, output step {t + 1} sum to {sums[b, t]:.6g}, not 1: "
            "each row is a softmax over the source positions"
        )
    return None


TANH = Mistake(
    "tanh missing",
    "The scores are vᵀ(W_sᵀ s + W_hᵀ h_j) without the tanh: the additive score is "
    "vᵀ tanh(W_sᵀ s + W_hᵀ h_j). Without it, the part that depends on s is the same for every "
    "j and cancels in the softmax: the query would not matter at all.",
    lambda case: _context(case, tanh=False),
)
WEIGHTS_ONE = Mistake(
    "softmax over a size-1 axis",
    "The context is the plain SUM of the encoder states: every weight came out as 1. A softmax "
    "over an axis of size 1 does this; with scores of shape (B, 1, T) or (B, T, 1), take the "
    "softmax over the T source positions.",
    lambda case: _context(case, weights="ones"),
)
SCORES_AS_WEIGHTS = Mistake(
    "softmax missing",
    "The context is Σ_j e_j h_j with the raw scores e_j as weights: the softmax that turns "
    "them into weights α_j (positive, summing to 1) is missing.",
    lambda case: _context(case, weights="scores"),
)
SWAPPED = Mistake(
    "W_s and W_h swapped",
    "The projections are swapped: W_s projects the decoder state s_{t-1} (the query) and W_h "
    "the encoder states h_j (the keys).",
    lambda case: _context(case, swap=True),
)
NO_MASK = Mistake(
    "mask forgotten",
    "The padded source positions got weight: the softmax ran over all T positions. Positions "
    "j >= length are padding; set their scores to a very negative number before the softmax.",
    _padded_only(lambda case: _context(case, mask="none")),
)
OFF_BY_ONE = Mistake(
    "mask off by one",
    "The mask keeps one position too many: position j is valid when j < length (positions "
    "count from 0), not j <= length.",
    _padded_only(lambda case: _context(case, mask="inclusive")),
)
MASK_AFTER = Mistake(
    "masked after the softmax",
    "The padded positions were zeroed AFTER the softmax, so the remaining weights no longer "
    "sum to 1. Mask the scores before the softmax (or renormalise).",
    _padded_only(lambda case: _context(case, mask="after")),
)


RECORD = Exercise(
    id="bahdanau",
    title="Lab: Bahdanau attention, one decoder step with s_{t-1} as the query",
    file="lab_bahdanau.py",
    section="slides: Bahdanau attention; blog: Bahdanau and Luong attention",
    timeout=15.0,
    summary=(
        "Write one decoder step of Bahdanau attention: additive scores between the previous "
        "decoder state s_{t-1} and the encoder states, a softmax that ignores padded source "
        "positions, and the context vector; then the alignment matrix of a whole output "
        "sentence, where output t attends with s_{t-1}, not s_t."
    ),
    parts=(
        Part(
            name="step without padding",
            points=3,
            targets=("BahdanauAttentionStep",),
            make_cases=step_cases,
            description=(
                "BahdanauAttentionStep with every source position valid: additive scores, "
                "softmax, context; outputs and gradients."
            ),
            mistakes=(TANH, WEIGHTS_ONE, SCORES_AS_WEIGHTS, SWAPPED),
        ),
        Part(
            name="step with padded sources",
            points=3,
            targets=("BahdanauAttentionStep",),
            make_cases=padded_cases,
            description=(
                "BahdanauAttentionStep with padded sources: padded positions get zero weight; "
                "a sentence of length 1 puts all the weight on position 0."
            ),
            mistakes=(NO_MASK, OFF_BY_ONE, MASK_AFTER, TANH, WEIGHTS_ONE, SWAPPED),
        ),
        Part(
            name="alignment",
            points=3,
            targets=("alignment",),
            make_cases=alignment_cases,
            description=(
                "alignment: the weights of every output step, each computed with the previous "
                "decoder state s_{t-1}; rows are distributions over the valid positions."
            ),
            mistakes=(
                Mistake(
                    "s_t instead of s_{t-1}",
                    "Output t attended with s_t, the state it is about to produce: Bahdanau "
                    "attention uses the PREVIOUS state s_{t-1} (decoder_states[:, :-1]); using "
                    "the current state is Luong's choice.",
                    lambda case: _alignment(case, shift=1),
                ),
                Mistake(
                    "mask forgotten",
                    "Padded source positions got weight: mask the positions j >= length before "
                    "the softmax.",
                    lambda case: _alignment(case, mask="none"),
                ),
                Mistake(
                    "softmax over the output steps",
                    "The softmax normalised over the output steps (axis 1): each output step's "
                    "weights must be a distribution over the SOURCE positions (the last axis).",
                    lambda case: _alignment(case, axis=1),
                ),
                Mistake(
                    "scores instead of weights",
                    "These are the raw scores e_tj: the (masked) softmax is missing.",
                    lambda case: _alignment(case, softmax=False),
                ),
            ),
            properties=(
                Property(
                    "rows are distributions over the valid positions", _rows_are_distributions
                ),
            ),
        ),
    ),
)
