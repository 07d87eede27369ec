"""Grades into a learning-management system: the import file Canvas or Moodle expects, made from
the batch's gradebook (grades.csv) and a roster that maps submission ids to the LMS's ids.

Canvas's gradebook CSV starts with the identity columns of its own export (Student, ID, SIS User
ID, SIS Login ID, Section); each further column is an assignment, named "Name (assignment id)",
or just "Name" to create a new assignment on import. Moodle's grade import (Grades > Import >
CSV file) reads a header row, one column that identifies the user (email address, ID number or
username: the "Map from" / "Map to" choice on import) and a column per grade item.

Nobody is dropped silently: roster students with no grade, graded students not in the roster,
and grades that are not final (the grader failed on some part) are listed in the summary, and
left out of the file rather than imported as a wrong number; totals with a written part still
pending review are exported and named.

Each export carries what it was made from (lms/<system>.source.json: the gradebook's digest, the
time, the written scores and late policy in it); a gradebook written again afterwards (a rerun,
a merge) says which exports it made stale.
"""

from __future__ import annotations

import csv
import hashlib
import io
import json
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path

from grader.i18n import _
from grader.instructor.course.roster import (
    CANVAS_KEYS,
    CANVAS_ROSTER,
    MOODLE_KEYS,
    ROSTER_COLUMNS,
    LmsError,
    Roster,
)
from grader.instructor.files import atomic_write, students_in
from grader.vocabulary.untrusted import csv_cell, csv_row

SYSTEMS = ("canvas", "moodle", "csv")
CANVAS_IDENTITY = ("Student", "ID", "SIS User ID", "SIS Login ID", "Section")


@dataclass
class Export:
    """What an export wrote and who is not in it, and why."""

    path: Path
    exported: list[str] = field(default_factory=list)
    not_submitted: list[str] = field(default_factory=list)  # in the roster, no grade
    not_in_roster: list[str] = field(default_factory=list)  # graded, not in the roster
    not_final: list[str] = field(default_factory=list)  # graded in part: no total yet
    pending: list[str] = field(default_factory=list)  # exported; a written part not scored yet

    def problems(self) -> list[str]:
        lines = []
        if self.not_submitted:
            lines.append(
                "in the roster but not graded (no submission in the class folder): "
                + ", ".join(self.not_submitted)
            )
        if self.not_in_roster:
            lines.append(
                "graded but not in the roster (add them to it, then export again): "
                + ", ".join(self.not_in_roster)
            )
        if self.not_final:
            lines.append(
                "no final total (the grader failed on some part; run the batch again): "
                + ", ".join(self.not_final)
            )
        return lines

    def notes(self) -> list[str]:
        """In the file, but to be exported again later."""
        if not self.pending:
            return []
        return [
            _(
                "Exported with a written part still pending review (export again after "
                "`grader merge`): {names}",
                names=", ".join(self.pending),
            )
        ]


def read_totals(out: Path) -> dict[str, str]:
    """Student -> total from the batch's grades.csv ("" where the total is not final)."""
    path = Path(out) / "grades.csv"
    try:
        rows = list(csv.DictReader(io.StringIO(path.read_text(encoding="utf-8"))))
    except OSError as error:
        raise LmsError(
            f"no gradebook at {path} ({error.strerror}): run `grader batch` first"
        ) from None
    if rows and not {"student", "total"} <= rows[0].keys():
        raise LmsError(f"{path} has no student and total columns: is it a batch's grades.csv?")
    # grades.csv shows an id as a safe cell ("'=x" for "=x"): back to the id the roster names.
    ids = {csv_cell(student): student for student in students_in(out)}
    return {ids.get(row["student"], row["student"]): row["total"] for row in rows}


def _pending(out: Path) -> set[str]:
    """Students whose grades.csv row has written points pending review."""
    text = (Path(out) / "grades.csv").read_text(encoding="utf-8")
    ids = {csv_cell(student): student for student in students_in(out)}
    return {
        ids.get(row["student"], row["student"])
        for row in csv.DictReader(io.StringIO(text))
        if row.get("written_pending")
    }


def _digest(path: Path) -> str:
    try:
        return hashlib.sha256(path.read_bytes()).hexdigest()
    except OSError:
        return ""


def _source_path(export: Path) -> Path:
    return export.with_name(export.stem + ".source.json")


def _write_source(out: Path, export: Export, system: str) -> None:
    """lms/<system>.source.json: what the export was made from."""
    from grader.instructor.course.late import load_late
    from grader.instructor.workbench.gradebook import review_adjustments

    late = load_late(out)
    try:
        due = json.loads((Path(out) / "late.json").read_text(encoding="utf-8")).get("due")
    except (OSError, ValueError, AttributeError):
        due = None
    source = {
        "system": system,
        "gradebook": "grades.csv",
        "gradebook_sha256": _digest(Path(out) / "grades.csv"),
        "exported_at": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "students": export.exported,
        # Merged from a review sheet or given in the review page (issue 46).
        "written_scores": sum(len(parts) for parts in review_adjustments(out)[0].values()),
        "written_pending": export.pending,
        "late_policy_due": due,
        "late_students": sorted(s for s, entry in late.items() if entry.get("days_late")),
    }
    atomic_write(_source_path(export.path), json.dumps(source, indent=1, ensure_ascii=False))


def stale_exports(out: Path, exporting: str | None = None) -> list[str]:
    """A line for each export in out/lms/ made from another gradebook than grades.csv now (but
    the one of `exporting`, the system being exported again)."""
    now = _digest(Path(out) / "grades.csv")
    notes = []
    for source in sorted((Path(out) / "lms").glob("*.source.json")):
        try:
            made = json.loads(source.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        if not isinstance(made, dict) or made.get("gradebook_sha256") == now:
            continue
        system = made.get("system", "csv")
        if system == exporting:
            continue
        notes.append(
            _(
                "{export} was made from an earlier gradebook ({time}): run `grader export "
                "{system} --out {out} --roster ROSTER` again before importing it.",
                export=source.with_name(f"{system}.csv"),
                time=made.get("exported_at", "?"),
                system=system,
                out=out,
            )
        )
    return notes


def export_grades(
    out: Path,
    roster: Roster,
    system: str,
    assignment: str = "Attention exercises",
    assignment_id: str = "",
    moodle_key: str | None = None,
) -> Export:
    """Write out/lms/<system>.csv from out/grades.csv and the roster."""
    if system not in SYSTEMS:
        raise LmsError(f"unknown LMS {system!r}; choose one of {', '.join(SYSTEMS)}")
    totals = read_totals(out)
    export = Export(Path(out) / "lms" / f"{system}.csv")
    export.not_submitted = sorted(s for s in roster.rows if s not in totals)
    export.not_in_roster = sorted(s for s in totals if s not in roster.rows)
    export.not_final = sorted(s for s, total in totals.items() if s in roster.rows and not total)
    export.exported = sorted(s for s, total in totals.items() if s in roster.rows and total)
    export.pending = sorted(_pending(out) & set(export.exported))
    column = f"{assignment} ({assignment_id})" if assignment_id else assignment
    if system == "canvas":
        header, rows = _canvas(roster, export.exported, totals, column)
    elif system == "moodle":
        header, rows = _moodle(roster, export.exported, totals, column, moodle_key)
    else:
        header, rows = _plain(roster, export.exported, totals, column)
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(csv_row(header))
    writer.writerows(csv_row(row) for row in rows)
    export.path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write(export.path, buffer.getvalue())
    _write_source(out, export, system)
    return export


def _canvas(roster: Roster, students, totals, column):
    for student in students:
        row = roster.rows[student]
        if not any(row.get(key) for key in CANVAS_KEYS):
            raise LmsError(
                f"{roster.path}: {student} has none of {', '.join(CANVAS_KEYS)}; Canvas matches "
                "a row on one of them (take them from Canvas's own gradebook export)"
            )
    header = [*CANVAS_IDENTITY, column]
    rows = [[*[roster.rows[s].get(key, "") for key in CANVAS_ROSTER], totals[s]] for s in students]
    return header, rows


def _moodle(roster: Roster, students, totals, column, key):
    if key is None:
        key = next((k for k in MOODLE_KEYS if roster.column_filled(k)), None)
        if key is None:
            raise LmsError(
                f"{roster.path}: Moodle identifies a user by {', '.join(MOODLE_KEYS)}; give "
                "one of these columns, filled for every student"
            )
    elif key not in MOODLE_KEYS:
        raise LmsError(f"Moodle identifies a user by {', '.join(MOODLE_KEYS)}, not {key!r}")
    missing = [s for s in students if not roster.rows[s].get(key)]
    if missing:
        raise LmsError(f"{roster.path}: no {key} for {', '.join(missing)}")
    return [key, column], [[roster.rows[s][key], totals[s]] for s in students]


def _plain(roster: Roster, students, totals, column):
    """The submission id, the roster's filled identity columns, the total."""
    present = [c for c in ROSTER_COLUMNS[1:-1] if any(row.get(c) for row in roster.rows.values())]
    header = ["submission", *present, column]
    rows = [[s, *[roster.rows[s].get(c, "") for c in present], totals[s]] for s in students]
    return header, rows
