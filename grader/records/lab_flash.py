"""Lab flash: blockwise attention with an online softmax (FlashAttention's forward), graded on
the step of one key block, the state after every block, the output, the saved log-sum-exp, the
weights recomputed from it, and the gradients.

What is checked of "no (Tq, Tk) score tensor" (docs/exercises.md#flash says the same): the
grader gives `online_softmax_step` and `block_weights` one block of keys at a time, with states
and log-sum-exps it computed in its own process from keys it never sends, so those two can hold
no more than (B, Tq, block) scores; `flash_forward` must resume from such a state and report
the state after every block. The grader sees returned arrays only: that `flash_forward` itself
never holds Tq × Tk scores is not proved.
"""

from __future__ import annotations

from grader.engine import sampling as draw
from grader.engine import selectors as on
from grader.i18n import N_
from grader.reference import flash as ref
from grader.vocabulary.labels import label_texts
from grader.vocabulary.spec import FUNCTION, LAYER, Case, Exercise, Mistake, Part

# The words of this record's case labels, translated where shown (grader.vocabulary.labels).
EARLIER, EMPTY, ALL_KEYS = label_texts(
    N_("from {count} earlier keys"), N_("from the empty state"), N_("L of {count} keys")
)

# (B, Tq, Bk, d, d_v, earlier keys, scale of the scores): from the empty state, after keys the
# grader keeps, one key and one query, scores of about ±1000 (e^(s) overflows unshifted), and
# earlier keys that scored higher than the block (m' = m) or lower.
STEPS = (
    (2, 3, 4, 4, 3, 0, 1.0),
    (2, 3, 2, 4, 2, 5, 1.0),
    (1, 1, 1, 1, 1, 3, 1.0),
    (2, 2, 3, 4, 2, 4, 400.0),
    (1, 4, 3, 2, 3, 6, 3.0),
)
STEP_FLOAT32 = (2, 3, 4, 4, 3, 4, 1.0)
# (B, Tq, Tk, d, d_v, block_size, earlier keys): a block that does not divide Tk, one block,
# blocks of one key, a state to resume from.
FORWARDS = (
    (2, 3, 7, 4, 3, 3, 0),
    (1, 2, 4, 2, 2, 8, 0),
    (2, 2, 3, 3, 2, 1, 4),
    (1, 3, 6, 4, 5, 2, 3),
)
FORWARD_FLOAT32 = (2, 3, 5, 4, 3, 2, 2)
# (B, Tq, Tk, d, d_v, block_size, scale of the scores)
ATTENTIONS = ((2, 3, 7, 4, 3, 3, 1.0), (1, 1, 1, 2, 2, 4, 1.0), (2, 4, 5, 3, 2, 2, 300.0))
ATTENTION_FLOAT32 = (2, 3, 6, 4, 3, 4, 1.0)
# (B, Tq, Bk, d, other keys)
WEIGHTS = ((2, 3, 2, 4, 5), (1, 2, 3, 1, 0), (2, 1, 1, 3, 6))
WEIGHTS_FLOAT32 = (2, 3, 3, 4, 4)
# (B, Tq, Tk, d, d_v, block_size)
LAYERS = ((2, 3, 5, 4, 3, 2), (1, 2, 4, 2, 2, 4), (2, 1, 3, 3, 1, 1))
LAYER_FLOAT32 = (2, 3, 5, 4, 2, 3)


def draw_qkv(rng, batch, queries, keys, depth, value_dim, scale=1.0):
    query = scale * rng.standard_normal((batch, queries, depth))
    return (
        query,
        rng.standard_normal((batch, keys, depth)),
        rng.standard_normal((batch, keys, value_dim)),
    )


def state_from(rng, query, earlier, value_dim, scale=1.0):
    """The state after `earlier` keys and values the grader draws and keeps (the empty state
    for none); `scale` scales those keys, so that they score higher or lower than the block."""
    batch, queries, depth = query.shape
    if earlier == 0:
        return ref.empty_state(batch, queries, value_dim)
    keys = scale * rng.standard_normal((batch, earlier, depth))
    values = rng.standard_normal((batch, earlier, value_dim))
    return ref.online_softmax_step(ref.empty_state(batch, queries, value_dim), query, keys, values)


def labelled(label, dtype):
    return label + " float32" * (dtype == "float32")


def step_case(rng, row, dtype="float64"):
    batch, queries, block, depth, value_dim, earlier, scale = row
    query, key_block, value_block = draw_qkv(rng, batch, queries, block, depth, value_dim, scale)
    state = state_from(rng, query, earlier, value_dim, 3.0 if scale == 3.0 else 1.0)
    inputs = {"state": state, "query": query, "key_block": key_block, "value_block": value_block}
    inputs = {name: array.astype(dtype) for name, array in inputs.items()}
    seen = EARLIER.format(count=earlier) if earlier else EMPTY
    label = f"B={batch} Tq={queries} block={block} d={depth} d_v={value_dim}, {seen}"
    label += f", {draw.LARGE_SCORES}" * (scale > 10)
    return Case("online_softmax_step", FUNCTION, labelled(label, dtype), inputs, dtype=dtype)


def step_cases(rng, hidden=False):
    rows = STEPS
    if hidden:
        rows = []
        for _ in range(3):
            sizes = tuple(int(v) for v in rng.integers(1, (4, 5, 5, 5, 4, 6)))
            rows.append((*sizes, (1.0, 3.0, 400.0)[int(rng.integers(3))]))
    cases = [step_case(rng, row) for row in rows]
    return cases + [step_case(rng, STEP_FLOAT32, "float32")]


def forward_case(rng, row, dtype="float64"):
    batch, queries, keys, depth, value_dim, block_size, earlier = row
    query, key, value = draw_qkv(rng, batch, queries, keys, depth, value_dim)
    state = state_from(rng, query, earlier, value_dim)
    inputs = {"state": state, "query": query, "key": key, "value": value}
    inputs = {name: array.astype(dtype) for name, array in inputs.items()}
    seen = EARLIER.format(count=earlier) if earlier else EMPTY
    label = f"B={batch} Tq={queries} Tk={keys} d={depth} d_v={value_dim}, block_size="
    label += f"{block_size}, {seen}"
    params = {"block_size": block_size}
    return Case("flash_forward", FUNCTION, labelled(label, dtype), inputs, params, dtype=dtype)


def forward_cases(rng, hidden=False):
    rows = FORWARDS
    if hidden:
        rows = [tuple(int(v) for v in rng.integers(1, (4, 5, 9, 5, 4, 5, 5))) for _ in range(3)]
    cases = [forward_case(rng, row) for row in rows]
    return cases + [forward_case(rng, FORWARD_FLOAT32, "float32")]


def attention_case(target):
    def make(rng, row, dtype="float64"):
        batch, queries, keys, depth, value_dim, block_size, scale = row
        arrays = draw_qkv(rng, batch, queries, keys, depth, value_dim, scale)
        inputs = {
            name: a.astype(dtype) for name, a in zip(("query", "key", "value"), arrays, strict=True)
        }
        label = f"B={batch} Tq={queries} Tk={keys} d={depth} d_v={value_dim}, block_size="
        label += f"{block_size}" + f", {draw.LARGE_SCORES}" * (scale > 10)
        params = {"block_size": block_size}
        return Case(target, FUNCTION, labelled(label, dtype), inputs, params, dtype=dtype)

    return make


def attention_cases(rng, hidden=False):
    rows = ATTENTIONS
    if hidden:
        rows = [
            (*(int(v) for v in rng.integers(1, (4, 5, 9, 5, 4, 5))), (1.0, 300.0)[i % 2])
            for i in range(2)
        ]
    cases = []
    for target in ("flash_attention", "saved_logsumexp"):
        cases += [attention_case(target)(rng, row) for row in rows]
        cases.append(attention_case(target)(rng, ATTENTION_FLOAT32, "float32"))
    return cases


def weights_case(rng, row, dtype="float64"):
    batch, queries, block, depth, others = row
    query = rng.standard_normal((batch, queries, depth))
    keys = rng.standard_normal((batch, block + others, depth))
    inputs = {"query": query, "key_block": keys[:, :block]}
    inputs["logsumexp"] = ref.logsumexp(query, keys)
    inputs = {name: array.astype(dtype) for name, array in inputs.items()}
    label = f"B={batch} Tq={queries} block={block} d={depth}, "
    label += ALL_KEYS.format(count=block + others)
    return Case("block_weights", FUNCTION, labelled(label, dtype), inputs, dtype=dtype)


def weights_cases(rng, hidden=False):
    rows = WEIGHTS
    if hidden:
        rows = [
            tuple(int(v) for v in rng.integers((1, 1, 1, 1, 1), (4, 5, 5, 5, 7))) for _ in range(3)
        ]
    cases = [weights_case(rng, row) for row in rows]
    return cases + [weights_case(rng, WEIGHTS_FLOAT32, "float32")]


def layer_case(rng, row, dtype="float64"):
    batch, queries, keys, depth, value_dim, block_size = row
    arrays = draw_qkv(rng, batch, queries, keys, depth, value_dim)
    inputs = dict(zip(("query", "key", "value"), arrays, strict=True))
    upstream = rng.standard_normal((batch, queries, value_dim))
    label = f"B={batch} Tq={queries} Tk={keys} d={depth} d_v={value_dim}, block_size={block_size}"
    params = {"block_size": block_size}
    return Case(
        "FlashAttention",
        LAYER,
        labelled(label, dtype),
        inputs,
        params,
        upstream=upstream,
        dtype=dtype,
    )


def layer_cases(rng, hidden=False):
    rows = LAYERS
    if hidden:
        rows = [tuple(int(v) for v in rng.integers(1, (4, 5, 9, 5, 4, 5))) for _ in range(2)]
    cases = [layer_case(rng, row) for row in rows]
    return cases + [layer_case(rng, LAYER_FLOAT32, "float32")]


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
            make_cases=step_cases,
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
            make_cases=forward_cases,
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
            make_cases=attention_cases,
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
            make_cases=weights_cases,
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
            make_cases=layer_cases,
            description="FlashAttention (given) over your flash_attention: outputs and "
            "gradients w.r.t. the query, key and value.",
        ),
    ),
)
