"""Lab nw: Nadaraya–Watson kernel regression, non-parametric and with a learned width."""

from __future__ import annotations

import numpy as np

from grader.engine.spec import FUNCTION, LAYER, Case, Exercise, Mistake, Part, Property

# --- cases ---------------------------------------------------------------------------------

# (m queries, n training points, bandwidth h or None for the default 1.0)
WEIGHT_SHAPES = [(4, 6, None), (1, 1, 0.5), (5, 3, 2.0), (7, 10, 0.3)]
# (B, m, n): batch 1 and several, m != n, a single query and a single training point.
PARAMETRIC_SHAPES = [(2, 3, 5), (1, 1, 1), (3, 4, 2), (1, 6, 9)]


def _points(rng, size, low=0.0, high=5.0):
    return rng.uniform(low, high, size=size)


def _targets(rng, keys):
    return np.sin(keys) + 0.3 * rng.standard_normal(np.shape(keys))


def _weight_case(rng, m, n, h, label_extra="", queries=None):
    params = {} if h is None else {"bandwidth": float(h)}
    label = f"m={m} n={n} h={1.0 if h is None else h}" + label_extra
    return Case(
        "gaussian_weights",
        FUNCTION,
        label,
        inputs={
            "queries": _points(rng, m) if queries is None else queries,
            "keys": _points(rng, n),
        },
        params=params,
    )


def weight_cases(rng, hidden=False):
    if hidden:
        shapes = [
            (int(rng.integers(1, 9)), int(rng.integers(1, 12)), float(np.round(h, 3)))
            for h in rng.uniform(0.2, 2.5, size=3)
        ]
    else:
        shapes = WEIGHT_SHAPES
    cases = [_weight_case(rng, m, n, h) for m, n, h in shapes]
    far = 40.0 + 10.0 * rng.random(3)
    cases.append(
        _weight_case(
            rng, 3, 6, 0.1, " far queries (numerical stability: scores near -1e5)", queries=far
        )
    )
    return cases


def _nw_case(rng, kernel, queries, keys, h, label_extra=""):
    params = {"kernel": kernel}
    if h is not None:
        params["bandwidth"] = float(h)
    return Case(
        "nadaraya_watson",
        FUNCTION,
        f"{kernel}, m={len(queries)} n={len(keys)} h={1.0 if h is None else h}{label_extra}",
        inputs={"queries": queries, "keys": keys, "values": _targets(rng, keys)},
        params=params,
    )


def regression_cases(rng, hidden=False):
    cases = []
    if hidden:
        for kernel in ("gaussian", "boxcar", "epanechnikov"):
            m, n = (int(v) for v in rng.integers(1, 12, size=2))
            h = float(np.round(rng.uniform(0.4, 2.0), 3))
            cases.append(_nw_case(rng, kernel, _points(rng, m), _points(rng, n), h))
    else:
        cases.append(_nw_case(rng, "gaussian", _points(rng, 5), _points(rng, 8), 0.7))
        cases.append(_nw_case(rng, "gaussian", _points(rng, 1), _points(rng, 1), None))
        cases.append(_nw_case(rng, "boxcar", _points(rng, 6), _points(rng, 9), 1.5))
        cases.append(_nw_case(rng, "epanechnikov", _points(rng, 6), _points(rng, 9), 1.2))
    # Training points on a grid of step 1/4 and h = 1/2: some lie at distance exactly h
    # (exact in binary floating point), and the last query has no training point within h.
    grid = rng.permutation(np.arange(0.0, 4.0, 0.25))
    queries = np.array([0.5, 1.25, 2.0, 3.75, 6.0])
    for kernel in ("boxcar", "epanechnikov"):
        cases.append(
            _nw_case(
                rng,
                kernel,
                queries,
                grid,
                0.5,
                " (grid: points at distance exactly h, an empty window)",
            )
        )
    return cases


def _parametric_case(rng, b, m, n, dtype="float64"):
    # w away from 1, where several mistakes would agree with the right answer.
    w = rng.uniform(1.3, 2.2) if rng.random() < 0.5 else rng.uniform(0.4, 0.75)
    keys = _points(rng, (b, n))
    label = f"B={b} m={m} n={n} w={w:.3g}" + ("" if dtype == "float64" else f" {dtype}")
    return Case(
        "ParametricNadarayaWatson",
        LAYER,
        label,
        inputs={"queries": _points(rng, (b, m)), "keys": keys, "values": _targets(rng, keys)},
        weights={"w": np.asarray(w)},
        upstream=rng.standard_normal((b, m)),
        dtype=dtype,
    )


def parametric_cases(rng, hidden=False):
    if hidden:
        shapes = [tuple(int(v) for v in rng.integers(1, 9, size=3)) for _ in range(3)]
    else:
        shapes = PARAMETRIC_SHAPES
    cases = [_parametric_case(rng, *shape) for shape in shapes]
    cases.append(_parametric_case(rng, 2, 5, 7, dtype="float32"))
    return cases


# --- known mistakes, recomputed in NumPy ---------------------------------------------------


def _softmax(scores, axis=-1):
    shifted = np.exp(scores - scores.max(axis=axis, keepdims=True))
    return shifted / shifted.sum(axis=axis, keepdims=True)


def _bandwidth(case):
    return float(case.params.get("bandwidth", 1.0))


def _squared_distances(case):
    q, k = case.inputs["queries"], case.inputs["keys"]
    return np.square(q[..., :, None] - k[..., None, :])


def _weights_wrong_axis(case):
    if case.inputs["queries"].shape[-1] == 1:
        return None
    return _softmax(-_squared_distances(case) / (2 * _bandwidth(case) ** 2), axis=-2)


def _u(case, scale=True):
    q, k = case.inputs["queries"], case.inputs["keys"]
    diff = q[:, None] - k[None, :]
    return diff / _bandwidth(case) if scale else diff


def _kernel(name, u, strict_boxcar=False, clip=True):
    if name == "gaussian":
        return np.exp(-0.5 * np.square(u))
    if name == "boxcar":
        return (np.abs(u) < 1.0 if strict_boxcar else np.abs(u) <= 1.0).astype(float)
    k = 1.0 - np.square(u)
    return np.maximum(k, 0.0) if clip else k


def _pool(k, values, normalise=True):
    if normalise:
        total = k.sum(axis=-1, keepdims=True)
        k = k / np.where(total != 0, total, 1.0)
    return k @ values


def _regression_mistake(kernel=None, **options):
    scale = options.pop("scale", True)
    normalise = options.pop("normalise", True)

    def compute(case):
        if kernel is not None and case.params["kernel"] != kernel:
            return None
        if not scale and _bandwidth(case) == 1.0:
            return None
        u = _u(case, scale)
        return _pool(_kernel(case.params["kernel"], u, **options), case.inputs["values"], normalise)

    return compute


def _has_ties(case):
    return bool(np.any(np.abs(_u(case)) == 1.0))


def _strict_boxcar(case):
    if case.params["kernel"] != "boxcar" or not _has_ties(case):
        return None
    return _regression_mistake("boxcar", strict_boxcar=True)(case)


def _parametric(case, transform):
    q, k, v = case.inputs["queries"], case.inputs["keys"], case.inputs["values"]
    w = float(case.weights["w"])
    scores = transform(q[..., :, None] - k[..., None, :], w)
    return np.einsum("bmn,bn->bm", _softmax(scores), v)


def _parametric_wrong_axis(case):
    q, k, v = case.inputs["queries"], case.inputs["keys"], case.inputs["values"]
    if q.shape[-1] == 1:
        return None
    w = float(case.weights["w"])
    weights = _softmax(-0.5 * np.square((q[..., :, None] - k[..., None, :]) * w), axis=-2)
    return np.einsum("bmn,bn->bm", weights, v)


# --- properties ----------------------------------------------------------------------------


def _rows_sum_to_one(case, output):
    sums = np.asarray(output, np.float64).sum(axis=-1)
    worst = float(np.max(np.abs(sums - 1.0), initial=0.0))
    if worst > 1e-6:
        return (
            f"a row of weights sums to {sums.flat[int(np.argmax(np.abs(sums - 1.0)))]:.6g}, "
            "not 1: normalise over the keys (the last axis)"
        )
    return None


def _weights_in_unit_interval(case, output):
    output = np.asarray(output, np.float64)
    if np.any(output < -1e-12) or np.any(output > 1.0 + 1e-12):
        return "a weight lies outside [0, 1]; attention weights are probabilities"
    return None


def _prediction_is_an_average(case, output):
    values = case.inputs["values"]
    output = np.asarray(output, np.float64)
    low, high = values.min() - 1e-9, values.max() + 1e-9
    outside = ~((output >= low) & (output <= high)) & (output != 0.0)
    if np.any(outside):
        index = int(np.argmax(outside))
        return (
            f"prediction {index} is {output[index]:.6g}, outside [{values.min():.6g}, "
            f"{values.max():.6g}], the range of the training outputs: a weighted average with "
            "weights >= 0 that sum to one cannot leave it (a negative kernel value does this)"
        )
    return None


RECORD = Exercise(
    id="nw",
    title="Lab: Nadaraya–Watson kernel regression as attention pooling",
    file="lab_nw.py",
    section="Slides: attention pooling (Nadaraya–Watson); d2l attention pooling",
    timeout=15.0,
    summary=(
        "Kernel regression is attention pooling: the query is x, the keys and values are the "
        "training pairs (x_j, y_j), and the normalised kernel is the attention weight. Write "
        "the Gaussian weights as a stable softmax, predictions with Gaussian, boxcar and "
        "Epanechnikov kernels, and the parametric version with a learned width w as a Keras "
        "layer whose gradients reach w."
    ),
    parts=(
        Part(
            name="gaussian_weights",
            points=2,
            targets=("gaussian_weights",),
            make_cases=weight_cases,
            description="gaussian_weights: softmax over keys of -(x - x_j)²/2h², stable.",
            mistakes=(
                Mistake(
                    "factor ½ missing",
                    "These are softmax(-(x - x_j)²/h²): the ½ of the Gaussian exp(-u²/2) is "
                    "missing.",
                    lambda case: _softmax(-_squared_distances(case) / _bandwidth(case) ** 2),
                ),
                Mistake(
                    "bandwidth not squared",
                    "You divided (x - x_j)² by 2h, not by 2h²: u = (x - x_j)/h is squared whole.",
                    lambda case: _softmax(-_squared_distances(case) / (2 * _bandwidth(case))),
                ),
                Mistake(
                    "normalised over the queries",
                    "The softmax normalises over the wrong axis: each query's weights over "
                    "the keys (axis=-1) must sum to one.",
                    _weights_wrong_axis,
                ),
                Mistake(
                    "sign flipped",
                    "These are softmax(+(x - x_j)²/2h²): the sign is flipped, so the farthest "
                    "training points get the largest weights.",
                    lambda case: _softmax(_squared_distances(case) / (2 * _bandwidth(case) ** 2)),
                ),
                Mistake(
                    "not normalised",
                    "These are the kernel values exp(-(x - x_j)²/2h²) themselves: divide "
                    "each row by its sum (that is what the softmax does).",
                    lambda case: np.exp(-_squared_distances(case) / (2 * _bandwidth(case) ** 2)),
                ),
            ),
            properties=(
                Property("rows sum to one", _rows_sum_to_one),
                Property("weights in [0, 1]", _weights_in_unit_interval),
            ),
        ),
        Part(
            name="nadaraya_watson",
            points=3,
            targets=("nadaraya_watson",),
            make_cases=regression_cases,
            description="nadaraya_watson: predictions with Gaussian, boxcar and Epanechnikov "
            "kernels; a query with an empty window gives 0.",
            mistakes=(
                Mistake(
                    "boxcar edge excluded",
                    "The boxcar kernel includes the edge, |u| <= 1: a training point at "
                    "distance exactly h counts (you used |u| < 1).",
                    _strict_boxcar,
                ),
                Mistake(
                    "Epanechnikov not clipped",
                    "1 - u² is negative for |u| > 1: the Epanechnikov kernel is "
                    "max(1 - u², 0), zero outside the window.",
                    _regression_mistake("epanechnikov", clip=False),
                ),
                Mistake(
                    "not normalised",
                    "These are Σ_j K(u_j) y_j without dividing by Σ_j K(u_j): the weights "
                    "must sum to one.",
                    _regression_mistake(normalise=False),
                ),
                Mistake(
                    "bandwidth ignored",
                    "The bandwidth h is not used: the kernel takes u = (x - x_j)/h.",
                    _regression_mistake(scale=False),
                ),
            ),
            properties=(Property("a weighted average of the values", _prediction_is_an_average),),
        ),
        Part(
            name="ParametricNadarayaWatson",
            points=4,
            targets=("ParametricNadarayaWatson",),
            make_cases=parametric_cases,
            description="ParametricNadarayaWatson.call: softmax(-½((x - x_j) w)²) pooling, "
            "gradients to queries, keys, values and w.",
            mistakes=(
                Mistake(
                    "w outside the square",
                    "These use -½ (x - x_j)² w: w multiplies the difference before squaring, "
                    "-½ ((x - x_j) w)².",
                    lambda case: _parametric(case, lambda d, w: -0.5 * np.square(d) * w),
                ),
                Mistake(
                    "w used as a bandwidth",
                    "These use ((x - x_j)/w)²: w is the inverse width, it multiplies.",
                    lambda case: _parametric(case, lambda d, w: -0.5 * np.square(d / w)),
                ),
                Mistake(
                    "factor ½ missing",
                    "These use -((x - x_j) w)²: the ½ is missing.",
                    lambda case: _parametric(case, lambda d, w: -np.square(d * w)),
                ),
                Mistake(
                    "softmax over the queries",
                    "The softmax normalises over the queries; it must run over the keys (the "
                    "training points), axis=-1 of the (B, m, n) scores.",
                    _parametric_wrong_axis,
                ),
            ),
        ),
    ),
)
