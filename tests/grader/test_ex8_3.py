"""Exercise 8-3 graded end to end: what the graded reference shows, correct alternatives written
into the stub, planted mistakes, and the written comparison's template (full marks and the stub:
tests/grader/test_records.py)."""

import re
import textwrap

import pytest

from grader.grading import ANSWER_PLACEHOLDER, grade
from grader.instructor.course.stubs import package_dir
from grader.records import get_exercise
from tests.grader.test_records import HIDDEN_SEEDS
from tests.support.grading import (
    assert_full_marks,
    failures,
    reference_result,
    submit,
)
from tests.support.planting import HEADER, from_table

pytestmark = pytest.mark.ex8_3

EXERCISE = "8-3"


def fill_stub(exercise_id: str, answers: dict[str, str]) -> str:
    """The generated stub of an exercise, with `answers` (function or method name -> code) in
    place of those functions' `raise NotImplementedError`; the others stay unimplemented.

    Submissions made this way keep the stub's given code (constructors, builds, wrapper
    layers) exactly, as a student's would.
    """
    stub = package_dir("exercises") / get_exercise(exercise_id).file
    lines, current = [], None
    for line in stub.read_text(encoding="utf-8").splitlines():
        defined = re.match(r"\s*def (\w+)\(", line)
        current = defined[1] if defined else current
        stripped = line.lstrip()
        if stripped.startswith(f'raise NotImplementedError("Exercise {exercise_id}:') and (
            current in answers
        ):
            code = textwrap.dedent(answers[current]).strip("\n")
            lines.append(textwrap.indent(code, line[: len(line) - len(stripped)]))
        else:
            lines.append(line)
    return "\n".join(lines) + "\n"


def test_reference_is_checked_for_gradients_the_first_position_and_float32():
    result = reference_result(EXERCISE, HIDDEN_SEEDS[EXERCISE])
    names = [check.name for part in result.parts for check in part.checks]
    for weight in ("inputs", "query_kernel", "key_kernel", "value_kernel"):
        assert any(name.startswith(f"gradient wrt {weight},") for name in names), weight
    assert any(name.startswith("first position attends to itself") for name in names)
    assert any("float32" in name and name.startswith("dtype") for name in names)


def test_written_comparison_template_ships_unanswered():
    template = package_dir("exercises") / "answers" / f"{EXERCISE}.md"
    text = template.read_text(encoding="utf-8")
    assert text.startswith("# Exercise 8-3") and "**Question.**" in text
    assert text.count(ANSWER_PLACEHOLDER) == 1
    assert text.rstrip().endswith(ANSWER_PLACEHOLDER)

    result = grade(EXERCISE, package_dir("exercises"), parts=["maximum_path_length"])
    assert [(w["name"], w["status"]) for w in result.for_instructor] == [("comparison", "missing")]


def test_a_written_answer_is_reported_for_the_instructor(tmp_path):
    folder = submit(tmp_path, EXERCISE, fill_stub(EXERCISE, {}), header="")
    (tmp_path / "answers").mkdir()
    template = (package_dir("exercises") / "answers" / f"{EXERCISE}.md").read_text()
    (tmp_path / "answers" / f"{EXERCISE}.md").write_text(
        template + "\nSelf-attention connects every pair of positions in one step...\n"
    )
    result = grade(EXERCISE, folder, parts=["maximum_path_length"])
    assert result.for_instructor[0]["status"] == "written"
    # The written points are reported apart; they never enter the automatic score.
    assert result.for_instructor[0]["max_score"] == 2.0
    assert result.max_score == get_exercise(EXERCISE).part("maximum_path_length").points


ALTERNATIVE_TENSORFLOW = {
    "call": """
        import tensorflow as tf

        q = tf.tensordot(inputs, self.query_kernel, axes=1)
        k = tf.tensordot(inputs, self.key_kernel, axes=1)
        v = tf.tensordot(inputs, self.value_kernel, axes=1)
        s = tf.linalg.matmul(q, k, transpose_b=True)
        s = s * tf.math.rsqrt(tf.cast(self.key_dim, s.dtype))
        if self.causal:
            n = tf.shape(s)[-1]
            lower = tf.linalg.band_part(tf.ones((n, n), s.dtype), -1, 0)
            s = s + (1.0 - lower) * tf.constant(-1e9, s.dtype)
        return tf.linalg.matmul(tf.nn.softmax(s, axis=-1), v)
    """,
    "self_attention_complexity": "return d * n**2",
    "recurrent_complexity": "return n * d**2",
    "convolution_complexity": "return d * d * n * k",
    "maximum_path_length": """
        import math

        if kind == "dilated_convolution":
            layers = 0
            while k**layers < n:
                layers += 1
            return layers
        if kind == "convolution":
            return math.ceil((n - 1) / (k - 1))
        if kind not in ("self_attention", "recurrent"):
            raise ValueError(f"unknown kind {kind!r}")
        return {"self_attention": 1, "recurrent": n}[kind]
    """,
}

ALTERNATIVE_MASKED_EXPONENTIALS = {
    # The mask multiplies the exponentials, then the rows are normalised: the same weights as
    # a -inf mask before the softmax.
    "call": """
        q = ops.einsum("bnx,xk->bnk", inputs, self.query_kernel)
        k = ops.einsum("bnx,xk->bnk", inputs, self.key_kernel)
        v = ops.einsum("bnx,xv->bnv", inputs, self.value_kernel)
        s = ops.einsum("bik,bjk->bij", q, k) / self.key_dim**0.5
        e = ops.exp(s - ops.max(s, axis=-1, keepdims=True))
        if self.causal:
            e = ops.tril(e)
        return ops.einsum("bij,bjv->biv", e / ops.sum(e, axis=-1, keepdims=True), v)
    """,
    "self_attention_complexity": "return n * n * d",
    "recurrent_complexity": "return float(n * d * d)",
    "convolution_complexity": "return k * recurrent_complexity(n, d)",
    "maximum_path_length": """
        import math

        if kind == "dilated_convolution":
            return math.ceil(math.log(n, k) - 1e-9)  # a tolerance guards exact powers of k
        if kind == "convolution":
            return (n - 2) // (k - 1) + 1
        if kind in ("self_attention", "recurrent"):
            return 1 if kind == "self_attention" else n
        raise ValueError(kind)
    """,
}


@pytest.mark.parametrize(
    "answers",
    [ALTERNATIVE_TENSORFLOW, ALTERNATIVE_MASKED_EXPONENTIALS],
    ids=["tensorflow-additive-mask", "keras-ops-masked-exponentials"],
)
def test_correct_alternatives_score_full_marks(tmp_path, answers):
    folder = submit(tmp_path, EXERCISE, fill_stub(EXERCISE, answers), header="")
    assert_full_marks(grade(EXERCISE, folder))


def attention_call(scores="ops.einsum('bik,bjk->bij', q, k) / self.key_dim**0.5", **changes):
    """A SelfAttention.call with one line changed by a planted mistake."""
    code = {
        "q": "ops.matmul(inputs, self.query_kernel)",
        "k": "ops.matmul(inputs, self.key_kernel)",
        "v": "ops.matmul(inputs, self.value_kernel)",
        "mask": "ops.where(allowed, s, -1e9)",
        "softmax": "ops.softmax(s, axis=-1)",
        "after": "a",
    } | changes
    return {
        "call": f"""
            q = {code["q"]}
            k = {code["k"]}
            v = {code["v"]}
            s = {scores}
            n = ops.shape(s)[-1]
            allowed = ops.arange(n)[None, :] <= ops.arange(n)[:, None]
            if self.causal:
                s = {code["mask"]}
            a = {code["softmax"]}
            if self.causal:
                a = {code["after"]}
            return ops.matmul(a, v)
        """
    }


def _functions(**bodies):
    return {name: f"return {expression}" for name, expression in bodies.items()}


COMPLEXITY = {
    "self_attention_complexity": "n * n * d",
    "recurrent_complexity": "n * d * d",
    "convolution_complexity": "k * n * d * d",
}
PATH = """
    import math
    return {{"self_attention": 1, "recurrent": {recurrent}}}.get(kind) or (
        {convolution} if kind == "convolution" else {dilated}
    )
"""


def path(recurrent="n", convolution="-(-(n - 1) // (k - 1))", dilated=None):
    dilated = dilated or "next(L for L in range(64) if k**L >= n)"
    return {
        "maximum_path_length": PATH.format(
            recurrent=recurrent, convolution=convolution, dilated=dilated
        )
    }


PLANTED = [
    # (part, answers, the named mistake, a phrase of the feedback)
    (
        "SelfAttention",
        attention_call(scores="ops.einsum('bik,bjk->bij', q, k)"),
        "scale forgotten",
        "not divided by √d_k",
    ),
    (
        "SelfAttention",
        attention_call(scores="ops.einsum('bik,bjk->bij', q, k) / inputs.shape[-1]**0.5"),
        "scaled by the input size",
        "√d_x",
    ),
    (
        "SelfAttention",
        attention_call(softmax="ops.softmax(s, axis=1)"),
        "softmax over the queries",
        "wrong axis",
    ),
    (
        "SelfAttention",
        attention_call(
            q="ops.matmul(inputs, self.key_kernel)", k="ops.matmul(inputs, self.query_kernel)"
        ),
        "query and key kernels swapped",
        "transposed scores",
    ),
    (
        "SelfAttention",
        attention_call(v="ops.matmul(inputs, ops.stop_gradient(self.value_kernel))"),
        "gradient cut",
        "gradient with respect to value_kernel is zero",
    ),
    (
        "SelfAttention",
        attention_call(scores="ops.einsum('bik,bjk->bij', q, k) / self.value_dim**0.5"),
        "scaled by the value size",
        "√d_v",
    ),
    (
        "causal mask",
        attention_call(scores="ops.einsum('bik,bjk->bij', q, k)"),
        "scale forgotten",
        "with the mask",
    ),
    ("causal mask", attention_call(mask="s"), "mask ignored", "unmasked output"),
    (
        "causal mask",
        attention_call(mask="ops.where(ops.transpose(allowed), s, -1e9)"),
        "mask reversed",
        "keeps j >= i",
    ),
    (
        "causal mask",
        attention_call(mask="s", after="a * ops.cast(allowed, a.dtype)"),
        "masked after the softmax",
        "no longer sum to one",
    ),
    (
        "layer_complexity",
        _functions(
            **COMPLEXITY
            | {"self_attention_complexity": "n * d * d", "recurrent_complexity": "n * n * d"}
        ),
        "n and d swapped",
        "swapped roles",
    ),
    (
        "layer_complexity",
        _functions(**COMPLEXITY | {"convolution_complexity": "n * d * d"}),
        "kernel width left out",
        "factor k",
    ),
    (
        "layer_complexity",
        _functions(**COMPLEXITY | {"self_attention_complexity": "2 * n * n * d"}),
        "both products counted",
        "count only the scores",
    ),
    (
        "layer_complexity",
        _functions(**COMPLEXITY | {"recurrent_complexity": "n * d"}),
        "matrix product counted as d",
        "d² multiplications",
    ),
    ("maximum_path_length", path(recurrent="n - 1"), "only the recurrent steps counted", "n edges"),
    (
        "maximum_path_length",
        path(convolution="math.ceil(n / k)"),
        "each layer reaches k positions",
        "k - 1",
    ),
    ("maximum_path_length", path(convolution="(n - 1) // (k - 1)"), "rounded down", "round up"),
    (
        "maximum_path_length",
        path(dilated="math.ceil(math.log(n, k))"),
        "floating-point logarithm",
        "3.0000000000000004",
    ),
    (
        "maximum_path_length",
        path(dilated="math.floor(math.log(n - 1, k)) + 1"),
        "floating-point logarithm of n - 1",
        "2.9999999999999996",
    ),
]


def test_a_mask_after_the_softmax_breaks_the_first_position_property(tmp_path):
    answers = attention_call(mask="s", after="a * ops.cast(allowed, a.dtype)")
    folder = submit(tmp_path, EXERCISE, fill_stub(EXERCISE, answers), header="")
    part = grade(EXERCISE, folder, parts=["causal mask"]).part("causal mask")
    assert any("must attend only to itself" in check.message for check in failures(part))
    # Without a mask the same code is right: the unmasked part passes.
    assert grade(EXERCISE, folder, parts=["SelfAttention"]).part("SelfAttention").score == 3.0


def planted():
    """Every planted mistake of this exercise (graded by tests/grader/test_records.py)."""
    return from_table(PLANTED, make_source=lambda answers: HEADER + fill_stub(EXERCISE, answers))
