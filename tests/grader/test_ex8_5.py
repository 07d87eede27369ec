"""Exercise 8-5 graded end to end: what the reference is checked on, correct alternatives, and
planted mistakes that must fail the right part with the named message. Full marks and the stub:
tests/grader/test_records.py."""

import pytest

from grader.engine.results import FAILED, PASSED
from grader.grading import ANSWER_PLACEHOLDER, grade
from grader.instructor.course.stubs import package_dir
from grader.records import get_exercise
from tests.grader.test_records import HIDDEN_SEEDS
from tests.support import grading as grading_helpers
from tests.support.grading import failures, reference_result
from tests.support.planting import from_table

pytestmark = pytest.mark.ex8_5

HEADER = "import keras\nfrom keras import ops\nimport numpy as np\n\n"
REFERENCE = (package_dir("solutions") / "ex8_5.py").read_text(encoding="utf-8")
# The two given layers, for submissions written from scratch.
GIVEN_LAYERS = """
class MemN2NRead(keras.layers.Layer):
    def __init__(self, hops=1, **kwargs):
        super().__init__(**kwargs)
        self.hops = hops

    def call(self, query, memory_in, memory_out):
        return memn2n_read(query, memory_in, memory_out, self.hops)

class NTMAddressing(keras.layers.Layer):
    def call(self, memory, key, beta, gate, w_previous, shift, gamma):
        return ntm_address(memory, key, beta, gate, w_previous, shift, gamma)
"""


def submit(tmp_path, body: str) -> str:
    return grading_helpers.submit(tmp_path, "8-5", body, HEADER)


def messages(part):
    return [(check.name, check.message) for check in failures(part)][:3]


def test_the_reference_is_checked_on_hidden_cases_gradients_and_float32():
    result = reference_result("8-5", HIDDEN_SEEDS["8-5"])
    assert result.score == result.max_score == 10.0
    names = [check.name for part in result.parts for check in part.checks]
    assert any(name.startswith("output, hidden") for name in names)
    # The given layers carry gradient and dtype checks through the student's functions.
    for wrt in ("query", "memory_in", "memory_out", "key", "beta", "gate", "shift", "gamma"):
        assert any(f"gradient wrt {wrt}," in name for name in names), wrt
    assert any(name.startswith("NTMAddressing: dtype") and "float32" in name for name in names)


def test_the_answer_template_asks_the_question_and_counts_as_not_written():
    record = get_exercise("8-5")
    text = (package_dir("exercises") / "answers" / "8-5.md").read_text(encoding="utf-8")
    assert text.startswith("# Exercise 8-5") and ANSWER_PLACEHOLDER in text.splitlines()
    assert "neural Turing machine" in text and record.written[0].name == "comparison"
    result = grade("8-5", package_dir("exercises"), parts=["interpolate and sharpen"])
    assert result.for_instructor[0]["status"] == "missing"


ALTERNATIVE_KERAS = (
    """
def memn2n_hop(query, memory_in, memory_out):
    scores = ops.squeeze(ops.matmul(memory_in, ops.expand_dims(query, -1)), -1)
    e = ops.exp(scores - ops.max(scores, axis=-1, keepdims=True))
    p = e / ops.sum(e, axis=-1, keepdims=True)
    return ops.sum(p[:, :, None] * memory_out, axis=1) + query

def memn2n_read(query, memory_in, memory_out, hops):
    if hops == 0:
        return query
    return memn2n_read(memn2n_hop(query, memory_in, memory_out), memory_in, memory_out, hops - 1)

def content_weights(memory, key, beta):
    m = memory / ops.sqrt(ops.sum(memory * memory, axis=-1, keepdims=True))
    k = key / ops.sqrt(ops.sum(key * key, axis=-1, keepdims=True))
    return ops.softmax(ops.einsum("bnw,bw->bn", m, k) * ops.expand_dims(beta, 1))

def interpolate(w_content, w_previous, gate):
    return w_previous + ops.reshape(gate, (-1, 1)) * (w_content - w_previous)

def circular_shift(weights, shift):
    n, width = weights.shape[-1], shift.shape[-1]
    # index[i, j] = the slot that offset j - k brings to slot i
    index = np.array([[(i - j + width // 2) % n for j in range(width)] for i in range(n)])
    return ops.sum(ops.take(weights, index, axis=1) * shift[:, None, :], axis=-1)

def sharpen(weights, gamma):
    # w^γ / Σ w^γ is a softmax of γ log w
    return ops.softmax(ops.reshape(gamma, (-1, 1)) * ops.log(weights), axis=-1)

def ntm_address(memory, key, beta, gate, w_previous, shift, gamma):
    content = content_weights(memory, key, beta)
    return sharpen(circular_shift(interpolate(content, w_previous, gate), shift), gamma)
"""
    + GIVEN_LAYERS
)

ALTERNATIVE_TENSORFLOW = (
    """
import tensorflow as tf

def memn2n_hop(query, memory_in, memory_out):
    p = tf.nn.softmax(tf.einsum("bd,bnd->bn", query, memory_in))
    return query + tf.linalg.matvec(tf.convert_to_tensor(memory_out), p, transpose_a=True)

def memn2n_read(query, memory_in, memory_out, hops):
    q = tf.convert_to_tensor(query)
    for _ in tf.range(hops):
        q = memn2n_hop(q, memory_in, memory_out)
    return q

def content_weights(memory, key, beta):
    cosine = tf.einsum(
        "bnw,bw->bn", tf.math.l2_normalize(memory, -1), tf.math.l2_normalize(key, -1)
    )
    return tf.nn.softmax(tf.expand_dims(beta, -1) * cosine)

def interpolate(w_content, w_previous, gate):
    g = tf.expand_dims(tf.convert_to_tensor(gate), -1)
    return g * w_content + (1.0 - g) * w_previous

def circular_shift(weights, shift):
    shift = tf.convert_to_tensor(shift)
    k = shift.shape[-1] // 2
    return tf.add_n(
        [shift[:, j : j + 1] * tf.roll(weights, j - k, axis=1) for j in range(2 * k + 1)]
    )

def sharpen(weights, gamma):
    powered = tf.pow(tf.convert_to_tensor(weights), tf.expand_dims(gamma, -1))
    return powered / tf.reduce_sum(powered, axis=1, keepdims=True)

def ntm_address(memory, key, beta, gate, w_previous, shift, gamma):
    w = interpolate(content_weights(memory, key, beta), w_previous, gate)
    return sharpen(circular_shift(w, shift), gamma)
"""
    + GIVEN_LAYERS
)

ALTERNATIVE_NUMPY = """
def _softmax(x):
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)

def memn2n_hop(query, memory_in, memory_out):
    return query + np.einsum("bn,bnd->bd", _softmax(np.einsum("bd,bnd->bn", query, memory_in)),
                             memory_out)

def content_weights(memory, key, beta):
    cos = np.einsum("bnw,bw->bn", memory, key) / np.linalg.norm(memory, axis=-1)
    return _softmax(beta[:, None] * cos / np.linalg.norm(key, axis=-1, keepdims=True))

def interpolate(w_content, w_previous, gate):
    return gate[:, None] * w_content + (1 - gate[:, None]) * w_previous

def circular_shift(weights, shift):
    k = shift.shape[-1] // 2
    out = np.zeros_like(weights)
    for j in range(shift.shape[-1]):
        out += shift[:, j, None] * np.roll(weights, j - k, axis=-1)
    return out

def sharpen(weights, gamma):
    p = weights ** gamma[:, None]
    return p / p.sum(axis=-1, keepdims=True)
"""
VALUE_ONLY_PARTS = ["memn2n_hop", "content_weights", "interpolate and sharpen", "circular_shift"]


@pytest.mark.parametrize(
    "body", [ALTERNATIVE_KERAS, ALTERNATIVE_TENSORFLOW], ids=["keras-ops-gather", "tensorflow"]
)
def test_correct_alternatives_score_full_marks(tmp_path, body):
    result = grade("8-5", submit(tmp_path, body), hidden_seed=5)
    assert result.score == 10.0, [(p.name, messages(p)) for p in result.parts]


def test_numpy_passes_the_value_parts_and_the_gradient_checks_explain_why_not_the_rest(tmp_path):
    chain = """
def memn2n_read(query, memory_in, memory_out, hops):
    for _ in range(hops):
        query = memn2n_hop(query, memory_in, memory_out)
    return query
"""
    result = grade(
        "8-5",
        submit(tmp_path, ALTERNATIVE_NUMPY + chain + GIVEN_LAYERS),
        parts=[*VALUE_ONLY_PARTS, "memn2n_read"],
    )
    assert all(result.part(name).status == PASSED for name in VALUE_ONLY_PARTS)
    read = result.part("memn2n_read")
    assert read.status == FAILED and "gradient cut" in read.mistakes
    assert any("round trip through NumPy" in check.message for check in failures(read))


def override(function: str, *lines: str) -> str:
    """The reference with `function` redefined (same signature) by `lines`."""
    signature = next(line for line in REFERENCE.splitlines() if line.startswith(f"def {function}("))
    return REFERENCE + "\n\n" + signature + "\n" + "\n".join("    " + line for line in lines) + "\n"


HOP_SCORES = "p = ops.softmax(ops.einsum('bd,bnd->bn', query, memory_in))"
PLANTED = [
    # (part, submission, the named mistake, a phrase of the feedback)
    (
        "memn2n_hop",
        override("memn2n_hop", HOP_SCORES, "return ops.einsum('bn,bnd->bd', p, memory_out)"),
        "query not added",
        "the NEXT query",
    ),
    (
        "memn2n_hop",
        override("memn2n_hop", HOP_SCORES, "return query + ops.einsum('bn,bnd->bd', p, memory_in)"),
        "read from the addressing memory",
        "what is read is memory_out",
    ),
    (
        "memn2n_hop",
        override(
            "memn2n_hop",
            "p = ops.softmax(ops.einsum('bd,bnd->bn', query, memory_out))",
            "return query + ops.einsum('bn,bnd->bd', p, memory_in)",
        ),
        "memories swapped",
        "are swapped",
    ),
    (
        "memn2n_hop",
        override(
            "memn2n_hop",
            "p = ops.einsum('bd,bnd->bn', query, memory_in)",
            "return query + ops.einsum('bn,bnd->bd', p, memory_out)",
        ),
        "softmax missing",
        "raw scores",
    ),
    (
        "memn2n_read",
        override(
            "memn2n_read",
            "for _ in range(hops - 1):",
            "    query = memn2n_hop(query, memory_in, memory_out)",
            "return query",
        ),
        "one hop too few",
        "hops - 1 hops",
    ),
    (
        "memn2n_read",
        override(
            "memn2n_read",
            "for _ in range(hops + 1):",
            "    query = memn2n_hop(query, memory_in, memory_out)",
            "return query",
        ),
        "one hop too many",
        "hops + 1 hops",
    ),
    (
        "memn2n_read",
        override(
            "memn2n_read",
            "for _ in range(hops):",
            "    answer = memn2n_hop(query, memory_in, memory_out)",
            "return answer",
        ),
        "query never updated",
        "FIRST query",
    ),
    (
        "memn2n_read",
        override(
            "memn2n_read",
            "for _ in range(hops):",
            "    query = memn2n_hop(query, ops.stop_gradient(memory_in), memory_out)",
            "return query",
        ),
        "gradient cut",
        "gradient with respect to memory_in is zero",
    ),
    (
        "content_weights",
        override(
            "content_weights",
            "m = memory / ops.norm(memory, axis=-1, keepdims=True)",
            "k = key / ops.norm(key, axis=-1, keepdims=True)",
            "return ops.softmax(ops.einsum('bnw,bw->bn', m, k), axis=-1)",
        ),
        "beta forgotten",
        "key strength β is missing",
    ),
    (
        "content_weights",
        override(
            "content_weights",
            "return ops.softmax(beta[:, None] * ops.einsum('bnw,bw->bn', memory, key), axis=-1)",
        ),
        "dot product instead of cosine",
        "divides them by ‖k‖ ‖M_i‖",
    ),
    (
        "content_weights",
        override(
            "content_weights",
            "k = key / ops.norm(key, axis=-1, keepdims=True)",
            "return ops.softmax(beta[:, None] * ops.einsum('bnw,bw->bn', memory, k), axis=-1)",
        ),
        "rows not normalised",
        "by ‖M_i‖ too",
    ),
    (
        "content_weights",
        override(
            "content_weights",
            "m = memory / ops.norm(memory, axis=-1, keepdims=True)",
            "return ops.softmax(beta[:, None] * ops.einsum('bnw,bw->bn', m, key), axis=-1)",
        ),
        "key not normalised",
        "by ‖k‖ too",
    ),
    (
        "content_weights",
        override(
            "content_weights",
            "m = memory / ops.norm(memory, axis=-1, keepdims=True)",
            "k = key / ops.norm(key, axis=-1, keepdims=True)",
            "return ops.softmax(beta[:, None] * ops.einsum('bnw,bw->bn', m, k), axis=0)",
        ),
        "softmax on the wrong axis",
        "over the batch axis",
    ),
    (
        "content_weights",
        override(
            "content_weights",
            "m = memory / np.linalg.norm(memory, axis=-1, keepdims=True)",
            "k = key / np.linalg.norm(key, axis=-1, keepdims=True)",
            "e = np.exp(beta[:, None] * np.einsum('bnw,bw->bn', m, k))",
            "return e / e.sum(axis=-1, keepdims=True)",
        ),
        None,
        "use a numerically stable form",
    ),
    (
        "interpolate and sharpen",
        override(
            "interpolate", "return gate[:, None] * w_previous + (1 - gate[:, None]) * w_content"
        ),
        "gate swapped",
        "g weighs the CONTENT weights",
    ),
    (
        "interpolate and sharpen",
        override("sharpen", "return weights ** gamma[:, None]"),
        "not renormalised",
        "divide each row by its sum",
    ),
    (
        "interpolate and sharpen",
        override("sharpen", "return ops.softmax(gamma[:, None] * weights, axis=-1)"),
        "softmax instead of a power",
        "not softmax(γ w)",
    ),
    (
        "interpolate and sharpen",
        override("sharpen", "return weights / ops.sum(weights, axis=-1, keepdims=True)"),
        "gamma not applied",
        "came back unchanged",
    ),
    (
        "circular_shift",
        override(
            "circular_shift",
            "s, w, k = shift, weights, shift.shape[-1] // 2",
            "return sum(s[:, j, None] * np.roll(w, k - j, axis=-1) for j in range(2 * k + 1))",
        ),
        "shifted the wrong way",
        "moved the wrong way",
    ),
    (
        "circular_shift",
        override(
            "circular_shift",
            "s, k, n = shift, shift.shape[-1] // 2, weights.shape[-1]",
            "padded = np.pad(weights, ((0, 0), (k, k)))",
            "return sum(s[:, j, None] * padded[:, 2 * k - j :][:, :n] for j in range(2 * k + 1))",
        ),
        "no wrap-around",
        "the memory is a ring",
    ),
    (
        "circular_shift",
        override(
            "circular_shift",
            "s, k, n = shift, shift.shape[-1] // 2, weights.shape[-1]",
            "rolled = [np.roll(weights, j - k, axis=-1) if abs(j - k) < n else weights"
            " for j in range(2 * k + 1)]",
            "return sum(s[:, j, None] * rolled[j] for j in range(2 * k + 1))",
        ),
        "offsets beyond the ring not wrapped",
        "shift by o mod N",
    ),
    (
        "circular_shift",
        override(
            "circular_shift",
            "s, w = shift, weights",
            "return sum(s[:, j, None] * np.roll(w, j, axis=-1) for j in range(s.shape[-1]))",
        ),
        "offsets not centred",
        "entry j is offset j − k",
    ),
    (
        "circular_shift",
        override(
            "circular_shift",
            "offsets = np.argmax(shift, axis=-1) - shift.shape[-1] // 2",
            "return np.stack([np.roll(w, o) for w, o in zip(weights, offsets)])",
        ),
        "hard shift",
        "the shift is a distribution",
    ),
    (
        "ntm_address",
        override(
            "ntm_address",
            "w = content_weights(memory, key, beta)",
            "return sharpen(circular_shift(w, shift), gamma)",
        ),
        "interpolation skipped",
        "interpolate w^c with w_prev",
    ),
    (
        "ntm_address",
        override(
            "ntm_address",
            "w = interpolate(w_previous, content_weights(memory, key, beta), gate)",
            "return sharpen(circular_shift(w, shift), gamma)",
        ),
        "gate swapped",
        "The gate weighs the previous weights",
    ),
    (
        "ntm_address",
        override(
            "ntm_address",
            "w = interpolate(content_weights(memory, key, beta), w_previous, gate)",
            "return sharpen(w, gamma)",
        ),
        "shift skipped",
        "No circular shift",
    ),
    (
        "ntm_address",
        override(
            "ntm_address",
            "w = interpolate(content_weights(memory, key, beta), w_previous, gate)",
            "return circular_shift(w, shift)",
        ),
        "sharpening skipped",
        "not sharpened",
    ),
    (
        "ntm_address",
        override(
            "ntm_address",
            "w = interpolate(content_weights(memory, key, beta), w_previous, gate)",
            "return circular_shift(sharpen(w, gamma), shift)",
        ),
        "sharpened before the shift",
        "out of order",
    ),
    (
        "ntm_address",
        override(
            "ntm_address",
            "w = interpolate(content_weights(memory, key, beta), w_previous, gate)",
            "return sharpen(circular_shift(w, ops.stop_gradient(shift)), gamma)",
        ),
        "gradient cut",
        "gradient with respect to shift is zero",
    ),
]


def planted():
    """Every planted mistake of this exercise (graded by tests/grader/test_records.py)."""
    return from_table(PLANTED, header=HEADER)
