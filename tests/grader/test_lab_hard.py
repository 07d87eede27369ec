"""Lab hard (hard attention) graded end to end: what the graded reference shows, a correct
alternative and planted mistakes, gradient mistakes of the straight-through estimator included
(full marks and the stub: tests/grader/test_records.py)."""

import pytest

from grader.grading import grade
from tests.grader.test_records import HIDDEN_SEEDS
from tests.support.grading import (
    assert_full_marks,
    reference_result,
    submit,
)
from tests.support.planting import from_table, patched

pytestmark = pytest.mark.labs

LAB = "hard"


def test_reference_is_checked_for_frequencies_and_gradients():
    result = reference_result(LAB, HIDDEN_SEEDS[LAB])
    names = [check.name for part in result.parts for check in part.checks]
    assert any(name.startswith("frequencies follow α") for name in names)
    assert any(name.startswith("gradient wrt scores") for name in names)


ALTERNATIVE_NUMPY_AND_TENSORFLOW = """
import tensorflow as tf

def hard_indices(scores):
    return np.argmax(scores, axis=-1)

def hard_select(scores, value):
    return np.take_along_axis(value, hard_indices(scores)[..., None], axis=1)

def sample_indices(weights, noise):
    flat_w = weights.reshape(-1, weights.shape[-1])
    flat_u = noise.reshape(-1)
    picks = [np.searchsorted(np.cumsum(w), u, side="right") for w, u in zip(flat_w, flat_u)]
    return np.minimum(np.array(picks), weights.shape[-1] - 1).reshape(noise.shape)

class StraightThroughHardAttention(keras.layers.Layer):
    def call(self, scores, value):
        soft = tf.nn.softmax(scores, axis=-1)
        hard = tf.one_hot(tf.argmax(scores, axis=-1), tf.shape(scores)[-1], dtype=soft.dtype)
        return tf.einsum("bqk,bkd->bqd", soft + tf.stop_gradient(hard - soft), value)
"""


def test_correct_alternative_scores_full_marks(tmp_path):
    assert_full_marks(grade(LAB, submit(tmp_path, LAB, ALTERNATIVE_NUMPY_AND_TENSORFLOW)))


ARGMAX = """
def hard_indices(scores):
    return {indices}

def hard_select(scores, value):
    return {select}
"""
TAKE = "np.take_along_axis(value, hard_indices(scores)[..., None], axis=1)"
SAMPLE = """
def sample_indices(weights, noise):
    cdf = np.cumsum(weights, axis={axis})
    return np.minimum(({compare}).sum(axis=-1), weights.shape[-1] - 1)
"""
STRAIGHT = """
class StraightThroughHardAttention(keras.layers.Layer):
    def call(self, scores, value):
        soft = ops.softmax(scores, axis=-1)
        hard = ops.one_hot(ops.argmax(scores, axis=-1), scores.shape[-1], dtype=soft.dtype)
        return ops.matmul({weights}, value)
"""

PLANTED = [
    # (part, source, the named mistake, a phrase of the feedback)
    (
        "argmax",
        ARGMAX.format(indices="np.argmin(scores, axis=-1)", select=TAKE),
        "argmin",
        "least attended key",
    ),
    (
        "argmax",
        ARGMAX.format(
            indices="scores.shape[-1] - 1 - np.argmax(scores[..., ::-1], axis=-1)", select=TAKE
        ),
        "last on ties",
        "take the first",
    ),
    (
        "argmax",
        ARGMAX.format(
            indices="np.argmax(scores, axis=-1)", select="ops.softmax(scores, axis=-1) @ value"
        ),
        "soft attention",
        "copies the single selected value",
    ),
    (
        "sampling",
        SAMPLE.format(axis=-1, compare="cdf < noise[..., None]"),
        "boundary on the wrong side",
        "belongs to the next key",
    ),
    (
        "sampling",
        "def sample_indices(weights, noise):\n    return np.argmax(weights, axis=-1)\n",
        "noise ignored",
        "the uniform numbers u must choose",
    ),
    (
        "sampling",
        SAMPLE.format(axis=1, compare="cdf <= noise[..., None]"),
        "cumulative sum over the queries",
        "it must run over the",
    ),
    (
        "straight_through",
        STRAIGHT.format(weights="soft"),
        "soft forward pass",
        "keeps the hard selection in the forward pass",
    ),
    (
        "straight_through",
        STRAIGHT.format(weights="hard"),
        "estimator missing",  # a hard forward's own gradient is zero: the estimator is missing
        "such as the straight-through one",
    ),
    (
        "straight_through",
        STRAIGHT.format(weights="hard - soft + ops.stop_gradient(soft)"),
        "sign flipped",
        "the sign opposite to the expected one",
    ),
]


def test_sampling_without_the_noise_breaks_the_frequency_property(tmp_path):
    body = "def sample_indices(weights, noise):\n    return np.argmax(weights, axis=-1)\n"
    result = grade(LAB, submit(tmp_path, LAB, body), parts=["sampling"])
    broken = [c for c in result.part("sampling").checks if not c.passed]
    assert any(c.name.startswith("frequencies follow α") for c in broken), broken


def planted():
    """Every planted mistake of this exercise (graded by tests/grader/test_records.py)."""
    return from_table(PLANTED) + [
        patched(
            "argmax",
            "argmax over the queries",
            "runs over the queries",
            LAB,
            (
                "(the last axis)\n    return ops.argmax(scores, axis=-1)",
                "(the last axis)\n    return ops.argmax(scores, axis=1)",
            ),
        ),
        patched(
            "straight_through",
            "soft term not cancelled",
            "subtract stop_gradient(α)",
            LAB,
            ("weights = hard + soft - ops.stop_gradient(soft)", "weights = hard + soft"),
        ),
        patched(
            "straight_through",
            "argmin",
            "least attended key",
            LAB,
            ("hard = ops.one_hot(ops.argmax(scores", "hard = ops.one_hot(ops.argmin(scores"),
        ),
    ]
