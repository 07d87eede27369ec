"""Lab additive: the additive score vᵀ tanh(W_q q + W_k k), its pooling, and what it costs."""

from __future__ import annotations

import numpy as np

from grader.engine.spec import FUNCTION, LAYER, Case, Exercise, Mistake, Part

# (B, Tq, Tk, d_q, d_k, units): Tq != Tk, d_q != d_k, units = 1, a d_q = d_k case (where
# swapped kernels run and must be told apart by their values), and everything 1.
SCORE_SHAPES = [(2, 3, 5, 4, 6, 8), (1, 1, 1, 1, 1, 1), (2, 4, 3, 5, 5, 3), (1, 2, 7, 3, 2, 1)]
# (B, Tq, Tk, d_q, d_k, d_v, units): d_v != d_k, and a d_k = d_v case.
ATTENTION_SHAPES = [
    (2, 3, 5, 4, 6, 3, 8),
    (1, 1, 1, 1, 1, 1, 1),
    (2, 4, 3, 5, 5, 5, 4),
    (1, 2, 6, 3, 2, 4, 2),
]


def _weights(rng, d_q, d_k, units):
    """Kernels scaled by 1/√d so that tanh works in its curved range, not saturated."""
    return {
        "query_kernel": rng.standard_normal((d_q, units)) / np.sqrt(d_q),
        "key_kernel": rng.standard_normal((d_k, units)) / np.sqrt(d_k),
        "score_vector": rng.standard_normal(units),
    }


def _label(shape_names, sizes, dtype):
    label = " ".join(f"{name}={size}" for name, size in zip(shape_names, sizes, strict=True))
    return label + ("" if dtype == "float64" else f" {dtype}")


def _score_case(rng, sizes, dtype="float64"):
    b, tq, tk, d_q, d_k, units = sizes
    return Case(
        "AdditiveScore",
        LAYER,
        _label(("B", "Tq", "Tk", "d_q", "d_k", "units"), sizes, dtype),
        inputs={
            "query": rng.standard_normal((b, tq, d_q)),
            "key": rng.standard_normal((b, tk, d_k)),
        },
        params={"units": units},
        weights=_weights(rng, d_q, d_k, units),
        upstream=rng.standard_normal((b, tq, tk)),
        dtype=dtype,
    )


def score_cases(rng, hidden=False):
    if hidden:
        shapes = [tuple(int(v) for v in rng.integers(1, 8, size=6)) for _ in range(3)]
    else:
        shapes = SCORE_SHAPES
    cases = [_score_case(rng, sizes) for sizes in shapes]
    cases.append(_score_case(rng, (2, 3, 4, 4, 3, 5), dtype="float32"))
    return cases


def _attention_case(rng, sizes, dtype="float64"):
    b, tq, tk, d_q, d_k, d_v, units = sizes
    return Case(
        "AdditiveAttention",
        LAYER,
        _label(("B", "Tq", "Tk", "d_q", "d_k", "d_v", "units"), sizes, dtype),
        inputs={
            "query": rng.standard_normal((b, tq, d_q)),
            "key": rng.standard_normal((b, tk, d_k)),
            "value": rng.standard_normal((b, tk, d_v)),
        },
        params={"units": units},
        weights=_weights(rng, d_q, d_k, units),
        upstream=rng.standard_normal((b, tq, d_v)),
        dtype=dtype,
    )


def attention_cases(rng, hidden=False):
    if hidden:
        shapes = [tuple(int(v) for v in rng.integers(1, 8, size=7)) for _ in range(2)]
    else:
        shapes = ATTENTION_SHAPES
    cases = [_attention_case(rng, sizes) for sizes in shapes]
    cases.append(_attention_case(rng, (2, 3, 4, 4, 3, 2, 5), dtype="float32"))
    return cases


COST_SIZES = [(1, 1, 1, 1, 1), (3, 5, 4, 6, 8), (10, 20, 32, 16, 64), (7, 7, 5, 5, 1)]


def cost_cases(rng, hidden=False):
    if hidden:
        sizes = [tuple(int(v) for v in rng.integers(1, 100, size=5)) for _ in range(2)]
    else:
        sizes = COST_SIZES
    cases = []
    names = ("tq", "tk", "d_q", "d_k", "units")
    for index, values in enumerate(sizes):
        base = dict(zip(names, values, strict=True))
        label = " ".join(f"{k}={v}" for k, v in base.items())
        if index == 0 and not hidden:
            cases.append(Case("additive_multiplications", FUNCTION, label, params=base))
        for first in (True, False):
            cases.append(
                Case(
                    "additive_multiplications",
                    FUNCTION,
                    f"{label} project_first={first}",
                    params={**base, "project_first": first},
                )
            )
    return cases


# --- known mistakes, recomputed in NumPy ---------------------------------------------------


def _projections(case, swap=False):
    w = case.weights
    q, k = case.inputs["query"], case.inputs["key"]
    w_q, w_k = (
        (w["key_kernel"], w["query_kernel"]) if swap else (w["query_kernel"], w["key_kernel"])
    )
    return q @ w_q, k @ w_k


def _additive(case, combine, use_v=True, swap=False):
    pq, pk = _projections(case, swap)
    features = combine(pq[:, :, None, :], pk[:, None, :, :])
    v = case.weights["score_vector"] if use_v else np.ones_like(case.weights["score_vector"])
    return features @ v


def _score(case):
    return _additive(case, lambda a, b: np.tanh(a + b))


def _kernels_swapped(case):
    w = case.weights
    if w["query_kernel"].shape != w["key_kernel"].shape:
        return None
    return _additive(case, lambda a, b: np.tanh(a + b), swap=True)


def _softmax(scores, axis=-1):
    shifted = np.exp(scores - scores.max(axis=axis, keepdims=True))
    return shifted / shifted.sum(axis=axis, keepdims=True)


def _pooled(case, weights, values=None):
    return weights @ (case.inputs["value"] if values is None else values)


def _attention_wrong_axis(case):
    if case.inputs["query"].shape[1] == 1:
        return None
    return _pooled(case, _softmax(_score(case), axis=-2))


def _keys_as_values(case):
    key, value = case.inputs["key"], case.inputs["value"]
    if key.shape != value.shape:
        return None
    return _pooled(case, _softmax(_score(case)), values=key)


def _cost(case, project_first=None, with_v=True, v_per_pair=True):
    p = case.params
    tq, tk, d_q, d_k, units = (p[n] for n in ("tq", "tk", "d_q", "d_k", "units"))
    first = p.get("project_first", True) if project_first is None else project_first
    v_count = tq * tk if v_per_pair else tq + tk
    v_cost = v_count * units if with_v else 0
    if first:
        return np.asarray(tq * d_q * units + tk * d_k * units + v_cost)
    return np.asarray(tq * tk * (d_q * units + d_k * units) + v_cost)


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
            points=5,
            targets=("AdditiveScore",),
            make_cases=score_cases,
            description="AdditiveScore.call: vᵀ tanh(W_q q + W_k k) for all pairs; gradients "
            "to the inputs and the three weights.",
            mistakes=(
                Mistake(
                    "tanh missing",
                    "These are vᵀ(W_q q + W_k k): the tanh is missing, and without it the score "
                    "splits into a query part plus a key part (no interaction).",
                    lambda case: _additive(case, lambda a, b: a + b),
                ),
                Mistake(
                    "tanh of each projection",
                    "These are vᵀ(tanh(W_q q) + tanh(W_k k)): the tanh goes around the sum, "
                    "tanh(W_q q + W_k k).",
                    lambda case: _additive(case, lambda a, b: np.tanh(a) + np.tanh(b)),
                ),
                Mistake(
                    "kernels swapped",
                    "query_kernel multiplies the keys and key_kernel the queries: swap them "
                    "back (query_kernel has d_q rows, key_kernel d_k rows).",
                    _kernels_swapped,
                ),
                Mistake(
                    "score vector not used",
                    "These are Σ_u tanh(W_q q + W_k k)_u: the features are summed without "
                    "the weights of score_vector v.",
                    lambda case: _additive(case, lambda a, b: np.tanh(a + b), use_v=False),
                ),
            ),
        ),
        Part(
            name="AdditiveAttention",
            points=3,
            targets=("AdditiveAttention",),
            make_cases=attention_cases,
            description="AdditiveAttention.call: softmax of the additive scores over the keys, "
            "times the values.",
            mistakes=(
                Mistake(
                    "softmax over the queries",
                    "The softmax normalises over the queries; it must run over the keys, the "
                    "last axis of the (B, Tq, Tk) scores.",
                    _attention_wrong_axis,
                ),
                Mistake(
                    "softmax missing",
                    "The raw scores weight the values: turn them into attention weights with "
                    "a softmax over the keys first.",
                    lambda case: _pooled(case, _score(case)),
                ),
                Mistake(
                    "keys used as values",
                    "The weights average the keys; they must average the values (the third input).",
                    _keys_as_values,
                ),
            ),
        ),
        Part(
            name="additive_multiplications",
            points=2,
            targets=("additive_multiplications",),
            make_cases=cost_cases,
            description="additive_multiplications: the cost of projecting first against the "
            "network run on each pair.",
            mistakes=(
                Mistake(
                    "vᵀ product not counted",
                    "The product vᵀ tanh(·) costs `units` multiplications for each of the "
                    "Tq·Tk pairs; it is missing.",
                    lambda case: _cost(case, with_v=False),
                ),
                Mistake(
                    "the two ways swapped",
                    "This is the count of the other way: project_first=True projects each "
                    "query and each key once; project_first=False projects them again for "
                    "every pair.",
                    lambda case: _cost(
                        case, project_first=not case.params.get("project_first", True)
                    ),
                ),
                Mistake(
                    "vᵀ counted per query and key",
                    "vᵀ tanh(·) is applied once per (query, key) pair, Tq·Tk times, not Tq + "
                    "Tk times.",
                    lambda case: _cost(case, v_per_pair=False),
                ),
            ),
        ),
    ),
)
