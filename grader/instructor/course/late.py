"""Late work: a due date and a penalty per day (capped) from a course file, applied from each
submission's time. Off unless the batch is given a course file with a [late] table:

    [late]
    due = "2026-11-21T23:59:00+08:00"   # with its UTC offset
    penalty_per_day = 0.1               # a share of the student's total, per started day
    cap = 0.5                           # the most a penalty takes
    grace_minutes = 0
    timestamps = "files"                # "files": the newest file of the submission;
    # roster = "roster.csv"             # "roster": its submitted_at column (ISO 8601)

Where the time comes from (each student's `source` in late.json and the report): an LMS
download's files were written when it was unzipped, so for its students the LMS decides: the
roster's submitted_at where a roster is given, else Canvas's `_late` mark (late by at least one
started day; how late, only submitted_at says), and a Moodle download, which marks nothing,
needs the roster. File times are used for folders and zips of the students' own, and refused
where they cannot be submission times: all after the due date within seconds of each other, as
an unzip, a copy or a clone leaves them.
"""

from __future__ import annotations

import json
import math
import sys
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from pathlib import Path

from grader.i18n import _
from grader.instructor.course.submissions import Student
from grader.instructor.files import atomic_write

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib

LATE_FILE = "late.json"


class PolicyError(ValueError):
    """The course file's late policy cannot be used; the message says what to fix."""


@dataclass(frozen=True)
class LatePolicy:
    due: datetime
    penalty_per_day: float
    cap: float = 1.0
    grace_minutes: float = 0.0
    timestamps: str = "files"
    roster: Path | None = None

    def fraction(self, submitted: datetime) -> tuple[int, float]:
        """Started days late and the share of the total taken."""
        late = submitted - self.due - timedelta(minutes=self.grace_minutes)
        days = math.ceil(late / timedelta(days=1)) if late > timedelta(0) else 0
        return days, min(self.cap, days * self.penalty_per_day)


def _moment(text: str, where: str) -> datetime:
    try:
        moment = datetime.fromisoformat(str(text).strip().replace("Z", "+00:00"))
    except ValueError:
        raise PolicyError(f"{where}: {text!r} is not an ISO 8601 time") from None
    if moment.tzinfo is None:
        raise PolicyError(
            f"{where}: {text!r} has no UTC offset (write e.g. 2026-11-21T23:59+08:00)"
        )
    return moment


def read_policy(path: Path) -> LatePolicy | None:
    """The [late] table of a course file (TOML); None when it has none."""
    try:
        data = tomllib.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as error:
        raise PolicyError(f"cannot read the course file {path}: {error}") from None
    table = data.get("late")
    if table is None:
        return None
    known = {"due", "penalty_per_day", "cap", "grace_minutes", "timestamps", "roster"}
    unknown = sorted(set(table) - known)
    if unknown:
        raise PolicyError(
            f"{path} [late]: unknown key(s) {', '.join(unknown)}; known: {', '.join(sorted(known))}"
        )
    for key in ("due", "penalty_per_day"):
        if key not in table:
            raise PolicyError(f"{path} [late]: give {key}")
    numbers = {}
    for key, low, high in (("penalty_per_day", 0, 1), ("cap", 0, 1), ("grace_minutes", 0, None)):
        if key in table:
            value = table[key]
            if not isinstance(value, (int, float)) or value < low or (high and value > high):
                limit = f"between {low} and {high}" if high else f"at least {low}"
                raise PolicyError(f"{path} [late]: {key} = {value!r} must be a number {limit}")
            numbers[key] = float(value)
    timestamps = table.get("timestamps", "files")
    if timestamps not in ("files", "roster"):
        raise PolicyError(f"{path} [late]: timestamps = {timestamps!r}: 'files' or 'roster'")
    roster = None
    if timestamps == "roster" and "roster" not in table:
        raise PolicyError(f"{path} [late]: timestamps = 'roster' needs roster = '<file>'")
    if "roster" in table:  # with "files", the times of an LMS download's students
        roster = (Path(path).parent / table["roster"]).resolve()
    return LatePolicy(
        _moment(table["due"], f"{path} [late] due"),
        numbers["penalty_per_day"],
        numbers.get("cap", 1.0),
        numbers.get("grace_minutes", 0.0),
        timestamps,
        roster,
    )


def file_time(student: Student) -> datetime:
    """When the submission was last changed: its newest file (a folder's, or an LMS download's
    files') or the zip itself."""
    paths = []
    for entry in student.paths():
        paths += (
            [entry]
            if entry.is_file()
            else [p for p in entry.rglob("*") if p.is_file() and not p.is_symlink()]
        )
    newest = max((p.stat().st_mtime for p in paths), default=student.entry.stat().st_mtime)
    return datetime.fromtimestamp(newest, tz=timezone.utc)


# Where a student's time came from, as late.json and the report name it.
FROM_FILES, FROM_ROSTER, FROM_CANVAS_MARK = "file time", "roster submitted_at", "Canvas _late mark"
# File times of this many students or more, all after the due date and this close together, are
# an unzip's, a copy's or a clone's, not the students'.
UNZIPPED_STUDENTS, UNZIPPED_SECONDS = 2, 10.0


@dataclass(frozen=True)
class Submitted:
    """When a student handed in (None where only a mark says whether they were late), how
    that is known, and the LMS's own mark."""

    time: datetime | None
    source: str
    marked_late: bool = False


def submission_times(policy: LatePolicy, students: list[Student]) -> dict[str, Submitted]:
    """Each student's time and its source (see the module's docstring); a PolicyError where
    the policy cannot be applied as given, saying what to give instead."""
    rows = _roster_rows(policy) if policy.roster is not None else {}
    times: dict[str, Submitted] = {}
    for student in students:
        text = rows.get(student.id, {}).get("submitted_at", "")
        if policy.timestamps == "roster" or (student.lms and text):
            if not text:
                raise PolicyError(f"{policy.roster}: no submitted_at for {student.id}")
            moment = _moment(text, f"{policy.roster}, {student.id}")
            times[student.id] = Submitted(moment, FROM_ROSTER, student.marked_late)
        elif student.lms == "canvas":
            times[student.id] = Submitted(None, FROM_CANVAS_MARK, student.marked_late)
        elif student.lms and policy.roster is not None:
            raise PolicyError(
                _(
                    "{roster}: no submitted_at for {student}, who comes from a Moodle download: "
                    "its file times are when it was unzipped and its names carry no late mark, "
                    "so only the roster can say when they handed in (docs/lms.md)",
                    roster=policy.roster,
                    student=student.id,
                )
            )
        elif student.lms:
            raise PolicyError(
                _(
                    "{student} comes from a Moodle download, whose file times are when it was "
                    "unzipped and whose names carry no late mark: give the times Moodle "
                    "recorded, as a roster with a submitted_at column, and in the course file "
                    'timestamps = "roster" and roster = "<file>" (docs/lms.md)',
                    student=student.id,
                )
            )
        else:
            times[student.id] = Submitted(file_time(student), FROM_FILES)
    _refuse_unzipped(policy, times)
    return times


def _roster_rows(policy: LatePolicy) -> dict[str, dict]:
    from grader.instructor.course.roster import LmsError, read_roster

    try:
        return read_roster(policy.roster).rows
    except LmsError as error:
        raise PolicyError(str(error)) from None


def _refuse_unzipped(policy: LatePolicy, times: dict[str, Submitted]) -> None:
    """A PolicyError where every file time is after the due date and they all lie within
    seconds of each other: the times of an unzip, a copy or a clone, which would charge every
    student late."""
    moments = [t.time for t in times.values() if t.source == FROM_FILES]
    if len(moments) < UNZIPPED_STUDENTS or min(moments) <= policy.due:
        return
    spread = (max(moments) - min(moments)).total_seconds()
    if spread > UNZIPPED_SECONDS:
        return
    raise PolicyError(
        _(
            "the files of all {count} submissions were last changed within {spread:.0f} s of "
            "each other, after the due date ({first}): those are the times of an unzip, a copy "
            "or a clone, not of handing in, and would charge every student late. Give the "
            "times the LMS or the repository recorded: a roster with a submitted_at column "
            'and, in the course file, timestamps = "roster" and roster = "<file>" '
            "(docs/course_week.md); a Canvas download graded as it came keeps its _late marks",
            count=len(moments),
            spread=spread,
            first=min(moments).isoformat(timespec="seconds"),
        )
    )


def lateness(policy: LatePolicy, submitted: Submitted) -> tuple[int, float]:
    """Started days late and the share taken: from the time, or, where only Canvas's mark is
    known, at least one started day for a student it marks late."""
    if submitted.time is not None:
        return policy.fraction(submitted.time)
    if submitted.marked_late:
        return 1, min(policy.cap, policy.penalty_per_day)
    return 0, 0.0


def write_late(out: Path, policy: LatePolicy | None, students: list[Student]) -> list[str]:
    """late.json for the gradebook: each student's time, days late and share taken. Without a
    policy there is none (a late.json of an earlier run is removed: no penalty). Returns what
    the instructor is told: a policy of the earlier run dropped or changed is never silent."""
    path = Path(out) / LATE_FILE
    try:
        earlier = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        earlier = None
    if policy is None:
        path.unlink(missing_ok=True)
        if not isinstance(earlier, dict):
            return []
        return [
            _(
                "This run has no --course: the late penalties of the earlier run (due {due}) are "
                "dropped from the gradebook. Run it again with --course FILE to keep them.",
                due=earlier.get("due", "?"),
            )
        ]
    entries = {}
    marked_only, disagree = [], []
    canvas = {student.id for student in students if student.lms == "canvas"}
    for student, submitted in submission_times(policy, students).items():
        days, fraction = lateness(policy, submitted)
        entries[student] = {
            "submitted": submitted.time.isoformat() if submitted.time else None,
            "days_late": days,
            "fraction": fraction,
            "source": submitted.source,
        }
        if submitted.source == FROM_CANVAS_MARK and submitted.marked_late:
            marked_only.append(student)
        # Canvas marks a file late after its own due date (no grace): a roster time on the
        # other side of the course file's due date says the two due dates differ.
        if (
            student in canvas
            and submitted.time is not None
            and submitted.marked_late != (submitted.time > policy.due)
        ):
            disagree.append(student)
    terms = {
        "due": policy.due.isoformat(),
        "penalty_per_day": policy.penalty_per_day,
        "cap": policy.cap,
        "grace_minutes": policy.grace_minutes,
        "timestamps": policy.timestamps,
    }
    atomic_write(path, json.dumps({**terms, "students": entries}, indent=1))
    notes = []
    if marked_only:
        notes.append(
            _(
                "{count} student(s) marked late by Canvas ({students}) are charged one started "
                "day: how late they were, and the grace minutes, only the roster's submitted_at "
                'can tell (give roster = "<file>" in the course file)',
                count=len(marked_only),
                students=_few(marked_only),
            )
        )
    if disagree:
        notes.append(
            _(
                "Canvas's _late marks and the roster's submitted_at disagree for {count} "
                "student(s) ({students}): the roster's times are used. Check that the course "
                "file's due date ({due}) is the one set in Canvas",
                count=len(disagree),
                students=_few(disagree),
                due=policy.due.isoformat(),
            )
        )
    if not isinstance(earlier, dict):
        return notes
    changed = [key for key, value in terms.items() if key in earlier and earlier[key] != value]
    if not changed:
        return notes
    return notes + [
        _(
            "The late policy changed since the earlier run ({changes}): penalties are computed "
            "again with the new one.",
            changes=", ".join(f"{key} {earlier[key]} → {terms[key]}" for key in changed),
        )
    ]


def _few(students: list[str]) -> str:
    return ", ".join(students[:10]) + (" …" if len(students) > 10 else "")


def load_late(out: Path) -> dict[str, dict]:
    try:
        return json.loads((Path(out) / LATE_FILE).read_text(encoding="utf-8"))["students"]
    except (OSError, ValueError, KeyError):
        return {}


def late_section(out: Path) -> str:
    """The report's "Late work": the students charged, then (folded) those on time; each
    with the time and where it came from."""
    from html import escape

    if not (Path(out) / LATE_FILE).is_file():
        return ""
    entries = sorted(load_late(out).items())

    def rows(late: bool) -> str:
        return "".join(
            f"<tr><td>{escape(student)}</td><td>{escape(str(entry.get('submitted') or '—'))}"
            f"</td><td>{escape(str(entry.get('source', FROM_FILES)))}</td>"
            f"<td class=num>{entry['days_late']}</td><td class=num>{entry['fraction']:.0%}</td>"
            "</tr>"
            for student, entry in entries
            if bool(entry["days_late"]) == late
        )

    head = (
        "<table><tr><th>student</th><th>submitted</th><th>from</th>"
        "<th class=num>days late</th><th class=num>penalty</th></tr>"
    )
    sources = sorted({str(entry.get("source", FROM_FILES)) for _student, entry in entries})
    on_time = sum(1 for _student, entry in entries if not entry["days_late"])
    return (
        "<h2>Late work</h2>"
        + f"<p class=muted>times from: {escape(', '.join(sources))}</p>"
        + head
        + (rows(True) or "<tr><td class=muted colspan=5>nobody was late</td></tr>")
        + "</table>"
        + (
            f"<details><summary>on time: {on_time}</summary>{head}{rows(False)}</table></details>"
            if on_time
            else ""
        )
    )
