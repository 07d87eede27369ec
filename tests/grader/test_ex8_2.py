"""Exercise 8-2 graded end to end: what the reference is checked on, correct alternatives,
planted mistakes and submissions that misbehave. Full marks and the stub:
tests/grader/test_records.py."""

from pathlib import Path

import pytest

from grader.engine.results import ERROR, FAILED, PASSED, TIMEOUT
from grader.grading import grade
from grader.instructor.course.stubs import package_dir
from tests.grader.test_records import HIDDEN_SEEDS
from tests.support import grading as grading_helpers
from tests.support.grading import (
    failures,
    first_failures,
    reference_result,
)
from tests.support.planting import from_table, patched

pytestmark = pytest.mark.ex8_2

EXERCISE = "8-2"


def submit(tmp_path, body: str) -> str:
    return grading_helpers.submit(tmp_path, EXERCISE, body)


def test_the_reference_is_checked_on_gradients_and_dtypes():
    result = reference_result(EXERCISE, HIDDEN_SEEDS[EXERCISE])
    assert result.score == result.max_score == 10.0
    checks = [check for part in result.parts for check in part.checks]
    # Outputs, dtypes and gradients of every layer case were compared, not only values.
    assert any(c.name.startswith("gradient wrt kernel") for c in checks)
    assert any("float32" in c.name and c.name.startswith("dtype") for c in checks)


ALTERNATIVE_NUMPY_EINSUM = """
class ScaledDotScore(keras.layers.Layer):
    def call(self, query, key):
        return ops.einsum("bqd,bkd->bqk", query, key) / (key.shape[-1] ** 0.5)

class BilinearScore(keras.layers.Layer):
    def build(self, query_shape, key_shape):
        self.kernel = self.add_weight(name="kernel", shape=(query_shape[-1], key_shape[-1]))

    def call(self, query, key):
        return ops.einsum("bip,pq,bjq->bij", query, self.kernel, key)

def dot_product_variance(d, var_q=1.0, var_k=1.0):
    return np.float64(sum(var_q * var_k for _ in range(d)))

def scaled_dot_product_variance(d, var_q=1.0, var_k=1.0):
    return np.array(var_q * var_k)

def bilinear_asymmetry(W):
    W = np.asarray(W)
    return W - W.T

def softmax_jacobian(scores):
    s = np.asarray(scores)
    e = np.exp(s - s.max(axis=-1, keepdims=True))
    p = e / e.sum(axis=-1, keepdims=True)
    return p[..., :, None] * np.eye(s.shape[-1]) - np.einsum("...i,...j->...ij", p, p)
"""

# It also imports pyplot, as a notebook's plots leave it: the grading helper does not preload
# pyplot (grader.sandbox.preload), so the sandboxed child imports it, and must be able to.
ALTERNATIVE_TENSORFLOW = """
import matplotlib.pyplot as plt
import tensorflow as tf

class ScaledDotScore(keras.layers.Layer):
    def call(self, query, key):
        scores = tf.linalg.matmul(query, key, transpose_b=True)
        return scores * tf.math.rsqrt(tf.cast(tf.shape(key)[-1], scores.dtype))

class BilinearScore(keras.layers.Layer):
    def build(self, query_shape, key_shape):
        self.kernel = self.add_weight(name="kernel", shape=(query_shape[-1], key_shape[-1]))

    def call(self, query, key):
        keys = tf.tensordot(key, tf.transpose(self.kernel), axes=1)
        return tf.linalg.matmul(query, keys, transpose_b=True)

def dot_product_variance(d, var_q=1.0, var_k=1.0):
    return tf.constant(d * var_q * var_k, tf.float64)

def scaled_dot_product_variance(d, var_q=1.0, var_k=1.0):
    return dot_product_variance(d, var_q, var_k) / d

def bilinear_asymmetry(W):
    return tf.convert_to_tensor(W) - tf.transpose(W)

def softmax_jacobian(scores):
    p = tf.nn.softmax(scores, axis=-1)
    return tf.linalg.diag(p) - tf.einsum("...i,...j->...ij", p, p)
"""


@pytest.mark.parametrize(
    "body", [ALTERNATIVE_NUMPY_EINSUM, ALTERNATIVE_TENSORFLOW], ids=["einsum-numpy", "tensorflow"]
)
def test_correct_alternatives_score_full_marks(tmp_path, body):
    result = grade(EXERCISE, submit(tmp_path, body))
    assert result.score == 10.0, [(p.name, failures(p)[:1]) for p in result.parts]


SCALED = """
class ScaledDotScore(keras.layers.Layer):
    def call(self, query, key):
        return {expression}
"""
BILINEAR = """
class BilinearScore(keras.layers.Layer):
    def build(self, query_shape, key_shape):
        self.kernel = self.add_weight(name="kernel", shape=(query_shape[-1], key_shape[-1]))

    def call(self, query, key):
        return {expression}
"""

PLANTED = [
    # (part, source, the named mistake, a phrase of the feedback)
    (
        "ScaledDotScore",
        SCALED.format(expression="ops.matmul(query, ops.transpose(key, (0, 2, 1)))"),
        "scale forgotten",
        "1/√d scale is missing",
    ),
    (
        "ScaledDotScore",
        SCALED.format(
            expression="ops.matmul(query, ops.transpose(key, (0, 2, 1))) / key.shape[-1]"
        ),
        "divided by d",
        "instead of √d",
    ),
    (
        "ScaledDotScore",
        SCALED.format(
            expression="ops.matmul(query, ops.transpose(ops.stop_gradient(key), (0, 2, 1)))"
            " / key.shape[-1] ** 0.5"
        ),
        "gradient cut",
        "gradient with respect to key is zero",
    ),
    (
        "ScaledDotScore",
        SCALED.format(
            expression="ops.cast(ops.einsum('bqd,bkd->bqk', query, key) / key.shape[-1] ** 0.5, "
            "'float64')"
        ),
        "dtype changed",
        "keep the dtype",
    ),
    (
        "ScaledDotScore",
        SCALED.format(
            expression="ops.matmul(key, ops.transpose(query, (0, 2, 1))) / key.shape[-1] ** 0.5"
        ),
        "transposed",
        "last two axes are swapped",
    ),
    (
        "BilinearScore",
        BILINEAR.format(expression="ops.einsum('bip,qp,bjq->bij', query, self.kernel, key)"),
        "kernel transposed",
        "kernel is transposed",
    ),
    (
        "BilinearScore",
        BILINEAR.format(
            expression="ops.einsum('bip,pq,bjq->bij', query, ops.stop_gradient(self.kernel), key)"
        ),
        "gradient cut",
        "gradient with respect to kernel is zero",
    ),
    (
        "BilinearScore",
        BILINEAR.format(
            expression="ops.einsum('bip,pq,bjq->bij', query, self.kernel, key)"
            " / key.shape[-1] ** 0.5"
        ),
        "scaled like the scaled dot product",
        "no 1/√d scale",
    ),
    (
        "variances",
        "def dot_product_variance(d, var_q=1.0, var_k=1.0):\n    return var_q * var_k\n"
        "def scaled_dot_product_variance(d, var_q=1.0, var_k=1.0):\n    return var_q * var_k\n",
        "factor d missing",
        "d times the variance",
    ),
    (
        "variances",
        "def dot_product_variance(d, var_q=1.0, var_k=1.0):\n    return d * var_q * var_k\n"
        "def scaled_dot_product_variance(d, var_q=1.0, var_k=1.0):\n"
        "    return d ** 0.5 * var_q * var_k\n",
        "divided the variance by √d",
        "not by √d",
    ),
    (
        "bilinear_asymmetry",
        "def bilinear_asymmetry(W):\n    return W.T - W\n",
        "sign flipped",
        "order is reversed",
    ),
    (
        "bilinear_asymmetry",
        "def bilinear_asymmetry(W):\n    return W + W.T\n",
        "symmetric part",
        "antisymmetric",
    ),
    (
        "softmax_jacobian",
        "def softmax_jacobian(scores):\n"
        "    p = ops.softmax(scores, axis=-2)\n"
        "    eye = ops.eye(p.shape[-1], dtype=p.dtype)\n"
        "    return p[..., :, None] * eye - p[..., :, None] * p[..., None, :]\n",
        "softmax on the wrong axis",
        "wrong axis",
    ),
    (
        # axis 0 is the record's "other axis" only for 2-D scores: the search tells every rank
        "softmax_jacobian",
        "def softmax_jacobian(scores):\n"
        "    p = ops.softmax(scores, axis=0)\n"
        "    eye = ops.eye(p.shape[-1], dtype=p.dtype)\n"
        "    return p[..., :, None] * eye - p[..., :, None] * p[..., None, :]\n",
        "found: axis",
        "runs over axis",
    ),
    (
        "softmax_jacobian",
        "def softmax_jacobian(scores):\n"
        "    p = ops.softmax(scores, axis=-1)\n"
        "    eye = ops.eye(p.shape[-1], dtype=p.dtype)\n"
        "    return p[..., :, None] * p[..., None, :] - p[..., :, None] * eye\n",
        "sign flipped",
        "sign is flipped",
    ),
    (
        "softmax_jacobian",
        "def softmax_jacobian(scores):\n"
        "    e = np.exp(scores)\n"
        "    p = e / e.sum(axis=-1, keepdims=True)\n"
        "    return p[..., :, None] * np.eye(p.shape[-1]) - p[..., :, None] * p[..., None, :]\n",
        None,
        "NaN or infinite",
    ),
    (
        "softmax_jacobian",
        "def softmax_jacobian(scores):\n"
        "    e = np.exp(scores - scores.max())\n"
        "    p = e / e.sum(axis=-1, keepdims=True)\n"
        "    return p[..., :, None] * np.eye(p.shape[-1]) - p[..., :, None] * p[..., None, :]\n",
        "found: axis",
        "this is what makes the NaN",
    ),
]


def test_numpy_monkeypatching_changes_nothing(tmp_path):
    body = """
    np.allclose = lambda *args, **kwargs: True
    np.isclose = lambda a, b, *args, **kwargs: np.ones(np.shape(a), bool)
    np.testing.assert_allclose = lambda *args, **kwargs: None
    np.load = lambda *args, **kwargs: None

    def bilinear_asymmetry(W):
        return np.zeros_like(W)
    """
    result = grade(EXERCISE, submit(tmp_path, body), parts=["bilinear_asymmetry"])
    assert result.part("bilinear_asymmetry").status == FAILED


def test_syntax_error_names_file_and_line_and_scores_zero(tmp_path):
    result = grade(EXERCISE, submit(tmp_path, "def softmax_jacobian(scores)\n    return scores\n"))
    assert result.score == 0.0
    for part in result.parts:
        assert part.status == ERROR
        assert "ex8_2.py, line 5: SyntaxError" in part.checks[0].message


def test_import_error_scores_zero_everywhere_with_the_reason(tmp_path):
    result = grade(
        EXERCISE,
        submit(tmp_path, "import attention_helpers_that_do_not_exist\n"),
        parts=["variances", "bilinear_asymmetry"],
    )
    for part in result.parts:
        assert part.status == ERROR
        message = part.checks[0].message
        assert "could not import" in message and "ModuleNotFoundError" in message
        assert "ex8_2.py, line 5" in message


def test_missing_file_and_missing_name_are_explained(tmp_path):
    missing = grade(EXERCISE, str(tmp_path), parts=["variances"])
    assert missing.part("variances").status == ERROR
    assert "ex8_2.py not found" in missing.part("variances").checks[0].message

    result = grade(EXERCISE, submit(tmp_path, "x = 1\n"), parts=["BilinearScore"])
    part = result.part("BilinearScore")
    assert part.status == ERROR
    assert "defines no `BilinearScore`" in part.checks[0].message


def test_a_hanging_part_times_out_alone_and_the_others_are_graded(tmp_path):
    body = (
        ALTERNATIVE_NUMPY_EINSUM + "\n\ndef bilinear_asymmetry(W):\n    while True:\n        pass\n"
    )
    result = grade(EXERCISE, submit(tmp_path, body), timeout=3)
    assert result.part("bilinear_asymmetry").status == TIMEOUT
    assert "stopped after 3 s" in result.part("bilinear_asymmetry").checks[0].message
    others = [p for p in result.parts if p.name != "bilinear_asymmetry"]
    assert all(p.status == PASSED for p in others)
    assert result.score == 9.0


@pytest.mark.parametrize(
    "statement,phrase",
    [
        ("import os; os._exit(3)", "exited with status 3"),
        ("import os; os._exit(0)", "ended itself (status 0)"),
        ("import sys; sys.exit(4)", "sys.exit(4)"),
        ("import os, signal; os.kill(os.getpid(), signal.SIGKILL)", "killed by signal 9"),
    ],
)
def test_a_process_that_dies_costs_its_part_only(tmp_path, statement, phrase):
    body = ALTERNATIVE_NUMPY_EINSUM + f"\n\ndef bilinear_asymmetry(W):\n    {statement}\n"
    result = grade(EXERCISE, submit(tmp_path, body), parts=["bilinear_asymmetry", "variances"])
    part = result.part("bilinear_asymmetry")
    assert part.status == ERROR and part.score == 0.0
    assert phrase in part.checks[0].message
    assert result.part("variances").status == PASSED


@pytest.mark.parametrize(
    "returned,kind",
    [
        ("(scores, scores)", "tuple"),
        ("[scores]", "list"),
        ("1.0", "float"),
        ("{'s': scores}", "dict"),
    ],
)
def test_a_layer_that_returns_no_tensor_is_told_so(tmp_path, returned, kind):
    body = ALTERNATIVE_NUMPY_EINSUM + (
        "\n\nclass ScaledDotScore(keras.layers.Layer):\n"
        "    def call(self, query, key):\n"
        "        scores = ops.matmul(query, ops.transpose(key, (0, 2, 1)))\n"
        f"        return {returned}\n"
    )
    result = grade(EXERCISE, submit(tmp_path, body), parts=["ScaledDotScore"])
    part = result.part("ScaledDotScore")
    assert part.status == ERROR and part.score == 0.0
    message = part.checks[0].message
    assert f"ScaledDotScore.call returned a {kind}, not a tensor" in message, message
    assert "has no attribute" not in message


# The parts of one exercise run one after another in one child, which imports the submission
# once. A part that hangs or kills the child costs that part; the parts after it run in a fresh
# child (one more import).


def counting_imports(tmp_path, body: str) -> tuple[str, Path]:
    """`body` that appends a line to a file each time it is imported; the folder and the file."""
    counter = tmp_path / "imports.txt"
    code = f"open({str(counter)!r}, 'a').write('imported\\n')\n" + body
    (tmp_path / "submission").mkdir()
    return submit(tmp_path / "submission", code), counter


def imports(counter: Path) -> int:
    return counter.read_text().count("imported") if counter.exists() else 0


def test_a_hanging_first_part_costs_that_part_only(tmp_path):
    # It sleeps rather than spins (the hang above spins): the same timeout, no core kept busy.
    hang = (
        "\n\nclass ScaledDotScore(keras.layers.Layer):\n"
        "    def call(self, query, key):\n"
        "        import time\n"
        "        time.sleep(3600)\n"
    )
    folder, counter = counting_imports(tmp_path, ALTERNATIVE_NUMPY_EINSUM + hang)
    result = grade(EXERCISE, folder, timeout=3)
    assert result.part("ScaledDotScore").status == TIMEOUT
    assert result.part("ScaledDotScore").score == 0.0
    assert "stopped after 3 s" in result.part("ScaledDotScore").checks[0].message
    assert [p.status for p in result.parts[1:]] == [PASSED] * 4
    assert result.score == 7.0
    assert imports(counter) == 2  # the first child, then one fresh child for the four others


def test_a_crash_mid_exercise_costs_the_running_part_and_shows_its_own_output(tmp_path):
    body = ALTERNATIVE_NUMPY_EINSUM + (
        "\n\ndef dot_product_variance(d, var_q=1.0, var_k=1.0):\n"
        "    print('variances speaking', flush=True)\n"
        "    import os\n"
        "    os._exit(3)\n"
        "\n\ndef bilinear_asymmetry(W):\n"
        "    print('asymmetry speaking', flush=True)\n"
        "    return np.asarray(W) - np.asarray(W).T\n"
    )
    folder, counter = counting_imports(tmp_path, "print('importing', flush=True)\n" + body)
    result = grade(EXERCISE, folder)
    variances = result.part("variances")
    assert variances.status == ERROR and variances.score == 0.0
    message = variances.checks[0].message
    assert "exited with status 3" in message and "variances speaking" in message
    assert "asymmetry speaking" not in message and "importing" not in message
    others = [p for p in result.parts if p.name != "variances"]
    assert [p.status for p in others] == [PASSED] * 4
    assert result.score == 8.0
    assert imports(counter) == 2


def test_a_crash_shows_the_submissions_output_without_tensorflows_own_log_lines(tmp_path):
    tensorflow_lines = (
        "E0000 00:00:1795420657.885445    6822 cuda_platform.cc:52] failed call to cuInit\n"
        "WARNING: All log messages before absl::InitializeLog() is called are written to STDERR\n"
        "I0000 00:00:1795419643.066897   31361 cudart_stub.cc:31] Could not find cuda drivers\n"
    )
    body = ALTERNATIVE_NUMPY_EINSUM + (
        "\n\ndef bilinear_asymmetry(W):\n"
        "    import os, sys\n"
        f"    sys.stderr.write({tensorflow_lines!r})\n"
        "    print('my own words', flush=True)\n"
        "    sys.stderr.flush()\n"
        "    os._exit(2)\n"
    )
    result = grade(EXERCISE, submit(tmp_path, body), parts=["bilinear_asymmetry"])
    message = result.part("bilinear_asymmetry").checks[0].message
    assert "exited with status 2" in message and "my own words" in message, message
    assert "cuInit" not in message and "absl" not in message and "cudart" not in message


def test_a_submission_that_hangs_on_import_times_out_everywhere_once(tmp_path):
    folder, counter = counting_imports(tmp_path, "import time\n\ntime.sleep(3600)\n")
    result = grade(EXERCISE, folder, timeout=3)
    assert [p.status for p in result.parts] == [TIMEOUT] * 5
    assert result.score == 0.0
    # Said as what it is (the file never loads), not as five functions that each loop.
    assert all(
        p.checks[0].message.startswith("the file never finished loading")
        and "3 s" in p.checks[0].message
        for p in result.parts
    )
    assert imports(counter) == 1  # not tried again for every part


def test_a_submission_that_dies_on_import_shows_why_in_every_part(tmp_path):
    body = "print('loading my helpers', flush=True)\nimport os\nos._exit(5)\n"
    folder, counter = counting_imports(tmp_path, body)
    result = grade(EXERCISE, folder)
    assert [p.status for p in result.parts] == [ERROR] * 5
    for part in result.parts:
        assert "exited with status 5" in part.checks[0].message
        assert "loading my helpers" in part.checks[0].message
    assert imports(counter) == 1


def test_each_part_prints_under_its_own_output_cap(tmp_path):
    body = ALTERNATIVE_NUMPY_EINSUM + (
        "\n\ndef bilinear_asymmetry(W):\n"
        "    try:\n"
        "        while True:\n"
        "            print('x' * 100000)\n"
        "    except OSError:\n"
        "        pass\n"
        "    return np.asarray(W) - np.asarray(W).T\n"
        "\n\n_jacobian = softmax_jacobian\n"
        "\n\ndef softmax_jacobian(scores):\n"
        "    print('a line of my own')\n"
        "    return _jacobian(scores)\n"
    )
    result = grade(
        EXERCISE,
        submit(tmp_path, body),
        parts=["bilinear_asymmetry", "softmax_jacobian"],
        limits={"output_mb": 1},
    )
    # The flood filled its own log only: the next part can still print.
    assert result.part("bilinear_asymmetry").status == PASSED
    assert result.part("softmax_jacobian").status == PASSED, failures(
        result.part("softmax_jacobian")
    )[:1]


def test_submitted_code_cannot_write_to_the_grading_helpers_pipe(tmp_path):
    forged = (
        b'{"key": "part-softmax_jacobian", "state": "crashed", "exitcode": 9, "seconds": 0}\n'
        b'{"done": true}\n'
    )
    body = ALTERNATIVE_NUMPY_EINSUM + (
        "\n\ndef bilinear_asymmetry(W):\n"
        "    import os\n"
        "    for fd in range(3, 256):\n"
        "        try:\n"
        f"            os.write(fd, {forged!r})\n"
        "        except OSError:\n"
        "            pass\n"
        "    return np.asarray(W) - np.asarray(W).T\n"
    )
    first = grade(EXERCISE, submit(tmp_path, body))
    assert {p.status for p in first.parts} == {PASSED}, first_failures(first)
    # Nothing it wrote is read by the next check either.
    again = grade(EXERCISE, package_dir("solutions"))
    assert again.score == 10.0, first_failures(again)


def test_results_follow_the_documented_json_format():
    data = reference_result(EXERCISE, HIDDEN_SEEDS[EXERCISE]).to_dict()
    assert set(data) == {"exercise", "score", "max_score", "parts"}
    assert data["exercise"] == "8-2" and isinstance(data["score"], float)
    for part in data["parts"]:
        assert set(part) == {"name", "score", "max_score", "status", "checks"}
        assert part["status"] in ("passed", "failed", "not_implemented", "error", "timeout")
        for check in part["checks"]:
            assert set(check) == {"name", "passed", "message"}


def planted():
    """Every planted mistake of this exercise (graded by tests/grader/test_records.py)."""
    return from_table(PLANTED) + [
        patched(
            "ScaledDotScore",
            "multiplied by √d",
            "multiplied by √d",
            EXERCISE,
            ("return scores / ops.sqrt(", "return scores * ops.sqrt("),
        ),
        patched(
            "BilinearScore",
            "kernel ignored",
            "the kernel is not used",
            EXERCISE,
            ("projected = ops.matmul(query, self.kernel)", "projected = query"),
        ),
        patched(
            "variances",
            "scale not applied",
            "variance before scaling",
            EXERCISE,
            (
                "dot_product_variance(d, var_q, var_k) / float(d)",
                "dot_product_variance(d, var_q, var_k)",
            ),
        ),
        patched(
            "bilinear_asymmetry",
            "returned W",
            "You returned W itself",
            EXERCISE,
            ("return W - ops.transpose(W)", "return W"),
        ),
        patched(
            "softmax_jacobian",
            "diagonal term missing",
            "the diag(p) term is missing",
            EXERCISE,
            ("return diagonal - probs[..., :, None]", "return 0 * diagonal - probs[..., :, None]"),
        ),
        patched(
            "softmax_jacobian",
            "scores instead of probabilities",
            "raw scores s",
            EXERCISE,
            (
                "probs = ops.softmax(ops.convert_to_tensor(scores), axis=-1)",
                "probs = ops.convert_to_tensor(scores)",
            ),
        ),
    ]
