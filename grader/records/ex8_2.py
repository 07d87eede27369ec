"""Exercise 8-2: scoring functions, the scaled-dot variance and the bilinear asymmetry."""

from __future__ import annotations

import numpy as np

from grader.engine.spec import FUNCTION, LAYER, Case, Exercise, Mistake, Part

# (B, Tq, Tk, d): batch 1 and several, Tq != Tk, d = 1, a square case.
SCALED_DOT_SHAPES = [(2, 3, 5, 4), (1, 1, 1, 1), (3, 4, 2, 7), (1, 6, 6, 16)]
# (B, Tq, Tk, d_q, d_k): d_q != d_k, d = 1, and square kernels (where a transposed kernel
# runs without error and must be told apart by its values).
BILINEAR_SHAPES = [(2, 3, 5, 4, 6), (1, 1, 1, 1, 1), (2, 4, 3, 5, 5), (1, 2, 7, 3, 2)]


def _layer_case(target, rng, shapes, dtype="float64", weights=None):
    b, tq, tk, dq, dk = shapes
    label = f"B={b} Tq={tq} Tk={tk} " + (f"d={dq}" if dq == dk else f"d_q={dq} d_k={dk}")
    if dtype != "float64":
        label += f" {dtype}"
    return Case(
        target=target,
        kind=LAYER,
        label=label,
        inputs={
            "query": rng.standard_normal((b, tq, dq)),
            "key": rng.standard_normal((b, tk, dk)),
        },
        weights=weights or {},
        upstream=rng.standard_normal((b, tq, tk)),
        dtype=dtype,
    )


def _random_sizes(rng, count, high=9):
    return [tuple(int(n) for n in rng.integers(1, high, size=count)) for _ in range(3)]


def scaled_dot_cases(rng, hidden=False):
    shapes = _random_sizes(rng, 4) if hidden else SCALED_DOT_SHAPES
    cases = [_layer_case("ScaledDotScore", rng, (b, tq, tk, d, d)) for b, tq, tk, d in shapes]
    cases.append(_layer_case("ScaledDotScore", rng, (2, 3, 4, 8, 8), dtype="float32"))
    return cases


def bilinear_cases(rng, hidden=False):
    cases = []
    shapes_list = _random_sizes(rng, 5) if hidden else BILINEAR_SHAPES
    for shapes in shapes_list + [(2, 3, 4, 4, 3, "float32")]:
        b, tq, tk, dq, dk, *dtype = shapes
        kernel = rng.standard_normal((dq, dk))
        cases.append(
            _layer_case(
                "BilinearScore",
                rng,
                (b, tq, tk, dq, dk),
                dtype=(dtype or ["float64"])[0],
                weights={"kernel": kernel},
            )
        )
    return cases


def variance_cases(rng, hidden=False):
    cases = []
    for target in ("dot_product_variance", "scaled_dot_product_variance"):
        if not hidden:
            cases.append(Case(target, FUNCTION, "d=4 (default variances)", params={"d": 4}))
        for d in rng.integers(2, 1000, size=3) if hidden else (1, 64, 512):
            d = int(d)
            var_q, var_k = (float(v) for v in np.round(rng.uniform(0.2, 3.0, size=2), 3))
            cases.append(
                Case(
                    target,
                    FUNCTION,
                    f"d={d} var_q={var_q} var_k={var_k}",
                    params={"d": d, "var_q": var_q, "var_k": var_k},
                )
            )
    return cases


def asymmetry_cases(rng, hidden=False):
    return [
        Case(
            "bilinear_asymmetry",
            FUNCTION,
            f"W of shape ({d}, {d})",
            inputs={"W": rng.standard_normal((d, d))},
        )
        for d in (rng.integers(2, 9, size=2) if hidden else (1, 3, 6))
    ]


def jacobian_cases(rng, hidden=False):
    cases = [
        Case(
            "softmax_jacobian",
            FUNCTION,
            f"scores of shape {shape}",
            inputs={"scores": rng.standard_normal(shape)},
        )
        for shape in (
            _random_sizes(rng, 3, high=6) if hidden else [(4,), (2, 3, 5), (3, 4), (1, 1)]
        )
    ]
    cases.append(
        Case(
            "softmax_jacobian",
            FUNCTION,
            "large scores (about 1000: numerical stability)",
            inputs={"scores": 1000.0 + 5.0 * rng.standard_normal((2, 6))},
        )
    )
    return cases


# --- known mistakes, recomputed in NumPy from a case ---------------------------------------


def _qk(case):
    return np.einsum("bid,bjd->bij", case.inputs["query"], case.inputs["key"])


def _depth(case):
    return case.inputs["key"].shape[-1]


def _bilinear(case, kernel):
    return np.einsum("bip,pq,bjq->bij", case.inputs["query"], kernel, case.inputs["key"])


def _transposed_kernel(case):
    kernel = case.weights["kernel"]
    return _bilinear(case, kernel.T) if kernel.shape[0] == kernel.shape[1] else None


def _softmax(scores, axis=-1):
    shifted = np.exp(scores - scores.max(axis=axis, keepdims=True))
    return shifted / shifted.sum(axis=axis, keepdims=True)


def _jacobian_from(probs):
    return np.einsum("...i,ij->...ij", probs, np.eye(probs.shape[-1])) - _outer(probs)


def _outer(probs):
    return probs[..., :, None] * probs[..., None, :]


def _jacobian_wrong_axis(case):
    scores = case.inputs["scores"]
    if scores.ndim < 2 or scores.shape[-2] == 1:
        return None
    return _jacobian_from(_softmax(scores, axis=-2))


def _param(case, name, default=1.0):
    return case.params.get(name, default)


def _variance_product(case):
    return _param(case, "var_q") * _param(case, "var_k")


RECORD = Exercise(
    id="8-2",
    title="Scoring functions, scaled-dot variance, bilinear asymmetry",
    file="ex8_2.py",
    section="NNDL 8.2, (8.3)-(8.5)",
    timeout=15.0,
    summary=(
        "Write the scaled dot-product score qᵀk/√d and the bilinear score qᵀWk as Keras layers, "
        "then four small functions that explain them: the variance of q·k before and after "
        "scaling, the matrix that measures how asymmetric a bilinear score is, and the "
        "Jacobian of the softmax that turns scores into attention weights."
    ),
    parts=(
        Part(
            name="ScaledDotScore",
            points=3,
            targets=("ScaledDotScore",),
            make_cases=scaled_dot_cases,
            description="ScaledDotScore.call: scores = q·k / √d, outputs and gradients.",
            mistakes=(
                Mistake(
                    "scale forgotten",
                    "These are the plain dot products q·k: the 1/√d scale is missing.",
                    _qk,
                ),
                Mistake(
                    "divided by d",
                    "You divided by d instead of √d.",
                    lambda case: _qk(case) / _depth(case),
                ),
                Mistake(
                    "multiplied by √d",
                    "You multiplied by √d instead of dividing by it.",
                    lambda case: _qk(case) * np.sqrt(_depth(case)),
                ),
            ),
        ),
        Part(
            name="BilinearScore",
            points=3,
            targets=("BilinearScore",),
            make_cases=bilinear_cases,
            description="BilinearScore.call: scores = q W k, gradients to q, k and the kernel.",
            mistakes=(
                Mistake(
                    "kernel transposed",
                    "This is q Wᵀ k: the kernel is transposed. kernel has shape (d_q, d_k); "
                    "query @ kernel gives (B, Tq, d_k), which pairs with the keys.",
                    _transposed_kernel,
                ),
                Mistake(
                    "kernel ignored",
                    "These are the plain dot products q·k: the kernel is not used.",
                    lambda case: (
                        _qk(case)
                        if case.inputs["query"].shape[-1] == case.inputs["key"].shape[-1]
                        else None
                    ),
                ),
                Mistake(
                    "scaled like the scaled dot product",
                    "The bilinear score has no 1/√d scale; you divided by √d.",
                    lambda case: (
                        _bilinear(case, case.weights["kernel"])
                        / np.sqrt(case.inputs["key"].shape[-1])
                    ),
                ),
            ),
        ),
        Part(
            name="variances",
            points=2,
            targets=("dot_product_variance", "scaled_dot_product_variance"),
            make_cases=variance_cases,
            description="dot_product_variance and scaled_dot_product_variance, many d.",
            mistakes=(
                Mistake(
                    "factor d missing",
                    "The variance of a sum of d independent terms is d times the variance "
                    "of one term.",
                    lambda case: (
                        np.asarray(_variance_product(case))
                        if case.target == "dot_product_variance"
                        else None
                    ),
                ),
                Mistake(
                    "divided the variance by √d",
                    "Dividing q·k by √d divides its variance by (√d)² = d, not by √d.",
                    lambda case: (
                        np.asarray(np.sqrt(case.params["d"]) * _variance_product(case))
                        if case.target == "scaled_dot_product_variance"
                        else None
                    ),
                ),
                Mistake(
                    "scale not applied",
                    "This is the variance before scaling; dividing by √d changes it.",
                    lambda case: (
                        np.asarray(case.params["d"] * _variance_product(case))
                        if case.target == "scaled_dot_product_variance"
                        else None
                    ),
                ),
            ),
        ),
        Part(
            name="bilinear_asymmetry",
            points=1,
            targets=("bilinear_asymmetry",),
            make_cases=asymmetry_cases,
            description="bilinear_asymmetry: A with s(x, q) - s(q, x) = xᵀ A q.",
            mistakes=(
                Mistake(
                    "sign flipped",
                    "This is Wᵀ - W, which gives s(q, x) - s(x, q): the order is reversed.",
                    lambda case: case.inputs["W"].T - case.inputs["W"],
                ),
                Mistake(
                    "symmetric part",
                    "This is W + Wᵀ (twice the symmetric part); the difference of the two "
                    "scores keeps the antisymmetric part.",
                    lambda case: case.inputs["W"] + case.inputs["W"].T,
                ),
                Mistake(
                    "returned W",
                    "You returned W itself; s(q, x) = qᵀ W x = xᵀ Wᵀ q still has to be subtracted.",
                    lambda case: case.inputs["W"],
                ),
            ),
        ),
        Part(
            name="softmax_jacobian",
            points=1,
            targets=("softmax_jacobian",),
            make_cases=jacobian_cases,
            description="softmax_jacobian: diag(p) - p pᵀ over the last axis, stable for "
            "large scores.",
            mistakes=(
                Mistake(
                    "softmax on the wrong axis",
                    "The softmax was taken over the wrong axis: it must normalise over the "
                    "last axis (axis=-1), the n scores of one row.",
                    _jacobian_wrong_axis,
                ),
                Mistake(
                    "diagonal term missing",
                    "This is -p pᵀ: the diag(p) term is missing.",
                    lambda case: -_outer(_softmax(case.inputs["scores"])),
                ),
                Mistake(
                    "sign flipped",
                    "This is p pᵀ - diag(p): the sign is flipped.",
                    lambda case: -_jacobian_from(_softmax(case.inputs["scores"])),
                ),
                Mistake(
                    "scores instead of probabilities",
                    "You used the raw scores s where the probabilities p = softmax(s) belong.",
                    lambda case: _jacobian_from(case.inputs["scores"]),
                ),
            ),
        ),
    ),
)
