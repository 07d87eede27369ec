"""Lab modern-hopfield: the update ξ ← X softmax(β Xᵀ ξ), one-step retrieval, attention."""

from __future__ import annotations

import numpy as np

from grader.engine import properties as relations
from grader.engine import sampling as draw
from grader.engine import selectors as on
from grader.i18n import N_
from grader.reference import hopfield as ref
from grader.vocabulary.labels import label_texts
from grader.vocabulary.spec import FUNCTION, Case, Exercise, Mistake, Part, Property

# The words of this module's case labels, translated where shown (grader.vocabulary.labels).
LABEL_TEXTS = label_texts(
    N_("one state"),
    N_("{size} states"),
    N_("(numerical stability)"),
    N_("(scaled dot-product attention)"),
    N_("corrupted copies of stored patterns ({flips} of {units} signs flipped)"),
)

# fmt: off
# M=None: a single state (d,). Many β, d != N, one pattern, d = 1.
UPDATE = [dict(d=4, N=3, M=None, beta=1.0), dict(d=1, N=1, M=None, beta=0.5),
          dict(d=6, N=10, M=4, beta=0.2), dict(d=5, N=5, M=3, beta=2.0),
          dict(d=8, N=4, M=2, beta=8.0), dict(d=3, N=7, M=None, beta=0.05)]
# A large β retrieves in one step; a moderate β in three.
RETRIEVAL = [dict(d=32, N=6, M=3, beta=60.0, steps=1, flips=4),
             dict(d=24, N=5, M=1, beta=100.0, steps=1, flips=3),
             dict(d=32, N=8, M=4, beta=12.0, steps=3, flips=4)]
# β = 1/√d makes it the Transformer's scaled dot-product attention.
ATTENTION = [dict(B=2, M=3, N=5, d=4, beta=0.5), dict(B=1, M=1, N=1, d=1, beta=2.0),
             dict(B=3, M=4, N=2, d=6, beta=float(1.0 / np.sqrt(6.0))),
             dict(B=2, M=5, N=6, d=3, beta=1.5)]
# fmt: on


def update_case(rng, d, N, M, beta, note=""):
    states = "one state" if M is None else f"M={M} states"
    inputs = draw.normal(rng, dict(d=d, N=N, M=M), X="d N", xi="d" if M is None else "d M")
    label = f"d={d} N={N} {states} β={beta:g}{note}"
    return Case("hopfield_update", FUNCTION, label, inputs=inputs, params={"beta": beta})


def random_update(rng):
    """Hidden cases: random sizes, one state 30% of the time, β in [0.05, 5]."""
    dims = draw.pick(rng, d=range(1, 9), N=range(1, 9))
    dims["M"] = None if rng.random() < 0.3 else int(rng.integers(1, 5))
    return dims | {"beta": float(np.round(rng.uniform(0.05, 5.0), 3))}


def update_cases(rng, hidden=False):
    settings = [random_update(rng) for _ in range(4)] if hidden else UPDATE
    cases = [update_case(rng, **setting) for setting in settings]
    return cases + [update_case(rng, 8, 5, 3, 1000.0, " (numerical stability)")]


def retrieval_cases(rng, hidden=False):
    """Stored ±1/√d patterns and corrupted copies that `steps` updates bring back (to 1%)."""
    settings = RETRIEVAL
    if hidden:
        settings = [
            draw.pick(rng, d=range(16, 41), N=range(2, 8), M=range(1, 4))
            | {"beta": beta, "steps": steps}
            | draw.pick(rng, flips=range(1, 4))
            for beta, steps in ((80.0, 1), (12.0, 3))
        ]
    # β = 1000 as the update allows it: β Xᵀξ is 750 or more (2 of 16 signs flipped), where an
    # exp() overflows.
    settings = [*settings, dict(d=16, N=4, M=2, beta=1000.0, steps=2, flips=2)]
    cases = []
    for s in settings:
        X, xi = ref.corrupted_patterns(rng, **s)
        label = f"d={s['d']} N={s['N']} M={s['M']} β={s['beta']:g} steps={s['steps']}, corrupted "
        label += f"copies of stored patterns ({s['flips']} of {s['d']} signs flipped)"
        params = {"beta": s["beta"], "steps": s["steps"]}
        cases.append(Case("retrieve", FUNCTION, label, inputs={"X": X, "xi": xi}, params=params))
    return cases


def attention_case(rng, B, M, N, d, beta, dtype="float64"):
    dims = dict(B=B, M=M, N=N, d=d)
    scaled = "1/√d (scaled dot-product attention)" if beta == 1.0 / np.sqrt(d) else f"{beta:g}"
    label = f"{draw.dims_label(**dims)} β={scaled}" + f" {dtype}" * (dtype != "float64")
    inputs = {"queries": "B M d", "patterns": "B N d"}
    params = {"beta": beta}
    return draw.layer_case(
        "HopfieldAttention", rng, dims, inputs, "B M d", label=label, params=params, dtype=dtype
    )


def attention_cases(rng, hidden=False):
    settings = ATTENTION
    if hidden:
        settings = [
            draw.pick(rng, B=range(1, 7), M=range(1, 7), N=range(1, 7), d=range(1, 7))
            | {"beta": float(np.round(rng.uniform(0.2, 2), 3))}
            for _ in range(3)
        ]
    cases = [attention_case(rng, **setting) for setting in settings]
    return cases + [attention_case(rng, 2, 3, 4, 5, 0.8, dtype="float32")]


# fmt: off
BETA_MISSING = "β is missing: the scores are Xᵀξ, not β Xᵀξ. β sets how sharp the softmax is."
BETA_DIVIDED = "You divided by β: the scores are β Xᵀξ (β is an inverse temperature)."
BETA_OUTSIDE = ("β multiplies the result instead of the scores: the update is X softmax(β Xᵀξ), "
                "with β inside the softmax.")
OVER_STATES = ("The softmax normalised over the M states (the columns of ξ): each state is updated "
               "on its own, with a softmax over the N stored patterns (axis 0 of Xᵀξ).")
STEPS_IGNORED = ("This is the state after ONE update: apply the update `steps` times, each time to "
                 "the state the previous update returned.")
SCALE_MISSING = ("β is missing: the scores are β Q Pᵀ. (Attention layers have a scale too: 1/√d "
                 "in the Transformer, which is the Hopfield update with β = 1/√d.)")
SQRT_D = ("You scaled by 1/√d like scaled dot-product attention: the Hopfield update scales by β, "
          "which equals 1/√d only in that special case.")
OVER_QUERIES = ("The softmax normalised over the queries (axis 1): each query's weights are a "
                "distribution over the N stored patterns (the last axis).")
# fmt: on


# The same in the update and in retrieval.
BETA_MISTAKES = (
    Mistake.of("β missing", BETA_MISSING, ref.retrieve, beta=1.0),
    Mistake.of(
        "divided by β", BETA_DIVIDED, ref.retrieve, beta=lambda case: 1 / case.params["beta"]
    ),
)
UPDATE_MISTAKES = (
    *BETA_MISTAKES,
    Mistake.of("β outside the softmax", BETA_OUTSIDE, ref.retrieve, beta_outside=True),
    Mistake.of(
        "softmax over the states", OVER_STATES, ref.retrieve, when=on.several("xi", 1), axis=-1
    ),
)
RETRIEVAL_MISTAKES = (
    *BETA_MISTAKES,
    Mistake.of(
        "steps ignored", STEPS_IGNORED, ref.retrieve, when=on.param_is_not("steps", 1), steps=1
    ),
)
RETRIEVES = Property("retrieves the closest stored pattern", on.check_of(ref.retrieval_problem))
ATTENTION_MISTAKES = (
    Mistake.of("β missing", SCALE_MISSING, ref.hopfield_attention, beta=1.0),
    Mistake.of("1/√d instead of β", SQRT_D, ref.scaled_dot_product_attention),
    Mistake.of(
        "softmax over the queries",
        OVER_QUERIES,
        ref.hopfield_attention,
        when=on.several("queries", 1),
        axis=1,
    ),
    Mistake.of("β outside the softmax", BETA_OUTSIDE, ref.hopfield_attention, beta_outside=True),
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
            make_cases=update_cases,
            relations=(relations.keys_permuted(("X",)),),
            description="hopfield_update: X softmax(β Xᵀ ξ) over many β and pattern sets, one "
            "state or several, stable for β = 1000.",
            mistakes=UPDATE_MISTAKES,
        ),
        Part(
            name="retrieve",
            points=2,
            make_cases=retrieval_cases,
            description="retrieve: repeated updates from corrupted patterns; with a large β one "
            "step lands on the stored pattern (a property).",
            mistakes=RETRIEVAL_MISTAKES,
            properties=(RETRIEVES,),
        ),
        Part(
            name="HopfieldAttention",
            points=4,
            make_cases=attention_cases,
            relations=(relations.keys_permuted(("patterns",)), relations.batch_alone()),
            properties=(relations.gradients_sane(),),
            description="HopfieldAttention: softmax(β Q Pᵀ) P, keys = values = the stored "
            "patterns; outputs and gradients.",
            mistakes=ATTENTION_MISTAKES,
        ),
    ),
)
