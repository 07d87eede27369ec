"""No internal jargon in what a student reads: the feedback of planted mistakes, as `grader
check` prints it (and --verbose) and as the HTML view shows it, in English and in Chinese, holds
no tag of the grader's own ("slip: ", "property: ", "raw: "), no name of its internals (a status
enum, a Python repr) and no snake_case name that is not the student's own (a function, an
argument, a name of the exercise's stub or solution).

The planted mistakes are the PLANTED tables of tests/grader/test_*.py. In English every one of
them is checked where tests/grader/test_records.py grades them (once, for all it asserts). In
Chinese each is graded again, as benchmarks/feedback_bench.py grades them: each record
contributes the first planted mistake of each kind it has (a mistake the record names, a
property broken, a slip the grader recognises in any exercise, NaN, none named), so every record
and every kind of mistake is covered. The patterns are in tests/support/jargon.py.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

import pytest

from benchmarks.feedback_bench import planted_modules, source_of
from grader.grading import grade
from grader.i18n import speaking
from grader.records import get_exercise
from grader.vocabulary.labels import mistake_words
from tests.support.grading import submit
from tests.support.jargon import TAG, jargon, shown_jargon


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


@pytest.mark.parametrize(("exercise", "part", "source", "header"), chosen_planted())
def test_chinese_feedback_of_a_planted_mistake_holds_no_internal_jargon(
    exercise, part, source, header
):
    """In Chinese; the English of every planted mistake is checked where test_records grades
    them (test_each_planted_mistake_fails_its_part_with_the_mistake_named)."""
    with speaking("zh"), tempfile.TemporaryDirectory() as folder:
        result = grade(exercise, submit(Path(folder), exercise, source, header), parts=[part])
        assert result.part(part).score == 0, result.part(part).checks[:2]
        found = shown_jargon(exercise, result, header + source)
    assert not found, found


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
