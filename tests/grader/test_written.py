"""Written answers: a review sheet with every student's answer, `grader merge` of the filled
sheet into grades, results, feedback and report, clear refusals, and points that survive a rerun."""

from __future__ import annotations

import csv
import json
import shutil

import pytest
from click.testing import CliRunner

from grader.cli import main
from grader.grading import ANSWER_PLACEHOLDER
from grader.instructor.batch import merge_into_batch
from grader.instructor.course.submissions import discover
from grader.instructor.outputs import gradebook
from grader.instructor.review.written import MergeError, write_review_sheet
from grader.records import get_exercise
from tests.support.classbook import write_class

RECORD = get_exercise(
    "8-3"
)  # SelfAttention 3, causal mask 1, layer_complexity 2, path 2; 2 written


@pytest.fixture(scope="module")
def batch(tmp_path_factory):
    """ann passed every part and wrote an answer; ben passed SelfAttention only, no answer."""
    root = tmp_path_factory.mktemp("week")
    answers = root / "class" / "ann" / "answers"
    answers.mkdir(parents=True)
    (answers / "8-3.md").write_text(f"# 8-3\n{ANSWER_PLACEHOLDER}\nAttention: O(n²d).\n", "utf-8")
    (root / "class" / "ben").mkdir()
    out = root / "out"
    every = {p.name for p in RECORD.parts}
    write_class(out, {"ann": {"8-3": every}, "ben": {"8-3": {"SelfAttention"}}})
    sheet = write_review_sheet(out, [RECORD], discover(root / "class")).path
    return out, sheet


def sheet_rows(path):
    with open(path, newline="", encoding="utf-8") as handle:
        return list(csv.DictReader(handle))


def grades(out):
    return {row["student"]: row for row in sheet_rows(out / "grades.csv")}


def test_review_sheet_has_every_student_and_answer(batch):
    out, sheet = batch
    rows = sheet_rows(sheet)
    assert [(r["student"], r["exercise"], r["part"], r["max_points"]) for r in rows] == [
        ("ann", "8-3", "comparison", "2"),
        ("ben", "8-3", "comparison", "2"),
    ]
    assert rows[0]["answer"] == "Attention: O(n²d)." and rows[1]["answer"] == ""
    assert rows[0]["points"] == ""  # for the instructor to fill
    page = (out / "written" / "review.html").read_text("utf-8")
    assert "Attention: O(n²d)." in page and "no answer written" in page


@pytest.mark.parametrize(
    "line, phrase",
    [
        ("zoe,8-3,comparison,1", "no student 'zoe'"),
        ("ann,8-3,essay,1", "no written part 'essay'"),
        ("ann,8-2,comparison,1", "of exercise '8-2'"),
        ("ann,8-3,comparison,2.5", "2.5 points for 8-3 comparison, out of 0–2"),
        ("ann,8-3,comparison,-1", "out of 0–2"),
        ("ann,8-3,comparison,lots", "'lots' is not a number"),
    ],
)
def test_bad_scores_are_refused_and_nothing_is_merged(batch, tmp_path, line, phrase):
    out, _ = batch
    before = (out / "grades.csv").read_text("utf-8")
    scores = tmp_path / "scores.csv"
    scores.write_text(f"student,exercise,part,points\nben,8-3,comparison,1\n{line}\n", "utf-8")
    with pytest.raises(MergeError, match=phrase):
        merge_into_batch(out, scores)
    assert (out / "grades.csv").read_text("utf-8") == before
    assert not (out / "written" / "scores.json").exists()


def test_merge_adds_points_everywhere_and_a_rerun_keeps_them(batch):
    out, sheet = batch
    rows = sheet_rows(sheet)
    rows[0]["points"], rows[0]["comment"] = "1.5", "good on cost, path length missing"
    with open(sheet, "w", newline="", encoding="utf-8") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)  # ben's points left empty: not scored yet
    result = CliRunner().invoke(main, ["merge", str(sheet), "--out", str(out)])
    assert result.exit_code == 0, result.output
    assert "1 written scores merged" in result.output

    def check():
        table = grades(out)
        # ann: 8 automatic points + 1.5 written, out of 8 + 2; ben unchanged (3 of 8).
        assert (table["ann"]["total"], table["ann"]["max_total"]) == ("9.5", "10")
        assert table["ann"]["written"] == "1.5"
        # ben's written part is pending: it counts in his maximum as in ann's (one maximum).
        assert [table["ben"][c] for c in ("total", "max_total", "written", "written_pending")] == [
            "3",
            "10",
            "",
            "2",
        ]
        document = json.loads((out / "results" / "ann.json").read_text("utf-8"))
        assert document["total"] == 9.5
        assert document["written"]["8-3 comparison"]["points"] == 1.5
        feedback = (out / "feedback" / "ann.md").read_text("utf-8")
        assert "Total: 9.5 / 10" in feedback and "path length missing" in feedback
        report = (out / "report.html").read_text("utf-8")
        assert "Written answers" in report and "1.5/2" in report
        # The report's mean is the gradebook's: (9.5 + 3) / 2 over the same maximum.
        assert "mean 6.25 / 10" in report and ">3/10<" in report
        feedback = (out / "feedback" / "ben.md").read_text("utf-8")
        assert "Total: 3 / 10" in feedback and "2 points pending review" in feedback

    check()
    # A rerun regrades ann (her result file is written afresh, without the written points),
    # then writes the gradebook: the merged points are still there, and counted once.
    write_class(
        out, {"ann": {"8-3": {p.name for p in RECORD.parts}}, "ben": {"8-3": {"SelfAttention"}}}
    )
    gradebook.write_all(out, ["ann", "ben"], [RECORD])
    check()


def write_answer(folder, text):
    (folder / "answers").mkdir(parents=True, exist_ok=True)
    (folder / "answers" / "8-3.md").write_text(f"# 8-3\n{ANSWER_PLACEHOLDER}\n{text}\n", "utf-8")


def fill(sheet, cells: dict[str, dict[str, str]], extra: str = ""):
    """Type into the sheet in place, as a TA does in a spreadsheet: student -> column -> text;
    `extra`, a column of the TA's own."""
    rows = sheet_rows(sheet)
    for row in rows:
        row.update(cells.get(row["student"], {}))
    names = list(rows[0]) + ([extra] if extra else [])
    with open(sheet, "w", newline="", encoding="utf-8") as handle:
        writer = csv.DictWriter(handle, fieldnames=names, restval="")
        writer.writeheader()
        writer.writerows(rows)


def test_a_tas_review_sheet_survives_a_rerun(tmp_path):
    """Scores typed into review.csv (not merged yet) and a column of the TA's own are kept, a
    new student gets an empty row, a changed answer keeps its points and the old sheet is
    copied aside; the TA is told each of these."""
    root = tmp_path / "class"
    write_answer(root / "ann", "Attention: O(n²d).")
    write_answer(root / "ben", "RNN: O(n).")
    out = tmp_path / "out"
    write_class(out, {"ann": {"8-3": {"SelfAttention"}}, "ben": {"8-3": set()}})
    sheet = write_review_sheet(out, [RECORD], discover(root)).path
    fill(sheet, {"ann": {"points": "1.50", "comment": "=good", "ta": "Li"}, "ben": {}}, "ta")
    typed = sheet.read_text("utf-8")

    # Unchanged class: the sheet is the TA's, byte for byte, and no backup is made.
    again = write_review_sheet(out, [RECORD], discover(root))
    assert sheet.read_text("utf-8") == typed and again.backup is None
    assert any("1 scores typed there are kept" in note for note in again.notes)
    assert any("not merged yet (ann 8-3 comparison)" in note for note in again.notes)

    # ann rewrites her answer, cat hands in late: a rerun merges into the sheet.
    write_answer(root / "ann", "Attention: O(n²d); paths O(1).")
    write_answer(root / "cat", "Both O(n).")
    update = write_review_sheet(out, [RECORD], discover(root))
    rows = {row["student"]: row for row in sheet_rows(sheet)}
    assert list(rows) == ["ann", "ben", "cat"]
    assert (rows["ann"]["points"], rows["ann"]["comment"], rows["ann"]["ta"]) == (
        "1.50",
        "=good",
        "Li",
    )
    assert rows["ann"]["answer"] == "Attention: O(n²d); paths O(1)."
    assert (rows["cat"]["points"], rows["cat"]["answer"]) == ("", "Both O(n).")
    assert update.backup is not None and update.backup.read_text("utf-8") == typed
    assert any("answer changed since it was scored" in n and "ann" in n for n in update.notes)
    assert any(str(update.backup) in note for note in update.notes)

    # The kept sheet merges as typed.
    write_class(out, {s: {"8-3": set()} for s in ("ann", "ben", "cat")})
    result = CliRunner().invoke(main, ["merge", str(sheet), "--out", str(out)])
    assert result.exit_code == 0 and "1 written scores merged" in result.output
    assert grades(out)["ann"]["written"] == "1.5"


def test_a_student_leaving_the_class_takes_no_score_silently(tmp_path):
    root = tmp_path / "class"
    write_answer(root / "ann", "a")
    write_answer(root / "ben", "b")
    out = tmp_path / "out"
    write_class(out, {"ann": {"8-3": set()}, "ben": {"8-3": set()}})
    sheet = write_review_sheet(out, [RECORD], discover(root)).path
    fill(sheet, {"ben": {"points": "2"}})
    typed = sheet.read_text("utf-8")
    shutil.rmtree(root / "ben")
    update = write_review_sheet(out, [RECORD], discover(root))
    assert [row["student"] for row in sheet_rows(sheet)] == ["ann"]
    assert update.backup.read_text("utf-8") == typed
    assert any("no longer in this batch): ben 8-3 comparison" in n for n in update.notes)
