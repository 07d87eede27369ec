"""The late policy: off by default, a penalty per started day up to the cap, from file times
or the roster, shown in the gradebook, the feedback and the report."""

from __future__ import annotations

import csv
import os
from datetime import datetime, timezone
from pathlib import Path

import pytest

from grader.instructor.course.late import LATE_FILE, PolicyError, read_policy, write_late
from grader.instructor.course.stubs import package_dir
from grader.instructor.course.submissions import discover
from grader.instructor.outputs import gradebook
from grader.records import get_exercise
from tests.support.classbook import write_class

DUE = datetime(2026, 11, 21, 12, 0, tzinfo=timezone.utc)
POLICY = """[late]
due = "2026-11-21T20:00:00+08:00"
penalty_per_day = 0.1
cap = 0.25
"""


@pytest.fixture
def week(tmp_path):
    """ann on time, ben 1 h late (1 started day), cat 5 days late (capped)."""
    for name, hours in (("ann", -2), ("ben", 1), ("cat", 24 * 4 + 3)):
        (tmp_path / "class" / name).mkdir(parents=True)
        path = tmp_path / "class" / name / "ex8_2.py"
        path.write_text("x = 1\n", "utf-8")
        moment = DUE.timestamp() + hours * 3600
        os.utime(path, (moment, moment))
    every = {p.name for p in get_exercise("8-2").parts}
    write_class(tmp_path / "out", {s: {"8-2": every} for s in ("ann", "ben", "cat")})
    (tmp_path / "course.toml").write_text(POLICY, "utf-8")
    return tmp_path


def totals(out):
    with open(out / "grades.csv", newline="", encoding="utf-8") as handle:
        return {r["student"]: (r["total"], r.get("late_penalty")) for r in csv.DictReader(handle)}


def test_penalties_per_started_day_up_to_the_cap(week):
    out = week / "out"
    write_late(out, read_policy(week / "course.toml"), discover(week / "class"))
    gradebook.write_all(out, ["ann", "ben", "cat"], [get_exercise("8-2")])
    # 10 points each: ben loses 10%, cat 25% (5 days x 10%, capped).
    assert totals(out) == {"ann": ("10", ""), "ben": ("9", "1"), "cat": ("7.5", "2.5")}
    assert "5 day(s) after the due date" in (out / "feedback" / "cat.md").read_text("utf-8")
    assert "Late work" in (out / "report.html").read_text("utf-8")


def test_off_by_default_and_removed_when_no_policy_is_given(week):
    out = week / "out"
    assert totals(out) == {"ann": ("10", None), "ben": ("10", None), "cat": ("10", None)}
    write_late(out, read_policy(week / "course.toml"), discover(week / "class"))
    write_late(out, None, discover(week / "class"))
    assert not (out / LATE_FILE).exists()


def test_times_from_the_roster(week):
    (week / "roster.csv").write_text(
        "submission,submitted_at\nann,2026-11-21T11:00Z\nben,2026-11-23T11:59Z\n"
        "cat,2026-11-21T12:00Z\n",
        "utf-8",
    )
    (week / "course.toml").write_text(POLICY + 'timestamps = "roster"\nroster = "roster.csv"\n')
    out = week / "out"
    write_late(out, read_policy(week / "course.toml"), discover(week / "class"))
    gradebook.write_all(out, ["ann", "ben", "cat"], [get_exercise("8-2")])
    assert totals(out) == {"ann": ("10", ""), "ben": ("8", "2"), "cat": ("10", "")}


@pytest.mark.parametrize(
    "text, phrase",
    [
        ('[late]\ndue = "2026-11-21T20:00:00"\npenalty_per_day = 0.1\n', "no UTC offset"),
        ('[late]\ndue = "soon"\npenalty_per_day = 0.1\n', "not an ISO 8601 time"),
        ('[late]\ndue = "2026-11-21T20:00Z"\n', "give penalty_per_day"),
        ('[late]\ndue = "2026-11-21T20:00Z"\npenalty_per_day = 2\n', "between 0 and 1"),
        ('[late]\ndue = "2026-11-21T20:00Z"\npenalty_per_day = 0.1\nfine = 1\n', "unknown key"),
    ],
)
def test_a_bad_policy_says_what_to_fix(tmp_path, text, phrase):
    (tmp_path / "course.toml").write_text(text, "utf-8")
    with pytest.raises(PolicyError, match=phrase):
        read_policy(tmp_path / "course.toml")


def test_a_rerun_that_drops_or_changes_the_policy_says_so(week):
    out, students = week / "out", discover(week / "class")
    assert write_late(out, read_policy(week / "course.toml"), students) == []
    changed = POLICY.replace("cap = 0.25", "cap = 0.5")
    (week / "course.toml").write_text(changed, "utf-8")
    [note] = write_late(out, read_policy(week / "course.toml"), students)
    assert "late policy changed" in note and "cap 0.25 → 0.5" in note
    [note] = write_late(out, None, students)
    assert "no --course" in note and "2026-11-21T20:00:00+08:00" in note
    assert not (out / LATE_FILE).exists()
    assert write_late(out, None, students) == []  # said once: nothing left to drop


# LMS downloads (issue 49): their files were written when the download was unzipped, just now,
# after the due date; the LMS's own information decides who is late.


def _unzipped_now(folder):
    """Every file of a download as an unzip leaves it: written now, within a second."""
    for path in folder.rglob("*"):
        if path.is_file():
            os.utime(path)


def _graded(tmp_path, students):
    every = {p.name for p in get_exercise("8-2").parts}
    write_class(tmp_path / "out", {s: {"8-2": every} for s in students})
    return tmp_path / "out"


def _entries(out):
    import json

    return json.loads((out / LATE_FILE).read_text("utf-8"))["students"]


@pytest.fixture
def canvas(tmp_path):
    """Canvas's "Download Submissions": ann and ben on time, cat marked `_late` (on her
    re-upload, the file that is graded); the course file the docs show (file times)."""
    download = tmp_path / "canvas"
    download.mkdir()
    (download / "ann_1001_5001_ex8_2.py").write_text("x = 1\n", "utf-8")
    (download / "ben_1002_5002_ex8_2.py").write_text("x = 1\n", "utf-8")
    (download / "cat_1003_5003_ex8_2.py").write_text("x = 0\n", "utf-8")
    (download / "cat_late_1003_5004_ex8_2-1.py").write_text("x = 1\n", "utf-8")
    _unzipped_now(download)
    (tmp_path / "course.toml").write_text(POLICY, "utf-8")
    return tmp_path


def test_a_canvas_download_charges_only_those_canvas_marks_late(canvas):
    out = _graded(canvas, ["ann", "ben", "cat"])
    notes = write_late(out, read_policy(canvas / "course.toml"), discover(canvas / "canvas"))
    gradebook.write_all(out, ["ann", "ben", "cat"], [get_exercise("8-2")])
    assert totals(out) == {"ann": ("10", ""), "ben": ("10", ""), "cat": ("9", "1")}
    entries = _entries(out)
    assert {s: e["source"] for s, e in entries.items()} == dict.fromkeys(
        ("ann", "ben", "cat"), "Canvas _late mark"
    )
    assert entries["cat"]["submitted"] is None and entries["cat"]["days_late"] == 1
    assert len(notes) == 1 and "cat" in notes[0] and "submitted_at" in notes[0]
    report = (out / "report.html").read_text("utf-8")
    late, on_time = report.split("Late work")[1].split("on time: 2")
    assert "<td>cat</td>" in late and "<td>ann</td>" not in late
    assert "<td>ann</td><td>—</td><td>Canvas _late mark</td>" in on_time
    feedback = (out / "feedback" / "cat.md").read_text("utf-8")
    assert "marked late by Canvas; how late is not known, counted as 1 day(s)" in feedback
    assert "late" not in (out / "feedback" / "ann.md").read_text("utf-8").lower()


def test_a_canvas_download_with_a_roster_takes_its_submitted_at(canvas):
    (canvas / "roster.csv").write_text(
        "submission,submitted_at\nann,2026-11-21T11:00Z\nben,2026-11-21T11:59Z\n"
        "cat,2026-11-23T13:00Z\n",
        "utf-8",
    )
    (canvas / "course.toml").write_text(POLICY + 'roster = "roster.csv"\n', "utf-8")
    out = _graded(canvas, ["ann", "ben", "cat"])
    notes = write_late(out, read_policy(canvas / "course.toml"), discover(canvas / "canvas"))
    gradebook.write_all(out, ["ann", "ben", "cat"], [get_exercise("8-2")])
    # cat: 2 days and an hour after the due date, 3 started days, capped at 25%.
    assert totals(out) == {"ann": ("10", ""), "ben": ("10", ""), "cat": ("7.5", "2.5")}
    assert {e["source"] for e in _entries(out).values()} == {"roster submitted_at"}
    assert notes == []


def test_a_moodle_download_needs_the_roster_and_then_uses_it(tmp_path):
    download = tmp_path / "moodle"
    for name, user in (("Ann Li", 11), ("Ben Wu", 12)):
        folder = download / f"{name}_{user}_assignsubmission_file_"
        folder.mkdir(parents=True)
        (folder / "ex8_2.py").write_text("x = 1\n", "utf-8")
    _unzipped_now(download)
    (tmp_path / "course.toml").write_text(POLICY, "utf-8")
    out = _graded(tmp_path, ["Ann Li", "Ben Wu"])
    with pytest.raises(PolicyError, match="Moodle download.*submitted_at"):
        write_late(out, read_policy(tmp_path / "course.toml"), discover(download))
    assert not (out / LATE_FILE).exists()
    (tmp_path / "roster.csv").write_text(
        "submission,submitted_at\nAnn Li,2026-11-21T11:00Z\nBen Wu,2026-11-22T11:00Z\n", "utf-8"
    )
    (tmp_path / "course.toml").write_text(POLICY + 'roster = "roster.csv"\n', "utf-8")
    write_late(out, read_policy(tmp_path / "course.toml"), discover(download))
    entries = _entries(out)
    assert (entries["Ann Li"]["days_late"], entries["Ben Wu"]["days_late"]) == (0, 1)


def test_file_times_of_an_unzip_are_refused_with_what_to_use_instead(week):
    _unzipped_now(week / "class")
    out = week / "out"
    with pytest.raises(PolicyError, match=r"within \d+ s of each other.*submitted_at"):
        write_late(out, read_policy(week / "course.toml"), discover(week / "class"))
    assert not (out / LATE_FILE).exists()


def test_a_canvas_download_through_the_batch_charges_only_the_marked_student(canvas):
    from click.testing import CliRunner

    from grader import cli

    good = (Path(package_dir("solutions")) / "ex8_2.py").read_text("utf-8")
    for path in (canvas / "canvas").iterdir():
        path.write_text(good, "utf-8")
    _unzipped_now(canvas / "canvas")
    out = canvas / "graded"
    words = ["batch", str(canvas / "canvas"), "-e", "8-2", "--out", str(out), "--jobs", "2"]
    words += ["--no-pictures", "--no-similarity", "--course", str(canvas / "course.toml")]
    result = CliRunner().invoke(cli.main, words)
    assert result.exit_code == 0, result.output
    assert totals(out) == {"ann": ("10", ""), "ben": ("10", ""), "cat": ("9", "1")}
    assert "marked late by Canvas" in result.output


def test_canvas_marks_and_roster_times_that_disagree_are_named(canvas):
    # ann is not marked but the roster has her a day late; cat is marked but on time by it:
    # the roster decides, and the instructor hears that the two due dates may differ.
    (canvas / "roster.csv").write_text(
        "submission,submitted_at\nann,2026-11-22T11:00Z\nben,2026-11-21T11:00Z\n"
        "cat,2026-11-21T11:30Z\n",
        "utf-8",
    )
    (canvas / "course.toml").write_text(POLICY + 'roster = "roster.csv"\n', "utf-8")
    out = _graded(canvas, ["ann", "ben", "cat"])
    [note] = write_late(out, read_policy(canvas / "course.toml"), discover(canvas / "canvas"))
    assert "disagree for 2 student(s) (ann, cat)" in note and "2026-11-21T20:00:00+08:00" in note
    days = {s: e["days_late"] for s, e in _entries(out).items()}
    assert days == {"ann": 1, "ben": 0, "cat": 0}


def test_a_moodle_student_missing_from_the_roster_is_named(tmp_path):
    download = tmp_path / "moodle"
    for name, user in (("Ann Li", 11), ("Ben Wu", 12)):
        (download / f"{name}_{user}_assignsubmission_file_").mkdir(parents=True)
        (download / f"{name}_{user}_assignsubmission_file_" / "ex8_2.py").write_text("x = 1\n")
    _unzipped_now(download)
    (tmp_path / "roster.csv").write_text("submission,submitted_at\nAnn Li,2026-11-21T11:00Z\n")
    (tmp_path / "course.toml").write_text(POLICY + 'roster = "roster.csv"\n', "utf-8")
    out = _graded(tmp_path, ["Ann Li", "Ben Wu"])
    with pytest.raises(PolicyError, match=r"roster.csv: no submitted_at for Ben Wu, who comes"):
        write_late(out, read_policy(tmp_path / "course.toml"), discover(download))
    assert not (out / LATE_FILE).exists()


def _batch(submissions, out, *more):
    from click.testing import CliRunner

    from grader import cli

    words = ["batch", str(submissions), "-e", "8-2", "--out", str(out), "--jobs", "2"]
    words += ["--seed", "5", "--no-pictures", "--no-similarity", *more]
    return CliRunner().invoke(cli.main, words)


def test_unzipped_file_times_stop_the_batch_before_grading(week):
    _unzipped_now(week / "class")
    out = week / "graded"
    result = _batch(week / "class", out, "--course", str(week / "course.toml"))
    assert result.exit_code == 1, result.output
    assert "within" in result.output and "submitted_at" in result.output
    assert not (out / "results").exists() and not (out / "grades.csv").exists()


def test_a_moodle_download_through_the_batch_is_refused_then_charges_only_the_late(tmp_path):
    """Moodle's "Download all submissions", unzipped now (after the due date): Ann handed in on
    time, Ben a day late. Without a roster the policy is refused and the earlier gradebook is
    kept as it was; with the roster's submitted_at only Ben is charged."""
    good = (Path(package_dir("solutions")) / "ex8_2.py").read_text("utf-8")
    download = tmp_path / "moodle"
    for name, user in (("Ann Li", 11), ("Ben Wu", 12)):
        folder = download / f"{name}_{user}_assignsubmission_file_"
        folder.mkdir(parents=True)
        (folder / "ex8_2.py").write_text(good, "utf-8")
    _unzipped_now(download)
    out = tmp_path / "graded"
    first = _batch(download, out)
    assert first.exit_code == 0, first.output
    before = {p.name: p.read_bytes() for p in [out / "grades.csv", *(out / "results").iterdir()]}
    assert totals(out) == {"Ann Li": ("10", None), "Ben Wu": ("10", None)}

    (tmp_path / "course.toml").write_text(POLICY, "utf-8")
    refused = _batch(download, out, "--course", str(tmp_path / "course.toml"))
    assert refused.exit_code == 1, refused.output
    assert "Moodle download" in refused.output and "submitted_at" in refused.output
    after = {p.name: p.read_bytes() for p in [out / "grades.csv", *(out / "results").iterdir()]}
    assert after == before and not (out / LATE_FILE).exists()

    (tmp_path / "roster.csv").write_text(
        "submission,submitted_at\nAnn Li,2026-11-21T11:59Z\nBen Wu,2026-11-22T12:30Z\n",
        "utf-8",
    )
    (tmp_path / "course.toml").write_text(POLICY + 'roster = "roster.csv"\n', "utf-8")
    graded = _batch(download, out, "--course", str(tmp_path / "course.toml"))
    assert graded.exit_code == 0, graded.output
    # Ben: 1 day and 30 minutes after the due date, 2 started days, 20%.
    assert totals(out) == {"Ann Li": ("10", ""), "Ben Wu": ("8", "2")}
    assert {e["source"] for e in _entries(out).values()} == {"roster submitted_at"}
