"""Lab luong: global attention with the dot, general and concat scores, and local-p attention."""

from __future__ import annotations

import numpy as np

from grader.engine.spec import FUNCTION, LAYER, Case, Exercise, Mistake, Part, Property

# (B, Tq, S, d_h, d_s, units): batch 1 and several, Tq != S, a single query and source
# position, d_h != d_s where the score allows it, and square W_a (where a transposed or
# missing W_a runs without error and must be told apart by its values).
DOT_SHAPES = [(2, 3, 5, 4, 4, 3), (1, 1, 1, 1, 1, 2), (3, 4, 2, 6, 6, 6)]
GENERAL_SHAPES = [(2, 3, 5, 4, 6, 3), (1, 1, 1, 1, 1, 2), (2, 4, 3, 5, 5, 4)]
CONCAT_SHAPES = [(2, 3, 5, 4, 6, 3), (1, 1, 1, 1, 1, 2), (3, 2, 4, 3, 3, 5)]
# local_p_weights: (B, Tq, S, D)
WINDOW_SHAPES = [(2, 3, 9, 2), (1, 1, 4, 1), (3, 2, 12, 3), (1, 4, 7, 4)]
# LocalPAttention: (B, Tq, S, d, units, D)
LOCAL_SHAPES = [(2, 3, 9, 4, 5, 2), (1, 1, 5, 1, 3, 1), (2, 4, 12, 3, 4, 3)]


# --- cases ---------------------------------------------------------------------------------


def _matrix(rng, rows, cols):
    return rng.standard_normal((rows, cols)) / np.sqrt(rows)


def _global_case(rng, score, shapes, dtype="float64"):
    b, tq, s, d_h, d_s, units = shapes
    if score == "dot":
        d_s = d_h
    weights = {}
    if score == "general":
        weights["W_a"] = _matrix(rng, d_h, d_s)
    elif score == "concat":
        weights["W_a"] = _matrix(rng, d_h + d_s, units)
        weights["v_a"] = rng.standard_normal(units)
    weights["W_c"] = _matrix(rng, d_s + d_h, units)
    sizes = f"d={d_h}" if d_h == d_s else f"d_h={d_h} d_s={d_s}"
    label = f"score={score} B={b} Tq={tq} S={s} {sizes} units={units}"
    if dtype != "float64":
        label += f" {dtype}"
    return Case(
        target="LuongAttention",
        kind=LAYER,
        label=label,
        inputs={
            "query": rng.standard_normal((b, tq, d_h)),
            "encoder_states": rng.standard_normal((b, s, d_s)),
        },
        params={"units": units, "score": score},
        weights=weights,
        upstream=rng.standard_normal((b, tq, units)),
        dtype=dtype,
    )


def _global_cases(score, fixed):
    def make(rng, hidden=False):
        shapes = (
            [tuple(int(n) for n in rng.integers(1, 7, size=6)) for _ in range(3)]
            if hidden
            else fixed
        )
        cases = [_global_case(rng, score, s) for s in shapes]
        cases.append(_global_case(rng, score, (2, 3, 4, 4, 3, 5), dtype="float32"))
        return cases

    return make


def window_cases(rng, hidden=False):
    if hidden:
        shapes = []
        for _ in range(3):
            s = int(rng.integers(3, 14))
            shapes.append((int(rng.integers(1, 4)), int(rng.integers(1, 5)), s, 1 + s // 4))
    else:
        shapes = WINDOW_SHAPES
    cases = []
    for b, tq, s, window in shapes:
        cases.append(
            Case(
                target="local_p_weights",
                kind=FUNCTION,
                label=f"B={b} Tq={tq} S={s} D={window}",
                inputs={
                    "scores": rng.standard_normal((b, tq, s)),
                    "positions": rng.uniform(0.05, s - 0.05, size=(b, tq)),
                },
                params={"window": window},
            )
        )
    return cases


def _local_case(rng, shapes, dtype="float64"):
    b, tq, s, d, units, window = shapes
    label = f"B={b} Tq={tq} S={s} d={d} units={units} D={window}"
    if dtype != "float64":
        label += f" {dtype}"
    return Case(
        target="LocalPAttention",
        kind=LAYER,
        label=label,
        inputs={
            "query": rng.standard_normal((b, tq, d)),
            "encoder_states": rng.standard_normal((b, s, d)),
        },
        params={"units": units, "window": window},
        weights={
            "W_p": _matrix(rng, d, units),
            "v_p": rng.standard_normal(units),
            "W_c": _matrix(rng, 2 * d, units),
        },
        upstream=rng.standard_normal((b, tq, units)),
        dtype=dtype,
    )


def local_cases(rng, hidden=False):
    if hidden:
        shapes = []
        for _ in range(3):
            b, tq = (int(n) for n in rng.integers(1, 5, size=2))
            s = int(rng.integers(4, 14))
            d, units = (int(n) for n in rng.integers(1, 6, size=2))
            shapes.append((b, tq, s, d, units, 1 + s // 4))
    else:
        shapes = LOCAL_SHAPES
    cases = [_local_case(rng, s) for s in shapes]
    cases.append(_local_case(rng, (2, 3, 10, 4, 4, 2), dtype="float32"))
    return cases


# --- the reference in NumPy, with the known mistakes as switches ----------------------------


def _softmax(scores, axis=-1):
    shifted = np.exp(scores - scores.max(axis=axis, keepdims=True))
    return shifted / shifted.sum(axis=axis, keepdims=True)


def _dot(query, keys):
    return np.einsum("bid,bjd->bij", query, keys)


def _global_scores(case, scale=False, transpose=False, ignore_kernel=False, swap=False, tanh=True):
    x, w = case.inputs, case.weights
    query, keys = x["query"], x["encoder_states"]
    score = case.params["score"]
    if score == "dot":
        scores = _dot(query, keys)
        return scores / np.sqrt(query.shape[-1]) if scale else scores
    if score == "general":
        kernel = w["W_a"]
        if ignore_kernel or transpose:
            if kernel.shape[0] != kernel.shape[1]:
                return None
            if ignore_kernel:
                return _dot(query, keys)
            kernel = kernel.T
        return np.einsum("bip,pq,bjq->bij", query, kernel, keys)
    d_h, d_s = query.shape[-1], keys.shape[-1]
    first, second = (
        (w["W_a"][:d_h], w["W_a"][d_h:]) if not swap else (w["W_a"][d_s:], w["W_a"][:d_s])
    )
    hidden = (query @ first)[:, :, None, :] + (keys @ second)[:, None, :, :]
    return (np.tanh(hidden) if tanh else hidden) @ w["v_a"]


def _state(context, query, W_c, swap=False, tanh=True):
    joined = np.concatenate([query, context] if swap else [context, query], axis=-1)
    hidden = joined @ W_c
    return np.tanh(hidden) if tanh else hidden


def _global(case, state_swap=False, state_tanh=True, **score_switches):
    scores = _global_scores(case, **score_switches)
    if scores is None:
        return None
    keys = case.inputs["encoder_states"]
    context = _softmax(scores) @ keys
    return _state(context, case.inputs["query"], case.weights["W_c"], state_swap, state_tanh)


def _local_weights(
    scores, positions, window, sigma_factor=0.5, two=True, gaussian=True, mask="before", origin=0
):
    source = np.arange(scores.shape[-1]) + origin
    distance = source - positions[..., None]
    inside = np.abs(distance) <= window
    if mask == "before":
        aligned = _softmax(np.where(inside, scores, -1e9))
    elif mask == "after":
        aligned = _softmax(scores) * inside
    else:
        aligned = _softmax(scores)
    if not gaussian:
        return aligned
    sigma = sigma_factor * window
    return aligned * np.exp(-(distance**2) / ((2.0 if two else 1.0) * sigma**2))


def _window_mistake(**switches):
    def compute(case):
        x = case.inputs
        return _local_weights(x["scores"], x["positions"], case.params["window"], **switches)

    return compute


def _local(case, scale_by_s=True, position_tanh=True, state_swap=False, **switches):
    x, w = case.inputs, case.weights
    query, keys = x["query"], x["encoder_states"]
    hidden = query @ w["W_p"]
    logit = (np.tanh(hidden) if position_tanh else hidden) @ w["v_p"]
    positions = (keys.shape[1] if scale_by_s else 1.0) / (1.0 + np.exp(-logit))
    weights = _local_weights(_dot(query, keys), positions, case.params["window"], **switches)
    return _state(weights @ keys, query, w["W_c"], swap=state_swap)


def _zero_outside_window(case, output):
    positions, window = case.inputs["positions"], case.params["window"]
    output = np.asarray(output, dtype=np.float64)
    if output.shape != case.inputs["scores"].shape:
        return None  # the shape check already says what is wrong
    distance = np.arange(output.shape[-1])[None, None, :] - positions[:, :, None]
    outside = (np.abs(distance) > window) & (output != 0.0)
    if outside.any():
        b, t, s = (int(i) for i in np.argwhere(outside)[0])
        return (
            f"example {b}, query {t}: position {s} is {abs(distance[b, t, s]):.3g} away from "
            f"p_t = {positions[b, t]:.4g}, outside the window D = {window}, yet has weight "
            f"{output[b, t, s]:.3g}: local-p attention gives exactly 0 outside |s - p_t| <= D"
        )
    return None


STATE_SWAPPED = Mistake(
    "[h_t; c_t] instead of [c_t; h_t]",
    "The attentional state used [h_t; c_t]: Luong's h̃_t = tanh(W_c[c_t; h_t]) puts the "
    "context first, matching the rows of W_c.",
    lambda case: _global(case, state_swap=True),
)
STATE_TANH = Mistake(
    "tanh missing in h̃_t",
    "This is W_c[c_t; h_t] without the tanh: h̃_t = tanh(W_c[c_t; h_t]).",
    lambda case: _global(case, state_tanh=False),
)

SIGMA_D = Mistake(
    "σ = D instead of D/2",
    "The Gaussian is too wide: Luong et al. set σ = D/2 (half the window), you used σ = D.",
    _window_mistake(sigma_factor=1.0),
)
NO_GAUSSIAN = Mistake(
    "Gaussian missing",
    "These are the window's softmax weights without the Gaussian factor "
    "exp(-(s - p_t)²/2σ²) that favours positions near p_t.",
    _window_mistake(gaussian=False),
)


def _local_mistake(**switches):
    return lambda case: _local(case, **switches)


RECORD = Exercise(
    id="luong",
    title="Lab: Luong attention, global (dot, general, concat) and local-p",
    file="lab_luong.py",
    section="blog: Bahdanau and Luong attention; Luong et al. 2015 §3",
    timeout=15.0,
    summary=(
        "Write Luong's global attention with the dot, general and concat scores, where the "
        "query is the current decoder state h_t and the output is the attentional state "
        "h̃_t = tanh(W_c[c_t; h_t]); then local-p attention: a predicted position "
        "p_t = S·sigmoid(v_pᵀ tanh(W_p h_t)), a window of half-width D and a Gaussian with "
        "σ = D/2."
    ),
    parts=(
        Part(
            name="global dot",
            points=2,
            targets=("LuongAttention",),
            make_cases=_global_cases("dot", DOT_SHAPES),
            description="LuongAttention(score='dot'): h_tᵀh̄_s, softmax, context, h̃_t.",
            mistakes=(
                Mistake(
                    "scaled by √d",
                    "The dot scores were divided by √d: Luong's dot score is the plain h_tᵀh̄_s "
                    "(the 1/√d scale belongs to the Transformer's scaled dot product).",
                    lambda case: _global(case, scale=True),
                ),
                STATE_SWAPPED,
                STATE_TANH,
            ),
        ),
        Part(
            name="global general",
            points=2,
            targets=("LuongAttention",),
            make_cases=_global_cases("general", GENERAL_SHAPES),
            description="LuongAttention(score='general'): h_tᵀ W_a h̄_s, then as for dot.",
            mistakes=(
                Mistake(
                    "W_a transposed",
                    "This is h_tᵀ W_aᵀ h̄_s: W_a is transposed. W_a has shape (d_h, d_s); "
                    "query @ W_a gives (B, Tq, d_s), which pairs with the encoder states.",
                    lambda case: _global(case, transpose=True),
                ),
                Mistake(
                    "W_a ignored",
                    "These are the dot scores h_tᵀh̄_s: the general score uses W_a.",
                    lambda case: _global(case, ignore_kernel=True),
                ),
                STATE_SWAPPED,
                STATE_TANH,
            ),
        ),
        Part(
            name="global concat",
            points=2,
            targets=("LuongAttention",),
            make_cases=_global_cases("concat", CONCAT_SHAPES),
            description="LuongAttention(score='concat'): v_aᵀ tanh(W_a[h_t; h̄_s]).",
            mistakes=(
                Mistake(
                    "[h̄_s; h_t] in the score",
                    "The score used W_a[h̄_s; h_t]: the first d_h rows of W_a multiply the "
                    "decoder state h_t, the remaining d_s rows the encoder state h̄_s.",
                    lambda case: _global(case, swap=True),
                ),
                Mistake(
                    "tanh missing in the score",
                    "The concat score is v_aᵀ tanh(W_a[h_t; h̄_s]); without the tanh the part "
                    "that depends on h_t cancels in the softmax.",
                    lambda case: _global(case, tanh=False),
                ),
                STATE_SWAPPED,
                STATE_TANH,
            ),
        ),
        Part(
            name="local_p_weights",
            points=2,
            targets=("local_p_weights",),
            make_cases=window_cases,
            description=(
                "local_p_weights: softmax over the window |s - p_t| <= D times the Gaussian "
                "with σ = D/2; zero outside the window."
            ),
            mistakes=(
                SIGMA_D,
                NO_GAUSSIAN,
                Mistake(
                    "2σ² written as σ²",
                    "The Gaussian is exp(-(s - p_t)²/σ²): its denominator is 2σ², "
                    "exp(-(s - p_t)²/(2σ²)) with σ = D/2.",
                    _window_mistake(two=False),
                ),
                Mistake(
                    "softmax over every position",
                    "The softmax ran over all S source positions and the window was applied "
                    "afterwards: normalise over the positions inside the window only.",
                    _window_mistake(mask="after"),
                ),
                Mistake(
                    "window missing",
                    "Positions outside the window |s - p_t| <= D got weight: local-p attention "
                    "only looks inside the window.",
                    _window_mistake(mask="none"),
                ),
                Mistake(
                    "positions counted from 1",
                    "The source positions were numbered 1..S: here they count from 0, "
                    "s = 0, ..., S-1 (p_t lies in (0, S)).",
                    _window_mistake(origin=1),
                ),
            ),
            properties=(Property("zero outside the window", _zero_outside_window),),
        ),
        Part(
            name="LocalPAttention",
            points=2,
            targets=("LocalPAttention",),
            make_cases=local_cases,
            description=(
                "LocalPAttention: p_t = S·sigmoid(v_pᵀ tanh(W_p h_t)), local-p weights, "
                "h̃_t; gradients reach W_p and v_p through the Gaussian."
            ),
            mistakes=(
                Mistake(
                    "p_t not scaled by S",
                    "p_t = sigmoid(v_pᵀ tanh(W_p h_t)) lies in (0, 1): multiply by the source "
                    "length S so that p_t can point anywhere in the sentence.",
                    _local_mistake(scale_by_s=False),
                ),
                Mistake(
                    "tanh missing in p_t",
                    "p_t = S·sigmoid(v_pᵀ tanh(W_p h_t)): the tanh inside is missing.",
                    _local_mistake(position_tanh=False),
                ),
                Mistake(
                    "σ = D instead of D/2",
                    SIGMA_D.explanation,
                    _local_mistake(sigma_factor=1.0),
                ),
                Mistake(
                    "Gaussian missing",
                    NO_GAUSSIAN.explanation,
                    _local_mistake(gaussian=False),
                ),
                Mistake(
                    "[h_t; c_t] instead of [c_t; h_t]",
                    STATE_SWAPPED.explanation,
                    _local_mistake(state_swap=True),
                ),
            ),
        ),
    ),
)
