"""Lab hard: argmax selection, inverse-CDF sampling, and the straight-through estimator."""

from __future__ import annotations

import numpy as np

from grader.engine.spec import FUNCTION, LAYER, Case, Exercise, Mistake, Part, Property

# (B, Tq, Tk, d_v): Tq != Tk, everything 1, a square one (where the wrong axis runs).
ARGMAX_SHAPES = [(2, 3, 5, 4), (1, 1, 1, 1), (2, 4, 4, 3)]
SAMPLE_SHAPES = [(2, 3, 5), (1, 1, 1), (3, 4, 6), (2, 5, 2)]
STRAIGHT_SHAPES = [(2, 3, 5, 4), (1, 1, 1, 1), (2, 4, 3, 2), (1, 2, 6, 3)]
# Sampled frequencies of this many draws are compared with α.
DRAWS = 2000


def _argmax_cases_for(rng, target, shapes, ties):
    cases = []
    for b, tq, tk, dv in shapes:
        label = f"B={b} Tq={tq} Tk={tk}" + (f" d_v={dv}" if target == "hard_select" else "")
        if ties:
            scores = rng.integers(0, 3, size=(b, tq, tk)).astype(np.float64)
            label += " (ties: the first largest wins)"
        else:
            scores = rng.standard_normal((b, tq, tk))
        inputs = {"scores": scores}
        if target == "hard_select":
            inputs["value"] = rng.standard_normal((b, tk, dv))
        cases.append(Case(target, FUNCTION, label, inputs=inputs))
    return cases


def argmax_cases(rng, hidden=False):
    cases = []
    for target in ("hard_indices", "hard_select"):
        if hidden:
            shapes = [tuple(int(v) for v in rng.integers(1, 7, size=4)) for _ in range(2)]
        else:
            shapes = ARGMAX_SHAPES
        cases += _argmax_cases_for(rng, target, shapes, ties=False)
        cases += _argmax_cases_for(rng, target, [(3, 4, 6, 2)], ties=True)
    return cases


def _dyadic_weights(rng, shape, units=16):
    """Probability vectors that are multiples of 1/16: their cumulative sums are exact."""
    *rows, tk = shape
    counts = rng.multinomial(units, rng.dirichlet(np.full(tk, 0.7)), size=tuple(rows))
    return counts.reshape(shape) / float(units)


def _noise(rng, weights):
    """Uniform numbers in [0, 1), with exact boundaries c_j and zeros mixed in."""
    cdf = np.cumsum(weights, axis=-1)
    noise = rng.random(weights.shape[:-1])
    for index in np.ndindex(noise.shape):
        draw = rng.random()
        inside = [c for c in cdf[index] if c < 1.0]
        if draw < 0.4 and inside:
            noise[index] = inside[int(rng.integers(len(inside)))]
        elif draw < 0.5:
            noise[index] = 0.0
    return noise


def _sample_case(rng, b, tq, tk, label_extra=""):
    weights = _dyadic_weights(rng, (b, tq, tk))
    return Case(
        "sample_indices",
        FUNCTION,
        f"B={b} Tq={tq} Tk={tk}{label_extra}",
        inputs={"weights": weights, "noise": _noise(rng, weights)},
    )


def sample_cases(rng, hidden=False):
    if hidden:
        shapes = [tuple(int(v) for v in rng.integers(1, 8, size=3)) for _ in range(3)]
    else:
        shapes = SAMPLE_SHAPES
    cases = [_sample_case(rng, *shape) for shape in shapes]
    # One distribution, many draws: the frequencies must follow α.
    alpha = _dyadic_weights(rng, (5,))
    cases.append(
        Case(
            "sample_indices",
            FUNCTION,
            f"B=1 Tq={DRAWS} Tk=5, one α for every query (frequencies of {DRAWS} draws)",
            inputs={
                "weights": np.broadcast_to(alpha, (1, DRAWS, 5)).copy(),
                "noise": rng.random((1, DRAWS)),
            },
        )
    )
    return cases


def _straight_case(rng, b, tq, tk, dv, dtype="float64"):
    return Case(
        "StraightThroughHardAttention",
        LAYER,
        f"B={b} Tq={tq} Tk={tk} d_v={dv}" + ("" if dtype == "float64" else f" {dtype}"),
        inputs={
            "scores": rng.standard_normal((b, tq, tk)),
            "value": rng.standard_normal((b, tk, dv)),
        },
        upstream=rng.standard_normal((b, tq, dv)),
        dtype=dtype,
    )


def straight_cases(rng, hidden=False):
    if hidden:
        shapes = [tuple(int(v) for v in rng.integers(1, 7, size=4)) for _ in range(3)]
    else:
        shapes = STRAIGHT_SHAPES
    cases = [_straight_case(rng, *shape) for shape in shapes]
    cases.append(_straight_case(rng, 2, 3, 4, 3, dtype="float32"))
    return cases


# --- known mistakes, recomputed in NumPy ---------------------------------------------------


def _select(case, indices):
    value = case.inputs.get("value")
    if value is None:
        return indices
    return np.take_along_axis(value, indices[..., None], axis=1)


def _argmin(case):
    return _select(case, np.argmin(case.inputs["scores"], axis=-1))


def _last_on_ties(case):
    scores = case.inputs["scores"]
    tk = scores.shape[-1]
    last = tk - 1 - np.argmax(scores[..., ::-1], axis=-1)
    if np.array_equal(last, np.argmax(scores, axis=-1)):
        return None
    return _select(case, last)


def _argmax_over_queries(case):
    scores = case.inputs["scores"]
    if scores.shape[1] != scores.shape[2] or scores.shape[1] == 1:
        return None
    return _select(case, np.argmax(scores, axis=1))


def _softmax(scores, axis=-1):
    shifted = np.exp(scores - scores.max(axis=axis, keepdims=True))
    return shifted / shifted.sum(axis=axis, keepdims=True)


def _soft(case):
    if "value" not in case.inputs:
        return None
    return _softmax(case.inputs["scores"]) @ case.inputs["value"]


def _one_hot(case):
    scores = case.inputs["scores"]
    return np.eye(scores.shape[-1])[np.argmax(scores, axis=-1)]


def _inverse_cdf(case, cdf_axis=-1, strict=False):
    weights, noise = case.inputs["weights"], case.inputs["noise"]
    cdf = np.cumsum(weights, axis=cdf_axis)
    below = cdf < noise[..., None] if strict else cdf <= noise[..., None]
    return np.minimum(below.sum(axis=-1), weights.shape[-1] - 1)


def _cdf_wrong_axis(case):
    if case.inputs["weights"].shape[1] == 1:
        return None
    return _inverse_cdf(case, cdf_axis=1)


# --- properties ----------------------------------------------------------------------------


def _only_positive_weights(case, output):
    weights = case.inputs["weights"]
    indices = np.asarray(output)
    if indices.shape != weights.shape[:-1]:
        return None  # the shape is reported by the output check
    if not np.all(np.isfinite(indices)) or np.any(indices != np.round(indices)):
        return "the indices are not whole numbers"
    indices = indices.astype(np.int64)
    outside = (indices < 0) | (indices >= weights.shape[-1])
    if outside.any():
        where = [int(i) for i in np.argwhere(outside)[0]]
        return f"index {indices[tuple(where)]} at {where} is not a key position (0 .. Tk-1)"
    picked = np.take_along_axis(weights, indices[..., None], axis=-1)[..., 0]
    if np.any(picked <= 0):
        where = [int(i) for i in np.argwhere(picked <= 0)[0]]
        return (
            f"at {where} the sample is key {indices[tuple(where)]}, whose weight is zero: a "
            "key of zero probability can never be drawn"
        )
    return None


def _frequencies_follow_alpha(case, output):
    weights = case.inputs["weights"]
    if weights.shape[1] < DRAWS or np.asarray(output).shape != weights.shape[:-1]:
        return None
    alpha = weights[0, 0]
    counts = np.bincount(np.asarray(output, np.int64).ravel(), minlength=alpha.size)
    frequencies = counts[: alpha.size] / counts.sum()
    worst = int(np.argmax(np.abs(frequencies - alpha)))
    if abs(frequencies[worst] - alpha[worst]) > 0.05:
        return (
            f"key {worst} was drawn {frequencies[worst]:.3f} of the time, but its weight is "
            f"{alpha[worst]:.3f}: inverse-CDF sampling draws each key with its probability"
        )
    return None


RECORD = Exercise(
    id="hard",
    title="Lab: Hard attention: argmax, sampling and the straight-through estimator",
    file="lab_hard.py",
    section="NNDL 8.2.1.1 (8.8); Xu 2015; straight-through estimator",
    timeout=15.0,
    summary=(
        "Hard attention picks one input instead of averaging them all. Select the most "
        "attended value (8.8), draw one with probabilities α by inverse-CDF sampling from "
        "given uniform numbers, and make the selection trainable with the straight-through "
        "estimator: a hard forward pass whose gradient is that of soft attention."
    ),
    parts=(
        Part(
            name="argmax",
            points=2,
            targets=("hard_indices", "hard_select"),
            make_cases=argmax_cases,
            description="hard_indices and hard_select: the argmax over the keys, the first on "
            "a tie, and the value it selects.",
            mistakes=(
                Mistake(
                    "argmin",
                    "This picks the least attended key: hard attention takes the argmax.",
                    _argmin,
                ),
                Mistake(
                    "last on ties",
                    "On a tie this picks the last of the largest scores; take the first (the "
                    "smallest index), as argmax does.",
                    _last_on_ties,
                ),
                Mistake(
                    "argmax over the queries",
                    "The argmax runs over the queries (axis 1); it must run over the keys, "
                    "the last axis.",
                    _argmax_over_queries,
                ),
                Mistake(
                    "soft attention",
                    "This is soft attention, softmax(scores) @ value, an average of all the "
                    "values; hard attention copies the single selected value.",
                    _soft,
                ),
            ),
        ),
        Part(
            name="sampling",
            points=3,
            targets=("sample_indices",),
            make_cases=sample_cases,
            description="sample_indices: inverse-CDF sampling from given uniform numbers; "
            "never a key of zero weight; frequencies follow α.",
            mistakes=(
                Mistake(
                    "boundary on the wrong side",
                    "At u = c_j exactly this picks key j; the interval of key j is "
                    "c_{j-1} <= u < c_j, so u = c_j belongs to the next key (count the c_j "
                    "<= u, not the c_j < u).",
                    lambda case: _inverse_cdf(case, strict=True),
                ),
                Mistake(
                    "noise ignored",
                    "This is the argmax of the weights: the uniform numbers u must choose "
                    "the key, through the cumulative sum.",
                    lambda case: np.argmax(case.inputs["weights"], axis=-1),
                ),
                Mistake(
                    "cumulative sum over the queries",
                    "The cumulative sum runs over the queries (axis 1); it must run over the "
                    "keys, the last axis.",
                    _cdf_wrong_axis,
                ),
            ),
            properties=(
                Property("samples only keys of positive weight", _only_positive_weights),
                Property("frequencies follow α", _frequencies_follow_alpha),
            ),
        ),
        Part(
            name="straight_through",
            points=3,
            targets=("StraightThroughHardAttention",),
            make_cases=straight_cases,
            description="StraightThroughHardAttention.call: the hard selection forward, the "
            "soft gradient backward.",
            mistakes=(
                Mistake(
                    "soft forward pass",
                    "The forward pass is soft attention, softmax(scores) @ value; the "
                    "straight-through estimator keeps the hard selection in the forward pass "
                    "and only borrows the soft gradient.",
                    _soft,
                ),
                Mistake(
                    "soft term not cancelled",
                    "The forward pass is (e_ĵ + α) @ value: subtract stop_gradient(α) so the "
                    "forward value stays exactly the hard selection.",
                    lambda case: (
                        (_one_hot(case) + _softmax(case.inputs["scores"])) @ case.inputs["value"]
                    ),
                ),
                Mistake(
                    "argmin",
                    "This selects the least attended key: hard attention takes the argmax.",
                    _argmin,
                ),
            ),
        ),
    ),
)
