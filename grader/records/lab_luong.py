"""Lab luong: global attention with the dot, general and concat scores, and local-p attention."""

from __future__ import annotations

from functools import partial

import numpy as np

from grader.engine import properties as relations
from grader.engine import sampling as draw
from grader.engine import selectors as on
from grader.reference import seq2seq as ref
from grader.vocabulary.spec import FUNCTION, Case, Exercise, Mistake, Part, Property

# Batch 1 and several, Tq != S, a single query and source position, d_h != d_s where the score
# allows it, and square W_a (where a transposed or missing W_a runs without error and must be
# told apart by its values); one more case in float32. Hidden: one draw of six numbers.
GLOBAL = "B Tq S d_h d_s units"
GLOBAL_DIMS = partial(draw.Dims, GLOBAL, draws=[(GLOBAL, 1, 7)], float32=(2, 3, 4, 4, 3, 5))
DOT = GLOBAL_DIMS([(2, 3, 5, 4, 4, 3), (1, 1, 1, 1, 1, 2), (3, 4, 2, 6, 6, 6)])
GENERAL = GLOBAL_DIMS([(2, 3, 5, 4, 6, 3), (1, 1, 1, 1, 1, 2), (2, 4, 3, 5, 5, 4)])
CONCAT = GLOBAL_DIMS([(2, 3, 5, 4, 6, 3), (1, 1, 1, 1, 1, 2), (3, 2, 4, 3, 3, 5)])
# Local-p: the window's half-width D grows with the source length S.
WINDOW_RULE = {"D": lambda dims: 1 + dims["S"] // 4}
WINDOW = draw.Dims(
    "B Tq S D",
    [(2, 3, 9, 2), (1, 1, 4, 1), (3, 2, 12, 3), (1, 4, 7, 4)],
    [("S", 3, 14), ("B", 1, 4), ("Tq", 1, 5)],
    WINDOW_RULE,
)
LOCAL = draw.Dims(
    "B Tq S d units D",
    [(2, 3, 9, 4, 5, 2), (1, 1, 5, 1, 3, 1), (2, 4, 12, 3, 4, 3)],
    [("B Tq", 1, 5), ("S", 4, 14), ("d units", 1, 6)],
    WINDOW_RULE,
    float32=(2, 3, 10, 4, 4, 2),
)
SCORE_WEIGHTS = {
    "dot": {"W_c": "d_h+d_s units"},
    "general": {"W_a": "d_h d_s", "W_c": "d_h+d_s units"},
    "concat": {"W_a": "d_h+d_s units", "v_a": "units", "W_c": "d_h+d_s units"},
}
LOCAL_WEIGHTS = {"W_p": "d units", "v_p": "units", "W_c": "2d units"}
KERNELS = ("W_a", "W_c", "W_p")  # drawn N(0, 1/rows)


# Global attention pools over the source positions: their order must not matter, and each
# example is attended alone.
GLOBAL_RELATIONS = (relations.keys_permuted(("encoder_states",)), relations.batch_alone())


def global_case(rng, dims, score):
    b, tq, s, d_h, d_s, units = dims.values()
    d_s = d_h if score == "dot" else d_s  # the dot score needs d_s = d_h
    shown = {"d": d_h} if d_h == d_s else {"d_h": d_h, "d_s": d_s}
    label = draw.dims_label(score=score, B=b, Tq=tq, S=s, **shown, units=units)
    inputs = {"query": "B Tq d_h", "encoder_states": "B S d_s"}
    fields = {"params": {"units": units, "score": score}, "label": label, "weights_first": True}
    sizes = {**dims, "d_s": d_s, "d_h+d_s": d_h + d_s}
    weights = SCORE_WEIGHTS[score]
    return draw.layer_case(
        "LuongAttention", rng, sizes, inputs, "B Tq units", weights, fan_in=KERNELS, **fields
    )


def window_case(rng, dims):
    inputs = draw.normal(rng, dims, scores="B Tq S")
    positions = rng.uniform(0.05, dims["S"] - 0.05, size=(dims["B"], dims["Tq"]))
    # Some centres on a whole number, the first always: then |s - p_t| = D is hit exactly, and
    # a window that leaves out its own edges (|s - p_t| < D) is told apart.
    whole = rng.random(positions.shape) < 0.3
    whole.flat[0] = True
    inputs["positions"] = np.where(whole, np.round(positions), positions)
    return Case("local_p_weights", FUNCTION, draw.dims_label(**dims), inputs, {"window": dims["D"]})


def local_case(rng, dims):
    inputs = {"query": "B Tq d", "encoder_states": "B S d"}
    fields = {
        "params": {"units": dims["units"], "window": dims["D"]},
        "label": draw.dims_label(**dims),
    }
    sizes = {**dims, "2d": 2 * dims["d"]}
    return draw.layer_case(
        "LocalPAttention", rng, sizes, inputs, "B Tq units", LOCAL_WEIGHTS, fan_in=KERNELS, **fields
    )


STATE_SWAPPED = Mistake.of(
    "[h_t; c_t] instead of [c_t; h_t]",
    "The attentional state used [h_t; c_t]: Luong's h̃_t = tanh(W_c[c_t; h_t]) puts the "
    "context first, matching the rows of W_c.",
    ref.luong_global,
    context_first=False,
)
STATE_TANH = Mistake.of(
    "tanh missing in h̃_t",
    "This is W_c[c_t; h_t] without the tanh: h̃_t = tanh(W_c[c_t; h_t]).",
    ref.luong_global,
    state_tanh=False,
)
SIGMA_D = Mistake.of(
    "σ = D instead of D/2",
    "The Gaussian is too wide: Luong et al. set σ = D/2 (half the window), you used σ = D.",
    ref.local_p_weights,
    sigma=on.param("window"),
)
NO_GAUSSIAN = Mistake.of(
    "Gaussian missing",
    "These are the window's softmax weights without the Gaussian factor "
    "exp(-(s - p_t)²/2σ²) that favours positions near p_t.",
    ref.local_p_weights,
    gaussian=False,
)


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
            make_cases=DOT.cases(global_case, score="dot"),
            relations=GLOBAL_RELATIONS,
            properties=(relations.gradients_sane(),),
            description="LuongAttention(score='dot'): h_tᵀh̄_s, softmax, context, h̃_t.",
            mistakes=(
                Mistake.of(
                    "scaled by √d",
                    "The dot scores were divided by √d: Luong's dot score is the plain h_tᵀh̄_s "
                    "(the 1/√d scale belongs to the Transformer's scaled dot product).",
                    ref.luong_global,
                    scaled=True,
                ),
                STATE_SWAPPED,
                STATE_TANH,
            ),
        ),
        Part(
            name="global general",
            points=2,
            targets=("LuongAttention",),
            make_cases=GENERAL.cases(global_case, score="general"),
            relations=GLOBAL_RELATIONS,
            properties=(relations.gradients_sane(),),
            description="LuongAttention(score='general'): h_tᵀ W_a h̄_s, then as for dot.",
            mistakes=(
                Mistake.transposed(
                    "W_a transposed",
                    "This is h_tᵀ W_aᵀ h̄_s: W_a is transposed. W_a has shape (d_h, d_s); "
                    "query @ W_a gives (B, Tq, d_s), which pairs with the encoder states.",
                    ref.luong_global,
                    "W_a",
                ),
                Mistake.of(
                    "W_a ignored",
                    "These are the dot scores h_tᵀh̄_s: the general score uses W_a.",
                    ref.luong_global,
                    when=on.same_size("query", "encoder_states"),
                    score="dot",
                ),
                STATE_SWAPPED,
                STATE_TANH,
            ),
        ),
        Part(
            name="global concat",
            points=2,
            targets=("LuongAttention",),
            make_cases=CONCAT.cases(global_case, score="concat"),
            relations=GLOBAL_RELATIONS,
            properties=(relations.gradients_sane(),),
            description="LuongAttention(score='concat'): v_aᵀ tanh(W_a[h_t; h̄_s]).",
            mistakes=(
                Mistake.of(
                    "[h̄_s; h_t] in the score",
                    "The score used W_a[h̄_s; h_t]: the first d_h rows of W_a multiply the "
                    "decoder state h_t, the remaining d_s rows the encoder state h̄_s.",
                    ref.luong_global,
                    keys_first=True,
                ),
                Mistake.of(
                    "tanh missing in the score",
                    "The concat score is v_aᵀ tanh(W_a[h_t; h̄_s]); without the tanh the part "
                    "that depends on h_t cancels in the softmax.",
                    ref.luong_global,
                    tanh=None,
                ),
                STATE_SWAPPED,
                STATE_TANH,
            ),
        ),
        Part(
            name="local_p_weights",
            points=2,
            make_cases=WINDOW.cases(window_case),
            relations=(relations.batch_alone(("scores", "positions")),),
            description=(
                "local_p_weights: softmax over the window |s - p_t| <= D times the Gaussian "
                "with σ = D/2; zero outside the window."
            ),
            mistakes=(
                SIGMA_D,
                NO_GAUSSIAN,
                Mistake.of(
                    "2σ² written as σ²",
                    "The Gaussian is exp(-(s - p_t)²/σ²): its denominator is 2σ², "
                    "exp(-(s - p_t)²/(2σ²)) with σ = D/2.",
                    ref.local_p_weights,
                    doubled=False,
                ),
                Mistake.of(
                    "Gaussian inside the softmax",
                    "The weights times the Gaussian were normalised again to sum to 1 (the "
                    "Gaussian put inside the softmax): Luong's local-p multiplies the window's "
                    "softmax weights by the Gaussian after the softmax, and the product does not "
                    "sum to 1.",
                    ref.local_p_weights,
                    renormalised=True,
                ),
                Mistake.of(
                    "softmax over every position",
                    "The softmax ran over all S source positions and the window was applied "
                    "afterwards: normalise over the positions inside the window only.",
                    ref.local_p_weights,
                    masking="after",
                ),
                Mistake.of(
                    "window missing",
                    "Positions outside the window |s - p_t| <= D got weight: local-p attention "
                    "only looks inside the window.",
                    ref.local_p_weights,
                    masking=None,
                ),
                Mistake.of(
                    "positions counted from 1",
                    "The source positions were numbered 1..S: here they count from 0, "
                    "s = 0, ..., S-1 (p_t lies in (0, S)).",
                    ref.local_p_weights,
                    origin=1,
                ),
            ),
            properties=(Property("zero outside the window", on.check_of(ref.zero_outside_window)),),
        ),
        Part(
            name="LocalPAttention",
            points=2,
            make_cases=LOCAL.cases(local_case),
            relations=(relations.batch_alone(),),
            properties=(relations.gradients_sane(),),
            description=(
                "LocalPAttention: p_t = S·sigmoid(v_pᵀ tanh(W_p h_t)), local-p weights, "
                "h̃_t; gradients reach W_p and v_p through the Gaussian."
            ),
            mistakes=(
                Mistake.of(
                    "p_t not scaled by S",
                    "p_t = sigmoid(v_pᵀ tanh(W_p h_t)) lies in (0, 1): multiply by the source "
                    "length S so that p_t can point anywhere in the sentence.",
                    ref.local_p_attention,
                    scaled_position=False,
                ),
                Mistake.of(
                    "tanh missing in p_t",
                    "p_t = S·sigmoid(v_pᵀ tanh(W_p h_t)): the tanh inside is missing.",
                    ref.local_p_attention,
                    position_tanh=False,
                ),
                Mistake.of(
                    "σ = D instead of D/2",
                    SIGMA_D.explanation,
                    ref.local_p_attention,
                    sigma=on.param("window"),
                ),
                Mistake.of(
                    "Gaussian missing",
                    NO_GAUSSIAN.explanation,
                    ref.local_p_attention,
                    gaussian=False,
                ),
                Mistake.of(
                    "[h_t; c_t] instead of [c_t; h_t]",
                    STATE_SWAPPED.explanation,
                    ref.local_p_attention,
                    context_first=False,
                ),
            ),
        ),
    ),
)
