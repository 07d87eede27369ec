"""The late policy: off by default, a penalty per started day up to the cap, from file times
or the roster, shown in the gradebook, the feedback and the report."""

from __future__ import annotations

import csv
import os
from datetime import datetime, timezone

import pytest

from grader.instructor.course.late import LATE_FILE, PolicyError, read_policy, write_late
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
