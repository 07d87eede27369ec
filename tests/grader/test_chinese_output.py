"""No English sentence is left in what a Chinese-speaking student reads of a result (issue 18).

Representative results are made in the grader's own process, without a sandbox (the judging a
`grader check` does on what a child reported), then rendered every way a student sees them: the
check's text (short and --verbose), the notebook's HTML, the batch's Markdown feedback and the
watch's changes. An "English sentence" is a run of three or more ASCII words of letters, once
code (backticks, identifiers, shapes, file names) and the few code words below are taken out; a
new message left unmarked fails here.
"""

from __future__ import annotations

import re

import numpy as np
import pytest

from grader.engine import contracts, framework_errors
from grader.engine.judging import cannot_load, judge_case, judge_part
from grader.engine.results import ExerciseResult, PartResult
from grader.grading import unloadable
from grader.i18n import speaking
from grader.records import get_exercise
from grader.reference import attention as ref
from grader.vocabulary.protocol import CaseOutput, Outcome
from grader.vocabulary.spec import FUNCTION, Case
from grader.vocabulary.status import CaseStatus, RunState, Status

# Words of code a Chinese message keeps in English (names of exceptions, modules, tools, keys).
CODE_WORDS = {
    "dtype",
    "float",
    "keras",
    "ops",
    "NumPy",
    "TensorFlow",
    "SyntaxError",
    "ValueError",
    "InvalidArgumentError",
    "grader",
    "check",
    "verbose",
    "softmax",
    "Jupyter",
    "invalid",  # Python's own "invalid syntax", as the parser words it
    "syntax",
}
# TensorFlow's own words, shown as raised under --verbose.
RAW = "Matrix size-incompatible: In[0]: [3,4], In[1]: [5,4]"
# Backticked code; paths; identifiers with _ . digits or inner capitals; shapes and labels (B=2).
CODE = re.compile(
    r"`[^`]*`|\S*/\S*|\[[^\]]*\]|\w+=\S+|\b\w*[_.\d]\w*\b|\b[A-Za-z]*[a-z][A-Z]\w*\b|\b[A-Z]{2,}\w*\b"
)
SENTENCE = re.compile(r"[A-Za-z]+(?:[ ,:;'()-]+[A-Za-z]+){2,}")


def english_sentences(text: str) -> list[str]:
    """The runs of 3+ ASCII words of letters left in `text` once code is taken out."""
    text = re.sub(r"<style>.*?</style>|<[^>]*>", " · ", text, flags=re.DOTALL)  # HTML
    text = " ".join(text.split())  # a terminal may wrap anywhere, even inside RAW
    text = CODE.sub(" · ", text.replace(RAW, " · "))
    words = "|".join(sorted(CODE_WORDS, key=len, reverse=True))
    text = re.sub(rf"\b(?:{words})\b", " · ", text)
    return SENTENCE.findall(text)


def _layer_case(part):
    return part.make_cases(np.random.default_rng(0))[0]


def _results(tmp_path) -> list[ExerciseResult]:
    """8-2 with a part of each kind of failure, and a file that does not parse."""
    record = get_exercise("8-2")
    scaled, bilinear, variances, asymmetry, jacobian = record.parts

    # A named mistake: the scale 1/√d forgotten.
    case = _layer_case(scaled)
    right = ref.scaled_dot_scores(case.inputs["query"], case.inputs["key"])
    wrong = ref.dot_scores(case.inputs["query"], case.inputs["key"])
    checks = judge_case(
        scaled,
        case,
        CaseOutput(CaseStatus.OK, right, {}, dtype="float64"),
        CaseOutput(CaseStatus.OK, wrong, {}, after=dict(case.inputs), dtype="float64"),
    )
    mistake = PartResult(scaled.name, scaled.points, Status.FAILED, checks)

    # A hang, stopped.
    timeout = judge_part(bilinear, [], [], Outcome(RunState.TIMED_OUT, 10.0), 10.0)

    # Not implemented yet, with the Chinese stub's hint.
    hint = "练习 8-2：把 d 个独立乘积的方差加起来。除以常数 c 会怎样？"
    case = Case("dot_product_variance", FUNCTION, "d=4")
    pending = judge_case(
        variances,
        case,
        CaseOutput(CaseStatus.OK, np.array(4.0)),
        CaseOutput(CaseStatus.NOT_IMPLEMENTED, message=hint),
    )
    not_implemented = PartResult(variances.name, variances.points, Status.NOT_IMPLEMENTED, pending)

    # A framework error explained, and the contracts: an argument changed, nothing raised,
    # float32 for float64 inputs.
    case = Case("bilinear_asymmetry", FUNCTION, "W (3, 3)")
    case.inputs = {"kernel": np.eye(3)}
    raised = CaseOutput(
        CaseStatus.ERROR,
        exception="InvalidArgumentError",
        message="Matrix size-incompatible: In[0]: [3,4], In[1]: [5,4] [Op:MatMul]",
        where="ex8_2.py, line 30, in bilinear_asymmetry: return a @ b",
    )
    explained = framework_errors.explain(
        raised.exception, raised.message, raised.where, case, None, ()
    )
    changed = CaseOutput(CaseStatus.OK, np.eye(3), after={"kernel": 2 * np.eye(3)}, dtype="float32")
    promised = Case("bilinear_asymmetry", FUNCTION, "kind='x'", raises="ValueError")
    promised.promise = "kind 不是 lstm、gru 或 simple_rnn 时引发 ValueError"
    contract_checks = [
        *judge_case(asymmetry, case, CaseOutput(CaseStatus.OK, np.eye(3)), raised),
        *contracts.changed_inputs(case, changed, "kernel"),
        *contracts.precision_lost(case, changed, "dtype"),
        contracts.judge_raises(promised, CaseOutput(CaseStatus.OK, np.eye(3)), "kind='x'"),
    ]
    assert explained and contract_checks[0].message == explained
    errors = PartResult(asymmetry.name, asymmetry.points, Status.ERROR, contract_checks)

    passed = PartResult(jacobian.name, jacobian.points, Status.PASSED, [])
    graded = ExerciseResult(
        "8-2", [mistake, timeout, not_implemented, errors, passed], submission="ex8_2.py"
    )

    broken = tmp_path / "ex8_2.py"
    broken.write_text("x = = 2\n", encoding="utf-8")
    problem = unloadable(broken)
    unparsable = ExerciseResult(
        "8-2", [cannot_load(part, problem) for part in record.parts], submission=str(broken)
    )
    return [graded, unparsable]


def _renderings(results, tmp_path) -> dict[str, str]:
    from grader.instructor.outputs.gradebook import student_document
    from grader.instructor.outputs.student_feedback import write_feedback
    from grader.notebook.html import result_html
    from grader.report import render
    from grader.watch import changes

    record = get_exercise("8-2")
    shown = {}
    for index, result in enumerate(results):
        shown[f"check {index}"] = render(record, result, color=False, again="grader check 8-2")
        shown[f"check -v {index}"] = render(record, result, verbose=True, color=False)
        shown[f"notebook {index}"] = result_html(record, result)
        document = student_document("ada", [result], [], 1, 0, "2026-01-01")
        write_feedback(tmp_path / f"ada{index}.md", document, [record])
        shown[f"feedback {index}"] = (tmp_path / f"ada{index}.md").read_text(encoding="utf-8")
    shown["watch"] = "\n".join(changes(results[1], results[0]))
    return shown


@pytest.fixture(scope="module")
def chinese(tmp_path_factory):
    tmp_path = tmp_path_factory.mktemp("zh")
    with speaking("zh"):
        return _renderings(_results(tmp_path), tmp_path)


def test_the_detector_finds_an_english_sentence_and_spares_code():
    assert english_sentences("尚未实现：the value differs from the reference") == [
        "the value differs from the reference"
    ]
    assert english_sentences("用 `ops.where(mask, x, y)` 和 keras.ops 计算 float64 的 dtype") == []
    assert english_sentences("输出，B=2 Tq=3 Tk=5 d=4：ScaledDotScore.call 出错") == []


def test_every_rendering_of_a_chinese_result_has_no_english_sentence(chinese):
    left = {name: english_sentences(text) for name, text in chinese.items()}
    assert {name: found for name, found in left.items() if found} == {}


def test_the_chinese_renderings_say_what_happened(chinese):
    text = " ".join(chinese["check 0"].split())
    assert "1/√d" in text and "缩放" in text
    assert "运行 10 秒仍未结束" in text
    assert "待完成：练习 8-2：把 d 个独立乘积的方差加起来。" in text
    assert "？。" not in text
    verbose = " ".join(chinese["check -v 0"].split())
    assert "矩阵乘积" in verbose and "参数 `kernel` 被调用修改了" in verbose
    assert "没有引发 ValueError" in verbose and "输入是 float64，却返回了 float32" in verbose
    assert "SyntaxError" in chinese["check 1"] and "第 1 行" in chinese["check 1"]


def test_english_is_as_before(tmp_path):
    with speaking("en"):
        shown = _renderings(_results(tmp_path), tmp_path)
    text = " ".join(shown["check 0"].split())
    assert "to do: Exercise" not in text  # the Chinese hint stays as the stub wrote it
    assert "stopped after 10 s without finishing" in text
    verbose = " ".join(shown["check -v 0"].split())
    assert "a matrix product of shapes (3, 4) and (5, 4)" in verbose
    assert "the argument `kernel` was changed by the call" in verbose
    assert "no ValueError was raised, a value was returned" in verbose
