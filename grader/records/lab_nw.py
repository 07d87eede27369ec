"""Lab nw: Nadaraya–Watson kernel regression, non-parametric and with a learned width."""

from __future__ import annotations

import numpy as np

from grader.engine import properties as relations
from grader.engine import sampling as draw
from grader.engine import selectors as on
from grader.i18n import N_
from grader.reference import kernel_regression as ref
from grader.vocabulary.labels import label_texts
from grader.vocabulary.spec import FUNCTION, LAYER, Case, Exercise, Mistake, Part, Property

# The words of this module's case labels, translated where shown (grader.vocabulary.labels).
LABEL_TEXTS = label_texts(
    N_("far queries (numerical stability: scores near -1e5)"),
    N_("(grid: points at distance exactly h, an empty window)"),
)

# Queries and training points in [0, 5); without h, no bandwidth is passed (the default 1.0).
# fmt: off
WEIGHT_SETTINGS = [dict(m=4, n=6), dict(m=1, n=1, h=0.5), dict(m=5, n=3, h=2.0),
                   dict(m=7, n=10, h=0.3)]
REGRESSION_SETTINGS = [dict(kernel="gaussian", m=5, n=8, h=0.7), dict(kernel="gaussian", m=1, n=1),
                       dict(kernel="boxcar", m=6, n=9, h=1.5),
                       dict(kernel="epanechnikov", m=6, n=9, h=1.2)]
# fmt: on
# (B, m, n): batch 1 and several, m != n, a single query and a single training point.
PARAMETRIC = draw.Dims(
    "B m n", [(2, 3, 5), (1, 1, 1), (3, 4, 2), (1, 6, 9)], [("B m n", 1, 9)], float32=(2, 5, 7)
)
FAR = " far queries (numerical stability: scores near -1e5)"
GRID = " (grid: points at distance exactly h, an empty window)"


def _points(rng, size):
    return rng.uniform(0.0, 5.0, size=size)


def _targets(rng, keys):
    return np.sin(keys) + 0.3 * rng.standard_normal(np.shape(keys))


def _case(rng, target, m, n, h=None, kernel=None, queries=None, keys=None, note=""):
    """A case of `target` on m queries and n training points (drawn unless given), the training
    outputs sin(x_j) plus noise where a kernel is named."""
    inputs = {"queries": _points(rng, m) if queries is None else queries}
    inputs["keys"] = _points(rng, n) if keys is None else keys
    if kernel is not None:
        inputs["values"] = _targets(rng, inputs["keys"])
    params = {} if kernel is None else {"kernel": kernel}
    params.update({} if h is None else {"bandwidth": float(h)})
    label = f"m={m} n={n} h={1.0 if h is None else h}{note}"
    return Case(target, FUNCTION, label if kernel is None else f"{kernel}, {label}", inputs, params)


def weight_cases(rng, hidden=False):
    settings = WEIGHT_SETTINGS
    if hidden:
        bandwidths = rng.uniform(0.2, 2.5, size=3)
        sizes = dict(m=range(1, 9), n=range(1, 12))
        settings = [dict(draw.pick(rng, **sizes), h=float(np.round(h, 3))) for h in bandwidths]
    cases = [_case(rng, "gaussian_weights", **setting) for setting in settings]
    far = 40.0 + 10.0 * rng.random(3)
    return cases + [_case(rng, "gaussian_weights", 3, 6, 0.1, queries=far, note=FAR)]


def _hidden_regression(rng):
    """One setting per kernel, each drawn just before its case's points (a generator)."""
    for kernel in ("gaussian", "boxcar", "epanechnikov"):
        m, n = (int(size) for size in rng.integers(1, 12, size=2))
        yield dict(kernel=kernel, m=m, n=n, h=float(np.round(rng.uniform(0.4, 2.0), 3)))


def regression_cases(rng, hidden=False):
    settings = _hidden_regression(rng) if hidden else REGRESSION_SETTINGS
    cases = [_case(rng, "nadaraya_watson", **setting) for setting in settings]
    # Training points on a grid of step 1/4 and h = 1/2: some lie at distance exactly h
    # (exact in binary floating point), and the last query has no training point within h.
    # Queries far from every training point with a small h: every exp() of the Gaussian kernel
    # underflows unless the softmax is stable (the weights of gaussian_weights).
    far = 40.0 + 10.0 * rng.random(3)
    cases.append(_case(rng, "nadaraya_watson", 3, 6, 0.1, "gaussian", queries=far, note=FAR))
    grid = rng.permutation(np.arange(0.0, 4.0, 0.25))
    queries = np.array([0.5, 1.25, 2.0, 3.75, 6.0])
    for kernel in ("boxcar", "epanechnikov"):
        cases.append(_case(rng, "nadaraya_watson", 5, 16, 0.5, kernel, queries, grid, GRID))
    if not hidden:  # the docstring's ValueError for a kernel it does not name
        for kernel in ("triangle", "Gaussian"):
            case = _case(rng, "nadaraya_watson", 3, 4, 1.0, "gaussian")
            case.params["kernel"], case.label = kernel, f"kernel={kernel!r}"
            case.raises, case.promise = "ValueError", UNKNOWN_KERNEL
            cases.append(case)
    return cases


UNKNOWN_KERNEL = N_(
    "the docstring asks for a ValueError when `kernel` is not gaussian, boxcar or epanechnikov"
)


def parametric_case(rng, dims):
    # w away from 1, where several mistakes would agree with the right answer.
    w = rng.uniform(1.3, 2.2) if rng.random() < 0.5 else rng.uniform(0.4, 0.75)
    b, m, n = dims.values()
    keys = _points(rng, (b, n))
    queries = _points(rng, (b, m))
    return Case(
        "ParametricNadarayaWatson",
        LAYER,
        f"B={b} m={m} n={n} w={w:.3g}",
        {"queries": queries, "keys": keys, "values": _targets(rng, keys)},
        weights={"w": np.asarray(w)},
        upstream=rng.standard_normal((b, m)),
    )


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
            "gaussian_weights",
            2,
            weight_cases,
            description="gaussian_weights: softmax over keys of -(x - x_j)²/2h², stable.",
            mistakes=(
                Mistake.of(
                    "factor ½ missing",
                    "These are softmax(-(x - x_j)²/h²): the ½ of the Gaussian exp(-u²/2) is "
                    "missing.",
                    ref.gaussian_weights,
                    half=1.0,
                ),
                Mistake.of(
                    "bandwidth not squared",
                    "You divided (x - x_j)² by 2h, not by 2h²: u = (x - x_j)/h is squared whole.",
                    ref.gaussian_weights,
                    power=1,
                ),
                Mistake.of(
                    "normalised over the queries",
                    "The softmax normalises over the wrong axis: each query's weights over "
                    "the keys (axis=-1) must sum to one.",
                    ref.gaussian_weights,
                    axis=-2,
                    when=on.several("queries"),
                ),
                Mistake.of(
                    "sign flipped",
                    "These are softmax(+(x - x_j)²/2h²): the sign is flipped, so the farthest "
                    "training points get the largest weights.",
                    ref.gaussian_weights,
                    sign=1.0,
                ),
                Mistake.of(
                    "not normalised",
                    "These are the kernel values exp(-(x - x_j)²/2h²) themselves: divide "
                    "each row by its sum (that is what the softmax does).",
                    ref.gaussian_weights,
                    normalise=False,
                ),
            ),
            properties=(
                Property("rows sum to one", on.check_of(ref.rows_sum_to_one)),
                Property("weights in [0, 1]", on.check_of(ref.weights_in_unit_interval)),
            ),
        ),
        Part(
            "nadaraya_watson",
            3,
            regression_cases,
            description="nadaraya_watson: predictions with Gaussian, boxcar and Epanechnikov "
            "kernels; a query with an empty window gives 0.",
            mistakes=(
                Mistake.of(
                    "boxcar edge excluded",
                    "The boxcar kernel includes the edge, |u| <= 1: a training point at "
                    "distance exactly h counts (you used |u| < 1).",
                    ref.kernel_regression,
                    include_edge=False,
                    when=on.given(ref.boxcar_on_edge),
                ),
                Mistake.of(
                    "Epanechnikov not clipped",
                    "1 - u² is negative for |u| > 1: the Epanechnikov kernel is "
                    "max(1 - u², 0), zero outside the window.",
                    ref.kernel_regression,
                    clip=False,
                    when=on.param_is("kernel", "epanechnikov"),
                ),
                Mistake.of(
                    "not normalised",
                    "These are Σ_j K(u_j) y_j without dividing by Σ_j K(u_j): the weights "
                    "must sum to one.",
                    ref.kernel_regression,
                    normalise=False,
                ),
                Mistake.of(
                    "bandwidth ignored",
                    "The bandwidth h is not used: the kernel takes u = (x - x_j)/h.",
                    ref.kernel_regression,
                    bandwidth=1.0,
                    when=on.param_is_not("bandwidth", 1.0, default=1.0),
                ),
            ),
            properties=(
                Property("a weighted average of the values", on.check_of(ref.within_values)),
            ),
        ),
        Part(
            "ParametricNadarayaWatson",
            4,
            PARAMETRIC.cases(parametric_case),
            relations=(relations.keys_permuted(("keys", "values")), relations.batch_alone()),
            description="ParametricNadarayaWatson.call: softmax(-½((x - x_j) w)²) pooling, "
            "gradients to queries, keys, values and w.",
            mistakes=(
                Mistake.of(
                    "w outside the square",
                    "These use -½ (x - x_j)² w: w multiplies the difference before squaring, "
                    "-½ ((x - x_j) w)².",
                    ref.parametric_pooling,
                    power=1,
                ),
                Mistake.of(
                    "w used as a bandwidth",
                    "These use ((x - x_j)/w)²: w is the inverse width, it multiplies.",
                    ref.parametric_pooling,
                    power=-2,
                ),
                Mistake.of(
                    "factor ½ missing",
                    "These use -((x - x_j) w)²: the ½ is missing.",
                    ref.parametric_pooling,
                    half=1.0,
                ),
                Mistake.of(
                    "softmax over the queries",
                    "The softmax normalises over the queries; it must run over the keys (the "
                    "training points), axis=-1 of the (B, m, n) scores.",
                    ref.parametric_pooling,
                    axis=-2,
                    when=on.several("queries"),
                ),
            ),
        ),
    ),
)
