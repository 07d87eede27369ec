"""Exercise 8-3: a self-attention layer, and the per-layer costs and path lengths of Table 1."""

from __future__ import annotations

import math

import numpy as np

from grader.engine import properties as relations
from grader.engine import sampling as draw
from grader.engine import selectors as on
from grader.i18n import N_
from grader.reference import heads as ref
from grader.vocabulary.spec import Exercise, Mistake, Part, Property, Recompute, WrittenPart

# Batch 1 and several, N = 1, all sizes different, square kernels (d_x = d_k = d_v, where swapped
# kernels run and must be told apart by their values), and d_v left to its default (None: d_k).
ATTENTION = draw.Dims(
    "B N d_x d_k d_v",
    ((2, 5, 4, 3, 6), (1, 1, 1, 1, 1), (3, 4, 6, 6, 6), (1, 7, 3, 5, 2)),
    (("B N d_x d_k d_v", 1, 8),),
    float32=(2, 4, 5, 3, 4),
)
# Hidden checks: at least two positions, so that there is something to mask.
CAUSAL = draw.Dims(
    "B N d_x d_k d_v",
    ((2, 5, 4, 3, 6), (1, 6, 5, 5, 5), (3, 3, 2, 4, None)),
    (("B N d_x d_k d_v", 1, 8),),
    derived={"N": lambda dims: max(dims["N"], 2)},
    float32=(2, 4, 5, 3, 4),
    count=2,
)
# Kernels drawn N(0, 1/d_x): the scores stay near 1, where the softmax is not saturated.
KERNELS = {"query_kernel": "d_x d_k", "key_kernel": "d_x d_k", "value_kernel": "d_x d_v"}
# (n, d, k): the smallest sizes, k > n, and Transformer-sized layers.
COMPLEXITY_SIZES = [(2, 1, 2), (10, 64, 3), (50, 512, 3), (4000, 64, 5), (7, 3, 9), (512, 512, 7)]
COUNTS = {"self_attention_complexity": "n d", "recurrent_complexity": "n d"}
COUNTS["convolution_complexity"] = "n d k"
# (n,) or (n, k) by kind: exact powers of k, where math.log(n, k) is not exact (125 = 5³,
# 216 = 6³), n just above a power, kernels wider than n.
PATHS = {
    "self_attention": [(2,), (1000,)],
    "recurrent": [(2,), (37,), (1000,)],
    "convolution": [(2, 2), (10, 3), (100, 5), (1000, 3), (7, 9)],
    "dilated_convolution": [(2, 2), (10, 3), (125, 5), (216, 6), (1024, 2), (1025, 2)],
}
PATHS["dilated_convolution"] += [(1000, 10), (7, 9), (1001, 10), (243, 3), (244, 3), (2, 9)]
# and (n, k) for convolutions where n - 1 is a multiple of k - 1 and one past it.
PATHS["convolution"] += [(9, 3), (11, 3), (2, 11)]


def n_after_a_power(case) -> bool:
    """Whether n - 1 is an exact power of k (where a floored logarithm of n - 1 is off)."""
    n, k = case.params["n"], case.params["k"]
    reach = 1
    while reach < n - 1:
        reach *= k
    return reach == n - 1


UNKNOWN_PATH_KIND = N_(
    "the docstring asks for a ValueError when `kind` is not self_attention, recurrent, "
    "convolution or dilated_convolution"
)


def attention_case(rng, dims, causal=False):
    d_k, d_v = dims["d_k"], dims["d_v"]
    params = {"key_dim": d_k, "causal": causal} | ({} if d_v is None else {"value_dim": d_v})
    label = draw.dims_label(**dims | {"d_v": "default" if d_v is None else d_v})
    fields = dict(weights=KERNELS, fan_in=tuple(KERNELS), params=params, label=label)
    sizes = dims | {"d_v": d_k if d_v is None else d_v}
    return draw.layer_case("SelfAttention", rng, sizes, {"inputs": "B N d_x"}, "B N d_v", **fields)


def complexity_cases(rng, hidden=False):
    sizes = COMPLEXITY_SIZES
    if hidden:  # log-uniform from 2 to about 3000, then uniform in [2, 60)
        sizes = [np.exp(rng.uniform(0.0, 8.0, size=3)).round() + 1, rng.integers(2, 60, size=3)]
    return [
        draw.function_case(target, **dict(zip(names.split(), map(int, row), strict=False)))
        for row in sizes
        for target, names in COUNTS.items()
    ]


def path_cases(rng, hidden=False):
    rows = [(kind, *size) for kind, sizes in PATHS.items() for size in sizes]
    if hidden:
        rows = [(kind, int(rng.integers(2, 5000))) for kind in ("self_attention", "recurrent")]
        for kind in ("convolution", "dilated_convolution"):
            rows += [(kind, int(rng.integers(2, 5000)), int(rng.integers(2, 12))) for _ in range(3)]
        rows += [("dilated_convolution", n, k) for n, k in draw.around_powers(rng, 3)]
        rows += [("convolution", n, k) for n, k in draw.around_powers(rng, 1, exponents=(1, 3))]
    named = (dict(zip(("kind", "n", "k"), row, strict=False)) for row in rows)
    cases = [draw.function_case("maximum_path_length", **params) for params in named]
    if not hidden:  # the docstring's ValueError for a kind it does not name
        cases += [
            draw.raising_function_case("maximum_path_length", UNKNOWN_PATH_KIND, kind=kind, n=8)
            for kind in ("transformer", "Recurrent", "convolutions")
        ]
    return cases


FIRST_POSITION = on.agrees_at(
    np.s_[:, 0],
    ref.self_attention,
    N_(
        "the first position must attend only to itself (it has no earlier positions), so h_1 = "
        "x_1 W_v; yours differs: it sees later positions, or its weights do not sum to one"
    ),
)

RECORD = Exercise(
    id="8-3",
    title="Self-attention, and its cost next to convolution and recurrence",
    file="ex8_3.py",
    section="NNDL 8.3, (8.16)-(8.22); Vaswani et al. 2017, Table 1",
    timeout=15.0,
    summary=(
        "Write a self-attention layer H = softmax(QKᵀ/√d_k)V with an optional causal mask, then "
        "the numbers of Vaswani et al.'s Table 1: the operations per layer of self-attention, "
        "convolution and recurrent layers, and the longest path between two positions; compare "
        "the layers in a written answer."
    ),
    written=(
        WrittenPart(
            "comparison",
            2,
            "Compare self-attention, convolution, recurrent and fully connected layers: cost "
            "per layer for which n and d, path length between distant positions, parallelism, "
            "sequences of varying length, and position information.",
        ),
    ),
    parts=(
        Part(
            name="SelfAttention",
            recompute=Recompute(ref.self_attention, tuple(KERNELS), ("scale_dim", "d_k")),
            points=3,
            make_cases=ATTENTION.cases(attention_case),
            relations=(relations.queries_permuted(("inputs",)), relations.batch_alone()),
            description="SelfAttention.call without a mask: outputs and gradients w.r.t. the "
            "input and the three kernels.",
            mistakes=(
                Mistake.of(
                    "scale forgotten",
                    "These are softmax(QKᵀ)V: the scores are not divided by √d_k.",
                    ref.self_attention,
                    scale_dim=1,
                ),
                Mistake.of(
                    "scaled by the input size",
                    "You divided the scores by √d_x, the size of the inputs; the scale is √d_k, "
                    "the size of the queries and keys.",
                    ref.self_attention,
                    when=on.differ(on.size_of("inputs"), on.param("key_dim")),
                    scale_dim=on.size_of("inputs"),
                ),
                Mistake.of(
                    "scaled by the value size",
                    "You divided the scores by √d_v, the size of the values; the scale is √d_k, "
                    "the size of the queries and keys.",
                    ref.self_attention,
                    when=on.differ(on.size_of("value_kernel"), on.param("key_dim")),
                    scale_dim=on.size_of("value_kernel"),
                ),
                Mistake.of(
                    "softmax over the queries",
                    "The softmax normalises over the wrong axis: each query's weights over the "
                    "keys (the last axis of QKᵀ) must sum to one.",
                    ref.self_attention,
                    when=on.several("inputs", 1),
                    softmax_axis=-2,
                ),
                Mistake.of(
                    "query and key kernels swapped",
                    "The queries are made with key_kernel and the keys with query_kernel: this "
                    "computes softmax(K Qᵀ), the transposed scores. Q = X·query_kernel.",
                    ref.self_attention,
                    **on.swapped("query_kernel", "key_kernel"),
                ),
            ),
        ),
        Part(
            name="causal mask",
            recompute=Recompute(ref.self_attention, tuple(KERNELS), ("scale_dim", "d_k")),
            points=1,
            targets=("SelfAttention",),
            make_cases=CAUSAL.cases(attention_case, causal=True),
            relations=(relations.future_changed("inputs"),),
            description="SelfAttention(causal=True): position i attends to positions j <= i.",
            properties=(Property("first position attends to itself", FIRST_POSITION),),
            mistakes=(
                Mistake.of(
                    "mask ignored",
                    "With causal=True this is the unmasked output: every position still "
                    "attends to later positions.",
                    ref.self_attention,
                    causal=False,
                ),
                Mistake.of(
                    "mask reversed",
                    "The mask keeps j >= i, the later positions: a causal mask keeps j <= i, the "
                    "position itself and the earlier ones.",
                    ref.self_attention,
                    reverse_mask=True,
                ),
                Mistake.of(
                    "masked after the softmax",
                    "The masked weights were set to zero after the softmax, so the rows no "
                    "longer sum to one: mask the scores before the softmax.",
                    ref.self_attention,
                    mask_after_softmax=True,
                ),
                Mistake.of(
                    "scale forgotten",
                    "These are softmax(QKᵀ)V with the mask: the scores are not divided by √d_k.",
                    ref.self_attention,
                    scale_dim=1,
                ),
            ),
        ),
        Part(
            name="layer_complexity",
            points=2,
            targets=("self_attention_complexity", "recurrent_complexity", "convolution_complexity"),
            make_cases=complexity_cases,
            description="Operations per layer (Table 1): n²·d, n·d², k·n·d².",
            mistakes=(
                Mistake(
                    "n and d swapped",
                    "n and d have swapped roles: self-attention compares every pair of positions "
                    "(n² pairs, d each), a recurrent layer multiplies a d × d matrix at each of "
                    "n steps.",
                    on.per_target(
                        self_attention_complexity=lambda n, d: n * d * d,
                        recurrent_complexity=lambda n, d: n * n * d,
                    ),
                ),
                Mistake(
                    "both products counted",
                    "You counted both QKᵀ and the weighted sum AV (2·n²·d); count only the "
                    "scores, as the docstring says (Table 1 keeps the order n²·d).",
                    on.per_target(self_attention_complexity=lambda n, d: 2 * n * n * d),
                ),
                Mistake(
                    "kernel width left out",
                    "Each output of a convolution sums k taps, each a d × d product: the factor k "
                    "is missing.",
                    on.per_target(convolution_complexity=lambda n, d, k: n * d * d),
                ),
                Mistake(
                    "matrix product counted as d",
                    "A d × d matrix times a d-vector takes d² multiplications, not d.",
                    on.per_target(
                        recurrent_complexity=lambda n, d: n * d,
                        convolution_complexity=lambda n, d, k: n * d * k,
                    ),
                ),
            ),
        ),
        Part(
            name="maximum_path_length",
            points=2,
            make_cases=path_cases,
            description="Longest path between positions, in layers: 1, n, ⌈(n-1)/(k-1)⌉, "
            "⌈log_k n⌉.",
            mistakes=(
                Mistake.of(
                    "only the recurrent steps counted",
                    "You counted the n - 1 steps h_1 → h_2 → … → h_n; the path from x_1 starts "
                    "with the step that reads x_1 into h_1, n edges in all.",
                    lambda n: n - 1,
                    when=on.param_is("kind", "recurrent"),
                ),
                Mistake.of(
                    "each layer reaches k positions",
                    "A kernel of width k covers positions t-k+1 … t: one layer reaches k - 1 "
                    "positions back, not k. You need ⌈(n-1)/(k-1)⌉ layers to reach n - 1 "
                    "positions back.",
                    lambda n, k: -(-n // k),
                    when=on.param_is("kind", "convolution"),
                ),
                Mistake.of(
                    "floating-point logarithm of n - 1",
                    "math.floor(math.log(n - 1, k)) + 1 is off by one where n - 1 is a power of "
                    "k (math.log(1000, 10) is 2.9999999999999996), and so is a count rounded "
                    "down: here n - 1 is a power of k. Count the layers with integers (multiply "
                    "by k until you reach n).",
                    lambda n, k: math.floor(math.log(n - 1, k)) + 1,
                    when=on.all_of(on.param_is("kind", "dilated_convolution"), n_after_a_power),
                ),
                Mistake.of(
                    "rounded down",
                    "The number of layers was rounded down, so the last layer does not reach "
                    "the first position: round up.",
                    ref.maximum_path_length,
                    when=on.param_is("kind", "convolution", "dilated_convolution"),
                    round_up=False,
                ),
                Mistake.of(
                    "floating-point logarithm",
                    "math.ceil(math.log(n, k)) is off by one where n is a power of k: "
                    "math.log(125, 5) is 3.0000000000000004. Count the layers with integers "
                    "(multiply by k until you reach n).",
                    lambda n, k: math.ceil(math.log(n) / math.log(k)),
                    when=on.param_is("kind", "dilated_convolution"),
                ),
            ),
        ),
    ),
)
