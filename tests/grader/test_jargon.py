"""No internal jargon in what a student reads: the feedback of planted mistakes, as `grader
check` prints it (and --verbose) and as the HTML view shows it, in English and in Chinese, holds
no tag of the grader's own ("slip: ", "property: ", "raw: "), no name of its internals (a status
enum, a Python repr) and no snake_case name that is not the student's own (a function, an
argument, a name of the exercise's stub or solution).

The planted mistakes are the PLANTED tables of tests/grader/test_*.py, graded as
benchmarks/feedback_bench.py grades them. Grading all of them in two languages takes minutes,
so each record contributes the first planted mistake of each kind it has (a mistake the record
names, a property broken, a slip the grader recognises in any exercise, NaN, none named): every
record and
every kind of mistake is covered.
"""

from __future__ import annotations

import re
import tempfile
from pathlib import Path

import pytest

from benchmarks.feedback_bench import planted_modules, source_of
from grader.grading import grade
from grader.i18n import speaking
from grader.instructor.course.stubs import package_dir
from grader.notebook.html import result_html
from grader.records import get_exercise
from grader.report import render
from grader.vocabulary.labels import mistake_words
from tests.support.grading import submit

# A tag of the grader's own at the start of a line or a bracket ("slip: ", "[property: ").
TAG = re.compile(
    r"(?m)(?:^[ \t]*|[\[(（])(slip|property|raw|mistake|cause|status|state|flags?|kind|limit"
    r"|refused|detail|key)\s*[:：]\s"
)
# A bracket's first word followed by a colon names a target of the part ("[sharpen: output").
BRACKET_PREFIX = re.compile(r"[\[（]([A-Za-z_]\w*)[:：]\s")
# The grader's internals as Python shows them.
REPR = re.compile(
    r"<[\w.]+ object at 0x[0-9a-f]+>|\b(?:RunState|CaseStatus|Status|Limit|Answer|Outcome"
    r"|CheckResult|PartResult|ExerciseResult)[.(]"
)
SNAKE = re.compile(r"(?<![\w/.\\-])[a-z][a-z0-9]*(?:_[a-z0-9]+)+(?![\w/.\\-])")
# Mathematics as the explanations write it: h_1, w_j, b_ih (one letter, then its index).
SUBSCRIPT = re.compile(r"[a-z]_[a-z0-9]+")
IDENTIFIER = re.compile(r"[A-Za-z_]\w*")


def _kind(mistake: str | None) -> str:
    if not mistake:
        return "unnamed"
    for kind in ("slip", "property"):
        if mistake.startswith(kind + ": "):
            return kind
    return "NaN" if mistake == "NaN" else "named"


def chosen_planted():
    """(exercise, part, source, header, mistake): per record, the first of each kind."""
    chosen, seen = [], set()
    for exercise, module in planted_modules():
        # This module names the tables too, and is found (half imported) among them.
        for part, body, mistake, _phrase in getattr(module, "PLANTED", ()):
            if (exercise, _kind(mistake)) in seen:
                continue
            seen.add((exercise, _kind(mistake)))
            text, header = source_of(exercise, module, body)
            # Grading a lab that trains a model trains it, in each language: only with -m long.
            marks = [pytest.mark.long] if get_exercise(exercise).trains else []
            chosen.append(
                pytest.param(exercise, part, text, header, id=f"{exercise}-{part}", marks=marks)
            )
    return chosen


def own_names(exercise: str, submitted: str) -> set[str]:
    """The names a student may read back: those of their file, of the stub and the solution
    (functions, arguments, weights, the names its docstrings use), the parts' targets."""
    record = get_exercise(exercise)
    names = set(IDENTIFIER.findall(submitted))
    for folder in ("exercises", "solutions"):
        names |= set(IDENTIFIER.findall((package_dir(folder) / record.file).read_text("utf-8")))
    names |= {target for part in record.parts for target in part.targets}
    names |= {part.name for part in record.parts}
    names.add(Path(record.file).stem)
    return names


def jargon(text: str, allowed: set[str]) -> list[str]:
    text = re.sub(r"(?:/[^\s/]+)+/?", " ", text)  # paths (a graded file's, a temporary one)
    found = [match.group(0) for match in TAG.finditer(text)]
    found += [m.group(0) for m in BRACKET_PREFIX.finditer(text) if m.group(1) not in allowed]
    found += [match.group(0) for match in REPR.finditer(text)]
    found += [
        name
        for name in SNAKE.findall(text)
        if name not in allowed and not SUBSCRIPT.fullmatch(name)
    ]
    return sorted(set(found))


def html_text(html: str) -> str:
    html = re.sub(r"<style>.*?</style>", "", html, flags=re.DOTALL)
    html = re.sub(r"<[^>]+>", "\n", html)
    return html.replace("&lt;", "<").replace("&gt;", ">").replace("&#x27;", "'")


@pytest.mark.parametrize(("exercise", "part", "source", "header"), chosen_planted())
def test_feedback_of_a_planted_mistake_holds_no_internal_jargon(exercise, part, source, header):
    record = get_exercise(exercise)
    allowed = own_names(exercise, header + source)
    for language in ("en", "zh"):
        with speaking(language), tempfile.TemporaryDirectory() as folder:
            result = grade(exercise, submit(Path(folder), exercise, source, header), parts=[part])
            assert result.part(part).score == 0, (language, result.part(part).checks[:2])
            text = render(record, result, color=False, width=1_000_000)
            verbose = render(record, result, color=False, verbose=True, width=1_000_000)
            html = html_text(result_html(record, result))
        # --verbose quotes the framework's own error as it was raised: its words are not ours.
        quoted = ("(the error as raised: ", "（报错原文：")
        verbose = "\n".join(line for line in verbose.splitlines() if line.strip() not in quoted)
        verbose = re.sub(r"\((?:the error as raised): .*|（报错原文：.*", "", verbose)
        for view, shown in (("text", text), ("verbose", verbose), ("html", html)):
            assert not jargon(shown, allowed), (language, view, jargon(shown, allowed), shown)


@pytest.mark.parametrize(
    ("key", "english", "chinese"),
    [
        ("slip: scale missing", "scale missing (a slip the grader recognises", "scale missing（"),
        ("property: keys in any order", "breaks the property “keys in any order”", "违反了性质"),
        ("NaN", "NaN or infinite values", "NaN 或无穷大的值"),
    ],
)
def test_a_mistakes_key_is_shown_in_plain_words(key, english, chinese):
    with speaking("en"):
        assert mistake_words(key).startswith(english) and not TAG.search(mistake_words(key))
    with speaking("zh"):
        assert mistake_words(key).startswith(chinese) and not TAG.search(mistake_words(key))


def test_the_patterns_find_the_jargon_they_are_for():
    """Each pattern catches what it is meant to (a test that could never fail proves nothing)."""
    allowed = {"split_heads", "num_heads", "sharpen"}
    assert jargon("[sharpen: output, B=2]", allowed) == []
    assert jargon("scale missing [slip: scale missing]", allowed) == ["[slip: "]
    assert jargon("[property: keys in any order, d=8]", allowed) == ["[property: "]
    assert jargon("[hard_indices: output]", allowed) == ["[hard_indices: ", "hard_indices"]
    assert jargon("got <grader.engine.results.CheckResult object at 0x7f3a>", allowed) != []
    assert jargon("state Status.TIMEOUT", allowed) == ["Status."]
    assert jargon("split_heads returned a tensor; see grader_failed", allowed) == ["grader_failed"]
    assert jargon("so h_1 = x_1 W_v, from /tmp/tmp_x1/ex8_2.py", allowed) == []
