"""Lab hard: argmax selection, inverse-CDF sampling, and the straight-through estimator."""

from __future__ import annotations

from functools import partial

import numpy as np

from grader.engine import sampling as draw
from grader.engine import selectors as on
from grader.i18n import N_
from grader.reference import heads as ref
from grader.vocabulary.labels import label_texts
from grader.vocabulary.spec import FUNCTION, Case, Exercise, Mistake, Part, Property

# The words of this module's case labels, translated where shown (grader.vocabulary.labels).
LABEL_TEXTS = label_texts(
    N_("(ties: the first largest wins)"), N_("one α for every query (frequencies of {draws} draws)")
)

# Tq != Tk, everything 1, a square one (where the wrong axis runs); then one with ties. Hidden
# checks draw sizes in [1, 7) (in [1, 8) for sampling).
SIZES = ("B Tq Tk d_v", 1, 7)
ARGMAX = draw.Dims("B Tq Tk d_v", ((2, 3, 5, 4), (1, 1, 1, 1), (2, 4, 4, 3)), (SIZES,), count=2)
TIES = {"B": 3, "Tq": 4, "Tk": 6, "d_v": 2}
SAMPLE = draw.Dims("B Tq Tk", ((2, 3, 5), (1, 1, 1), (3, 4, 6), (2, 5, 2)), (("B Tq Tk", 1, 8),))
STRAIGHT = draw.Dims(
    "B Tq Tk d_v",
    ((2, 3, 5, 4), (1, 1, 1, 1), (2, 4, 3, 2), (1, 2, 6, 3)),
    (SIZES,),
    float32=(2, 3, 4, 3),
)
# Sampled frequencies of this many draws are compared with α.
DRAWS = 2000


def argmax_cases(rng, hidden=False):
    cases = []
    for target in ("hard_indices", "hard_select"):
        for dims in [*ARGMAX.rows(rng, hidden), TIES]:
            b, tq, tk, d_v = dims.values()
            shown = dims if target == "hard_select" else {"B": b, "Tq": tq, "Tk": tk}
            label = draw.dims_label(**shown)
            if dims is TIES:
                scores = rng.integers(0, 3, size=(b, tq, tk)).astype(np.float64)
                label += " (ties: the first largest wins)"
            else:
                scores = rng.standard_normal((b, tq, tk))
            inputs = {"scores": scores}
            if target == "hard_select":
                inputs["value"] = rng.standard_normal((b, tk, d_v))
            cases.append(Case(target, FUNCTION, label, inputs))
    return cases


def sample_case(rng, dims):
    weights = draw.dyadic_weights(rng, tuple(dims.values()))
    inputs = {"weights": weights, "noise": draw.cdf_noise(rng, weights)}
    return Case("sample_indices", FUNCTION, draw.dims_label(**dims), inputs)


def sample_cases(rng, hidden=False):
    """The cases of SAMPLE, then one α for DRAWS queries: the frequencies must follow it."""
    cases = SAMPLE.cases(sample_case)(rng, hidden)
    weights = np.broadcast_to(draw.dyadic_weights(rng, (5,)), (1, DRAWS, 5)).copy()
    label = f"B=1 Tq={DRAWS} Tk=5, one α for every query (frequencies of {DRAWS} draws)"
    inputs = {"weights": weights, "noise": rng.random((1, DRAWS))}
    return cases + [Case("sample_indices", FUNCTION, label, inputs)]


def straight_case(rng, dims):
    inputs = {"scores": "B Tq Tk", "value": "B Tk d_v"}
    return draw.layer_case("StraightThroughHardAttention", rng, dims, inputs, "B Tq d_v")


FREQUENCIES = on.check_of(partial(ref.frequency_problem, draws=DRAWS))

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
                Mistake.of(
                    "argmin",
                    "This picks the least attended key: hard attention takes the argmax.",
                    ref.hard_select,
                    largest=False,
                ),
                Mistake.of(
                    "last on ties",
                    "On a tie this picks the last of the largest scores; take the first (the "
                    "smallest index), as argmax does.",
                    ref.hard_select,
                    when=on.given(ref.tied_maximum),
                    first_on_ties=False,
                ),
                Mistake.of(
                    "argmax over the queries",
                    "The argmax runs over the queries (axis 1); it must run over the keys, "
                    "the last axis.",
                    ref.hard_select,
                    when=on.all_of(on.square("scores"), on.several("scores", 1)),
                    axis=1,
                ),
                Mistake.of(
                    "soft attention",
                    "This is soft attention, softmax(scores) @ value, an average of all the "
                    "values; hard attention copies the single selected value.",
                    ref.soft_attention,
                    targets=("hard_select",),
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
                Mistake.of(
                    "boundary on the wrong side",
                    "At u = c_j exactly this picks key j; the interval of key j is "
                    "c_{j-1} <= u < c_j, so u = c_j belongs to the next key (count the c_j "
                    "<= u, not the c_j < u).",
                    ref.sample_indices,
                    boundary_to_next=False,
                ),
                Mistake.of(
                    "noise ignored",
                    "This is the argmax of the weights: the uniform numbers u must choose "
                    "the key, through the cumulative sum.",
                    ref.hard_indices,
                    scores=on.input_named("weights"),
                ),
                Mistake.of(
                    "cumulative sum over the queries",
                    "The cumulative sum runs over the queries (axis 1); it must run over the "
                    "keys, the last axis.",
                    ref.sample_indices,
                    when=on.several("weights", 1),
                    cdf_axis=1,
                ),
            ),
            properties=(
                Property("samples only keys of positive weight", on.check_of(ref.sampling_problem)),
                Property("frequencies follow α", FREQUENCIES),
            ),
        ),
        Part(
            name="straight_through",
            points=3,
            targets=("StraightThroughHardAttention",),
            make_cases=STRAIGHT.cases(straight_case),
            description="StraightThroughHardAttention.call: the hard selection forward, the "
            "soft gradient backward.",
            mistakes=(
                Mistake.of(
                    "soft forward pass",
                    "The forward pass is soft attention, softmax(scores) @ value; the "
                    "straight-through estimator keeps the hard selection in the forward pass "
                    "and only borrows the soft gradient.",
                    ref.soft_attention,
                ),
                Mistake.of(
                    "soft term not cancelled",
                    "The forward pass is (e_ĵ + α) @ value: subtract stop_gradient(α) so the "
                    "forward value stays exactly the hard selection.",
                    ref.straight_through,
                    soft_term_cancelled=False,
                ),
                Mistake.of(
                    "argmin",
                    "This selects the least attended key: hard attention takes the argmax.",
                    ref.hard_select,
                    largest=False,
                ),
            ),
        ),
    ),
)
