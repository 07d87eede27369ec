"""Lab flash: blockwise attention with an online softmax (FlashAttention's forward), graded on
the step of one key block, the state after every block, the output, the saved log-sum-exp, the
weights recomputed from it, and the gradients.

What is checked of "no (Tq, Tk) score tensor" (docs/exercises.md, "flash: what the blockwise
checks prove"): the grader gives `online_softmax_step` and `block_weights` one block of keys at
a time, with states and log-sum-exps it computed in its own process from keys it never sends,
so those two can hold no more than (B, Tq, block) scores; `flash_forward` must resume from such
a state and report the state after every block. The grader sees returned arrays only: that
`flash_forward` itself never holds Tq × Tk scores is not proved.
"""

from __future__ import annotations

import numpy as np

from grader.engine import sampling as draw
from grader.engine import selectors as on
from grader.reference import flash as ref
from grader.vocabulary.spec import FUNCTION, LAYER, Case, Exercise, Mistake, Part

QKV = {"query": "B Tq d", "key": "B Tk d", "value": "B Tk d_v"}
# Step: from the empty state (earlier=0) and after earlier keys the grader keeps, one key,
# scores of about ±1000 (scale=400: e^(s) overflows unshifted), earlier keys scoring higher
# than the block (scale=3 scales them, so that m' = m) or lower.
STEPS = draw.Dims(
    "B Tq Tk d d_v earlier scale",
    ((2, 3, 4, 4, 3, 0, 1), (2, 3, 2, 4, 2, 5, 1), (1, 1, 1, 1, 1, 3, 1), (2, 2, 3, 4, 2, 4, 400))
    + ((1, 4, 3, 2, 3, 6, 3),),
    (("B Tq Tk d d_v earlier", 1, 6),),
    derived={"scale": lambda row: (1, 3, 400)[row["earlier"] % 3]},
    float32=(2, 3, 4, 4, 3, 4, 1),
)
# Walks: a block that does not divide Tk, one block, blocks of one key, a state to resume.
FORWARDS = draw.Dims(
    "B Tq Tk d d_v block_size earlier",
    ((2, 3, 7, 4, 3, 3, 0), (1, 2, 4, 2, 2, 8, 0), (2, 2, 3, 3, 2, 1, 4), (1, 3, 6, 4, 5, 2, 3)),
    (("B Tq d d_v block_size earlier", 1, 5), ("Tk", 1, 9)),
    float32=(2, 3, 5, 4, 3, 2, 2),
)
ATTENTIONS = draw.Dims(
    "B Tq Tk d d_v block_size scale",
    ((2, 3, 7, 4, 3, 3, 1), (1, 1, 1, 2, 2, 4, 1), (2, 4, 5, 3, 2, 2, 300)),
    (("B Tq d d_v block_size", 1, 5), ("Tk", 1, 9), ("scale", 1, 3)),
    derived={"scale": lambda row: (1, 300)[row["scale"] - 1]},
    float32=(2, 3, 6, 4, 3, 4, 1),
)
# One block of Tk keys, the L of those and `others` more the grader keeps; scores of about
# ±1000 where scale is 1000 (e^(s) and e^(L) overflow when not taken as e^(s − L)).
WEIGHTS = draw.Dims(
    "B Tq Tk d others scale",
    ((2, 3, 2, 4, 5, 1), (1, 2, 3, 1, 0, 1), (2, 1, 1, 3, 6, 1), (2, 2, 3, 4, 2, 1000)),
    (("B Tq Tk d", 1, 5), ("others", 1, 7), ("scale", 1, 3)),
    derived={"scale": lambda row: (1, 1000)[row["scale"] - 1]},
    float32=(2, 3, 3, 4, 4, 1),
)
LAYERS = draw.Dims(
    "B Tq Tk d d_v block_size",
    ((2, 3, 5, 4, 3, 2), (1, 2, 4, 2, 2, 4), (2, 1, 3, 3, 1, 1)),
    (("B Tq d d_v block_size", 1, 5), ("Tk", 1, 9)),
    count=2,
    float32=(2, 3, 5, 4, 2, 3),
)


def state_after(rng, query, dims):
    """The state after `earlier` keys and values the grader draws and keeps (the empty state
    for none); those keys scaled by 3 where scale is 3, so that they score above the block."""
    if dims["earlier"] == 0:
        return ref.empty_state(dims["B"], dims["Tq"], dims["d_v"])
    earlier = draw.normal(rng, dims | {"Tk": dims["earlier"]}, **QKV)
    keys = earlier["key"] * (3.0 if dims.get("scale") == 3 else 1.0)
    empty = ref.empty_state(dims["B"], dims["Tq"], dims["d_v"])
    return ref.online_softmax_step(empty, query, keys, earlier["value"])


def flash_case(target, names=("query", "key", "value"), kind=FUNCTION):
    """A case of `target` from a row of sizes: query (times `scale`), key, value, the state
    after `earlier` keys, the L of the keys and `others`; the inputs `names` as the target
    takes them, the rest of the row's settings as params where the target has them."""

    def make(rng, row):
        dims = {"d_v": 1} | row  # block_weights takes no values
        inputs = draw.normal(rng, dims, **QKV)
        inputs["query"] = inputs["query"] * dims.get("scale", 1)
        if "state" in names:
            inputs["state"] = state_after(rng, inputs["query"], dims)
        if "logsumexp" in names:
            others = draw.normal(rng, dims | {"Tk": dims["others"]}, key="B Tk d")["key"]
            keys = [inputs["key"], others]
            inputs["logsumexp"] = ref.logsumexp(inputs["query"], np.concatenate(keys, 1))
        inputs["key_block"], inputs["value_block"] = inputs["key"], inputs["value"]
        params = {"block_size": dims["block_size"]} if "block_size" in dims else {}
        upstream = rng.standard_normal((dims["B"], dims["Tq"], dims["d_v"]))
        chosen = {name: inputs[name] for name in names}
        case = Case(target, kind, draw.dims_label(**row), chosen, params)
        case.upstream = upstream if kind == LAYER else None
        return case

    return make


def attention_cases(rng, hidden=False):
    made = [
        ATTENTIONS.cases(flash_case(target)) for target in ("flash_attention", "saved_logsumexp")
    ]
    return [case for make_cases in made for case in make_cases(rng, hidden)]


STEP_INPUTS = ("state", "query", "key_block", "value_block")
FORWARD_INPUTS = ("state", "query", "key", "value")
WEIGHT_INPUTS = ("query", "key_block", "logsumexp")
SEVERAL_FEATURES = on.given(ref.several_features)
RESUMES = on.given(ref.resumes)

RECORD = Exercise(
    id="flash",
    title="Lab: Flash attention: exact attention in key blocks with an online softmax",
    file="lab_flash.py",
    section="NNDL 8.2-8.3 (attention pooling); Dao 2022 (FlashAttention); Rabe and Staats 2021",
    timeout=20.0,
    summary=(
        "Attention need not build the (Tq, Tk) matrix of scores. Write the online softmax's "
        "step over one block of keys, the walk over all blocks that reports the state after "
        "each, the output and the log-sum-exp saved for the backward pass, and a block's "
        "weights recomputed from it; the gradients are taken through your blocks."
    ),
    parts=(
        Part(
            name="online_softmax_step",
            points=3,
            make_cases=draw.in_dtype(STEPS.cases(flash_case("online_softmax_step", STEP_INPUTS))),
            description="online_softmax_step: [m', l', o'] after one block of keys, from a "
            "state of keys the grader keeps.",
            mistakes=(
                Mistake.of(
                    "output not rescaled",
                    "The old output o was added as it was: it is a sum of e^(s_j − m) v_j with "
                    "the OLD maximum m; multiply it by e^(m − m') before adding the block's "
                    "e^(s_j − m') v_j.",
                    ref.online_softmax_step,
                    when=RESUMES,
                    rescale_output=False,
                ),
                Mistake.of(
                    "sum not rescaled",
                    "The old sum l was added as it was: multiply it by e^(m − m'), so that "
                    "every term is e^(s_j − m') with the NEW maximum.",
                    ref.online_softmax_step,
                    when=RESUMES,
                    rescale_sum=False,
                ),
                Mistake.of(
                    "maximum of the block alone",
                    "m' is the maximum of this block's scores only: the running maximum is "
                    "max(m, max_j s_j), over every key seen so far.",
                    ref.online_softmax_step,
                    when=RESUMES,
                    running_max=False,
                ),
                Mistake.of(
                    "scores not scaled",
                    "The scores are q·k_j: divide them by √d before the maximum and the "
                    "exponentials.",
                    ref.online_softmax_step,
                    when=SEVERAL_FEATURES,
                    scaled=False,
                ),
            ),
        ),
        Part(
            name="flash_forward",
            points=3,
            make_cases=draw.in_dtype(FORWARDS.cases(flash_case("flash_forward", FORWARD_INPUTS))),
            description="flash_forward: the state after every block of block_size keys, from "
            "the given state.",
            mistakes=(
                Mistake.of(
                    "given state ignored",
                    "The walk started from the empty state: start from `state`, which holds "
                    "the keys seen before these (the grader keeps them; your function never "
                    "sees them).",
                    ref.flash_forward,
                    when=RESUMES,
                    resumed=False,
                ),
                Mistake.of(
                    "state not carried",
                    "Each block started again from the given state: block k + 1 starts from "
                    "the state after block k.",
                    ref.flash_forward,
                    when=on.given(ref.several_blocks),
                    carried=False,
                ),
            ),
        ),
        Part(
            name="output and log-sum-exp",
            points=2,
            targets=("flash_attention", "saved_logsumexp"),
            make_cases=draw.in_dtype(attention_cases),
            description="flash_attention: o / l of the final state; saved_logsumexp: "
            "m + log l = log Σ_j e^(s_j).",
            mistakes=(
                Mistake.of(
                    "output not divided by l",
                    "The output is o, the sum of e^(s_j − m) v_j: divide it by l, the sum of "
                    "the e^(s_j − m), so that the weights sum to one.",
                    ref.attention,
                    targets=("flash_attention",),
                    normalised=False,
                ),
                Mistake.of(
                    "maximum not added back",
                    "This is log l = log Σ_j e^(s_j − m): L = m + log l, the maximum added "
                    "back, so that e^(s_j − L) is the softmax weight.",
                    ref.logsumexp,
                    targets=("saved_logsumexp",),
                    shifted=False,
                ),
            ),
        ),
        Part(
            name="block_weights",
            points=1,
            make_cases=draw.in_dtype(WEIGHTS.cases(flash_case("block_weights", WEIGHT_INPUTS))),
            description="block_weights: e^(q·k_j / √d − L) for the block's keys, L of all "
            "the keys.",
            mistakes=(
                Mistake.of(
                    "softmax within the block",
                    "The weights were normalised over this block's keys alone: the block's "
                    "share of the FULL softmax is e^(s_j − L), with the L of all the keys.",
                    ref.block_weights,
                    when=on.given(ref.other_keys),
                    within_block=True,
                ),
                Mistake.of(
                    "scores not scaled",
                    "The scores are q·k_j: divide them by √d before subtracting L.",
                    ref.block_weights,
                    when=SEVERAL_FEATURES,
                    scaled=False,
                ),
            ),
        ),
        Part(
            name="gradients",
            points=1,
            targets=("FlashAttention",),
            make_cases=LAYERS.cases(flash_case("FlashAttention", kind=LAYER)),
            description="FlashAttention (given) over your flash_attention: outputs and "
            "gradients w.r.t. the query, key and value.",
        ),
    ),
)
