"""Exercise 8-3: a self-attention layer, and the per-layer costs and path lengths of Table 1."""

from __future__ import annotations

import math

import numpy as np

from grader.engine import compare
from grader.engine.spec import FUNCTION, LAYER, Case, Exercise, Mistake, Part, Property, WrittenPart

# (B, N, d_x, d_k, d_v): batch 1 and several, n = 1, all sizes different, square kernels
# (d_x = d_k = d_v, where swapped kernels run and must be told apart by their values), and
# value_dim left to its default (None: d_v = d_k).
ATTENTION_SHAPES = [(2, 5, 4, 3, 6), (1, 1, 1, 1, 1), (3, 4, 6, 6, 6), (1, 7, 3, 5, 2)]
CAUSAL_SHAPES = [(2, 5, 4, 3, 6), (1, 6, 5, 5, 5), (3, 3, 2, 4, None)]
# (n, d, k): the smallest sizes, k > n, and Transformer-sized layers.
COMPLEXITY_SIZES = [(2, 1, 2), (10, 64, 3), (50, 512, 3), (4000, 64, 5), (7, 3, 9), (512, 512, 7)]
# (kind, n, k): exact powers of k, where math.log(n, k) is not exact (125 = 5³, 216 = 6³),
# n just above a power, kernels wider than n.
PATH_CASES = [
    ("self_attention", 2, None),
    ("self_attention", 1000, None),
    ("recurrent", 2, None),
    ("recurrent", 37, None),
    ("recurrent", 1000, None),
    ("convolution", 2, 2),
    ("convolution", 10, 3),
    ("convolution", 100, 5),
    ("convolution", 1000, 3),
    ("convolution", 7, 9),
    ("dilated_convolution", 2, 2),
    ("dilated_convolution", 10, 3),
    ("dilated_convolution", 125, 5),
    ("dilated_convolution", 216, 6),
    ("dilated_convolution", 1024, 2),
    ("dilated_convolution", 1025, 2),
    ("dilated_convolution", 1000, 10),
    ("dilated_convolution", 7, 9),
]


def _attention_case(rng, shapes, causal=False, dtype="float64"):
    b, n, dx, dk, dv = shapes
    params = {"key_dim": dk, "causal": causal}
    if dv is not None:
        params["value_dim"] = dv
    label = f"B={b} N={n} d_x={dx} d_k={dk} d_v={dv if dv is not None else 'default'}"
    if dtype != "float64":
        label += f" {dtype}"
    dv = dk if dv is None else dv

    def kernel(width):
        # Scaled by 1/√d_x, the scores stay near 1, where the softmax is not saturated and
        # every weight matters.
        return rng.standard_normal((dx, width)) / math.sqrt(dx)

    return Case(
        target="SelfAttention",
        kind=LAYER,
        label=label,
        inputs={"inputs": rng.standard_normal((b, n, dx))},
        params=params,
        weights={"query_kernel": kernel(dk), "key_kernel": kernel(dk), "value_kernel": kernel(dv)},
        upstream=rng.standard_normal((b, n, dv)),
        dtype=dtype,
    )


def _random_shapes(rng, count):
    return [tuple(int(s) for s in rng.integers(1, 8, size=5)) for _ in range(count)]


def attention_cases(rng, hidden=False):
    shapes = _random_shapes(rng, 3) if hidden else ATTENTION_SHAPES
    cases = [_attention_case(rng, s) for s in shapes]
    cases.append(_attention_case(rng, (2, 4, 5, 3, 4), dtype="float32"))
    return cases


def causal_cases(rng, hidden=False):
    if hidden:  # at least two positions, so that there is something to mask
        shapes = [(b, max(n, 2), *rest) for b, n, *rest in _random_shapes(rng, 2)]
    else:
        shapes = CAUSAL_SHAPES
    cases = [_attention_case(rng, s, causal=True) for s in shapes]
    cases.append(_attention_case(rng, (2, 4, 5, 3, 4), causal=True, dtype="float32"))
    return cases


def complexity_cases(rng, hidden=False):
    if hidden:
        sizes = [tuple(int(v) for v in np.exp(rng.uniform(0.0, 8.0, size=3)).round() + 1)]
        sizes += [tuple(int(v) for v in rng.integers(2, 60, size=3))]
    else:
        sizes = COMPLEXITY_SIZES
    cases = []
    for n, d, k in sizes:
        for target, params in (
            ("self_attention_complexity", {"n": n, "d": d}),
            ("recurrent_complexity", {"n": n, "d": d}),
            ("convolution_complexity", {"n": n, "d": d, "k": k}),
        ):
            label = " ".join(f"{name}={value}" for name, value in params.items())
            cases.append(Case(target, FUNCTION, label, params=params))
    return cases


def path_cases(rng, hidden=False):
    if hidden:
        rows = []
        for kind in ("self_attention", "recurrent"):
            rows.append((kind, int(rng.integers(2, 5000)), None))
        for kind in ("convolution", "dilated_convolution"):
            for _ in range(3):
                rows.append((kind, int(rng.integers(2, 5000)), int(rng.integers(2, 12))))
        k = int(rng.integers(2, 8))
        rows.append(("dilated_convolution", k ** int(rng.integers(1, 5)), k))
    else:
        rows = PATH_CASES
    cases = []
    for kind, n, k in rows:
        params = {"kind": kind, "n": n} | ({} if k is None else {"k": k})
        label = f"kind={kind} n={n}" + ("" if k is None else f" k={k}")
        cases.append(Case("maximum_path_length", FUNCTION, label, params=params))
    return cases


# --- known mistakes, recomputed in NumPy from a case ----------------------------------------


def _softmax(scores, axis=-1):
    shifted = np.exp(scores - scores.max(axis=axis, keepdims=True))
    return shifted / shifted.sum(axis=axis, keepdims=True)


def _lower(n):
    return np.tril(np.ones((n, n), dtype=bool))


def attention(case, *, scale=None, axis=-1, swap=False, mask=None, mask_after=False):
    """Self-attention in NumPy, with one thing changed as a known mistake would change it."""
    x, weights = case.inputs["inputs"], case.weights
    queries, keys = x @ weights["query_kernel"], x @ weights["key_kernel"]
    if swap:
        queries, keys = keys, queries
    values = x @ weights["value_kernel"]
    scale = math.sqrt(queries.shape[-1]) if scale is None else scale
    scores = np.einsum("bik,bjk->bij", queries, keys) / scale
    n = scores.shape[-1]
    if mask is not None:
        scores = np.where(mask(n), scores, -1e9)
    probs = _softmax(scores, axis=axis)
    if mask_after:
        probs = probs * _lower(n)
    return probs @ values


def _scaled_by(weight, axis):
    """The scores divided by the square root of another size: d_x or d_v instead of d_k."""

    def compute(case):
        size = case.weights[weight].shape[axis]
        return None if size == case.params["key_dim"] else attention(case, scale=math.sqrt(size))

    return compute


def _first_position_sees_itself(case, output):
    """With the causal mask, position 1 sees only itself: h_1 = v_1 = x_1 W_v."""
    expected = case.inputs["inputs"][:, 0] @ case.weights["value_kernel"]
    received = np.asarray(output, dtype=float)
    if received.ndim != 3 or received.shape[::2] != expected.shape:
        return None  # a wrong shape is reported by the output check
    if compare.matches(expected, received[:, 0], case):
        return None
    return (
        "the first position must attend only to itself (it has no earlier positions), so "
        "h_1 = x_1 W_v; yours differs: it sees later positions, or its weights do not sum to one"
    )


def _complexity_with(**formulas):
    """Operation counts with some targets' formulas changed; None for the other targets."""

    def compute(case):
        formula = formulas.get(case.target)
        return None if formula is None else np.asarray(float(formula(**case.params)))

    return compute


def _path_with(**formulas):
    """Path lengths with some kinds' formulas changed (of n and k); None for the other kinds."""

    def compute(case):
        formula = formulas.get(case.params["kind"])
        if formula is None:
            return None
        return np.asarray(float(formula(case.params["n"], case.params.get("k"))))

    return compute


def _largest_power_at_most(n, k):
    layers, power = 0, k
    while power <= n:
        power *= k
        layers += 1
    return layers


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
            points=3,
            targets=("SelfAttention",),
            make_cases=attention_cases,
            description="SelfAttention.call without a mask: outputs and gradients w.r.t. the "
            "input and the three kernels.",
            mistakes=(
                Mistake(
                    "scale forgotten",
                    "These are softmax(QKᵀ)V: the scores are not divided by √d_k.",
                    lambda case: attention(case, scale=1.0),
                ),
                Mistake(
                    "scaled by the input size",
                    "You divided the scores by √d_x, the size of the inputs; the scale is √d_k, "
                    "the size of the queries and keys.",
                    _scaled_by("query_kernel", 0),
                ),
                Mistake(
                    "scaled by the value size",
                    "You divided the scores by √d_v, the size of the values; the scale is √d_k, "
                    "the size of the queries and keys.",
                    _scaled_by("value_kernel", 1),
                ),
                Mistake(
                    "softmax over the queries",
                    "The softmax normalises over the wrong axis: each query's weights over the "
                    "keys (the last axis of QKᵀ) must sum to one.",
                    lambda case: (
                        attention(case, axis=-2) if case.inputs["inputs"].shape[1] > 1 else None
                    ),
                ),
                Mistake(
                    "query and key kernels swapped",
                    "The queries are made with key_kernel and the keys with query_kernel: this "
                    "computes softmax(K Qᵀ), the transposed scores. Q = X·query_kernel.",
                    lambda case: attention(case, swap=True),
                ),
            ),
        ),
        Part(
            name="causal mask",
            points=1,
            targets=("SelfAttention",),
            make_cases=causal_cases,
            description="SelfAttention(causal=True): position i attends to positions j <= i.",
            properties=(Property("first position attends to itself", _first_position_sees_itself),),
            mistakes=(
                Mistake(
                    "mask ignored",
                    "With causal=True this is the unmasked output: every position still "
                    "attends to later positions.",
                    lambda case: attention(case),
                ),
                Mistake(
                    "mask reversed",
                    "The mask keeps j >= i, the later positions: a causal mask keeps j <= i, the "
                    "position itself and the earlier ones.",
                    lambda case: attention(case, mask=lambda n: _lower(n).T),
                ),
                Mistake(
                    "masked after the softmax",
                    "The masked weights were set to zero after the softmax, so the rows no "
                    "longer sum to one: mask the scores before the softmax.",
                    lambda case: attention(case, mask_after=True),
                ),
                Mistake(
                    "scale forgotten",
                    "These are softmax(QKᵀ)V with the mask: the scores are not divided by √d_k.",
                    lambda case: attention(case, scale=1.0, mask=_lower),
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
                    _complexity_with(
                        self_attention_complexity=lambda n, d: n * d * d,
                        recurrent_complexity=lambda n, d: n * n * d,
                    ),
                ),
                Mistake(
                    "both products counted",
                    "You counted both QKᵀ and the weighted sum AV (2·n²·d); count only the "
                    "scores, as the docstring says (Table 1 keeps the order n²·d).",
                    _complexity_with(self_attention_complexity=lambda n, d: 2 * n * n * d),
                ),
                Mistake(
                    "kernel width left out",
                    "Each output of a convolution sums k taps, each a d × d product: the factor k "
                    "is missing.",
                    _complexity_with(convolution_complexity=lambda n, d, k: n * d * d),
                ),
                Mistake(
                    "matrix product counted as d",
                    "A d × d matrix times a d-vector takes d² multiplications, not d.",
                    _complexity_with(
                        recurrent_complexity=lambda n, d: n * d,
                        convolution_complexity=lambda n, d, k: n * d * k,
                    ),
                ),
            ),
        ),
        Part(
            name="maximum_path_length",
            points=2,
            targets=("maximum_path_length",),
            make_cases=path_cases,
            description="Longest path between positions, in layers: 1, n, ⌈(n-1)/(k-1)⌉, "
            "⌈log_k n⌉.",
            mistakes=(
                Mistake(
                    "only the recurrent steps counted",
                    "You counted the n - 1 steps h_1 → h_2 → … → h_n; the path from x_1 starts "
                    "with the step that reads x_1 into h_1, n edges in all.",
                    _path_with(recurrent=lambda n, k: n - 1),
                ),
                Mistake(
                    "each layer reaches k positions",
                    "A kernel of width k covers positions t-k+1 … t: one layer reaches k - 1 "
                    "positions back, not k. You need ⌈(n-1)/(k-1)⌉ layers to reach n - 1 "
                    "positions back.",
                    _path_with(convolution=lambda n, k: -(-n // k)),
                ),
                Mistake(
                    "rounded down",
                    "The number of layers was rounded down, so the last layer does not reach "
                    "the first position: round up.",
                    _path_with(
                        convolution=lambda n, k: (n - 1) // (k - 1),
                        dilated_convolution=_largest_power_at_most,
                    ),
                ),
                Mistake(
                    "floating-point logarithm",
                    "math.ceil(math.log(n, k)) is off by one where n is a power of k: "
                    "math.log(125, 5) is 3.0000000000000004. Count the layers with integers "
                    "(multiply by k until you reach n).",
                    _path_with(
                        dilated_convolution=lambda n, k: math.ceil(math.log(n) / math.log(k)),
                    ),
                ),
            ),
        ),
    ),
)
