"""Lab luong (global attention with three scores, and local-p) graded end to end: what the
reference's grading checks, correct alternatives and planted mistakes
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

LAB = "luong"


def test_reference_is_checked_for_every_gradient_and_the_window():
    result = reference_result(LAB, HIDDEN_SEEDS[LAB])
    names = [check.name for part in result.parts for check in part.checks]
    for weight in ("W_a", "v_a", "W_c", "W_p", "v_p", "query", "encoder_states"):
        assert any(name.startswith(f"gradient wrt {weight},") for name in names), weight
    assert any(name.startswith("zero outside the window") for name in names)


BUILD_GLOBAL = """
class LuongAttention(keras.layers.Layer):
    def __init__(self, units=4, score="dot", **kwargs):
        super().__init__(**kwargs)
        self.units = units
        self.score = score

    def build(self, query_shape, encoder_states_shape):
        d_h, d_s = query_shape[-1], encoder_states_shape[-1]
        if self.score == "general":
            self.W_a = self.add_weight(name="W_a", shape=(d_h, d_s))
        elif self.score == "concat":
            self.W_a = self.add_weight(name="W_a", shape=(d_h + d_s, self.units))
            self.v_a = self.add_weight(name="v_a", shape=(self.units,))
        self.W_c = self.add_weight(name="W_c", shape=(d_s + d_h, self.units))
"""
BUILD_LOCAL = """
class LocalPAttention(keras.layers.Layer):
    def __init__(self, units=4, window=2, **kwargs):
        super().__init__(**kwargs)
        self.units = units
        self.window = window

    def build(self, query_shape, encoder_states_shape):
        d = query_shape[-1]
        self.W_p = self.add_weight(name="W_p", shape=(d, self.units))
        self.v_p = self.add_weight(name="v_p", shape=(self.units,))
        self.W_c = self.add_weight(name="W_c", shape=(encoder_states_shape[-1] + d, self.units))
"""

# TensorFlow: the concat score by an explicit broadcast concatenation, local-p weights in
# NumPy for the function and in TensorFlow (renormalising exp() by hand) inside the layer.
ALTERNATIVE_TENSORFLOW = (
    "import tensorflow as tf\n"
    + BUILD_GLOBAL
    + """
    def call(self, query, encoder_states):
        if self.score == "dot":
            scores = tf.einsum("bqd,bsd->bqs", query, encoder_states)
        elif self.score == "general":
            scores = tf.einsum("bqi,ij,bsj->bqs", query, self.W_a, encoder_states)
        else:
            b, tq, s = tf.shape(query)[0], tf.shape(query)[1], tf.shape(encoder_states)[1]
            hq = tf.broadcast_to(query[:, :, None, :], [b, tq, s, query.shape[-1]])
            hs = tf.broadcast_to(
                encoder_states[:, None, :, :], [b, tq, s, encoder_states.shape[-1]]
            )
            joined = tf.concat([hq, hs], axis=-1)
            scores = tf.tensordot(tf.tanh(tf.tensordot(joined, self.W_a, 1)), self.v_a, 1)
        context = tf.nn.softmax(scores) @ encoder_states
        return tf.tanh(tf.concat([context, query], -1) @ self.W_c)

def local_p_weights(scores, positions, window):
    distance = np.arange(scores.shape[-1]) - positions[..., None]
    inside = np.abs(distance) <= window
    top = np.where(inside, scores, -np.inf).max(-1, keepdims=True)
    e = np.where(inside, np.exp(scores - top), 0)
    return e / e.sum(-1, keepdims=True) * np.exp(-2 * distance ** 2 / window ** 2)
"""
    + BUILD_LOCAL
    + """
    def call(self, query, encoder_states):
        s = encoder_states.shape[1]
        p = s * tf.sigmoid(tf.tensordot(tf.tanh(query @ self.W_p), self.v_p, 1))
        distance = tf.range(s, dtype=query.dtype)[None, None, :] - p[..., None]
        inside = tf.cast(tf.abs(distance) <= self.window, query.dtype)
        scores = tf.einsum("bqd,bsd->bqs", query, encoder_states)
        top = tf.reduce_max(scores - 1e9 * (1 - inside), -1, keepdims=True)
        e = tf.exp(tf.minimum(scores - top, 0.0)) * inside
        sigma = self.window / 2
        gaussian = tf.exp(-distance ** 2 / (2 * sigma ** 2))
        weights = e / tf.reduce_sum(e, -1, keepdims=True) * gaussian
        context = weights @ encoder_states
        return tf.tanh(tf.concat([context, query], -1) @ self.W_c)
"""
)

# keras.ops, with the concat score split into its two halves and a shared helper.
ALTERNATIVE_KERAS_OPS = (
    """
def h_tilde(context, query, W_c):
    return ops.tanh(ops.einsum("bqk,ku->bqu", ops.concatenate([context, query], -1), W_c))

def local_p_weights(scores, positions, window):
    scores = ops.convert_to_tensor(scores)
    distance = ops.cast(ops.arange(scores.shape[-1]), scores.dtype) - ops.expand_dims(
        ops.cast(positions, scores.dtype), -1
    )
    keep = ops.less_equal(ops.abs(distance), window)
    aligned = ops.softmax(ops.where(keep, scores, -np.inf), axis=-1)
    return aligned * ops.exp(-ops.square(distance / (window / 2)) / 2)
"""
    + BUILD_GLOBAL
    + """
    def call(self, query, encoder_states):
        if self.score == "dot":
            scores = ops.einsum("bqd,bsd->bqs", query, encoder_states)
        elif self.score == "general":
            scores = ops.einsum("bqj,bsj->bqs", ops.matmul(query, self.W_a), encoder_states)
        else:
            top, bottom = ops.split(self.W_a, [query.shape[-1]], axis=0)
            hidden = ops.expand_dims(query @ top, 2) + ops.expand_dims(encoder_states @ bottom, 1)
            scores = ops.einsum("bqsu,u->bqs", ops.tanh(hidden), self.v_a)
        return h_tilde(ops.softmax(scores) @ encoder_states, query, self.W_c)
"""
    + BUILD_LOCAL
    + """
    def call(self, query, encoder_states):
        logit = ops.einsum("bqu,u->bq", ops.tanh(query @ self.W_p), self.v_p)
        p = ops.sigmoid(logit) * encoder_states.shape[1]
        scores = ops.einsum("bqd,bsd->bqs", query, encoder_states)
        weights = local_p_weights(scores, p, self.window)
        return h_tilde(weights @ encoder_states, query, self.W_c)
"""
)


@pytest.mark.parametrize(
    "body", [ALTERNATIVE_TENSORFLOW, ALTERNATIVE_KERAS_OPS], ids=["tensorflow", "keras-ops"]
)
def test_correct_alternatives_score_full_marks(tmp_path, body):
    assert_full_marks(grade(LAB, submit(tmp_path, LAB, body)))


GLOBAL = (
    BUILD_GLOBAL
    + """
    def call(self, query, encoder_states):
        keys_t = ops.transpose(encoder_states, (0, 2, 1))
        d_h, d_s = query.shape[-1], encoder_states.shape[-1]
        if self.score == "dot":
            scores = {dot}
        elif self.score == "general":
            scores = {general}
        else:
            first, second = {split}
            hidden = ops.matmul(query, first)[:, :, None] + ops.matmul(encoder_states, second)[
                :, None
            ]
            scores = ops.sum({score_tanh}(hidden) * self.v_a, axis=-1)
        context = ops.matmul(ops.softmax(scores, axis=-1), encoder_states)
        return {state_tanh}(ops.matmul(ops.concatenate([{joined}], axis=-1), self.W_c))
"""
)
GLOBAL_RIGHT = {
    "dot": "ops.matmul(query, keys_t)",
    "general": "ops.matmul(ops.matmul(query, self.W_a), keys_t)",
    "split": "self.W_a[:d_h], self.W_a[d_h:]",
    "score_tanh": "ops.tanh",
    "state_tanh": "ops.tanh",
    "joined": "context, query",
}


def global_layer(**changes):
    return GLOBAL.format(**{**GLOBAL_RIGHT, **changes})


WEIGHTS = """
def local_p_weights(scores, positions, window):
    source = np.arange(scores.shape[-1]) + {origin}
    distance = source[None, None, :] - positions[:, :, None]
    inside = np.abs(distance) <= window
    masked = {masked}
    e = np.exp(masked - masked.max(-1, keepdims=True))
    aligned = e / e.sum(-1, keepdims=True){after}
    sigma = {sigma}
    return aligned{gaussian}
"""
WEIGHTS_RIGHT = {
    "origin": "0",
    "masked": "np.where(inside, scores, -np.inf)",
    "after": "",
    "sigma": "window / 2",
    "gaussian": " * np.exp(-distance ** 2 / (2 * sigma ** 2))",
}


def weights_function(**changes):
    return WEIGHTS.format(**{**WEIGHTS_RIGHT, **changes})


LOCAL = (
    """
def local_p_weights(scores, positions, window):
    distance = ops.cast(ops.arange(scores.shape[-1]), scores.dtype) - positions[:, :, None]
    aligned = ops.softmax(ops.where(ops.abs(distance) <= window, scores, -1e9), axis=-1)
    sigma = {sigma}
    return aligned{gaussian}
"""
    + BUILD_LOCAL
    + """
    def call(self, query, encoder_states):
        logit = ops.sum({p_tanh}(ops.matmul(query, self.W_p)) * self.v_p, axis=-1)
        p = {scale}ops.sigmoid(logit)
        scores = ops.matmul(query, ops.transpose(encoder_states, (0, 2, 1)))
        context = ops.matmul(local_p_weights(scores, p, self.window), encoder_states)
        return ops.tanh(ops.matmul(ops.concatenate([{joined}], axis=-1), self.W_c))
"""
)
LOCAL_RIGHT = {
    "sigma": "window / 2",
    "gaussian": " * ops.exp(-distance ** 2 / (2 * sigma ** 2))",
    "p_tanh": "ops.tanh",
    "scale": "encoder_states.shape[1] * ",
    "joined": "context, query",
}


def local_layer(**changes):
    return LOCAL.format(**{**LOCAL_RIGHT, **changes})


PLANTED = [
    # (part, source, the named mistake, a phrase of the feedback)
    (
        "global dot",
        global_layer(dot="ops.matmul(query, keys_t) / d_h ** 0.5"),
        "scaled by √d",
        "plain h_tᵀh̄_s",
    ),
    (
        "global dot",
        global_layer(joined="query, context"),
        "[h_t; c_t] instead of [c_t; h_t]",
        "puts the context first",
    ),
    ("global dot", global_layer(state_tanh=""), "tanh missing in h̃_t", "without the tanh"),
    (
        "global general",
        global_layer(general="ops.matmul(ops.matmul(query, ops.transpose(self.W_a)), keys_t)"),
        "W_a transposed",
        "W_a is transposed",
    ),
    (
        "global general",
        global_layer(general="ops.matmul(query, keys_t)"),
        "W_a ignored",
        "general score uses W_a",
    ),
    (
        "global concat",
        global_layer(split="self.W_a[d_s:], self.W_a[:d_s]"),
        "[h̄_s; h_t] in the score",
        "first d_h rows of W_a",
    ),
    (
        "global concat",
        global_layer(score_tanh=""),
        "tanh missing in the score",
        "without the tanh",
    ),
    (
        "global concat",
        global_layer(joined="query, context"),
        "[h_t; c_t] instead of [c_t; h_t]",
        "puts the context first",
    ),
    ("local_p_weights", weights_function(sigma="window"), "σ = D instead of D/2", "σ = D/2"),
    ("local_p_weights", weights_function(gaussian=""), "Gaussian missing", "Gaussian factor"),
    (
        "local_p_weights",
        weights_function(gaussian=" * np.exp(-distance ** 2 / sigma ** 2)"),
        "2σ² written as σ²",
        "denominator is 2σ²",
    ),
    (
        "local_p_weights",
        weights_function(
            gaussian=" * np.exp(-distance ** 2 / (2 * sigma ** 2)) / (aligned * np.exp("
            "-distance ** 2 / (2 * sigma ** 2))).sum(-1, keepdims=True)"
        ),
        "Gaussian inside the softmax",
        "normalised again to sum to 1",
    ),
    (
        "local_p_weights",
        weights_function(masked="scores", after=" * inside"),
        "softmax over every position",
        "inside the window only",
    ),
    (
        "local_p_weights",
        weights_function(masked="scores"),
        "window missing",
        "only looks inside the window",
    ),
    (
        "local_p_weights",
        weights_function(masked="scores"),
        "property: zero outside the window",
        "outside the window D",
    ),
    (
        "local_p_weights",
        weights_function(origin="1"),
        "positions counted from 1",
        "count from 0",
    ),
    ("LocalPAttention", local_layer(scale=""), "p_t not scaled by S", "multiply by the source"),
    (
        "LocalPAttention",
        local_layer(scale="(encoder_states.shape[1] - 1) * "),
        "found: size off by one",
        "you used S − 1",
    ),
    ("LocalPAttention", local_layer(p_tanh=""), "tanh missing in p_t", "the tanh inside"),
    ("LocalPAttention", local_layer(sigma="window"), "σ = D instead of D/2", "σ = D/2"),
    ("LocalPAttention", local_layer(gaussian=""), "Gaussian missing", "Gaussian factor"),
    (
        "LocalPAttention",
        local_layer(joined="query, context"),
        "[h_t; c_t] instead of [c_t; h_t]",
        "puts the context first",
    ),
]


CONTEXT_SECOND = "[h_t; c_t] instead of [c_t; h_t]"


def planted():
    """Every planted mistake of this exercise (graded by tests/grader/test_records.py)."""
    return from_table(
        PLANTED
        + [
            (
                "global general",
                global_layer(joined="query, context"),
                CONTEXT_SECOND,
                "context first",
            ),
            (
                "global general",
                global_layer(state_tanh=""),
                "tanh missing in h̃_t",
                "without the tanh",
            ),
            (
                "global concat",
                global_layer(state_tanh=""),
                "tanh missing in h̃_t",
                "without the tanh",
            ),
        ]
    ) + [
        patched(
            "global dot",
            "property: keys in any order",
            "a key is being matched with another key's value",
            LAB,
            (
                "encoder_states), axis=-1)\n        context = ops.matmul(weights, encoder_states)",
                "encoder_states), axis=-1)\n"
                "        context = ops.matmul(weights, encoder_states[:, ::-1])",
            ),
        ),
        patched(
            "global general",
            "property: examples independent of the batch",
            "softmax across the batch axis",
            LAB,
            (
                "weights = ops.softmax(self.scores(query, encoder_states), axis=-1)",
                "weights = ops.softmax(self.scores(query, encoder_states), axis=0)",
            ),
        ),
    ]
