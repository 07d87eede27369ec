"""Exercise 8-4 graded end to end: the gradients and properties the reference is checked on,
correct alternatives written into the stub (so that the given wrapper layers carry the
gradients), and planted mistakes. Full marks and the stub: tests/grader/test_records.py."""

import pytest

from grader.grading import grade
from tests.grader.test_ex8_3 import fill_stub
from tests.grader.test_records import HIDDEN_SEEDS
from tests.support.grading import (
    assert_full_marks,
    failures,
    reference_result,
    submit,
)
from tests.support.planting import HEADER, from_table

pytestmark = pytest.mark.ex8_4

EXERCISE = "8-4"


def test_the_reference_is_checked_on_every_gradient_and_property():
    result = reference_result(EXERCISE, HIDDEN_SEEDS[EXERCISE])
    names = [check.name for part in result.parts for check in part.checks]
    for wrt in ("memory", "query", "weights", "erase", "add", "values", "pushes", "pops"):
        assert any(f"gradient wrt {wrt}," in name for name in names), wrt
    for prop in ("weights sum to one", "a convex combination", "slots with weight 0 unchanged"):
        assert any(prop in name for name in names), prop


# Everything computed element by element from the top of the stack down, carrying what is left
# to pop (or to read) to the element below: the same numbers as the formulas with Σ_{j>i} s_j.
ALTERNATIVE_TOP_DOWN_LOOPS = {
    "memory_address": """
        scores = ops.sum(memory * query[:, None, :], axis=-1)
        e = ops.exp(scores - ops.max(scores, axis=-1, keepdims=True))
        return e / ops.sum(e, axis=-1, keepdims=True)
    """,
    "memory_read": "return ops.sum(memory_address(memory, query)[:, :, None] * memory, axis=1)",
    "memory_write": """
        alpha = weights[:, :, None]
        return memory - alpha * erase[:, None, :] * memory + alpha * add[:, None, :]
    """,
    "stack_pop": """
        if strengths.shape[1] == 0:
            return strengths
        left, kept = pop, []
        for i in reversed(range(strengths.shape[1])):
            kept.append(ops.relu(strengths[:, i] - left))
            left = ops.relu(left - strengths[:, i])
        return ops.stack(kept[::-1], axis=1)
    """,
    "stack_read": """
        room, read = 1.0, 0.0
        for i in reversed(range(strengths.shape[1])):
            read = read + ops.minimum(strengths[:, i], room)[:, None] * values[:, i]
            room = ops.relu(room - strengths[:, i])
        return read
    """,
    "neural_stack": """
        strengths, reads = pushes[:, :0], []
        for t in range(values.shape[1]):
            strengths = ops.concatenate(
                [stack_pop(strengths, pops[:, t]), pushes[:, t : t + 1]], axis=1
            )
            reads.append(stack_read(values[:, : t + 1], strengths))
        return ops.stack(reads, axis=1)
    """,
}

# TensorFlow, and a stack of fixed length T from the start: elements not pushed yet have
# strength 0, so they change neither the pops nor the reads of the elements below them.
ALTERNATIVE_TENSORFLOW_FIXED_LENGTH = {
    "memory_address": "return tf.nn.softmax(tf.einsum('bnd,bd->bn', memory, query), axis=-1)",
    "memory_read": "return tf.einsum('bn,bnd->bd', memory_address(memory, query), memory)",
    "memory_write": """
        alpha = tf.expand_dims(weights, -1)
        erased = memory * (1 - alpha * tf.expand_dims(erase, 1))
        return erased + tf.expand_dims(add, 1) * alpha
    """,
    "stack_pop": """
        above = tf.cumsum(strengths, axis=-1, exclusive=True, reverse=True)
        return tf.nn.relu(strengths - tf.nn.relu(tf.expand_dims(pop, -1) - above))
    """,
    "stack_read": """
        above = tf.cumsum(strengths, axis=-1, exclusive=True, reverse=True)
        share = tf.minimum(strengths, tf.nn.relu(1 - above))
        return tf.reduce_sum(tf.expand_dims(share, -1) * values, axis=1)
    """,
    "neural_stack": """
        values, pushes, pops = (tf.convert_to_tensor(x) for x in (values, pushes, pops))
        length = values.shape[1]
        strengths, reads = tf.zeros_like(pushes), []
        for t in range(length):
            new = tf.one_hot(t, length, dtype=pushes.dtype) * pushes[:, t : t + 1]
            strengths = stack_pop(strengths, pops[:, t]) + new
            reads.append(stack_read(values, strengths))
        return tf.stack(reads, axis=1)
    """,
}


@pytest.mark.parametrize(
    "answers,header",
    [
        (ALTERNATIVE_TOP_DOWN_LOOPS, ""),
        (ALTERNATIVE_TENSORFLOW_FIXED_LENGTH, "import tensorflow as tf\n"),
    ],
    ids=["keras-ops-top-down-loops", "tensorflow-fixed-length-stack"],
)
def test_correct_alternatives_score_full_marks(tmp_path, answers, header):
    folder = submit(tmp_path, EXERCISE, fill_stub(EXERCISE, answers), header=header)
    assert_full_marks(grade(EXERCISE, folder))


CORRECT = ALTERNATIVE_TOP_DOWN_LOOPS
SCORES = "ops.einsum('bnd,bd->bn', memory, query)"


def address(expression):
    return CORRECT | {"memory_address": f"return {expression}"}


def write(expression):
    return CORRECT | {"memory_write": f"a = weights[:, :, None]\nreturn {expression}"}


SUFFIX = "ops.sum(strengths, axis=-1, keepdims=True) - ops.cumsum(strengths, axis=-1)"
PREFIX = "ops.cumsum(strengths, axis=-1) - strengths"


def stack_pop(expression, above=SUFFIX):
    return CORRECT | {"stack_pop": f"above = {above}\nreturn {expression}"}


def stack_read(share, above=SUFFIX):
    body = f"above = {above}\nreturn ops.einsum('bt,btm->bm', {share}, values)"
    return CORRECT | {"stack_read": body}


def neural_stack(*steps):
    """A neural_stack whose loop runs `steps` at every step t."""
    loop = "".join(f"    {step}\n" for step in steps)
    body = "strengths, reads = pushes[:, :0], []\nfor t in range(values.shape[1]):\n" + loop
    body += "return ops.stack(reads, axis=1)"
    # stack_read as in the formula, which also reads an empty stack (as zeros)
    return stack_read("ops.minimum(strengths, ops.relu(1 - above))") | {"neural_stack": body}


E, A = "erase[:, None, :]", "add[:, None, :]"
POP = "stack_pop(strengths, pops[:, t])"
PUSH = "ops.concatenate([strengths, pushes[:, t : t + 1]], axis=1)"
READ = "reads.append(stack_read(values[:, : t + 1], strengths))"


PLANTED = [
    # (part, answers, the named mistake, a phrase of the feedback)
    ("memory_read", address(SCORES), "weights not normalised", "raw scores"),
    (
        "memory_read",
        address(f"ops.softmax({SCORES}, axis=0)"),
        "softmax over the batch",
        "batch axis",
    ),
    (
        "memory_read",
        address("ops.ones(memory.shape[:2]) / memory.shape[1]"),
        "query ignored",
        "same weight 1/N",
    ),
    (
        "memory_read",
        address(f"ops.softmax({SCORES} / memory.shape[-1] ** 0.5)"),
        "scaled by √d",
        "plain dot product",
    ),
    (
        "memory_write",
        write(f"(memory + a * {A}) * (1 - a * {E})"),
        "added before erasing",
        "erase first, then add",
    ),
    (
        "memory_write",
        write(f"memory * (1 - {E}) + a * {A}"),
        "erase not weighted",
        "even those with α_i = 0",
    ),
    ("memory_write", write(f"memory * (1 - a * {E}) + {A}"), "add not weighted", "Add α_i a"),
    ("memory_write", write(f"memory + a * {A}"), "nothing erased", "erase step"),
    (
        "memory_write",
        write(f"memory * (1 - a * ops.stop_gradient({E})) + a * {A}"),
        "gradient cut",
        "gradient with respect to erase is zero",
    ),
    (
        "stack_operations",
        stack_pop("ops.relu(strengths - pop[:, None])"),
        "every element pops u",
        "passes on only what is left",
    ),
    (
        "stack_operations",
        stack_pop("ops.relu(strengths - ops.relu(pop[:, None] - above))", above=PREFIX),
        "popped from the bottom",
        "the top is the last index",
    ),
    (
        "stack_operations",
        stack_pop("strengths - ops.relu(pop[:, None] - above)"),
        "strengths below zero",
        "clamp",
    ),
    (
        "stack_operations",
        stack_read("strengths"),
        "read not capped at one unit",
        "one unit of strength",
    ),
    (
        "stack_operations",
        stack_read("ops.minimum(strengths, ops.relu(1 - above))", above=PREFIX),
        "read from the bottom",
        "from the bottom",
    ),
    (
        "stack_operations",
        stack_read("ops.minimum(strengths, 1 - above)"),
        "negative read weights",
        "count negatively",
    ),
    (
        "neural_stack",
        neural_stack(f"strengths = {POP}", READ.replace("t + 1", "t"), f"strengths = {PUSH}"),
        "read before the push",
        "does not see values[:, t]",
    ),
    (
        "neural_stack",
        neural_stack(f"strengths = {PUSH}", f"strengths = {POP}", READ),
        "pushed before popping",
        "removes the new value first",
    ),
    (
        "neural_stack",
        neural_stack(
            "strengths = pushes[:, t : t + 1]",
            "reads.append(stack_read(values[:, t : t + 1], strengths))",
        ),
        "strengths not carried over",
        "empty stack",
    ),
    (
        "neural_stack",
        neural_stack(f"strengths = {PUSH}", READ),
        "pops ignored",
        "Nothing was ever popped",
    ),
]


@pytest.mark.parametrize(
    "part_name,answers,phrase",
    [
        ("memory_read", address(SCORES), "do not sum to one over the slots"),
        ("memory_read", address(SCORES), "outside the range of the slots"),
        ("memory_write", write(f"memory * (1 - {E}) + a * {A}"), "with write weight 0 changed"),
        ("stack_operations", stack_pop("ops.relu(strengths - pop[:, None])"), "min(u, Σ s_i)"),
    ],
    ids=["weights-sum-to-one", "convex-read", "idle-slots-unchanged", "pop-removes-min-u"],
)
def test_broken_properties_are_explained(tmp_path, part_name, answers, phrase):
    folder = submit(tmp_path, EXERCISE, fill_stub(EXERCISE, answers), header="")
    part = grade(EXERCISE, folder, parts=[part_name]).part(part_name)
    assert any(phrase in check.message for check in failures(part)), failures(part)[:3]


def planted():
    """Every planted mistake of this exercise (graded by tests/grader/test_records.py)."""
    return from_table(PLANTED, make_source=lambda answers: HEADER + fill_stub(EXERCISE, answers))
