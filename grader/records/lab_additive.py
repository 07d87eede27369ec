"""Lab additive: the additive score vᵀ tanh(W_q q + W_k k), its pooling, and what it costs."""

from __future__ import annotations

from grader.engine import properties as relations
from grader.engine import sampling as draw
from grader.engine import selectors as on
from grader.reference import attention as ref
from grader.vocabulary.spec import Exercise, Mistake, Part, Recompute

# Tq != Tk, d_q != d_k, units = 1, a d_q = d_k case (where swapped kernels run and must be told
# apart by their values), and everything 1; hidden checks draw sizes in [1, 8).
SCORE = draw.Dims(
    "B Tq Tk d_q d_k units",
    ((2, 3, 5, 4, 6, 8), (1, 1, 1, 1, 1, 1), (2, 4, 3, 5, 5, 3), (1, 2, 7, 3, 2, 1)),
    (("B Tq Tk d_q d_k units", 1, 8),),
    float32=(2, 3, 4, 4, 3, 5),
)
# d_v != d_k, and a d_k = d_v case.
ATTENTION = draw.Dims(
    "B Tq Tk d_q d_k d_v units",
    ((2, 3, 5, 4, 6, 3, 8), (1, 1, 1, 1, 1, 1, 1), (2, 4, 3, 5, 5, 5, 4), (1, 2, 6, 3, 2, 4, 2)),
    (("B Tq Tk d_q d_k d_v units", 1, 8),),
    float32=(2, 3, 4, 4, 3, 2, 5),
    count=2,
)
COST = draw.Dims(
    "tq tk d_q d_k units",
    ((1, 1, 1, 1, 1), (3, 5, 4, 6, 8), (10, 20, 32, 16, 64), (7, 7, 5, 5, 1)),
    (("tq tk d_q d_k units", 1, 100),),
    count=2,
)
# Kernels scaled by 1/√d (fan_in) so that tanh works in its curved range, not saturated.
WEIGHTS = {"query_kernel": "d_q units", "key_kernel": "d_k units", "score_vector": "units"}
KERNELS = ("query_kernel", "key_kernel")
QK = {"query": "B Tq d_q", "key": "B Tk d_k"}
QKV = {**QK, "value": "B Tk d_v"}


def additive_case(rng, dims, target, inputs, upstream):
    units = {"units": dims["units"]}
    return draw.layer_case(
        target, rng, dims, inputs, upstream, WEIGHTS, fan_in=KERNELS, params=units
    )


def cost_cases(rng, hidden=False):
    cases = []
    for index, size in enumerate(COST.rows(rng, hidden)):
        if index == 0 and not hidden:  # once with project_first left to its default
            cases.append(draw.function_case("additive_multiplications", **size))
        for first in (True, False):
            cases.append(
                draw.function_case("additive_multiplications", **size, project_first=first)
            )
    return cases


RECORD = Exercise(
    id="additive",
    title="Lab: Additive attention: vᵀ tanh(W_q q + W_k k)",
    file="lab_additive.py",
    section="NNDL (8.2); slides: additive attention; Bahdanau 2015",
    timeout=15.0,
    summary=(
        "The additive score is a small network run on every (query, key) pair. Write it as a "
        "Keras layer with queries and keys of different sizes (project both, broadcast the "
        "sum over all pairs), the attention pooling built on it, and count the "
        "multiplications that projecting first saves."
    ),
    parts=(
        Part(
            name="AdditiveScore",
            recompute=Recompute(ref.additive_scores, weights=KERNELS),
            points=5,
            make_cases=SCORE.cases(
                additive_case, target="AdditiveScore", inputs=QK, upstream="B Tq Tk"
            ),
            description="AdditiveScore.call: vᵀ tanh(W_q q + W_k k) for all pairs; gradients "
            "to the inputs and the three weights.",
            mistakes=(
                Mistake.of(
                    "tanh missing",
                    "These are vᵀ(W_q q + W_k k): the tanh is missing, and without it the score "
                    "splits into a query part plus a key part (no interaction).",
                    ref.additive_scores,
                    tanh=None,
                ),
                Mistake.of(
                    "tanh of each projection",
                    "These are vᵀ(tanh(W_q q) + tanh(W_k k)): the tanh goes around the sum, "
                    "tanh(W_q q + W_k k).",
                    ref.additive_scores,
                    tanh="of each projection",
                ),
                Mistake.of(
                    "tanh after the score vector",
                    "These are tanh(vᵀ(W_q q + W_k k)): the tanh goes on the hidden features, "
                    "before the score vector, vᵀ tanh(W_q q + W_k k); after it, the score is a "
                    "squashed linear function of q and k.",
                    ref.additive_scores,
                    tanh="after the score vector",
                ),
                Mistake.of(
                    "kernels swapped",
                    "query_kernel multiplies the keys and key_kernel the queries: swap them "
                    "back (query_kernel has d_q rows, key_kernel d_k rows).",
                    ref.additive_scores,
                    when=on.same_size(*KERNELS, axis=0),
                    **on.swapped(*KERNELS),
                ),
                Mistake.of(
                    "score vector not used",
                    "These are Σ_u tanh(W_q q + W_k k)_u: the features are summed without "
                    "the weights of score_vector v.",
                    ref.additive_scores,
                    score_vector=1.0,
                ),
            ),
        ),
        Part(
            name="AdditiveAttention",
            recompute=Recompute(ref.additive_attention, weights=KERNELS),
            points=3,
            make_cases=ATTENTION.cases(
                additive_case, target="AdditiveAttention", inputs=QKV, upstream="B Tq d_v"
            ),
            relations=(relations.keys_permuted(("key", "value")), relations.batch_alone()),
            description="AdditiveAttention.call: softmax of the additive scores over the keys, "
            "times the values.",
            mistakes=(
                Mistake.of(
                    "softmax over the queries",
                    "The softmax normalises over the queries; it must run over the keys, the "
                    "last axis of the (B, Tq, Tk) scores.",
                    ref.additive_attention,
                    when=on.several("query", 1),
                    axis=-2,
                ),
                Mistake.of(
                    "softmax missing",
                    "The raw scores weight the values: turn them into attention weights with "
                    "a softmax over the keys first.",
                    ref.additive_attention,
                    normalised=False,
                ),
                Mistake.of(
                    "keys used as values",
                    "The weights average the keys; they must average the values (the third input).",
                    ref.additive_attention,
                    when=on.same_size("key", "value"),
                    value=on.input_named("key"),
                ),
            ),
        ),
        Part(
            name="additive_multiplications",
            points=2,
            make_cases=cost_cases,
            description="additive_multiplications: the cost of projecting first against the "
            "network run on each pair.",
            mistakes=(
                Mistake.of(
                    "vᵀ product not counted",
                    "The product vᵀ tanh(·) costs `units` multiplications for each of the "
                    "Tq·Tk pairs; it is missing.",
                    ref.additive_multiplications,
                    v_products=None,
                ),
                Mistake.of(
                    "the two ways swapped",
                    "This is the count of the other way: project_first=True projects each "
                    "query and each key once; project_first=False projects them again for "
                    "every pair.",
                    ref.additive_multiplications,
                    project_first=on.negated("project_first", default=True),
                ),
                Mistake.of(
                    "vᵀ counted per query and key",
                    "vᵀ tanh(·) is applied once per (query, key) pair, Tq·Tk times, not Tq + "
                    "Tk times.",
                    ref.additive_multiplications,
                    v_products="Tq+Tk",
                ),
            ),
        ),
    ),
)
