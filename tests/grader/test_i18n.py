"""Languages: the choice (--lang, GRADER_LANG, the locale), the catalogs (every message has its
Chinese, with the same placeholders, compiled), and what a student reads in Chinese."""

from __future__ import annotations

import inspect
import os
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from grader import i18n
from grader.cli import main
from grader.engine.judging import judge_case
from grader.engine.results import ExerciseResult, PartResult
from grader.i18n import choose, display_width, pad, speaking
from grader.locale import catalog
from grader.records import EXERCISES, get_exercise
from grader.reference import attention as ref
from grader.vocabulary.protocol import CaseOutput
from grader.vocabulary.status import CaseStatus, Status


def zh(*args, env=None):
    return CliRunner().invoke(main, ["--lang", "zh", *args], env=env)


@pytest.mark.parametrize(
    "option, environ, expected",
    [
        (None, {}, "en"),
        (None, {"LANG": "zh_CN.UTF-8"}, "zh"),
        (None, {"LANG": "C.UTF-8"}, "en"),
        (None, {"LANG": "zh_CN.UTF-8", "LC_MESSAGES": "en_US.UTF-8"}, "en"),
        (None, {"LANG": "en_US.UTF-8", "LC_MESSAGES": "zh_TW.UTF-8"}, "zh"),
        (None, {"LC_MESSAGES": "en_US.UTF-8", "LC_ALL": "zh_CN.UTF-8"}, "zh"),
        (None, {"LC_ALL": "zh_CN.UTF-8", "GRADER_LANG": "en"}, "en"),
        (None, {"LANG": "en_US.UTF-8", "GRADER_LANG": "zh-Hans"}, "zh"),
        ("en", {"GRADER_LANG": "zh", "LANG": "zh_CN.UTF-8"}, "en"),
        ("zh", {"GRADER_LANG": "en"}, "zh"),
    ],
)
def test_the_option_then_the_graders_variable_then_the_locale_choose(option, environ, expected):
    assert choose(option, environ) == expected


def test_a_language_the_grader_does_not_speak_is_an_error_naming_where_it_came_from():
    with pytest.raises(i18n.LanguageError, match="GRADER_LANG='fr'.*en, zh"):
        choose(None, {"GRADER_LANG": "fr"})
    result = CliRunner().invoke(main, ["list"], env={"GRADER_LANG": "fr"})
    assert result.exit_code == 2 and "GRADER_LANG='fr'" in result.output


def test_every_message_has_its_chinese_with_the_same_placeholders_and_is_compiled():
    assert catalog.problems("zh") == []


def test_a_message_without_chinese_fails_the_check(monkeypatch):
    """The safety net of every new message: one added to the code without a translation."""
    template = catalog.template()
    template.add("a new message of {count} checks")
    monkeypatch.setattr(catalog, "template", lambda: template)
    assert catalog.problems("zh") == ["zh: no translation of 'a new message of {count} checks'"]


@pytest.mark.parametrize(
    "source, translation, same",
    [
        ("{count} of {size} values", "{size} 个值中有 {count} 个", True),
        ("{count} of {size} values", "{size} 个值中有 count 个", False),
        ("expected {value!r}", "应为 {value}", False),
        ("stopped after {seconds:g} s", "{seconds:g} 秒后停止", True),
        ("%(prog)s, version %(version)s", "%(prog)s，版本 %(version)s", True),
        ("%(prog)s, version %(version)s", "%(prog)s，版本", False),
    ],
)
def test_placeholders_are_compared_by_name_conversion_and_format(source, translation, same):
    assert (catalog.placeholders(source) == catalog.placeholders(translation)) is same


def test_display_width_counts_chinese_as_two_columns():
    assert display_width("abc") == 3
    assert display_width("注意力") == 6
    assert display_width("（8.4）") == 7  # full-width parentheses are wide
    assert display_width("é") == 1 and display_width("e\u0301") == 1  # a combining accent
    assert pad("多头", 6) == "多头  " and display_width(pad("多头", 6)) == 6


def test_english_is_unchanged_by_default():
    result = CliRunner().invoke(main, ["show", "8-2"], env={"LANG": "C", "GRADER_LANG": ""})
    assert result.exit_code == 0
    assert "Exercise 8-2 · Scoring functions" in result.output
    assert "File to edit: exercises/ex8_2.py" in result.output
    assert not any("\u4e00" <= c <= "\u9fff" for c in result.output)


def test_show_in_chinese_uses_the_books_terms_and_the_chinese_stub():
    result = CliRunner().invoke(main, ["show", "8-2", "--lang", "zh"])
    assert result.exit_code == 0, result.output
    assert "练习 8-2" in result.output and "打分函数" in result.output
    assert "exercises/zh/ex8_2.py" in result.output
    assert "qᵀk/√d" in result.output  # formulas identical


def test_locale_alone_gives_chinese_and_the_process_speaks_english_again_after():
    result = CliRunner().invoke(main, ["list"], env={"LANG": "zh_CN.UTF-8", "GRADER_LANG": ""})
    assert "缩放点积" in result.output and "分" in result.output
    assert i18n.language() == "en" and i18n._("passed") == "passed"


def test_help_and_clicks_own_messages_are_chinese():
    result = zh("--help")
    assert "用法：" in result.output and "显示本帮助并退出。" in result.output
    assert "检查" in result.output  # the commands' help texts, from the catalog
    result = zh("nosuchcommand")
    assert result.exit_code == 2 and "没有命令 'nosuchcommand'" in result.output
    assert "Usage:" in CliRunner().invoke(main, ["--lang", "en", "--help"]).output


def _command_paths(group, prefix=()):
    """Every command of the CLI as the words that name it: ("show",), ("release", "student")."""
    for name, command in group.commands.items():
        yield (*prefix, name)
        if hasattr(command, "commands"):
            yield from _command_paths(command, (*prefix, name))


@pytest.mark.parametrize("where", ["before", "after", "after="])
def test_every_commands_help_is_chinese_wherever_lang_is_placed(where):
    """`--help` is eager: `grader show --help --lang zh` must not print before --lang is read."""
    runner = CliRunner()
    for path in _command_paths(main):
        lang = {"before": ["--lang", "zh", *path], "after": [*path, "--lang", "zh"]}
        lang["after="] = [*path, "--lang=zh"]
        arguments = [*lang[where], "--help"] if where == "before" else [*path, "--help"]
        if where != "before":
            arguments += lang[where][len(path) :]
        result = runner.invoke(main, arguments, env={"GRADER_LANG": "", "LANG": "C"})
        assert result.exit_code == 0, (arguments, result.output)
        assert "用法：" in result.output and "Usage:" not in result.output, arguments
        command = main
        for word in path:
            command = command.commands[word]
        with speaking("zh"):
            first = i18n.tr(inspect.cleandoc(command._english_help)).split("。")[0]
        first = " ".join(first.split())
        assert first and first in " ".join(result.output.split()), (arguments, first)
    assert i18n.language() == "en"


def test_a_bad_lang_after_help_or_before_a_command_is_the_usual_usage_error():
    result = CliRunner().invoke(main, ["show", "8-2", "--lang", "xx"])
    assert result.exit_code == 2 and "'xx' is not one of 'en', 'zh'" in result.output
    result = CliRunner().invoke(main, ["--lang=fr", "list"])
    assert result.exit_code == 2 and "'fr' is not one of 'en', 'zh'" in result.output
    # --lang zh wins over a GRADER_LANG the grader does not know, as choose() orders them.
    result = CliRunner().invoke(main, ["--lang", "zh", "list"], env={"GRADER_LANG": "xx"})
    assert result.exit_code == 0 and "缩放点积" in result.output


def test_lang_is_read_from_the_command_line_before_click_parses_it():
    assert i18n.lang_in_arguments(["show", "--help", "--lang", "zh"]) == "zh"
    assert i18n.lang_in_arguments(["--lang=en", "check", "--lang=zh"]) == "zh"  # the last wins
    assert i18n.lang_in_arguments(["check", "--", "--lang", "zh"]) is None  # an argument
    assert i18n.lang_in_arguments(["check", "--lang"]) is None
    # Python callers (CliRunner) may pass paths and numbers: never an error.
    assert i18n.lang_in_arguments(["merge", Path("/x/--lang=zh"), "--jobs", 2]) is None
    assert i18n.lang_in_arguments(["check", "--lang", Path("zh")]) == "zh"


def _planted_scale_forgotten(language: str):
    """8-2's ScaledDotScore judged on answers that forgot 1/√d (the plain dot products), in the
    grader's own process: the comparison and the rendering a `grader check` does."""
    record = get_exercise("8-2")
    part = record.part("ScaledDotScore")
    case = part.make_cases(np.random.default_rng(0))[0]
    right = ref.scaled_dot_scores(case.inputs["query"], case.inputs["key"])
    wrong = ref.dot_scores(case.inputs["query"], case.inputs["key"])
    want = CaseOutput(CaseStatus.OK, right, {}, dtype="float64")
    got = CaseOutput(CaseStatus.OK, wrong, {}, dtype="float64")
    with speaking(language):
        checks = judge_case(part, case, want, got)
        result = ExerciseResult("8-2", [PartResult(part.name, part.points, Status.FAILED, checks)])
        result.submission = "exercises/zh/ex8_2.py"
        from grader.report import render

        return checks, render(record, result, color=False)


def test_a_planted_mistake_is_explained_in_chinese():
    checks, text = _planted_scale_forgotten("zh")
    failed = [c for c in checks if not c.passed]
    assert failed and failed[0].mistake == "scale forgotten"  # the key stays English
    assert "缩放" in failed[0].message and "1/√d" in failed[0].message
    assert "输出" in failed[0].name and "得分：0/3" in text.replace(" ", "")
    english_checks, english = _planted_scale_forgotten("en")
    assert "the 1/√d scale is missing" in english_checks[0].message
    assert "Score: 0/3" in english


def test_the_parts_table_stays_aligned_with_wide_characters():
    """A part named in Chinese (the table pads by display width, not by characters)."""
    record = get_exercise("8-2")
    parts = [
        PartResult("注意力", 2, Status.PASSED),
        PartResult("ScaledDotScore", 3, Status.NOT_IMPLEMENTED),
        PartResult("多头注意力模型", 1, Status.FAILED),
    ]
    from grader.report import render

    with speaking("zh"):
        text = render(record, ExerciseResult("8-2", parts, submission="x.py"), color=False)
    rows = [line for line in text.splitlines() if "/" in line and line.startswith("  ")][-3:]
    columns = {display_width(row[: row.index("/") - 1]) for row in rows}
    assert len(rows) == 3 and len(columns) == 1, rows


def test_language_choice_leaves_the_environment_as_it_was():
    before = os.environ.get("LANGUAGE")
    with speaking("zh"):
        assert os.environ["LANGUAGE"] == "zh"
    assert os.environ.get("LANGUAGE") == before


def _code_of(source: str) -> str:
    """The code of a module without its docstrings and NotImplementedError messages."""
    import ast

    tree = ast.parse(source)
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if isinstance(body, list) and body and isinstance(body[0], ast.Expr):
            if isinstance(body[0].value, ast.Constant) and isinstance(body[0].value.value, str):
                body[0].value.value = ""
        if isinstance(node, ast.Raise) and isinstance(node.exc, ast.Call):
            node.exc.args = []
    return ast.dump(tree)


def test_chinese_stubs_have_the_same_code_chinese_texts_and_no_drift():
    from grader.instructor.course.stubs import package_dir, sync_translated_stubs

    assert sync_translated_stubs(write=False) == []
    for record in EXERCISES.values():
        english = (package_dir("exercises") / record.file).read_text(encoding="utf-8")
        chinese = (package_dir("exercises") / "zh" / record.file).read_text(encoding="utf-8")
        assert _code_of(english) == _code_of(chinese), record.file
        assert f'NotImplementedError("练习 {record.id}：' in chinese
        assert chinese.startswith(('"""练习', '"""实验'))


def test_a_batch_feedback_file_in_chinese(tmp_path):
    from grader.instructor.outputs.student_feedback import write_feedback

    document = {
        "student": "ada",
        "total": 0.0,
        "max_total": 3.0,
        "flags": [],
        "exercises": [
            {
                "exercise": "8-2",
                "score": 0.0,
                "max_score": 3.0,
                "parts": [
                    {
                        "name": "ScaledDotScore",
                        "score": 0.0,
                        "max_score": 3.0,
                        "status": "failed",
                        "checks": [{"name": "x", "passed": False, "message": "m"}],
                    }
                ],
            }
        ],
    }
    with speaking("zh"):
        write_feedback(tmp_path / "ada.md", document, [get_exercise("8-2")])
    text = (tmp_path / "ada.md").read_text(encoding="utf-8")
    assert "# ada 的反馈" in text and "## 练习 8-2：打分函数" in text and "未通过" in text


@pytest.mark.parametrize("language", ["en", "zh"])
def test_the_explanation_is_shown_once_without_its_detail_in_either_language(language):
    from grader.engine.compare import Difference
    from grader.engine.results import CheckResult

    with speaking(language):
        difference = Difference("the scale is missing", "scale forgotten", "at index [1]")
        check = CheckResult("output", False, difference.text(), detail=difference.detail)
        assert check.words == "the scale is missing"


def test_a_path_options_kind_is_named_in_the_language_chosen():
    """Click names a path's kind ("Directory") when the option is made, before --lang is read."""
    result = zh("batch", "/no/such/folder", "-e", "8-2")
    assert result.exit_code == 2 and "文件夹 '/no/such/folder' 不存在" in result.output
    english = CliRunner().invoke(main, ["--lang", "en", "batch", "/no/such/folder", "-e", "8-2"])
    assert "Directory '/no/such/folder' does not exist" in english.output
