"""Lab modern-hopfield (the update, one-step retrieval, the update as attention) graded end to
end: what the reference's grading checks, correct alternatives and planted mistakes
(tests/grader/test_records.py grades the reference and the stub)."""

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

LAB = "modern-hopfield"


def test_reference_is_checked_for_gradients_retrieval_and_scaled_attention():
    result = reference_result(LAB, HIDDEN_SEEDS[LAB])
    names = [check.name for part in result.parts for check in part.checks]
    for source in ("queries", "patterns"):
        assert any(name.startswith(f"gradient wrt {source},") for name in names), source
    assert any(name.startswith("retrieves the closest stored pattern") for name in names)
    assert any("scaled dot-product attention" in name for name in names)


# TensorFlow, with the column convention kept (2-D states made from 1-D ones).
ALTERNATIVE_TENSORFLOW = """
import tensorflow as tf

def hopfield_update(X, xi, beta=1.0):
    X, xi = tf.constant(X), tf.constant(xi)
    states = xi[:, None] if xi.shape.rank == 1 else xi
    weights = tf.nn.softmax(beta * tf.matmul(X, states, transpose_a=True), axis=0)
    result = tf.matmul(X, weights)
    return result[:, 0] if xi.shape.rank == 1 else result

def retrieve(X, xi, beta=1.0, steps=1):
    return xi if steps == 0 else retrieve(X, hopfield_update(X, xi, beta).numpy(), beta, steps - 1)

class HopfieldAttention(keras.layers.Layer):
    def __init__(self, beta=1.0, **kwargs):
        super().__init__(**kwargs)
        self.beta = beta

    def call(self, queries, patterns):
        scores = tf.matmul(queries, patterns, transpose_b=True) * self.beta
        return tf.matmul(tf.nn.softmax(scores, axis=-1), patterns)
"""

# The update written as row-convention attention (the identity of the lab), keras.ops.
ALTERNATIVE_AS_ATTENTION = """
def attention(queries, keys, values, scale):
    return ops.matmul(ops.softmax(scale * ops.matmul(queries, ops.transpose(keys)), -1), values)

def hopfield_update(X, xi, beta=1.0):
    rows = ops.transpose(ops.reshape(xi, (X.shape[0], -1)))  # (M, d)
    patterns = ops.transpose(X)  # (N, d): keys = values
    result = ops.transpose(attention(rows, patterns, patterns, beta))
    return ops.reshape(result, xi.shape)

def retrieve(X, xi, beta=1.0, steps=1):
    for _ in range(steps):
        xi = ops.convert_to_numpy(hopfield_update(X, xi, beta))
    return xi

class HopfieldAttention(keras.layers.Layer):
    def __init__(self, beta=1.0, **kwargs):
        super().__init__(**kwargs)
        self.beta = beta

    def call(self, queries, patterns):
        weights = ops.softmax(ops.einsum("bmd,bnd->bmn", queries, patterns) * self.beta)
        return ops.einsum("bmn,bnd->bmd", weights, patterns)
"""


@pytest.mark.parametrize(
    "body",
    [ALTERNATIVE_TENSORFLOW, ALTERNATIVE_AS_ATTENTION],
    ids=["tensorflow", "as-attention"],
)
def test_correct_alternatives_score_full_marks(tmp_path, body):
    assert_full_marks(grade(LAB, submit(tmp_path, LAB, body)))


UPDATE = """
def hopfield_update(X, xi, beta=1.0):
    s = {scores}
    {softmax}
    return {result}
"""
UPDATE_RIGHT = {
    "scores": "beta * (X.T @ xi)",
    "softmax": "e = np.exp(s - s.max(axis=0, keepdims=True)); w = e / e.sum(axis=0, keepdims=True)",
    "result": "X @ w",
}


def update(**changes):
    return UPDATE.format(**{**UPDATE_RIGHT, **changes})


RETRIEVE = update() + (
    """
def retrieve(X, xi, beta=1.0, steps=1):
    for _ in range({steps}):
        xi = hopfield_update(X, xi, {beta})
    return xi
"""
)


def retrieval(steps="steps", beta="beta"):
    return RETRIEVE.replace("{steps}", steps).replace("{beta}", beta)


ATTENTION = """
class HopfieldAttention(keras.layers.Layer):
    def __init__(self, beta=1.0, **kwargs):
        super().__init__(**kwargs)
        self.beta = beta

    def call(self, queries, patterns):
        d = queries.shape[-1]
        scores = {scale} * ops.matmul({queries}, ops.transpose(patterns, (0, 2, 1)))
        return {outside}ops.matmul(ops.softmax(scores, axis={axis}), patterns)
"""
ATTENTION_RIGHT = {"scale": "self.beta", "queries": "queries", "axis": "-1", "outside": ""}


def attention_layer(**changes):
    return ATTENTION.format(**{**ATTENTION_RIGHT, **changes})


PLANTED = [
    # (part, source, the named mistake, a phrase of the feedback)
    ("hopfield_update", update(scores="X.T @ xi"), "β missing", "β is missing"),
    ("hopfield_update", update(scores="(X.T @ xi) / beta"), "divided by β", "divided by β"),
    (
        "hopfield_update",
        update(scores="X.T @ xi", result="beta * (X @ w)"),
        "β outside the softmax",
        "with β inside the softmax",
    ),
    (
        "hopfield_update",
        update(
            softmax="e = np.exp(s - s.max(-1, keepdims=True)); w = e / e.sum(-1, keepdims=True)"
        ),
        "softmax over the states",
        "each state is updated on its own",
    ),
    (
        "hopfield_update",
        update(softmax="e = np.exp(s); w = e / e.sum(axis=0, keepdims=True)"),
        None,
        "use a numerically stable form",
    ),
    ("retrieve", retrieval(beta="1.0"), "β missing", "β is missing"),
    (
        "retrieve",
        retrieval(beta="1.0"),
        "property: retrieves the closest stored pattern",
        "almost one-hot on the closest pattern",
    ),
    ("retrieve", retrieval(beta="1 / beta"), "divided by β", "divided by β"),
    ("retrieve", retrieval(steps="1"), "steps ignored", "after ONE update"),
    ("HopfieldAttention", attention_layer(scale="1.0"), "β missing", "β is missing"),
    (
        "HopfieldAttention",
        attention_layer(scale="d ** -0.5"),
        "1/√d instead of β",
        "equals 1/√d only in that special case",
    ),
    (
        "HopfieldAttention",
        attention_layer(axis="1"),
        "softmax over the queries",
        "distribution over the N stored patterns",
    ),
    (
        "HopfieldAttention",
        attention_layer(scale="1.0", outside="self.beta * "),
        "β outside the softmax",
        "with β inside the softmax",
    ),
    (
        "HopfieldAttention",
        attention_layer(scale="self.beta / d ** 0.5"),
        "found: extra scale",
        "where the formula has no such scale",
    ),
    (
        "HopfieldAttention",
        attention_layer(scale="(1.0 / self.beta)"),
        "found: divided",
        "you divided by beta where the formula multiplies by it",
    ),
    (
        "HopfieldAttention",
        attention_layer(queries="ops.stop_gradient(queries)"),
        "gradient cut",
        "gradient with respect to queries is zero",
    ),
]


def planted():
    """Every planted mistake of this exercise (graded by tests/grader/test_records.py)."""
    return from_table(PLANTED) + [
        patched(
            "hopfield_update",
            "property: keys in any order",
            "a key is being matched with another key's value",
            LAB,
            ("    return X @ weights\n", "    return X[:, ::-1] @ weights\n"),
        ),
        patched(
            "HopfieldAttention",
            "property: examples independent of the batch",
            "softmax across the batch axis",
            LAB,
            ("ops.softmax(scores, axis=-1), patterns)", "ops.softmax(scores, axis=0), patterns)"),
        ),
    ]
