"""The class list from the learning-management system: a CSV that maps each submission id (the
folder or zip name in the class folder) to that student's ids in Canvas or Moodle, and, for the
late policy, when they handed in (`submitted_at`). Read by the late policy
(grader.instructor.course.late) and by the grades export (grader.instructor.outputs.lms)."""

from __future__ import annotations

import csv
import io
from dataclasses import dataclass
from pathlib import Path

# Roster column -> Canvas identity column; Canvas matches a row on ID, SIS User ID or Login ID.
CANVAS_ROSTER = {
    "name": "Student",
    "canvas_id": "ID",
    "sis_user_id": "SIS User ID",
    "sis_login_id": "SIS Login ID",
    "section": "Section",
}
CANVAS_KEYS = ("canvas_id", "sis_user_id", "sis_login_id")
# The user fields Moodle's CSV import can map a column to, in the order we prefer them.
MOODLE_KEYS = ("email", "idnumber", "username")
ROSTER_COLUMNS = ("submission", *CANVAS_ROSTER, *MOODLE_KEYS, "submitted_at")


class LmsError(ValueError):
    """The roster or the gradebook cannot make an import file; the message says what to fix."""


@dataclass
class Roster:
    """Submission id -> that student's row (roster column -> value)."""

    rows: dict[str, dict[str, str]]
    path: Path

    def column_filled(self, column: str) -> bool:
        return all(row.get(column) for row in self.rows.values())


def read_roster(path: Path) -> Roster:
    """A CSV with a header row; `submission` (the folder or zip name in the class folder) is
    required, the other columns (ROSTER_COLUMNS) as the LMS needs them."""
    try:
        text = Path(path).read_text(encoding="utf-8-sig")
    except (OSError, UnicodeDecodeError) as error:
        raise LmsError(f"cannot read the roster {path}: {error}") from None
    reader = csv.DictReader(io.StringIO(text))
    header = [name.strip() for name in reader.fieldnames or []]
    if "submission" not in header:
        raise LmsError(
            f"{path}: the roster needs a 'submission' column (the student's folder or zip name "
            f"in the class folder); its header is {', '.join(header) or 'empty'}"
        )
    unknown = [name for name in header if name not in ROSTER_COLUMNS]
    if unknown:
        raise LmsError(
            f"{path}: unknown roster column(s) {', '.join(unknown)}; known columns: "
            f"{', '.join(ROSTER_COLUMNS)}"
        )
    reader.fieldnames = header
    rows: dict[str, dict[str, str]] = {}
    for line, row in enumerate(reader, start=2):
        clean = {key: (value or "").strip() for key, value in row.items() if key is not None}
        submission = clean["submission"]
        if not submission:
            raise LmsError(f"{path}, line {line}: no submission id")
        if submission in rows:
            raise LmsError(f"{path}, line {line}: submission {submission!r} is listed twice")
        rows[submission] = clean
    return Roster(rows, Path(path))
