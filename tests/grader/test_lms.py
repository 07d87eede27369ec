"""Grades into Canvas and Moodle: the import files have the columns those systems document, the
totals of the gradebook, and nobody is dropped without being named."""

from __future__ import annotations

import csv
import json

import pytest
from click.testing import CliRunner

from grader.cli import main
from grader.instructor.course.roster import LmsError, read_roster
from grader.instructor.outputs.lms import export_grades
from grader.records import get_exercise
from tests.support.classbook import write_class

# The identity columns of Canvas's gradebook export, which its import reads back.
CANVAS_HEADER = ["Student", "ID", "SIS User ID", "SIS Login ID", "Section"]
ROSTER = (
    "submission,name,canvas_id,sis_user_id,sis_login_id,section,email\n"
    'ann,"Lee, Ann",101,S1,ann@uni,Group A,ann@uni.example\n'
    'ben,"Ng, Ben",102,S2,ben@uni,Group B,ben@uni.example\n'
    'cat,"Roe, Cat",103,S3,cat@uni,Group A,cat@uni.example\n'
    'dan,"Poe, Dan",104,S4,dan@uni,Group B,dan@uni.example\n'
)


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    """ann full marks, ben two parts, cat's total not final, eve graded but not in the roster;
    dan is in the roster and handed nothing in."""
    out = tmp_path_factory.mktemp("out")
    every = {p.name for p in get_exercise("8-2").parts}
    write_class(
        out,
        {
            "ann": {"8-2": every},
            "ben": {"8-2": {"ScaledDotScore", "variances"}},
            "cat": {"8-2": every},
            "eve": {"8-2": set()},
        },
        not_final={"cat"},
    )
    roster = out / "roster.csv"
    roster.write_text(ROSTER, encoding="utf-8")
    return out, roster


def rows(path):
    with open(path, newline="", encoding="utf-8") as handle:
        return list(csv.reader(handle))


def test_canvas_file_has_canvas_identity_columns_and_the_totals(graded):
    out, roster = graded
    export = export_grades(out, read_roster(roster), "canvas", "Week 8", "4711")
    table = rows(export.path)
    assert table[0] == [*CANVAS_HEADER, "Week 8 (4711)"]
    # Totals from the record's points: all 10, and ScaledDotScore 3 + variances 2.
    assert table[1:] == [
        ["Lee, Ann", "101", "S1", "ann@uni", "Group A", "10"],
        ["Ng, Ben", "102", "S2", "ben@uni", "Group B", "5"],
    ]
    assert export.not_submitted == ["dan"]
    assert export.not_in_roster == ["eve"]
    assert export.not_final == ["cat"]
    words = " ".join(export.problems())
    assert "dan" in words and "eve" in words and "cat" in words


def test_moodle_file_has_one_identifier_column_then_the_grade(graded):
    out, roster = graded
    export = export_grades(out, read_roster(roster), "moodle", "Week 8")
    assert rows(export.path) == [
        ["email", "Week 8"],
        ["ann@uni.example", "10"],
        ["ben@uni.example", "5"],
    ]


def test_a_new_canvas_assignment_has_no_id_in_its_column(graded):
    out, roster = graded
    export = export_grades(out, read_roster(roster), "canvas", "Week 8")
    assert rows(export.path)[0][-1] == "Week 8"


@pytest.mark.parametrize(
    "text, system, phrase",
    [
        ("name,email\nAnn,a@x\n", "csv", "needs a 'submission' column"),
        ("submission,email\nann,a@x\nann,b@x\n", "csv", "listed twice"),
        ("submission,mail\nann,a@x\n", "csv", "unknown roster column(s) mail"),
        ("submission,name\nann,Ann\nben,Ben\n", "canvas", "ann has none of canvas_id"),
        ("submission,name\nann,Ann\nben,Ben\n", "moodle", "identifies a user by email"),
    ],
)
def test_a_bad_roster_is_refused_with_what_to_fix(graded, tmp_path, text, system, phrase):
    out, _ = graded
    path = tmp_path / "roster.csv"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(LmsError, match=phrase.replace("(", r"\(").replace(")", r"\)")):
        export_grades(out, read_roster(path), system)


def test_export_command_writes_the_file_and_names_who_is_missing(graded):
    out, roster = graded
    result = CliRunner().invoke(
        main, ["export", "moodle", "--out", str(out), "--roster", str(roster)]
    )
    assert result.exit_code == 0, result.output
    assert "2 students" in result.output
    assert "dan" in result.output and "eve" in result.output
    assert (out / "lms" / "moodle.csv").is_file()


def test_export_without_a_batch_says_to_run_one(tmp_path, graded):
    _, roster = graded
    with pytest.raises(LmsError, match="run `grader batch` first"):
        export_grades(tmp_path, read_roster(roster), "canvas")


def test_an_export_names_its_source_and_a_later_gradebook_says_it_is_stale(tmp_path):
    """The export carries the gradebook it was made from; writing the gradebook again (a merge,
    a rerun) names the export as stale, and `grader merge` prints it."""
    from grader.instructor.outputs import gradebook
    from grader.records import get_exercise

    out = tmp_path / "out"
    write_class(out, {"ann": {"8-2": {"ScaledDotScore"}}, "ben": {"8-2": set()}})
    roster = tmp_path / "roster.csv"
    roster.write_text(ROSTER, encoding="utf-8")
    export = export_grades(out, read_roster(roster), "csv")
    source = json.loads((out / "lms" / "csv.source.json").read_text("utf-8"))
    assert source["students"] == ["ann", "ben"] and source["gradebook"] == "grades.csv"
    assert gradebook.write_all(out, ["ann", "ben"], [get_exercise("8-2")]) == []  # unchanged
    write_class(out, {"ann": {"8-2": set()}, "ben": {"8-2": set()}})  # ann regraded: 0
    [note] = gradebook.write_all(out, ["ann", "ben"], [get_exercise("8-2")])
    assert str(export.path) in note and "grader export csv" in note
    export_grades(out, read_roster(roster), "csv")
    assert gradebook.write_all(out, ["ann", "ben"], [get_exercise("8-2")]) == []
