"""Framework errors a student meets become one sentence that says what to do, with their file
and line (grader.engine.framework_errors); the raw words stay for --verbose.

The raw words below are what TensorFlow 2 / Keras 3 raised for the planted submissions (each
written out in the test); one end-to-end test grades two of them for real.
"""

import numpy as np
import pytest

from grader.engine import framework_errors
from grader.grading import grade
from grader.records import get_exercise
from grader.report import render
from grader.vocabulary.spec import LAYER, Case
from tests.support.grading import failures, submit

CASE = Case("ScaledDotScore", LAYER, "B=2 Tq=3 Tk=5 d=4", {"query": np.zeros((2, 3, 4))})

# (planted code, exception, message, where the child saw it, words the student must read)
KNOWN_ERRORS = [
    (
        "return np.asarray(query) @ np.swapaxes(np.asarray(key), 1, 2) / 2",
        "AttributeError",
        "'numpy.ndarray' object has no attribute '_id'",
        "",
        ["returned a NumPy array", "keras.ops", "ex8_2.py, line 6, in call"],
    ),
    (
        "return scores / tf.sqrt(tf.constant(4.0))",
        "TypeError",
        "`x` and `y` must have the same dtype, got tf.float64 != tf.float32.",
        "ex8_2.py, line 7, in call: return scores / tf.sqrt(tf.constant(4.0))",
        ["float64, the other float32", "query.dtype", "ex8_2.py, line 7 (`return scores"],
    ),
    (
        "tf.math.truediv(scores, tf.constant(2.0))  # graph mode",
        "InvalidArgumentError",
        "cannot compute RealDiv as input #1(zero-based) was expected to be a double tensor but "
        "is a float tensor [Op:RealDiv]",
        "ex8_2.py, line 7, in call: return tf.math.truediv(scores, tf.constant(2.0))",
        ["float64, the other float32", "query.dtype"],
    ),
    (
        "scores[0] = scores[0] / 2.0",
        "TypeError",
        "'tensorflow.python.framework.ops.EagerTensor' object does not support item assignment",
        "ex8_2.py, line 7, in call: scores[0] = scores[0] / 2.0",
        ["cannot be changed in place", "ops.where", "ex8_2.py, line 7"],
    ),
    (
        "projected = ops.matmul(query, ops.transpose(self.kernel))",
        "InvalidArgumentError",
        "{{function_node __wrapped__MatMul_device_/job:localhost/replica:0/task:0/device:CPU:0}}"
        " Matrix size-incompatible: In[0]: [6,4], In[1]: [6,4] [Op:MatMul] name: ",
        "ex8_2.py, line 9, in call: projected = ops.matmul(query, ops.transpose(self.kernel))",
        ["matrix product of shapes (6, 4) and (6, 4)", "transposed", "ex8_2.py, line 9"],
    ),
    (
        "scores + mask  # mask (B, Tk) not expanded",
        "InvalidArgumentError",
        "{{function_node __wrapped__AddV2_device_/job:localhost/replica:0/task:0/device:CPU:0}} "
        "Incompatible shapes: [2,3,5] vs. [2,5] [Op:AddV2] name: ",
        "lab_masked_softmax.py, line 12, in masked_softmax: return scores + mask",
        ["(2,3,5) and (2,5)", "expand_dims", "lab_masked_softmax.py, line 12"],
    ),
    (
        "np.asarray(a) + np.asarray(b).T",
        "ValueError",
        "operands could not be broadcast together with shapes (2,3) (3,2) ",
        "lab_nw.py, line 9, in gaussian_weights: return a + b.T",
        ["(2,3) and (3,2)", "lab_nw.py, line 9"],
    ),
]


@pytest.mark.parametrize(
    "code,exception,message,where,phrases", KNOWN_ERRORS, ids=lambda v: str(v)[:20]
)
def test_each_known_error_becomes_one_sentence_with_the_file_and_line(
    tmp_path, code, exception, message, where, phrases
):
    source = tmp_path / "ex8_2.py"
    source.write_text(
        "import keras\nimport numpy as np\n\n"
        "class ScaledDotScore(keras.layers.Layer):\n"
        "    # the planted code\n"
        f"    def call(self, query, key):\n        {code.split('#')[0]}\n",
        encoding="utf-8",
    )
    explained = framework_errors.explain(exception, message, where, CASE, source)
    assert explained is not None
    for phrase in phrases:
        assert phrase in explained, explained
    assert "function_node" not in explained and "[Op:" not in explained
    assert explained.count("\n") == 0 and len(explained) < 400


def test_an_unknown_error_keeps_its_words_but_loses_the_device_dump():
    message = (
        "{{function_node __wrapped__Einsum_N_2_device_/job:localhost/replica:0/task:0/"
        "device:CPU:0}} Expected dimension 6 at axis 2 of the input shaped [2,3,4] "
        "but got dimension 4 [Op:Einsum] name: "
    )
    explained = framework_errors.explain("InvalidArgumentError", message, "ex8_2.py, line 3", CASE)
    assert explained == (
        "ex8_2.py, line 3: InvalidArgumentError: Expected dimension 6 at axis 2 of the input "
        "shaped [2,3,4] but got dimension 4"
    )
    assert framework_errors.explain("ValueError", "my own words", "", CASE) is None


def test_graded_framework_errors_are_explained_and_the_raw_words_kept_for_verbose(tmp_path):
    body = """
class ScaledDotScore(keras.layers.Layer):
    def call(self, query, key):
        scores = ops.matmul(query, ops.transpose(key, (0, 2, 1)))
        scores[0] = scores[0] / 2.0
        return scores

class BilinearScore(keras.layers.Layer):
    def build(self, query_shape, key_shape):
        self.kernel = self.add_weight(name="kernel", shape=(query_shape[-1], key_shape[-1]))

    def call(self, query, key):
        return np.asarray(ops.matmul(ops.matmul(query, self.kernel), ops.transpose(key, (0, 2, 1))))
"""
    record = get_exercise("8-2")
    result = grade("8-2", submit(tmp_path, "8-2", body), parts=["ScaledDotScore", "BilinearScore"])
    scaled, bilinear = result.part("ScaledDotScore"), result.part("BilinearScore")
    assert scaled.score == bilinear.score == 0.0
    first = failures(scaled)[0]
    assert "ex8_2.py, line 9" in first.message and "changed in place" in first.message
    assert "EagerTensor" in first.raw and "EagerTensor" not in first.message
    assert any("returned a NumPy array" in c.message for c in failures(bilinear))
    text = render(record, result, color=False, width=100)
    assert "EagerTensor" not in text and "_id" not in text
    assert text.count("returned a NumPy array") == 1  # once, not once per case
    assert "EagerTensor" in render(record, result, color=False, verbose=True, width=100)


def test_lengths_not_expanded_are_reported_where_they_were_passed_not_where_they_broke(tmp_path):
    """The solution without the expand_dims of lengths (B,): the error is raised in
    masked_softmax_from_mask (the helper it calls) but reported at masked_softmax's line."""
    from tests.support.planting import plant

    folder = plant(
        tmp_path,
        "masked-softmax",
        ("lengths = ops.expand_dims(lengths, -1)", "pass  # lengths (B,) not expanded"),
    )
    result = grade("masked-softmax", folder, parts=["masked_softmax"])
    errors = [c for c in failures(result.part("masked_softmax")) if c.raw]
    assert errors, failures(result.part("masked_softmax"))
    message = errors[0].message
    assert message.startswith("lab_masked_softmax.py, line "), message
    assert "(`return masked_softmax_from_mask(scores, keep)`)" in message
    assert "raised in masked_softmax_from_mask, line" in message
    assert "masked_softmax_from_mask" in errors[0].raw  # where it was noticed, for --verbose


def test_an_error_of_the_helper_itself_stays_where_it_was_raised():
    from grader.vocabulary.protocol import Frame

    case = Case("masked_softmax", "function", "B=2")
    caller = Frame("m.py", 9, "masked_softmax", "return helper(scores, keep)", ("scores",))
    # The failing line uses only a constant of its own: the helper's own mistake.
    helper = Frame("m.py", 3, "helper", "bad = ops.ones((2, 3)) + ops.ones((3, 2))", ("x", "m"))
    assert framework_errors.cause_frame((caller, helper), case) == (None, None)
    # It uses an argument: the caller made the value.
    helper = Frame("m.py", 3, "helper", "return x + m", ("x", "m"))
    assert framework_errors.cause_frame((caller, helper), case) == (caller, helper)


def test_a_caller_that_passes_its_own_arguments_on_unchanged_is_never_blamed(tmp_path):
    """The helper fails on a line that uses its arguments, but its caller passed it the
    grader's inputs as they came: the mistake is the helper's, so is the place."""
    from grader.vocabulary.protocol import Frame

    case = Case("masked_softmax", "function", "B=2")
    helper = Frame("m.py", 3, "helper", "return x + m", ("x", "m"))
    untouched = Frame(
        "m.py", 9, "masked_softmax", "return helper(scores, mask)", ("scores", "mask")
    )
    assert framework_errors.cause_frame((untouched, helper), case) == (None, None)
    source = tmp_path / "m.py"
    source.write_text(
        "def helper(x, m):\n    pass\n    return x + m\n\n\n"
        "def masked_softmax(scores, mask):\n    mask = mask[..., None]\n    pass\n"
        "    return helper(scores, mask)\n"
    )
    # The same line, once the caller has changed `mask` before it: the caller made the value.
    assert framework_errors.cause_frame((untouched, helper), case, source) == (untouched, helper)
    inline = Frame("m.py", 9, "masked_softmax", "return helper(scores, mask[0])", ("scores",))
    assert framework_errors.cause_frame((inline, helper), case) == (inline, helper)


def test_frames_from_a_child_are_plain_data_or_a_malformed_report():
    from grader.vocabulary import protocol
    from grader.vocabulary.status import CaseStatus

    frame = {"file": "m.py", "line": 3, "function": "f", "code": "x + y", "arguments": ["x"]}
    read = protocol._failure(CaseStatus.ERROR, {"exception": "E", "frames": [frame]})
    assert read.frames == (protocol.Frame("m.py", 3, "f", "x + y", ("x",)),)
    for bad in (
        {**frame, "line": "3"},
        {**frame, "arguments": ["x; import os"]},
        {**frame, "extra": 1},
        [frame] * (protocol.MAX_FRAMES + 1),
        "frames",
    ):
        frames = bad if isinstance(bad, list | str) else [bad]
        with pytest.raises(ValueError, match="malformed"):
            protocol._failure(CaseStatus.ERROR, {"exception": "E", "frames": frames})
