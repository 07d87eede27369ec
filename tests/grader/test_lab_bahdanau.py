"""Lab bahdanau (one decoder step of Bahdanau attention) graded end to end: what the reference's
grading checks, correct alternatives and planted mistakes (tests/grader/test_records.py grades
the reference and the stub)."""

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

LAB = "bahdanau"


def test_reference_is_checked_for_every_gradient_and_the_distributions():
    result = reference_result(LAB, HIDDEN_SEEDS[LAB])
    names = [check.name for part in result.parts for check in part.checks]
    for weight in ("W_s", "W_h", "v", "previous_state", "encoder_states"):
        assert any(name.startswith(f"gradient wrt {weight},") for name in names), weight
    assert any(name.startswith("rows are distributions") for name in names)


# TensorFlow with a -inf fill from tf.sequence_mask, and the alignment in NumPy with a loop.
ALTERNATIVE_TENSORFLOW_AND_NUMPY = """
import tensorflow as tf

class BahdanauAttentionStep(keras.layers.Layer):
    def __init__(self, units=8, **kwargs):
        super().__init__(**kwargs)
        self.units = units

    def build(self, previous_state_shape, encoder_states_shape):
        self.W_s = self.add_weight(name="W_s", shape=(previous_state_shape[-1], self.units))
        self.W_h = self.add_weight(name="W_h", shape=(encoder_states_shape[-1], self.units))
        self.v = self.add_weight(name="v", shape=(self.units,))

    def call(self, previous_state, encoder_states, source_lengths):
        hidden = tf.tanh(
            tf.expand_dims(previous_state @ self.W_s, 1)
            + tf.einsum("btd,du->btu", encoder_states, self.W_h)
        )
        scores = tf.einsum("btu,u->bt", hidden, self.v)
        valid = tf.sequence_mask(tf.cast(source_lengths, tf.int32), tf.shape(scores)[1])
        scores = tf.where(valid, scores, tf.constant(-float("inf"), scores.dtype))
        weights = tf.nn.softmax(scores, axis=1)
        return tf.reduce_sum(weights[:, :, None] * encoder_states, axis=1)

def alignment(decoder_states, encoder_states, source_lengths, W_s, W_h, v):
    batch, steps = decoder_states.shape[0], decoder_states.shape[1] - 1
    result = np.zeros((batch, steps, encoder_states.shape[1]))
    for b in range(batch):
        n = int(source_lengths[b])
        keys = encoder_states[b, :n] @ W_h
        for t in range(steps):
            e = np.tanh(decoder_states[b, t] @ W_s + keys) @ v
            e = np.exp(e - e.max())
            result[b, t, :n] = e / e.sum()
    return result
"""

# keras.ops with an additive -1e9 bias made from a float mask (the gradient w.r.t. the lengths
# stays zero: the mask comes from a comparison).
ALTERNATIVE_ADDITIVE_BIAS = """
class BahdanauAttentionStep(keras.layers.Layer):
    def __init__(self, units=8, **kwargs):
        super().__init__(**kwargs)
        self.units = units

    def build(self, previous_state_shape, encoder_states_shape):
        self.W_s = self.add_weight(name="W_s", shape=(previous_state_shape[-1], self.units))
        self.W_h = self.add_weight(name="W_h", shape=(encoder_states_shape[-1], self.units))
        self.v = self.add_weight(name="v", shape=(self.units,))

    def call(self, previous_state, encoder_states, source_lengths):
        query = ops.expand_dims(ops.matmul(previous_state, self.W_s), 1)
        scores = ops.tensordot(ops.tanh(query + ops.matmul(encoder_states, self.W_h)), self.v, 1)
        positions = ops.cast(ops.arange(encoder_states.shape[1]), scores.dtype)
        mask = ops.cast(positions[None, :] < source_lengths[:, None], scores.dtype)
        weights = ops.softmax(scores + (1.0 - mask) * -1e9, axis=-1)
        return ops.einsum("bt,btd->bd", weights, encoder_states)

def alignment(decoder_states, encoder_states, source_lengths, W_s, W_h, v):
    q = ops.matmul(decoder_states[:, :-1], W_s)
    k = ops.matmul(encoder_states, W_h)
    e = ops.einsum("bijd,d->bij", ops.tanh(q[:, :, None] + k[:, None]), v)
    j = ops.arange(encoder_states.shape[1])
    e = ops.where(j[None, None, :] < source_lengths[:, None, None], e, -1e30)
    return ops.softmax(e, axis=-1)
"""


@pytest.mark.parametrize(
    "body",
    [ALTERNATIVE_TENSORFLOW_AND_NUMPY, ALTERNATIVE_ADDITIVE_BIAS],
    ids=["tensorflow-numpy", "additive-bias"],
)
def test_correct_alternatives_score_full_marks(tmp_path, body):
    assert_full_marks(grade(LAB, submit(tmp_path, LAB, body)))


STEP = """
class BahdanauAttentionStep(keras.layers.Layer):
    def __init__(self, units=8, **kwargs):
        super().__init__(**kwargs)
        self.units = units

    def build(self, previous_state_shape, encoder_states_shape):
        self.W_s = self.add_weight(name="W_s", shape=(previous_state_shape[-1], self.units))
        self.W_h = self.add_weight(name="W_h", shape=(encoder_states_shape[-1], self.units))
        self.v = self.add_weight(name="v", shape=(self.units,))

    def call(self, previous_state, encoder_states, source_lengths):
        W_s, W_h, v = {weights}
        query = ops.matmul(previous_state, W_s)[:, None, :]
        hidden = query + ops.matmul(encoder_states, W_h)
        scores = ops.sum({activation}(hidden) * v, axis=-1)  # (B, T)
        positions = ops.arange(encoder_states.shape[1])[None, :]
        valid = positions {comparison} ops.cast(source_lengths, "int32")[:, None]
        {weighting}
        return ops.sum(weights[:, :, None] * encoder_states, axis=1)
"""
RIGHT = {
    "weights": "self.W_s, self.W_h, self.v",
    "activation": "ops.tanh",
    "comparison": "<",
    "weighting": "weights = ops.softmax(ops.where(valid, scores, -1e9), axis=-1)",
}


def step(**changes):
    return STEP.format(**{**RIGHT, **changes})


ALIGNMENT = """
def alignment(decoder_states, encoder_states, source_lengths, W_s, W_h, v):
    queries = {queries}
    hidden = (queries @ W_s)[:, :, None, :] + (encoder_states @ W_h)[:, None, :, :]
    scores = np.tanh(hidden) @ v
    valid = np.arange(encoder_states.shape[1])[None, None, :] < source_lengths[:, None, None]
    {weighting}
    return weights
"""
SOFTMAX = (
    "e = np.exp({s} - {s}.max(axis={axis}, keepdims=True)); "
    "weights = e / e.sum(axis={axis}, keepdims=True)"
)


def alignment_body(
    queries="decoder_states[:, :-1]",
    scores="np.where(valid, scores, -1e9)",
    axis=-1,
    weighting=None,
):
    weighting = weighting or "s = " + scores + "; " + SOFTMAX.format(s="s", axis=axis)
    return ALIGNMENT.format(queries=queries, weighting=weighting)


SIZE_ONE_SOFTMAX = (
    "weights = ops.softmax(ops.where(valid, scores, -1e9)[:, :, None], axis=-1)[:, :, 0]"
)

PLANTED = [
    # (part, source, the named mistake, a phrase of the feedback)
    (
        "step with padded sources",
        step(comparison='< ops.cast(source_lengths[0], "int32") + 0 *'),
        "found: first example's input",
        "the first example's source_lengths",
    ),
    (
        "step without padding",
        step(activation=""),
        "tanh missing",
        "without the tanh",
    ),
    (
        "step without padding",
        step(weighting=SIZE_ONE_SOFTMAX),
        "softmax over a size-1 axis",
        "plain SUM of the encoder states",
    ),
    (
        "step without padding",
        step(weighting="weights = scores"),
        "softmax missing",
        "raw scores e_j as weights",
    ),
    (
        "step without padding",
        step(weights="self.W_h, self.W_s, self.v"),
        "W_s and W_h swapped",
        "projections are swapped",
    ),
    (
        "step without padding",
        step(weights="self.W_s, self.W_h, ops.stop_gradient(self.v)"),
        "gradient cut",
        "gradient with respect to v is zero",
    ),
    (
        "step with padded sources",
        step(weighting="weights = ops.softmax(scores, axis=-1)"),
        "mask forgotten",
        ("padded source positions got weight", "changed when masked key", "your mask leaks"),
    ),
    (
        "step with padded sources",
        step(comparison="<="),
        "mask off by one",
        "not j <= length",
    ),
    (
        "step with padded sources",
        step(weighting="weights = ops.softmax(scores, axis=-1) * ops.cast(valid, scores.dtype)"),
        "masked after the softmax",
        ("no longer sum to 1", "not 0: a masked key must get exactly zero weight"),
    ),
    (
        "alignment",
        alignment_body(queries="decoder_states[:, 1:]"),
        "s_t instead of s_{t-1}",
        "PREVIOUS state s_{t-1}",
    ),
    (
        "alignment",
        alignment_body(scores="scores"),
        "mask forgotten",
        ("Padded source positions got weight", "your mask leaks"),
    ),
    (
        "alignment",
        alignment_body(scores="scores"),
        "property: rows are distributions over the valid positions",
        "which is padding",
    ),
    (
        "alignment",
        alignment_body(axis=1),
        "softmax over the output steps",
        "over the SOURCE positions",
    ),
    (
        "alignment",
        alignment_body(weighting="weights = scores"),
        "scores instead of weights",
        "softmax is missing",
    ),
]


def planted():
    """Every planted mistake of this exercise (graded by tests/grader/test_records.py)."""
    padded = "step with padded sources"
    return from_table(
        PLANTED
        + [
            (padded, step(activation=""), "tanh missing", "without the tanh"),
            (padded, step(weighting=SIZE_ONE_SOFTMAX), "softmax over a size-1 axis", "plain SUM"),
            (padded, step(weights="self.W_h, self.W_s, self.v"), "W_s and W_h swapped", "swapped"),
        ]
    ) + [
        patched(
            "step with padded sources",
            "property: examples independent of the batch",
            "softmax across the batch axis",
            LAB,
            ("return ops.softmax(filled, axis=-1)", "return ops.softmax(filled, axis=0)"),
        ),
        patched(
            "step without padding",
            "property: keys in any order",
            "a key is being matched with another key's value",
            LAB,
            (
                "ops.matmul(weights, encoder_states)[:, 0, :]",
                "ops.matmul(weights, encoder_states[:, ::-1])[:, 0, :]",
            ),
        ),
    ]
