"""Exercise 8-2: scoring functions, the scaled-dot variance and the bilinear asymmetry."""

from __future__ import annotations

import numpy as np

from grader.engine import sampling as draw
from grader.engine import selectors as on
from grader.i18n import N_
from grader.reference import attention as ref
from grader.vocabulary.labels import label_texts
from grader.vocabulary.spec import FUNCTION, Case, Exercise, Mistake, Part, Recompute

# The words of this module's case labels, translated where shown (grader.vocabulary.labels).
LABEL_TEXTS = label_texts(N_("(default variances)"))

# Batch 1 and several, Tq != Tk, d = 1, a square case; hidden checks draw sizes in [1, 9).
SCALED_DOT = draw.Dims(
    "B Tq Tk d",
    ((2, 3, 5, 4), (1, 1, 1, 1), (3, 4, 2, 7), (1, 6, 6, 16)),
    (("B Tq Tk d", 1, 9),),
    float32=(2, 3, 4, 8),
)
# d_q != d_k, d = 1, and square kernels (where a transposed kernel runs and must be told apart).
BILINEAR = draw.Dims(
    "B Tq Tk d_q d_k",
    ((2, 3, 5, 4, 6), (1, 1, 1, 1, 1), (2, 4, 3, 5, 5), (1, 2, 7, 3, 2)),
    (("B Tq Tk d_q d_k", 1, 9),),
    float32=(2, 3, 4, 4, 3),
)
SAME_SIZE, SIZES = {"query": "B Tq d", "key": "B Tk d"}, {"query": "B Tq d_q", "key": "B Tk d_k"}
KERNEL = {"kernel": "d_q d_k"}
JACOBIAN_SHAPES = [(4,), (2, 3, 5), (3, 4), (1, 1)]


def scaled_dot_case(rng, dims):
    return draw.layer_case("ScaledDotScore", rng, dims, SAME_SIZE, "B Tq Tk")


def bilinear_case(rng, dims):
    label = draw.dims_label_merged(dims, "d_q", "d_k")  # weights first: the kernel is drawn first
    return draw.layer_case("BilinearScore", rng, dims, SIZES, "B Tq Tk", KERNEL, True, label=label)


def variance_cases(rng, hidden=False):
    cases = []
    for target in ("dot_product_variance", "scaled_dot_product_variance"):
        if not hidden:
            cases.append(Case(target, FUNCTION, "d=4 (default variances)", params={"d": 4}))
        for d in rng.integers(2, 1000, size=3) if hidden else (1, 64, 512):
            var_q, var_k = (float(v) for v in np.round(rng.uniform(0.2, 3.0, size=2), 3))
            cases.append(draw.function_case(target, d=int(d), var_q=var_q, var_k=var_k))
    return cases


def asymmetry_cases(rng, hidden=False):
    sizes = rng.integers(2, 9, size=2) if hidden else (1, 3, 6)
    arrays = [rng.standard_normal((d, d)) for d in sizes]
    return [Case("bilinear_asymmetry", FUNCTION, f"W of shape {W.shape}", {"W": W}) for W in arrays]


def jacobian_cases(rng, hidden=False):
    shapes = draw.shapes_for(rng, hidden, JACOBIAN_SHAPES, 3, 3, high=6)
    scores = [(f"scores of shape {shape}", rng.standard_normal(shape)) for shape in shapes]
    scores.append((draw.LARGE_SCORES, draw.large_scores(rng, (2, 6))))
    return [Case("softmax_jacobian", FUNCTION, label, {"scores": x}) for label, x in scores]


DOT_VARIANCE, SCALED_VARIANCE = ("dot_product_variance",), ("scaled_dot_product_variance",)

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
            make_cases=SCALED_DOT.cases(scaled_dot_case),
            description="ScaledDotScore.call: scores = q·k / √d, outputs and gradients.",
            mistakes=(
                Mistake.of(
                    "scale forgotten",
                    "These are the plain dot products q·k: the 1/√d scale is missing.",
                    ref.dot_scores,
                ),
                Mistake.of(
                    "divided by d",
                    "You divided by d instead of √d.",
                    ref.scaled_dot_scores,
                    power=1,
                ),
                Mistake.of(
                    "multiplied by √d",
                    "You multiplied by √d instead of dividing by it.",
                    ref.scaled_dot_scores,
                    power=-0.5,
                ),
            ),
        ),
        Part(
            name="BilinearScore",
            recompute=Recompute(ref.bilinear_scores, weights=("kernel",)),
            points=3,
            make_cases=BILINEAR.cases(bilinear_case),
            description="BilinearScore.call: scores = q W k, gradients to q, k and the kernel.",
            mistakes=(
                Mistake.transposed(
                    "kernel transposed",
                    "This is q Wᵀ k: the kernel is transposed. kernel has shape (d_q, d_k); "
                    "query @ kernel gives (B, Tq, d_k), which pairs with the keys.",
                    ref.bilinear_scores,
                    "kernel",
                ),
                Mistake.of(
                    "kernel ignored",
                    "These are the plain dot products q·k: the kernel is not used.",
                    ref.dot_scores,
                    when=on.same_size("query", "key"),
                ),
                Mistake.of(
                    "scaled like the scaled dot product",
                    "The bilinear score has no 1/√d scale; you divided by √d.",
                    ref.bilinear_scores,
                    power=0.5,
                ),
            ),
        ),
        Part(
            name="variances",
            points=2,
            targets=DOT_VARIANCE + SCALED_VARIANCE,
            make_cases=variance_cases,
            description="dot_product_variance and scaled_dot_product_variance, many d.",
            mistakes=(
                Mistake.of(
                    "factor d missing",
                    "The variance of a sum of d independent terms is d times the variance "
                    "of one term.",
                    ref.dot_product_variance,
                    targets=DOT_VARIANCE,
                    d_power=0,
                ),
                Mistake.of(
                    "divided the variance by √d",
                    "Dividing q·k by √d divides its variance by (√d)² = d, not by √d.",
                    ref.dot_product_variance,
                    targets=SCALED_VARIANCE,
                    d_power=0.5,
                ),
                Mistake.of(
                    "scale not applied",
                    "This is the variance before scaling; dividing by √d changes it.",
                    ref.dot_product_variance,
                    targets=SCALED_VARIANCE,
                ),
            ),
        ),
        Part(
            name="bilinear_asymmetry",
            points=1,
            make_cases=asymmetry_cases,
            description="bilinear_asymmetry: A with s(x, q) - s(q, x) = xᵀ A q.",
            mistakes=(
                Mistake.transposed(
                    "sign flipped",
                    "This is Wᵀ - W, which gives s(q, x) - s(x, q): the order is reversed.",
                    ref.bilinear_asymmetry,
                    "W",
                ),
                Mistake.of(
                    "symmetric part",
                    "This is W + Wᵀ (twice the symmetric part); the difference of the two "
                    "scores keeps the antisymmetric part.",
                    ref.bilinear_asymmetry,
                    sign=1,
                ),
                Mistake.of(
                    "returned W",
                    "You returned W itself; s(q, x) = qᵀ W x = xᵀ Wᵀ q still has to be subtracted.",
                    ref.bilinear_asymmetry,
                    sign=0,
                ),
            ),
        ),
        Part(
            name="softmax_jacobian",
            points=1,
            make_cases=jacobian_cases,
            description="softmax_jacobian: diag(p) - p pᵀ over the last axis, stable for "
            "large scores.",
            mistakes=(
                Mistake.of(
                    "softmax on the wrong axis",
                    "The softmax was taken over the wrong axis: it must normalise over the "
                    "last axis (axis=-1), the n scores of one row.",
                    ref.softmax_jacobian,
                    when=on.several_rows("scores"),
                    axis=-2,
                ),
                Mistake.of(
                    "diagonal term missing",
                    "This is -p pᵀ: the diag(p) term is missing.",
                    ref.softmax_jacobian,
                    diagonal=False,
                ),
                Mistake.scaled(
                    "sign flipped",
                    "This is p pᵀ - diag(p): the sign is flipped.",
                    ref.softmax_jacobian,
                    -1,
                ),
                Mistake.of(
                    "scores instead of probabilities",
                    "You used the raw scores s where the probabilities p = softmax(s) belong.",
                    ref.softmax_jacobian,
                    softmax_first=False,
                ),
            ),
        ),
    ),
)
