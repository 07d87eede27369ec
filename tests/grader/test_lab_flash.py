"""Lab flash graded end to end: the grader's float64 NumPy reference agrees with the solution, the
evidence of blockwise work, a correct alternative, a full softmax that cannot resume from a
state, and planted mistakes. Full marks and the stub: tests/grader/test_records.py."""

import numpy as np
import pytest

from grader.engine.references import default_reference
from grader.grading import grade
from grader.records import get_exercise
from grader.reference import flash as ref
from grader.vocabulary.spec import call_with_case
from tests.grader.test_records import HIDDEN_SEEDS
from tests.support.grading import assert_full_marks, reference_result, submit
from tests.support.planting import from_table, patched_solution

pytestmark = pytest.mark.labs

LAB = "flash"
REFERENCES = {
    "online_softmax_step": ref.online_softmax_step,
    "flash_forward": ref.flash_forward,
    "flash_attention": ref.attention,
    "saved_logsumexp": ref.logsumexp,
    "block_weights": ref.block_weights,
    "FlashAttention": ref.attention,
}


def test_the_numpy_reference_agrees_with_the_solution_on_every_case():
    """grader.reference.flash (loops from the recurrences and the full softmax) and the
    keras.ops solution are written apart. The solution's outputs are those of its graded run
    (in a child: Keras is never imported here, where the grader forks)."""
    reference_result(LAB, HIDDEN_SEEDS[LAB])  # the run that memoises the solution's outputs
    record = get_exercise(LAB)
    seeds = (0, HIDDEN_SEEDS[LAB])
    live = default_reference(record)
    cases = live.cases(record, seeds)
    expected = live.expected(record, seeds, cases, None)
    for part in record.parts:
        for case, got in zip(cases[part.name], expected[part.name], strict=True):
            want = call_with_case(REFERENCES[case.target], case)
            tolerance = 1e-10 if case.dtype == "float64" else 1e-5
            np.testing.assert_allclose(got.output, want, rtol=tolerance, atol=tolerance)


def test_the_reference_is_checked_on_resumed_states_large_scores_and_gradients():
    result = reference_result(LAB, HIDDEN_SEEDS[LAB])
    names = [check.name for part in result.parts for check in part.checks]
    assert any("earlier=5" in name for name in names)
    assert any("scale=400" in name for name in names)
    for wrt in ("query", "key", "value"):
        assert any(name.startswith(f"gradient wrt {wrt}, ") for name in names), wrt


# The step with einsum and the state split by slicing, the walk over ops.split's blocks of
# ragged length computed by hand, the weights with einsum.
ALTERNATIVE = {
    "online_softmax_step": """
    d = query.shape[-1]
    s = ops.einsum("bqd,bkd->bqk", query, key_block) * (1.0 / d**0.5)
    m_old = state[:, :, 0:1]
    m_new = ops.maximum(m_old, ops.max(s, axis=-1, keepdims=True))
    p = ops.exp(s - m_new)
    alpha = ops.exp(m_old - m_new)
    l_new = alpha * state[:, :, 1:2] + ops.sum(p, axis=-1, keepdims=True)
    o_new = alpha * state[:, :, 2:] + ops.einsum("bqk,bkv->bqv", p, value_block)
    return ops.concatenate([m_new, l_new, o_new], axis=-1)
""",
    "flash_forward": """
    total = key.shape[1]
    blocks = -(-total // block_size)
    out = []
    for index in range(blocks):
        low, high = index * block_size, min(total, (index + 1) * block_size)
        state = online_softmax_step(state, query, key[:, low:high], value[:, low:high])
        out.append(state[None])
    return ops.concatenate(out, axis=0)
""",
    "block_weights": """
    s = ops.einsum("bqd,bkd->bqk", query, key_block) / ops.sqrt(
        ops.cast(query.shape[-1], query.dtype)
    )
    return ops.exp(s - ops.expand_dims(logsumexp, -1))
""",
}


def replaced(source, bodies):
    for name, body in bodies.items():
        start = source.index("    # BEGIN SOLUTION", source.index(f"def {name}("))
        end = source.index("    # END SOLUTION", start)
        source = source[:start] + body.lstrip("\n") + source[end:]
    return source


def test_correct_alternative_scores_full_marks(tmp_path):
    source = replaced(patched_solution(LAB), ALTERNATIVE)
    assert_full_marks(grade(LAB, submit(tmp_path, LAB, source, header="")))


# A walk that is no walk: the whole (Tq, Tk) softmax, its state derived from it at the end of
# each block. It has no keys behind the given state, so it cannot resume from it.
FULL_SOFTMAX = """
    depth = ops.shape(query)[-1]
    scores = ops.matmul(query, ops.transpose(key, (0, 2, 1))) / math.sqrt(depth)
    states = []
    for end in range(block_size, ops.shape(key)[1] + block_size, block_size):
        seen = scores[..., :end]
        top = ops.max(seen, axis=-1)
        weights = ops.exp(seen - top[..., None])
        total = ops.sum(weights, axis=-1)
        output = ops.matmul(weights, value[:, :end])
        states.append(ops.concatenate([top[..., None], total[..., None], output], axis=-1))
    return ops.stack(states)
"""


def test_a_full_softmax_cannot_resume_from_the_given_state(tmp_path):
    source = replaced(patched_solution(LAB), {"flash_forward": FULL_SOFTMAX})
    part = grade(LAB, submit(tmp_path, LAB, source, header="")).part("flash_forward")
    assert part.score == 0.0
    assert "given state ignored" in part.mistakes
    resumed = [check for check in part.checks if "earlier=" in check.name]
    resumed = [check for check in resumed if "earlier=0" not in check.name]
    fresh = [check for check in part.checks if "earlier=0" in check.name]
    assert resumed and not any(check.passed for check in resumed)
    assert fresh and all(check.passed for check in fresh)


STEP_SCORES = "/ math.sqrt(depth)\n    new_max = "
WEIGHT_SCORES = "/ math.sqrt(depth)\n    return ops.exp"
CARRY = (
    "state = online_softmax_step(state, query, key[:, start:end], value[:, start:end])\n"
    "        states.append(state)"
)
OUTPUT = "return final[..., 2:] / final[..., 1:2]"

# (part, mistake, the phrases of the feedback, an (old, new) patch of the solution)
PATCHES = [
    (
        "block_weights",
        None,
        "NaN or infinite",
        (
            "return ops.exp(scores - logsumexp[..., None])",
            "return ops.exp(scores) / ops.exp(logsumexp[..., None])",
        ),
    ),
    (
        "online_softmax_step",
        "output not rescaled",
        "multiply it by e^(m − m')",
        (
            "new_output = output * decay[..., None] + ops.matmul",
            "new_output = output + ops.matmul",
        ),
    ),
    (
        "online_softmax_step",
        "sum not rescaled",
        "with the NEW maximum",
        ("new_sum = running_sum * decay + ops.sum", "new_sum = running_sum + ops.sum"),
    ),
    (
        "online_softmax_step",
        "maximum of the block alone",
        "over every key seen so far",
        (
            "new_max = ops.maximum(running_max, ops.max(scores, axis=-1))",
            "new_max = ops.max(scores, axis=-1)",
        ),
    ),
    (
        "online_softmax_step",
        "scores not scaled",
        "before the maximum and the exponentials",
        (STEP_SCORES, "\n    new_max = "),
    ),
    (
        "flash_forward",
        "given state ignored",
        "start from `state`",
        ("states = []\n", "states = []\n    state = empty_state(query, value)\n"),
    ),
    (
        "flash_forward",
        "state not carried",
        "starts from the state after block k",
        (
            CARRY,
            "states.append(online_softmax_step(state, query, key[:, start:end], "
            "value[:, start:end]))",
        ),
    ),
    (
        "output and log-sum-exp",
        "output not divided by l",
        "so that the weights sum to one",
        (OUTPUT, "return final[..., 2:]"),
    ),
    (
        "output and log-sum-exp",
        "maximum not added back",
        "the maximum added back",
        ("return final[..., 0] + ops.log(final[..., 1])", "return ops.log(final[..., 1])"),
    ),
    (
        "block_weights",
        "softmax within the block",
        "with the L of all the keys",
        ("return ops.exp(scores - logsumexp[..., None])", "return ops.softmax(scores, axis=-1)"),
    ),
    (
        "block_weights",
        "scores not scaled",
        "before subtracting L",
        (WEIGHT_SCORES, "\n    return ops.exp"),
    ),
    (
        "gradients",
        None,
        "something cuts the gradient",
        (OUTPUT, "return ops.stop_gradient(final[..., 2:] / final[..., 1:2])"),
    ),
]

# (part, the submitted source, the named mistake, the phrases of its feedback)
PLANTED = [
    (part, patched_solution(LAB, patch), mistake, phrase)
    for part, mistake, phrase, patch in PATCHES
]


def planted():
    """Every planted mistake of this exercise (graded by tests/grader/test_records.py)."""
    return from_table(PLANTED)
