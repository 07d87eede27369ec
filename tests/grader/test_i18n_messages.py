"""The grader's own messages in Chinese: generic diagnoses, properties, the sandbox's reports,
unknown exercises and case labels; and the same messages in English as they always were.

All in the grader's process (no sandboxed run): the functions that make the messages are
called directly in `speaking("zh")`.
"""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

from grader.engine import diagnosis, properties
from grader.engine.cases import make_cases
from grader.engine.compare import matches
from grader.engine.judging import judge_part
from grader.engine.results import CheckResult, ExerciseResult, PartResult
from grader.i18n import _, speaking
from grader.records import EXERCISES, UnknownExercise, get_exercise
from grader.report import problem_lines
from grader.sandbox.processes import _exit_words
from grader.vocabulary.labels import LABELS, REPORTED, fragments, shown_label, shown_report
from grader.vocabulary.protocol import Outcome
from grader.vocabulary.spec import FUNCTION, Case, Part
from grader.vocabulary.status import CaseStatus, RunState, Status

CJK = re.compile(r"[\u4e00-\u9fff]")
# A size or setting as labels show it ("Tq=3", "kind='lstm'", "lengths=[1, 2]"): kept as is.
SETTING = re.compile(r"\S+=(\[[^\]]*\]|\S+)")
# A word; not the exponent of a number ("1e5").
WORD = re.compile(r"(?<![\w.])[A-Za-z][A-Za-z0-9_]*")
DTYPES = {"float16", "float32", "float64"}


def english_words_left(case: Case, shown: str) -> list[str]:
    """The words of a translated label that are still English: every Latin word but a
    setting ("d=4"), a single letter (a symbol: W, h), a dtype, and a code name of the case
    (its arguments', weights' and settings' names, and settings given as text)."""
    code = {*case.inputs, *case.weights, *case.params, *DTYPES}
    code |= {value for value in case.params.values() if isinstance(value, str)}
    words = WORD.findall(SETTING.sub(" ", shown))
    return [word for word in words if len(word) > 1 and word not in code]


def every_case():
    for record in EXERCISES.values():
        for seed in (1, 2):
            for cases in make_cases(record, 0, seed).values():
                yield from (case for case in cases if seed == 1 or case.hidden)


def test_every_label_of_every_record_is_shown_in_chinese_but_its_code_names():
    untranslated = {}
    with speaking("zh"):
        for case in every_case():
            left = english_words_left(case, shown_label(case.label))
            if left:
                untranslated[case.label] = left
    assert not untranslated, untranslated


def test_labels_stay_english_in_english_and_in_the_case():
    case = Case("f", FUNCTION, "B=2 Tq=3 Tk=5, valid_lens of shape (2,) (a fully masked row)")
    assert shown_label(case.label) == case.label
    with speaking("zh"):
        shown = shown_label(case.label)
    assert shown == "B=2 Tq=3 Tk=5, 形状为 (2,) 的 valid_lens （有一整行被掩码）"
    assert case.label.endswith("(a fully masked row)")


def test_a_label_splits_at_its_commas_outside_brackets():
    assert fragments("hidden, x of shape (2, 3), B=2") == ["hidden", "x of shape (2, 3)", "B=2"]


def test_a_template_placeholder_matches_one_value_not_the_words_around_it():
    with speaking("zh"):
        assert shown_label("9 patterns of 4 unit") == "9 个模式，每个 4 个单元"
        # Words that only look like a registered text are left as they are.
        assert shown_label("with biases") == "with biases"
    assert "{name} of shape {shape}" in LABELS.texts()


def scale_missing():
    """A planted 8-2 slip: scores not divided by √d (d = 4), as README's example shows."""
    case = Case("ScaledDotScore", FUNCTION, "B=2 Tq=3 Tk=5 d=4")
    expected = np.random.default_rng(0).standard_normal((2, 3, 5))
    agree = lambda a, b: matches(a, b, case)  # noqa: E731
    return diagnosis.diagnose(expected, expected * 2.0, case, agree)


def test_a_diagnosis_reads_chinese_and_keeps_its_english_name():
    name, english = scale_missing()
    assert english == "every value is √d = √4 times the expected one: a division by √d is missing"
    with speaking("zh"):
        zh_name, chinese = scale_missing()
    assert zh_name == name == "slip: scale missing"
    assert chinese == "每个值都是期望值的 √d = √4 倍：缺少除以 √d 这一步"


def test_a_property_reads_chinese_and_its_check_is_named_in_chinese():
    relation = properties.keys_permuted(("keys", "values"))
    case = Case("pool", FUNCTION, "B=1 Tk=3", {"keys": np.arange(3.0)[None], "values": None})
    output, shuffled = np.array([[1.0, 2.0]]), np.array([[1.0, 2.5]])
    assert relation.check(case, output, case, shuffled).startswith("shuffling the keys")
    with speaking("zh"):
        broken = relation.check(case, output, case, shuffled)
    assert broken.startswith("把键连同它们的值一起打乱后输出变了")
    assert relation.name == "keys in any order"  # the key of the mistake stays English


def timed_out_part(problem: str = "", state=RunState.TIMED_OUT):
    part = Part("ScaledDotScore", 3, lambda rng, hidden=False: [], ("ScaledDotScore",))
    outcome = Outcome(state, 12.0, problem=problem)
    return judge_part(part, [], [], outcome, timeout=12.0)


def test_a_timeout_and_a_killed_child_read_chinese():
    english = timed_out_part().checks[0].message
    assert english.startswith("stopped after 12 s without finishing")
    with speaking("zh"):
        result = timed_out_part()
        killed = timed_out_part(_exit_words(-9), RunState.CRASHED)
    assert result.status == Status.TIMEOUT
    assert result.checks[0].message.startswith("运行 12 秒仍未结束，已停止")
    assert killed.checks[0].message == "崩溃：进程被信号 9（SIGKILL）终止"


@pytest.mark.parametrize(
    ("reported", "chinese"),
    [
        (
            "importing 'torch' is not allowed in a graded submission: write the code yourself",
            "评分的提交中不允许导入 'torch'：请自己编写这段代码",
        ),
        ("ScaledDotScore.call returned None: did you forget a `return`?", None),
        ("it started 99 threads (at most 64 allowed)", "它启动了 99 个线程（最多允许 64 个）"),
        ("a message of the submission's own", "a message of the submission's own"),
    ],
)
def test_what_a_child_or_the_scheduler_reported_is_shown_in_chinese(reported, chinese):
    assert shown_report(reported) == reported
    with speaking("zh"):
        shown = shown_report(reported)
    if chinese is None:
        assert shown == "ScaledDotScore.call 返回了 None：是不是忘了写 `return`？"
    else:
        assert shown == chinese
    assert len(REPORTED.texts()) >= 10


def test_an_unknown_exercise_is_told_in_chinese():
    with speaking("zh"), pytest.raises(UnknownExercise) as raised:
        get_exercise("8-9")
    assert str(raised.value).startswith("未知的练习 '8-9'。已有的练习：8-1, 8-2")
    assert "你是不是想输入 8-" in str(raised.value)


# Where a message is made that a student or a TA reads: raised by these, passed to these, or
# returned by these functions of the grader (a file refused, a submission unusable, the
# sandbox's protections and why one is missing, the CLI's lines).
SHOWN_THROUGH = {
    "RefusedFile",
    "UnsafeSubmission",
    "TooLarge",
    "ExerciseFile",
    "BadParameter",
    "UsageError",
    "ClickException",
    "echo",
    "secho",
    "OSError",
    "ValueError",
    "RuntimeError",
    "FileNotFoundError",
}
MADE_BY = {
    "grader/engine/safe_files.py": ("refusal", "_unreadable"),
    "grader/sandbox/world.py": ("own_user_problem", "available"),
    "grader/sandbox/__init__.py": ("describe",),
}
# Raised and caught inside the grader, or a programming error: read by nobody but a developer.
INTERNAL = {
    ("grader/vocabulary/bundle.py", "{} is not a plain file"),
    ("grader/instructor/outputs/gradebook.py", "not a result"),
    ("grader/sandbox/landlock.py", "landlock_add_rule failed for {}"),
    ("grader/sandbox/processes.py", "the jobs of group {} differ in more than their cases"),
}
MARKED = {"_", "n_", "N_", "tr", "reported_text", "label_text", "label_texts"}
SENTENCE = re.compile(r"[A-Za-z]+(?: [A-Za-z]+){2,}")


def _called(node) -> str:
    return getattr(node, "id", None) or getattr(node, "attr", "")


def _unmarked_texts(node):
    """The string literals under `node` outside a call that marks them for the catalog."""
    import ast

    if isinstance(node, ast.Call) and _called(node.func) in MARKED:
        return
    if isinstance(node, ast.JoinedStr):
        yield "".join(v.value if isinstance(v, ast.Constant) else "{}" for v in node.values)
        return
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        yield node.value
        return
    for child in ast.iter_child_nodes(node):
        yield from _unmarked_texts(child)


def test_every_message_a_student_or_ta_reads_is_in_the_catalog():
    """An English sentence the grader raises, prints or returns as a message, written as a
    plain string (an f-string) instead of `_("...")`, never reaches the catalog: it would stay
    English for a Chinese student. This finds every one in the grader's code."""
    import ast

    from tests.support.unprivileged import REPO

    found = []
    for path in sorted((REPO / "grader").rglob("*.py")):
        where = path.relative_to(REPO).as_posix()
        tree = ast.parse(path.read_text(encoding="utf-8"))
        shown = [
            argument
            for node in ast.walk(tree)
            if isinstance(node, ast.Call) and _called(node.func) in SHOWN_THROUGH
            for argument in node.args
        ]
        shown += [
            node.value
            for function in ast.walk(tree)
            if isinstance(function, ast.FunctionDef) and function.name in MADE_BY.get(where, ())
            for node in ast.walk(function)
            if isinstance(node, ast.Return) and node.value is not None
        ]
        for node in shown:
            for text in _unmarked_texts(node):
                if SENTENCE.search(text) and (where, text) not in INTERNAL:
                    found.append(f"{where}: {text!r}")
    assert not found, "\n".join(found)


def test_a_linked_file_is_refused_in_chinese(tmp_path):
    from grader.engine.safe_files import RefusedFile, read_plain_path

    (tmp_path / "real.py").write_text("x = 1\n")
    (tmp_path / "ex8_2.py").symlink_to(tmp_path / "real.py")
    with speaking("zh"), pytest.raises(RefusedFile) as refused:
        read_plain_path(tmp_path / "ex8_2.py")
    assert str(refused.value) == "ex8_2.py 是符号链接：请提交文件本身，而不是指向它的链接"
    with speaking("en"), pytest.raises(RefusedFile) as refused:
        read_plain_path(tmp_path / "ex8_2.py")
    assert (
        str(refused.value)
        == "ex8_2.py is a symbolic link: hand in the file itself, not a link to it"
    )


@pytest.mark.parametrize(
    "language,stub,full_stop",
    [("en", "exercises/ex8_2.py", "."), ("zh", "exercises/zh/ex8_2.py", "。")],
)
def test_a_to_do_line_ends_with_the_full_stop_of_the_language_in_use(language, stub, full_stop):
    """The stub's hint for bilinear_asymmetry holds a formula, xᵀ, in both languages: the line
    that shows it ends as a sentence of the language the grader speaks, whatever the hint's
    characters (it used to end in "。" in English too)."""
    source = (Path(__file__).resolve().parents[2] / stub).read_text(encoding="utf-8")
    hint = re.search(r'NotImplementedError\("([^"]*xᵀ[^"]*)"\)', source).group(1)
    with speaking(language):
        message = _("not implemented yet") + f" ({hint})"  # as grader.engine.judging words it
        check = CheckResult("output", False, message, cause=CaseStatus.NOT_IMPLEMENTED)
        part = PartResult("bilinear_asymmetry", 2, Status.NOT_IMPLEMENTED, [check])
        common, shown = problem_lines(
            get_exercise("8-2"), ExerciseResult("8-2", [part]), width=1000
        )
        expected = _("to do: {hint}", hint=hint + full_stop)
    assert common == [] and [line.strip() for line in shown["bilinear_asymmetry"]] == [expected]
