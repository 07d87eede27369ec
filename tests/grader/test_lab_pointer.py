"""Lab pointer (pointer scores, greedy decoding, the likelihood of a target sequence) graded end
to end: what the reference's grading checks, correct alternatives and planted mistakes
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

LAB = "pointer"


def test_reference_is_checked_for_every_gradient_and_distinct_positions():
    result = reference_result(LAB, HIDDEN_SEEDS[LAB])
    names = [check.name for part in result.parts for check in part.checks]
    for weight in ("W_1", "W_2", "v", "encoder_states", "decoder_states"):
        assert any(name.startswith(f"gradient wrt {weight},") for name in names), weight
    assert any(name.startswith("distinct positions") for name in names)


BUILD = """
class PointerScores(keras.layers.Layer):
    def __init__(self, units=4, **kwargs):
        super().__init__(**kwargs)
        self.units = units

    def build(self, encoder_states_shape, decoder_states_shape):
        self.W_1 = self.add_weight(name="W_1", shape=(encoder_states_shape[-1], self.units))
        self.W_2 = self.add_weight(name="W_2", shape=(decoder_states_shape[-1], self.units))
        self.v = self.add_weight(name="v", shape=(self.units,))
"""

# TensorFlow scores; decoding that removes chosen positions from a Python list; the
# log-likelihood with tf.reduce_logsumexp over a -inf mask.
ALTERNATIVE_TENSORFLOW = (
    "import tensorflow as tf\n"
    + BUILD
    + """
    def call(self, encoder_states, decoder_states):
        e = tf.einsum("bnd,du->bnu", encoder_states, self.W_1)
        d = tf.einsum("bmd,du->bmu", decoder_states, self.W_2)
        return tf.einsum("bmnu,u->bmn", tf.tanh(e[:, None] + d[:, :, None]), self.v)

def greedy_decode(scores):
    result = []
    for row in np.asarray(scores):
        left = list(range(row.shape[-1]))
        picks = []
        for step in row:
            best = max(left, key=lambda j: step[j])
            picks.append(best)
            left.remove(best)
        result.append(picks)
    return np.array(result)

def sequence_log_likelihood(scores, targets):
    scores = tf.constant(scores)
    one_hot = tf.one_hot(targets, scores.shape[-1], dtype=scores.dtype)
    earlier = tf.cumsum(one_hot, axis=1, exclusive=True)
    masked = tf.where(earlier > 0, tf.constant(-np.inf, scores.dtype), scores)
    picked = tf.reduce_sum(one_hot * scores, axis=-1)
    return tf.reduce_sum(picked - tf.reduce_logsumexp(masked, axis=-1), axis=-1)
"""
)

# keras.ops throughout: the scores by concatenated weights, decoding with a large negative
# penalty added to the chosen positions, log_softmax per step.
ALTERNATIVE_KERAS_OPS = (
    BUILD
    + """
    def call(self, encoder_states, decoder_states):
        n, m = encoder_states.shape[1], decoder_states.shape[1]
        e = ops.repeat(ops.expand_dims(ops.matmul(encoder_states, self.W_1), 1), m, axis=1)
        d = ops.repeat(ops.expand_dims(ops.matmul(decoder_states, self.W_2), 2), n, axis=2)
        return ops.squeeze(ops.matmul(ops.tanh(e + d), ops.expand_dims(self.v, -1)), -1)

def greedy_decode(scores):
    scores = ops.convert_to_tensor(scores)
    penalty = ops.zeros_like(scores[:, 0])
    picks = []
    for m in range(scores.shape[1]):
        index = ops.argmax(scores[:, m] + penalty, axis=-1)
        picks.append(index)
        penalty = penalty - 1e30 * ops.one_hot(index, scores.shape[-1], dtype=scores.dtype)
    return ops.stack(picks, axis=1)

def sequence_log_likelihood(scores, targets):
    total = 0.0
    chosen = np.zeros((scores.shape[0], scores.shape[-1]), bool)
    rows = np.arange(scores.shape[0])
    for m in range(scores.shape[1]):
        logp = ops.log_softmax(ops.where(chosen, -np.inf, scores[:, m]), axis=-1)
        total = total + ops.convert_to_numpy(logp)[rows, targets[:, m]]
        chosen[rows, targets[:, m]] = True
    return total
"""
)


@pytest.mark.parametrize(
    "body", [ALTERNATIVE_TENSORFLOW, ALTERNATIVE_KERAS_OPS], ids=["tensorflow", "keras-ops"]
)
def test_correct_alternatives_score_full_marks(tmp_path, body):
    assert_full_marks(grade(LAB, submit(tmp_path, LAB, body)))


SCORES = (
    BUILD
    + """
    def call(self, encoder_states, decoder_states):
        W_1, W_2 = {weights}
        e = ops.matmul(encoder_states, W_1)
        d = ops.matmul(decoder_states, W_2)
        u = ops.sum({activation}({hidden}) * self.v, axis=-1)
        return {result}
"""
)
SCORES_RIGHT = {
    "weights": "self.W_1, self.W_2",
    "activation": "ops.tanh",
    "hidden": "e[:, None, :, :] + d[:, :, None, :]",
    "result": "u",
}


def scores_layer(**changes):
    return SCORES.format(**{**SCORES_RIGHT, **changes})


DECODE = """
def greedy_decode(scores):
    batch, steps, n = scores.shape
    chosen = np.zeros((batch, n), bool)
    out = np.zeros((batch, steps), int)
    for m in range(steps):
        best = np.where(chosen, {fill}, scores[:, m]).argmax(-1)
        out[:, m] = best{remember}
    return out{shift}
"""
DECODE_RIGHT = {
    "fill": "-np.inf",
    "remember": "\n        chosen[np.arange(batch), best] = True",
    "shift": "",
}


def decoder(**changes):
    return DECODE.format(**{**DECODE_RIGHT, **changes})


LIKELIHOOD = """
def sequence_log_likelihood(scores, targets):
    n = scores.shape[-1]
    one_hot = np.eye(n, dtype=bool)[targets]
    earlier = np.cumsum(one_hot, axis=1) - one_hot > 0
    masked = {masked}
    {log_norm}
    terms = np.take_along_axis(scores, targets[..., None], -1)[..., 0] - log_norm
    return {total}
"""
LIKELIHOOD_RIGHT = {
    "masked": "np.where(earlier, -np.inf, scores)",
    "log_norm": "top = masked.max(-1, keepdims=True); "
    "log_norm = top[..., 0] + np.log(np.exp(masked - top).sum(-1))",
    "total": "terms.sum(-1)",
}


def likelihood(**changes):
    return LIKELIHOOD.format(**{**LIKELIHOOD_RIGHT, **changes})


PLANTED = [
    # (part, source, the named mistake, a phrase of the feedback)
    ("PointerScores", scores_layer(activation=""), "tanh missing", "without the tanh"),
    (
        "PointerScores",
        scores_layer(activation="", result="ops.tanh(u)"),
        "found: moved outward",
        "applied to the result of the product",
    ),
    (
        "PointerScores",
        scores_layer(result="ops.softmax(u, axis=-1)"),
        "probabilities instead of scores",
        "raw scores u",
    ),
    (
        "PointerScores",
        scores_layer(weights="self.W_2, self.W_1"),
        "W_1 and W_2 swapped",
        "projections are swapped",
    ),
    (
        "PointerScores",
        scores_layer(hidden="e[:, :, None, :] + d[:, None, :, :]"),
        "steps and positions swapped",
        "rows must be the output steps",
    ),
    (
        "PointerScores",
        scores_layer(hidden="e[:, :, None, :] + d[:, None, :, :]"),
        "transposed",
        "last two axes are swapped",
    ),
    (
        "PointerScores",
        scores_layer(weights="self.W_1, ops.stop_gradient(self.W_2)"),
        "gradient cut",
        "gradient with respect to W_2 is zero",
    ),
    ("greedy_decode", decoder(remember=""), "chosen positions not masked", "plain argmax"),
    (
        "greedy_decode",
        decoder(remember=""),
        "property: distinct positions (a permutation when M = N)",
        "twice",
    ),
    (
        "greedy_decode",
        decoder(
            remember="\n        chosen[:] = False\n        chosen[np.arange(batch), best] = True"
        ),
        "only the previous choice masked",
        "ANY earlier step",
    ),
    ("greedy_decode", decoder(fill="0.0"), "masked with 0 instead of -∞", "beats every negative"),
    ("greedy_decode", decoder(shift=" + 1"), "indices counted from 1", "count from 1"),
    (
        "sequence_log_likelihood",
        likelihood(masked="scores"),
        "earlier targets not masked",
        "must be excluded",
    ),
    (
        "sequence_log_likelihood",
        likelihood(
            masked="np.where(np.concatenate([np.zeros_like(one_hot[:, :1]), one_hot[:, :-1]], "
            "1), -np.inf, scores)"
        ),
        "only the previous target masked",
        "every earlier target",
    ),
    (
        "sequence_log_likelihood",
        likelihood(total="np.exp(terms.sum(-1))"),
        "probability instead of log",
        "return its logarithm",
    ),
    (
        "sequence_log_likelihood",
        likelihood(total="terms.mean(-1)"),
        "mean instead of sum",
        "logarithms add up",
    ),
    (
        "sequence_log_likelihood",
        likelihood(total="-terms.sum(-1)"),
        "sign flipped",
        ("negative log-likelihood", "never positive"),
    ),
    (
        "sequence_log_likelihood",
        likelihood(log_norm="log_norm = np.log(np.exp(masked).sum(-1))"),
        None,
        "use a numerically stable form",
    ),
]


def planted():
    """Every planted mistake of this exercise (graded by tests/grader/test_records.py)."""
    return from_table(PLANTED) + [
        patched(
            "greedy_decode",
            "argument changed in place",
            "the argument `scores` was changed by the call",
            LAB,
            (
                "scores = np.array(scores, dtype=np.float64)  # a copy: chosen",
                "scores = np.asarray(scores, dtype=np.float64)  # a copy: chosen",
            ),
        ),
        patched(
            "sequence_log_likelihood",
            "argument changed in place",
            "the argument `scores` was changed by the call",
            LAB,
            (
                "scores = np.array(scores, dtype=np.float64)  # a copy: earlier",
                "scores = np.asarray(scores, dtype=np.float64)  # a copy: earlier",
            ),
        ),
        patched(
            "greedy_decode",
            "property: examples independent of the batch",
            "the examples of a batch must not see each other",
            LAB,
            ("scores[rows, :, best] = -np.inf", "scores[:, :, best] = -np.inf"),
        ),
    ]
