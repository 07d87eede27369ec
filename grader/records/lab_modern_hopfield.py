"""Lab modern-hopfield: the update ξ ← X softmax(β Xᵀ ξ), one-step retrieval, attention."""

from __future__ import annotations

import numpy as np

from grader.engine.spec import FUNCTION, LAYER, Case, Exercise, Mistake, Part, Property

# (d, N, M or None for a single state (d,), β): many β, d != N, one pattern, d = 1.
UPDATE_SHAPES = [
    (4, 3, None, 1.0),
    (1, 1, None, 0.5),
    (6, 10, 4, 0.2),
    (5, 5, 3, 2.0),
    (8, 4, 2, 8.0),
    (3, 7, None, 0.05),
]
# (d, N, M, β, steps, signs flipped): large β retrieves in one step; a moderate β in three.
RETRIEVAL_SHAPES = [(32, 6, 3, 60.0, 1, 4), (24, 5, 1, 100.0, 1, 3), (32, 8, 4, 12.0, 3, 4)]
# (B, M, N, d, β); β = 1/√d makes it the Transformer's scaled dot-product attention.
ATTENTION_SHAPES = [
    (2, 3, 5, 4, 0.5),
    (1, 1, 1, 1, 2.0),
    (3, 4, 2, 6, float(1.0 / np.sqrt(6.0))),
    (2, 5, 6, 3, 1.5),
]


# --- the reference in NumPy, with the known mistakes as switches ----------------------------


def _softmax(scores, axis=0):
    shifted = np.exp(scores - scores.max(axis=axis, keepdims=True))
    return shifted / shifted.sum(axis=axis, keepdims=True)


def _update(X, xi, beta, axis=0):
    return X @ _softmax(beta * (X.T @ xi), axis)


def _retrieve(X, xi, beta, steps, axis=0):
    for _ in range(steps):
        xi = _update(X, xi, beta, axis)
    return xi


def _retrieval_errors(X, start, result):
    """For each state: the closest stored pattern to its start, and the relative distance."""
    start2, result2 = start.reshape(len(start), -1), result.reshape(len(start), -1)
    nearest = np.argmax(X.T @ start2, axis=0)
    targets = X[:, nearest]
    errors = np.linalg.norm(result2 - targets, axis=0) / np.linalg.norm(targets, axis=0)
    return nearest, errors


# --- cases ---------------------------------------------------------------------------------


def _update_case(rng, d, n, m, beta, extra=""):
    X = rng.standard_normal((d, n))
    xi = rng.standard_normal(d if m is None else (d, m))
    states = "one state" if m is None else f"M={m} states"
    return Case(
        target="hopfield_update",
        kind=FUNCTION,
        label=f"d={d} N={n} {states} β={beta:g}{extra}",
        inputs={"X": X, "xi": xi},
        params={"beta": beta},
    )


def update_cases(rng, hidden=False):
    if hidden:
        shapes = []
        for _ in range(4):
            d, n = (int(x) for x in rng.integers(1, 9, size=2))
            m = None if rng.random() < 0.3 else int(rng.integers(1, 5))
            shapes.append((d, n, m, float(np.round(rng.uniform(0.05, 5.0), 3))))
    else:
        shapes = UPDATE_SHAPES
    cases = [_update_case(rng, *shape) for shape in shapes]
    cases.append(_update_case(rng, 8, 5, 3, 1000.0, " (numerical stability)"))
    return cases


def _retrieval_case(rng, d, n, m, beta, steps, flips):
    """Stored ±1/√d patterns and corrupted copies that `steps` updates bring back (to 1%)."""
    for _ in range(200):
        X = rng.choice([-1.0, 1.0], size=(d, n)) / np.sqrt(d)
        sources = rng.choice(n, size=m, replace=m > n)
        start = X[:, sources].copy()
        for column in range(m):
            flipped = rng.choice(d, size=flips, replace=False)
            start[flipped, column] *= -1.0
        nearest, errors = _retrieval_errors(X, start, _retrieve(X, start, beta, steps))
        if np.array_equal(nearest, sources) and errors.max() < 1e-3:
            break
    xi = start[:, 0] if m == 1 else start
    return Case(
        target="retrieve",
        kind=FUNCTION,
        label=(
            f"d={d} N={n} M={m} β={beta:g} steps={steps}, corrupted copies of stored "
            f"patterns ({flips} of {d} signs flipped)"
        ),
        inputs={"X": X, "xi": xi},
        params={"beta": beta, "steps": steps},
    )


def retrieval_cases(rng, hidden=False):
    if hidden:
        shapes = [
            (int(rng.integers(16, 41)), int(rng.integers(2, 8)), int(rng.integers(1, 4)), beta)
            + (steps, int(rng.integers(1, 4)))
            for beta, steps in ((80.0, 1), (12.0, 3))
        ]
    else:
        shapes = RETRIEVAL_SHAPES
    return [_retrieval_case(rng, *shape) for shape in shapes]


def _attention_case(rng, b, m, n, d, beta, dtype="float64"):
    label = f"B={b} M={m} N={n} d={d} "
    label += "β=1/√d (scaled dot-product attention)" if beta == 1.0 / np.sqrt(d) else f"β={beta:g}"
    if dtype != "float64":
        label += f" {dtype}"
    return Case(
        target="HopfieldAttention",
        kind=LAYER,
        label=label,
        inputs={
            "queries": rng.standard_normal((b, m, d)),
            "patterns": rng.standard_normal((b, n, d)),
        },
        params={"beta": beta},
        upstream=rng.standard_normal((b, m, d)),
        dtype=dtype,
    )


def attention_cases(rng, hidden=False):
    if hidden:
        shapes = [
            (*(int(x) for x in rng.integers(1, 7, size=4)), float(np.round(rng.uniform(0.2, 2), 3)))
            for _ in range(3)
        ]
    else:
        shapes = ATTENTION_SHAPES
    cases = [_attention_case(rng, *shape) for shape in shapes]
    cases.append(_attention_case(rng, 2, 3, 4, 5, 0.8, dtype="float32"))
    return cases


# --- known mistakes, recomputed from a case -------------------------------------------------


def _update_mistake(beta_of=lambda beta: beta, outside=False, axis=0):
    def compute(case):
        X, xi, beta = case.inputs["X"], case.inputs["xi"], case.params["beta"]
        if axis != 0 and (xi.ndim == 1 or xi.shape[1] == 1):
            return None  # one state: the wrong axis has a single element
        steps = case.params.get("steps", 1)
        result = _retrieve(X, xi, beta_of(beta), steps, axis)
        return beta * result if outside else result

    return compute


def _steps_ignored(case):
    if case.params.get("steps", 1) == 1:
        return None
    X, xi, beta = case.inputs["X"], case.inputs["xi"], case.params["beta"]
    return _update(X, xi, beta)


def _retrieves(case, output):
    X, start = case.inputs["X"], case.inputs["xi"]
    output = np.asarray(output, dtype=np.float64)
    if output.shape != start.shape:
        return None  # the shape check already says what is wrong
    nearest, errors = _retrieval_errors(X, start, output)
    worst = int(np.argmax(errors))
    if errors[worst] <= 0.01:
        return None
    return (
        f"state {worst}, a corrupted copy of stored pattern {int(nearest[worst])}, ended "
        f"{errors[worst]:.3g}·‖x‖ away from it: with β = {case.params['beta']:g} the softmax "
        "weights are almost one-hot on the closest pattern, so the update should land on it"
    )


def _attention(case, beta=None, axis=-1, outside=False):
    queries, patterns = case.inputs["queries"], case.inputs["patterns"]
    beta = case.params["beta"] if beta is None else beta
    if axis == 1 and queries.shape[1] == 1:
        return None
    scores = beta * np.einsum("bmd,bnd->bmn", queries, patterns)
    result = _softmax(scores, axis) @ patterns
    return case.params["beta"] * result if outside else result


BETA_MISSING = "β is missing: the scores are Xᵀξ, not β Xᵀξ. β sets how sharp the softmax is."
BETA_DIVIDED = "You divided by β: the scores are β Xᵀξ (β is an inverse temperature)."
BETA_OUTSIDE = (
    "β multiplies the result instead of the scores: the update is X softmax(β Xᵀξ), with β "
    "inside the softmax."
)

RECORD = Exercise(
    id="modern-hopfield",
    title="Lab: Modern Hopfield networks, one update is attention",
    file="lab_modern_hopfield.py",
    section="NNDL 8.6; Ramsauer et al. 2020, eq. (3)",
    timeout=15.0,
    summary=(
        "Write the update ξ ← X softmax(β Xᵀ ξ) of a modern Hopfield network, see it retrieve "
        "a stored pattern from a corrupted copy in one step when β is large, and write the "
        "same update as key–value attention softmax(β Q Kᵀ) V with keys = values = the "
        "stored patterns."
    ),
    parts=(
        Part(
            name="hopfield_update",
            points=4,
            targets=("hopfield_update",),
            make_cases=update_cases,
            description=(
                "hopfield_update: X softmax(β Xᵀ ξ) over many β and pattern sets, one state or "
                "several, stable for β = 1000."
            ),
            mistakes=(
                Mistake("β missing", BETA_MISSING, _update_mistake(lambda beta: 1.0)),
                Mistake("divided by β", BETA_DIVIDED, _update_mistake(lambda beta: 1.0 / beta)),
                Mistake(
                    "β outside the softmax",
                    BETA_OUTSIDE,
                    _update_mistake(lambda beta: 1.0, outside=True),
                ),
                Mistake(
                    "softmax over the states",
                    "The softmax normalised over the M states (the columns of ξ): each state "
                    "is updated on its own, with a softmax over the N stored patterns (axis 0 "
                    "of Xᵀξ).",
                    _update_mistake(axis=-1),
                ),
            ),
        ),
        Part(
            name="retrieve",
            points=2,
            targets=("retrieve",),
            make_cases=retrieval_cases,
            description=(
                "retrieve: repeated updates from corrupted patterns; with a large β one step "
                "lands on the stored pattern (a property)."
            ),
            mistakes=(
                Mistake("β missing", BETA_MISSING, _update_mistake(lambda beta: 1.0)),
                Mistake("divided by β", BETA_DIVIDED, _update_mistake(lambda beta: 1.0 / beta)),
                Mistake(
                    "steps ignored",
                    "This is the state after ONE update: apply the update `steps` times, each "
                    "time to the state the previous update returned.",
                    _steps_ignored,
                ),
            ),
            properties=(Property("retrieves the closest stored pattern", _retrieves),),
        ),
        Part(
            name="HopfieldAttention",
            points=4,
            targets=("HopfieldAttention",),
            make_cases=attention_cases,
            description=(
                "HopfieldAttention: softmax(β Q Pᵀ) P, keys = values = the stored patterns; "
                "outputs and gradients."
            ),
            mistakes=(
                Mistake(
                    "β missing",
                    "β is missing: the scores are β Q Pᵀ. (Attention layers have a scale too: "
                    "1/√d in the Transformer, which is the Hopfield update with β = 1/√d.)",
                    lambda case: _attention(case, beta=1.0),
                ),
                Mistake(
                    "1/√d instead of β",
                    "You scaled by 1/√d like scaled dot-product attention: the Hopfield update "
                    "scales by β, which equals 1/√d only in that special case.",
                    lambda case: _attention(
                        case, beta=1.0 / np.sqrt(case.inputs["queries"].shape[-1])
                    ),
                ),
                Mistake(
                    "softmax over the queries",
                    "The softmax normalised over the queries (axis 1): each query's weights "
                    "are a distribution over the N stored patterns (the last axis).",
                    lambda case: _attention(case, axis=1),
                ),
                Mistake(
                    "β outside the softmax",
                    BETA_OUTSIDE,
                    lambda case: _attention(case, beta=1.0, outside=True),
                ),
            ),
        ),
    ),
)
