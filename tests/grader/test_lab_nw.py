"""Lab nw (Nadaraya–Watson kernel regression) graded end to end: what the reference's grading
checks, a correct alternative and planted mistakes (tests/grader/test_records.py grades the
reference and the stub)."""

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

LAB = "nw"


def test_reference_is_checked_for_the_gradient_wrt_w_and_the_row_sums():
    result = reference_result(LAB, HIDDEN_SEEDS[LAB])
    names = [check.name for part in result.parts for check in part.checks]
    assert any(name.startswith("gradient wrt w,") for name in names)
    assert any(name.startswith("rows sum to one") for name in names)


ALTERNATIVE_NUMPY_AND_TENSORFLOW = """
import tensorflow as tf

def gaussian_weights(queries, keys, bandwidth=1.0):
    scores = -np.subtract.outer(queries, keys) ** 2 / (2 * bandwidth * bandwidth)
    scores = scores - scores.max(axis=1, keepdims=True)
    e = np.exp(scores)
    return e / e.sum(axis=1, keepdims=True)

def nadaraya_watson(queries, keys, values, kernel="gaussian", bandwidth=1.0):
    distance = np.abs(np.subtract.outer(queries, keys))
    if kernel == "gaussian":
        return gaussian_weights(queries, keys, bandwidth) @ values
    if kernel == "boxcar":
        k = (distance <= bandwidth).astype(float)
    elif kernel == "epanechnikov":
        k = np.clip(1 - (distance / bandwidth) ** 2, 0, None)
    else:
        raise ValueError(f"no kernel {kernel}")
    total = k.sum(axis=1)
    return np.divide(k @ values, total, out=np.zeros(len(queries)), where=total > 0)

class ParametricNadarayaWatson(keras.layers.Layer):
    def build(self, queries_shape, keys_shape, values_shape):
        self.w = self.add_weight(name="w", shape=(), initializer="ones")

    def call(self, queries, keys, values):
        d = queries[:, :, tf.newaxis] - keys[:, tf.newaxis, :]
        attention = tf.nn.softmax(-tf.square(d * self.w) / 2)
        return tf.einsum("bmn,bn->bm", attention, values)
"""


def test_correct_alternative_scores_full_marks(tmp_path):
    assert_full_marks(grade(LAB, submit(tmp_path, LAB, ALTERNATIVE_NUMPY_AND_TENSORFLOW)))


WEIGHTS = """
def gaussian_weights(queries, keys, bandwidth=1.0):
    d = ops.expand_dims(queries, -1) - ops.expand_dims(keys, 0)
    return {expression}
"""
REGRESSION = """
def nadaraya_watson(queries, keys, values, kernel="gaussian", bandwidth=1.0):
    u = np.subtract.outer(queries, keys) / bandwidth
    if kernel == "gaussian":
        k = np.exp(-u ** 2 / 2)
    elif kernel == "boxcar":
        k = ({boxcar}).astype(float)
    else:
        k = {epanechnikov}
    total = k.sum(axis=1)
    return np.divide(k @ values, total, out=np.zeros(len(queries)), where=total != 0)
"""
CORRECT_BOXCAR, CORRECT_EPANECHNIKOV = "np.abs(u) <= 1", "np.maximum(1 - u ** 2, 0)"
PARAMETRIC = """
class ParametricNadarayaWatson(keras.layers.Layer):
    def build(self, queries_shape, keys_shape, values_shape):
        self.w = self.add_weight(name="w", shape=(), initializer="ones")

    def call(self, queries, keys, values):
        d = ops.expand_dims(queries, -1) - ops.expand_dims(keys, -2)
        weights = ops.softmax({scores}, axis=-1)
        return ops.einsum("bmn,bn->bm", weights, values)
"""

PLANTED = [
    # (part, source, the named mistake, a phrase of the feedback)
    (
        "gaussian_weights",
        WEIGHTS.format(expression="ops.softmax(-d ** 2 / bandwidth ** 2, axis=-1)"),
        "factor ½ missing",
        "the ½ of the Gaussian",
    ),
    (
        "gaussian_weights",
        WEIGHTS.format(expression="ops.softmax(-d ** 2 / (2 * bandwidth ** 2), axis=0)"),
        "normalised over the queries",
        "wrong axis",
    ),
    (
        "gaussian_weights",
        WEIGHTS.format(
            expression="ops.exp(-d ** 2 / (2 * bandwidth ** 2)) / "
            "ops.sum(ops.exp(-d ** 2 / (2 * bandwidth ** 2)), axis=-1, keepdims=True)"
        ),
        None,
        "NaN or infinite",
    ),
    (
        "nadaraya_watson",
        REGRESSION.format(boxcar="np.abs(u) < 1", epanechnikov=CORRECT_EPANECHNIKOV),
        "boxcar edge excluded",
        "distance exactly h counts",
    ),
    (
        "nadaraya_watson",
        REGRESSION.format(boxcar=CORRECT_BOXCAR, epanechnikov="1 - u ** 2"),
        "Epanechnikov not clipped",
        "outside [",
    ),
    (
        "ParametricNadarayaWatson",
        PARAMETRIC.format(scores="-0.5 * d ** 2 * self.w"),
        "w outside the square",
        "multiplies the difference before squaring",
    ),
    (
        "ParametricNadarayaWatson",
        PARAMETRIC.format(scores="-0.5 * (d * ops.stop_gradient(self.w)) ** 2"),
        "gradient cut",
        "gradient with respect to w is zero",
    ),
]


def planted():
    """Every planted mistake of this exercise (graded by tests/grader/test_records.py)."""
    return from_table(PLANTED) + [
        patched(
            "gaussian_weights",
            "bandwidth not squared",
            "not by 2h²",
            LAB,
            ("/ (2.0 * bandwidth**2), axis=-1)", "/ (2.0 * bandwidth), axis=-1)"),
        ),
        patched(
            "gaussian_weights",
            "sign flipped",
            "the sign is flipped",
            LAB,
            ("ops.softmax(-ops.square(differences)", "ops.softmax(ops.square(differences)"),
        ),
        patched(
            "gaussian_weights",
            "not normalised",
            "kernel values",
            LAB,
            (
                "return ops.softmax(-ops.square(differences) / (2.0 * bandwidth**2), axis=-1)",
                "return ops.exp(-ops.square(differences) / (2.0 * bandwidth**2))",
            ),
        ),
        patched(
            "nadaraya_watson",
            "not normalised",
            "without dividing by",
            LAB,
            ("weights = k / ops.where(total > 0, total, ops.ones_like(total))", "weights = k"),
            (
                "weights = gaussian_weights(queries, keys, bandwidth)",
                "weights = ops.exp(-ops.square(ops.expand_dims(queries, -1) - "
                "ops.expand_dims(keys, 0)) / (2.0 * bandwidth**2))",
            ),
        ),
        patched(
            "nadaraya_watson",
            None,
            ("no ValueError was raised", "`kernel` is not gaussian, boxcar or epanechnikov"),
            LAB,
            ('raise ValueError(f"unknown kernel {kernel!r}")', "k = ops.zeros_like(u)"),
        ),
        patched(
            "nadaraya_watson",
            "bandwidth ignored",
            "bandwidth h is not used",
            LAB,
            ("gaussian_weights(queries, keys, bandwidth)", "gaussian_weights(queries, keys, 1.0)"),
            ("ops.expand_dims(keys, 0)) / bandwidth", "ops.expand_dims(keys, 0))"),
        ),
        patched(
            "ParametricNadarayaWatson",
            "w used as a bandwidth",
            "w is the inverse width",
            LAB,
            ("ops.square(differences * self.w)", "ops.square(differences / self.w)"),
        ),
        patched(
            "ParametricNadarayaWatson",
            "factor ½ missing",
            "the ½ is missing",
            LAB,
            ("scores = -0.5 * ops.square", "scores = -1.0 * ops.square"),
        ),
        patched(
            "ParametricNadarayaWatson",
            "softmax over the queries",
            "normalises over the queries",
            LAB,
            ("weights = ops.softmax(scores, axis=-1)", "weights = ops.softmax(scores, axis=-2)"),
        ),
    ]
