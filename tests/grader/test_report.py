"""report.html and the gradebook from hand-made result documents (no grading runs): every
cause of a lost part counted apart, checks grouped by kind, mistakes by part, readable bins,
and a rerun that merges with the folder instead of forgetting."""

import csv
import io
import json
import re

import pytest

from grader.instructor.outputs import gradebook
from grader.instructor.outputs.outcomes import Outcome, part_outcomes
from grader.instructor.outputs.report_html import bin_label, check_kind, histogram_bins, report_html
from grader.records import EXERCISES

pytestmark = pytest.mark.ex8_2

RECORD = EXERCISES["8-2"]
PARTS = [p.name for p in RECORD.parts]
SHAPES = ["B=2 Tq=3 Tk=5 d=4", "B=1 Tq=1 Tk=1 d=1", "B=3 Tq=4 Tk=2 d=7"]


def exercise(statuses: dict, checks: dict | None = None, exercise_id="8-2") -> dict:
    record = EXERCISES[exercise_id]
    parts = []
    for part in record.parts:
        status = statuses.get(part.name, "passed")
        default = [
            {"name": f"output, {s}", "passed": status == "passed", "message": ""} for s in SHAPES
        ]
        parts.append(
            {
                "name": part.name,
                "score": float(part.points) if status == "passed" else 0.0,
                "max_score": float(part.points),
                "status": status,
                "checks": (checks or {}).get(part.name, default),
            }
        )
    return {
        "exercise": exercise_id,
        "score": sum(p["score"] for p in parts),
        "max_score": float(record.max_score),
        "parts": parts,
    }


def document(student, statuses=None, flags=(), checks=None, mistakes=None, **extra) -> dict:
    graded = exercise(statuses or {}, checks)
    return {
        "student": student,
        "seed": 3,
        "flags": sorted(flags),
        "total": graded["score"],
        "max_total": graded["max_score"],
        "exercises": [graded],
        "mistakes": mistakes or {},
        **extra,
    }


ALL = dict.fromkeys(PARTS)
FIRST = PARTS[0]
ONE_MISTAKE_ON_EVERY_SHAPE = {
    FIRST: [
        {"name": f"{kind}, {shape}", "passed": kind == "dtype", "message": "x"}
        for shape in SHAPES
        for kind in ("output", "dtype", "gradient wrt q")
    ]
}
CLASS = [
    document("ann"),
    document("ben", {FIRST: "failed"}, checks=ONE_MISTAKE_ON_EVERY_SHAPE,
             mistakes={f"8-2 {FIRST}": ["no scaling"], f"8-2 {PARTS[1]}": ["no scaling"]}),
    document("cat", {FIRST: "failed"}, checks=ONE_MISTAKE_ON_EVERY_SHAPE,
             mistakes={f"8-2 {FIRST}": ["no scaling"]}),
    document("dan", dict.fromkeys(PARTS, "error"), flags=["missing-8-2"]),
    document("eve", dict.fromkeys(PARTS, "not_implemented")),
    document("fay", {FIRST: "error"}),
    document("gus", {PARTS[3]: "timeout"}, flags=["refused-process:8-2"]),
    document("hal", {PARTS[3]: "timeout"}),
    document("ivy", flags=["imports-attnkit:8-2"]),
    document("jon", {FIRST: "error"}, final=False, grader_errors={f"8-2 {FIRST}": "helper died"}),
]  # fmt: skip


def test_every_cause_of_a_lost_part_is_its_own_outcome():
    outcome = {d["student"]: part_outcomes(d) for d in CLASS}
    key = f"8-2 {FIRST}"
    assert outcome["ann"][key] == Outcome.PASSED
    assert outcome["ben"][key] == Outcome.FAILED
    assert set(outcome["dan"].values()) == {Outcome.MISSING}
    assert set(outcome["eve"].values()) == {Outcome.NOT_STARTED}
    assert outcome["fay"][key] == Outcome.CRASHED
    assert outcome["hal"][f"8-2 {PARTS[3]}"] == Outcome.TIMED_OUT
    assert set(outcome["gus"].values()) == {Outcome.FLAGGED}  # the sandbox refused it
    assert set(outcome["ivy"].values()) == {Outcome.FLAGGED}  # passed, but imports the kit
    assert outcome["jon"][key] == Outcome.GRADER_ERROR
    assert outcome["jon"][f"8-2 {PARTS[1]}"] == Outcome.PASSED


def table(html: str, heading: str) -> list[list[str]]:
    """The rows of the table after `<h2>heading</h2>`, as lists of cell texts."""
    section = html.split(f"<h2>{heading}</h2>", 1)[1].split("</table>", 1)[0]
    rows = re.findall(r"<tr>(.*?)</tr>", section, re.S)
    cells = [re.findall(r"<t[dh][^>]*>(.*?)</t[dh]>", row, re.S) for row in rows]
    return [[re.sub(r"<[^>]+>", "", cell).strip() for cell in row] for row in cells]


@pytest.fixture(scope="module")
def html():
    return report_html(CLASS, [RECORD], "test")


def test_the_parts_table_counts_each_outcome_apart(html):
    rows = table(html, "Parts")
    head = rows[0][1:]
    assert head == [str(o) for o in Outcome]
    counts = {row[0]: dict(zip(head, map(int, row[1:]), strict=True)) for row in rows[1:]}
    first = counts[f"8-2 {FIRST}"]
    assert first["failed"] == 2 and first["missing"] == 1 and first["not started"] == 1
    assert first["crashed"] == 1 and first["flagged"] == 2 and first["grader error"] == 1
    assert first["passed"] == 2  # ann and hal; never the 7 causes above
    assert counts[f"8-2 {PARTS[3]}"]["timed out"] == 1
    assert sum(first.values()) == len(CLASS)


def test_the_summary_line_and_students_table_name_the_outcomes(html):
    summary = re.sub(r"<[^>]+>", "", html.split("<p>Parts: ", 1)[1].split("</p>", 1)[0])
    assert "missing 5" in summary and "timed out 1" in summary and "crashed 1" in summary
    students = {row[0]: row for row in table(html, "Students")[1:]}
    assert "timed out" in students["hal"][1] and PARTS[3] in students["hal"][1]
    assert "crashed" in students["fay"][1] and "missing" in students["dan"][1]
    assert "not final" in students["jon"][2]
    assert students["ann"][1].endswith("passed")


def test_checks_are_grouped_by_kind_across_shapes_counting_students(html):
    rows = table(html, "Checks failed most often")[1:]
    # One mistake on three shapes, for two students: one row per kind, counting the students
    # whose code for the part ran to the end (ann ben cat gus hal ivy; not the missing, the
    # unstarted, the crashed, nor jon, whose result is not final).
    assert [r[:3] for r in rows] == [
        [f"8-2 {FIRST}", "gradient wrt q", "2/2"],
        [f"8-2 {FIRST}", "output", "2/6"],
    ]
    assert check_kind("output, W of shape (1, 1)") == "output"
    assert check_kind("q: gradient wrt q, hidden, B=1 Tq=1") == "q: gradient wrt q"
    assert check_kind("W of shape (1, 1)") == "the case ran"


def test_mistakes_have_one_row_each_with_their_part(html):
    rows = table(html, "Most common named mistakes")[1:]
    assert rows == [[f"8-2 {FIRST}", "no scaling", "2"], [f"8-2 {PARTS[1]}", "no scaling", "1"]]


@pytest.mark.parametrize(
    "maximum,labels",
    [
        (10, [str(n) for n in range(11)]),
        (18, ["0–1", "2–3", "4–5", "6–7", "8–9", "10–11", "12–13", "14–15", "16–17", "18"]),
    ],
)
def test_histogram_bins_are_whole_points(maximum, labels):
    width, count = histogram_bins(maximum)
    assert [bin_label(i, width, maximum) for i in range(count)] == labels


def test_a_histogram_counts_every_student_in_its_bin():
    svg = report_html([document("a"), document("b", dict.fromkeys(PARTS, "failed"))], [RECORD])
    counts = [int(n) for n in re.findall(r"<title>(\d+)</title>", svg)]
    assert counts[0] == 1 and counts[-1] == 1 and sum(counts) == 2


# The gradebook across reruns.


def write_result(out, doc):
    (out / "results").mkdir(parents=True, exist_ok=True)
    (out / "feedback").mkdir(exist_ok=True)
    (out / "results" / f"{doc['student']}.json").write_text(json.dumps(doc))
    (out / "feedback" / f"{doc['student']}.md").write_text("feedback")


def test_a_rerun_with_other_exercises_keeps_the_earlier_columns(tmp_path):
    earlier = document("ann", flags=["imports-attnkit:8-2"], mistakes={"8-2 x": ["m"]})
    other = exercise({}, exercise_id="8-1")
    now = {**document("ann"), "exercises": [other], "total": other["score"], "flags": []}
    now["max_total"] = other["max_score"]
    merged = gradebook.merge_previous(now, earlier, ["8-1"])
    assert [e["exercise"] for e in merged["exercises"]] == ["8-1", "8-2"]
    assert merged["total"] == other["score"] + RECORD.max_score
    assert merged["flags"] == ["imports-attnkit:8-2"] and merged["mistakes"] == {"8-2 x": ["m"]}
    # Regrading 8-2 itself replaces it, and drops its old flags.
    regraded = gradebook.merge_previous(document("ann"), earlier, ["8-2"])
    assert regraded["flags"] == [] and len(regraded["exercises"]) == 1

    write_result(tmp_path, merged)
    gradebook.write_all(tmp_path, ["ann"], [EXERCISES["8-1"]])
    rows = list(csv.DictReader(io.StringIO((tmp_path / "grades.csv").read_text())))
    assert rows[0]["8-2"] == f"{RECORD.max_score:g}" and rows[0]["8-1"] != ""


def test_a_student_no_longer_submitted_is_moved_aside_and_reported(tmp_path):
    for student in ("ann", "ben"):
        write_result(tmp_path, document(student))
    moved = gradebook.set_aside_removed(tmp_path, ["ann"])
    assert moved == ["ben"]
    assert (tmp_path / "removed" / "results" / "ben.json").is_file()
    assert (tmp_path / "removed" / "feedback" / "ben.md").is_file()
    assert not (tmp_path / "results" / "ben.json").exists()
    gradebook.write_all(tmp_path, ["ann"], [RECORD], removed=moved)
    grades = (tmp_path / "grades.csv").read_text()
    assert "ben" not in grades and "ann" in grades
    assert "Moved aside" in (tmp_path / "report.html").read_text()
