"""Lab additive graded end to end: what the reference is checked on, a correct alternative and
planted mistakes. Full marks and the stub: tests/grader/test_records.py."""

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

LAB = "additive"


def test_the_reference_is_checked_on_the_gradient_of_every_weight():
    result = reference_result(LAB, HIDDEN_SEEDS[LAB])
    names = [check.name for part in result.parts for check in part.checks]
    for weight in ("query_kernel", "key_kernel", "score_vector"):
        assert any(name.startswith(f"gradient wrt {weight},") for name in names)


BASE = """
class AdditiveScore(keras.layers.Layer):
    def __init__(self, units, **kwargs):
        super().__init__(**kwargs)
        self.units = units

    def build(self, query_shape, key_shape):
        shape = (query_shape[-1], self.units)
        self.query_kernel = self.add_weight(name="query_kernel", shape=shape)
        self.key_kernel = self.add_weight(name="key_kernel", shape=(key_shape[-1], self.units))
        self.score_vector = self.add_weight(name="score_vector", shape=(self.units,))

    def call(self, query, key):
        q = ops.einsum("bqd,du->bqu", query, self.query_kernel)
        k = ops.einsum("bkd,du->bku", key, self.key_kernel)
        return {score}
"""
CORRECT_SCORE = "ops.einsum('bqku,u->bqk', ops.tanh(q[:, :, None] + k[:, None]), self.score_vector)"

ALTERNATIVE = (
    BASE.format(score=CORRECT_SCORE)
    + """
import tensorflow as tf

class AdditiveAttention(AdditiveScore):
    def build(self, query_shape, key_shape, value_shape):
        super().build(query_shape, key_shape)

    def call(self, query, key, value):
        q = tf.tensordot(query, self.query_kernel, axes=1)[:, :, tf.newaxis, :]
        k = tf.tensordot(key, self.key_kernel, axes=1)[:, tf.newaxis, :, :]
        scores = tf.reduce_sum(tf.tanh(q + k) * self.score_vector, axis=-1)
        return tf.linalg.matmul(tf.nn.softmax(scores, axis=-1), value)

def additive_multiplications(tq, tk, d_q, d_k, units, project_first=True):
    per_pair = units
    if project_first:
        return units * (tq * d_q + tk * d_k) + tq * tk * per_pair
    return sum(d_q * units + d_k * units + per_pair for _ in range(tq * tk))
"""
)


def test_correct_alternative_scores_full_marks(tmp_path):
    assert_full_marks(grade(LAB, submit(tmp_path, LAB, ALTERNATIVE)))


ATTENTION = (
    BASE.format(score=CORRECT_SCORE)
    + """
class AdditiveAttention(AdditiveScore):
    def build(self, query_shape, key_shape, value_shape):
        super().build(query_shape, key_shape)

    def call(self, query, key, value):
        scores = super().call(query, key)
        return {expression}
"""
)
COST = """
def additive_multiplications(tq, tk, d_q, d_k, units, project_first=True):
    if project_first:
        return {first}
    return {naive}
"""

PLANTED = [
    # (part, source, the named mistake, a phrase of the feedback)
    (
        "AdditiveScore",
        BASE.format(score="ops.sum((q[:, :, None] + k[:, None]) * self.score_vector, axis=-1)"),
        "tanh missing",
        "the tanh is missing",
    ),
    (
        "AdditiveScore",
        BASE.format(
            score="ops.sum((ops.tanh(q)[:, :, None] + ops.tanh(k)[:, None]) * self.score_vector,"
            " axis=-1)"
        ),
        "tanh of each projection",
        "the tanh goes around the sum",
    ),
    (
        "AdditiveScore",
        BASE.format(
            score="ops.tanh(ops.sum((q[:, :, None] + k[:, None]) * self.score_vector, -1))"
        ),
        "tanh after the score vector",
        "before the score vector",
    ),
    (
        "AdditiveScore",
        BASE.format(
            score="ops.sum(ops.tanh(ops.matmul(query, self.key_kernel)[:, :, None]"
            " + ops.matmul(key, self.query_kernel)[:, None]) * self.score_vector, axis=-1)"
        ),
        "kernels swapped",
        "swap them back",
    ),
    (
        "AdditiveScore",
        BASE.format(
            score="ops.sum(ops.tanh(q[:, :, None] + k[:, None])"
            " * ops.stop_gradient(self.score_vector), axis=-1)"
        ),
        "gradient cut",
        "gradient with respect to score_vector is zero",
    ),
    (
        "AdditiveAttention",
        ATTENTION.format(expression="ops.matmul(ops.softmax(scores, axis=1), value)"),
        "softmax over the queries",
        "it must run over the keys",
    ),
    (
        "AdditiveAttention",
        ATTENTION.format(expression="ops.matmul(ops.softmax(scores, axis=-1), key)"),
        "keys used as values",
        "they must average the values",
    ),
    (
        "additive_multiplications",
        COST.format(
            first="tq * d_q * units + tk * d_k * units",
            naive="tq * tk * (d_q + d_k) * units",
        ),
        "vᵀ product not counted",
        "it is missing",
    ),
    (
        "additive_multiplications",
        COST.format(
            first="tq * d_q * units + tk * d_k * units + units",
            naive="tq * tk * (d_q + d_k + 1) * units",
        ),
        "found: factor dropped",
        "a factor of one term is missing",
    ),
    (
        "additive_multiplications",
        COST.format(
            first="tq * tk * (d_q + d_k + 1) * units",
            naive="(tq * d_q + tk * d_k + tq * tk) * units",
        ),
        "the two ways swapped",
        "the count of the other way",
    ),
    (
        "additive_multiplications",
        COST.format(
            first="tq * d_q * units + tk * d_q * units + tq * tk * units",
            naive="tq * tk * (d_q + d_k + 1) * units",
        ),
        "found: argument swapped",
        "you used d_q where the formula has d_k",
    ),
]


def planted():
    """Every planted mistake of this exercise (graded by tests/grader/test_records.py)."""
    return from_table(PLANTED) + [
        patched(
            "AdditiveScore",
            "score vector not used",
            "without the weights of score_vector",
            LAB,
            ("ops.sum(features * self.score_vector, axis=-1)", "ops.sum(features, axis=-1)"),
        ),
        patched(
            "AdditiveAttention",
            "softmax missing",
            "raw scores weight the values",
            LAB,
            (
                "weights = ops.softmax(super().call(query, key), axis=-1)",
                "weights = super().call(query, key)",
            ),
        ),
        patched(
            "additive_multiplications",
            "vᵀ counted per query and key",
            "Tq·Tk times",
            LAB,
            ("tk * d_k * units + pairs * units", "tk * d_k * units + (tq + tk) * units"),
        ),
    ]
