"""Written answers (exercises/answers/<id>.md), graded by hand and merged into the gradebook.

`grader batch --written` writes written/review.csv (one row per student and written part: the
answer, the maximum, an empty `points` cell to fill) and written/review.html (every answer of a
part on one page, to read). `grader merge SCORES.csv` checks the filled sheet (unknown students,
exercises or parts, points that are not numbers or exceed the maximum are refused, all named at
once, and nothing is merged then) and keeps the points in written/scores.json. From there every
gradebook the batch writes (grades.csv, results, feedback, report) adds them, so a batch run
again, even one that regrades a student, keeps the merged points.
"""

from __future__ import annotations

import csv
import io
import itertools
import json
import shutil
import tempfile
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

from grader.engine.safe_files import RefusedFile, read_plain_path
from grader.grading import ANSWER_PLACEHOLDER
from grader.i18n import _
from grader.instructor.course.submissions import Student, UnsafeSubmission, unpack
from grader.instructor.files import atomic_write
from grader.vocabulary import untrusted

# A written answer is long: shown and kept up to this many characters.
ANSWER_CHARS = 20_000


def escape(text) -> str:
    """For the review page: cleaned and escaped (answers and ids come from students)."""
    return untrusted.html(text, ANSWER_CHARS)


FOLDER = "written"
SCORES = "scores.json"
SHEET_COLUMNS = ["student", "exercise", "part", "max_points", "points", "comment", "answer"]
MAX_ANSWER = 20_000


class MergeError(ValueError):
    """The score sheet cannot be merged; the message names every bad line."""


def read_answers(students: list[Student], record) -> dict[str, str]:
    """Student id -> their answer to `record`'s written parts ("" when none was written)."""
    answers = {}
    scratch = Path(tempfile.mkdtemp(prefix="attnkit-written-"))
    try:
        for number, student in enumerate(students):
            home = scratch / f"s{number}"
            text = ""
            try:
                unpack(student, home)  # plain files only: links and FIFOs are left out
                found = sorted(p for p in home.rglob(f"answers/{record.id}.md") if p.is_file())
                if found:
                    text = read_plain_path(found[0]).decode("utf-8", errors="replace")
            except (UnsafeSubmission, RefusedFile):
                pass  # the batch flags it; no answer to read
            answers[student.id] = text.split(ANSWER_PLACEHOLDER, 1)[-1].strip()[:MAX_ANSWER]
            shutil.rmtree(home, ignore_errors=True)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    return answers


@dataclass
class SheetUpdate:
    """What writing the review sheet did to the one already there: the TA fills that file in
    place, so what they typed is carried into the new sheet, and the old file is kept as
    `backup` when any of its cells would not be in the new one as it was."""

    path: Path
    backup: Path | None = None
    notes: list[str] = field(default_factory=list)


def _read_sheet(path: Path, students: list[Student]) -> tuple[list[str], dict, bool]:
    """The header and the rows of the sheet already at `path`, by (student, exercise, part);
    False when there is a file that is not a readable review sheet (it is backed up whole)."""
    if not path.exists():
        return [], {}, True
    try:
        return _parse_sheet(path.read_text(encoding="utf-8-sig"), students)
    except (OSError, UnicodeDecodeError):
        return [], {}, False


def _parse_sheet(text: str, students: list[Student]) -> tuple[list[str], dict, bool]:
    try:
        reader = csv.DictReader(io.StringIO(text))
        header = list(reader.fieldnames or [])
        rows = list(reader)
    except csv.Error:
        return [], {}, False
    if not {"student", "exercise", "part"} <= set(header):
        return header, {}, False
    # The sheet shows an id as a safe cell ("'=x" for "=x"): back to the id.
    shown = {untrusted.csv_cell(s.id): s.id for s in students}
    by_key = {}
    for row in rows:
        cell = row.get("student") or ""
        student = shown.get(cell, shown.get(cell.strip(), cell.strip()))
        key = (student, (row.get("exercise") or "").strip(), (row.get("part") or "").strip())
        # A key twice (a TA's copied line): the first is carried, the file is backed up.
        by_key.setdefault(key, {k: v or "" for k, v in row.items() if k is not None})
    return header, by_key, len(by_key) == len(rows)


def _backup_path(sheet: Path) -> Path:
    stamp = datetime.now().strftime("%Y%m%d-%H%M%S")
    for number in itertools.count():
        path = sheet.with_name(f"{sheet.stem}.{stamp}{f'-{number}' if number else ''}.csv")
        if not path.exists():
            return path
    raise AssertionError  # pragma: no cover


def write_review_sheet(out: Path, records, students: list[Student]) -> SheetUpdate | None:
    """written/review.csv and written/review.html for the written parts of `records`; None
    when they have none. A sheet already there is merged into: points and comments typed in it
    (merged or not yet) and columns a TA added are carried over, rows are added for new students
    and parts, and the old file is copied aside before anything of it is replaced."""
    records = [r for r in records if r.written]
    if not records:
        return None
    folder = Path(out) / FOLDER
    folder.mkdir(parents=True, exist_ok=True)
    sheet = folder / "review.csv"
    scores = load_scores(out)
    old_header, old_rows, readable = _read_sheet(sheet, students)
    extra = [c for c in old_header if c not in SHEET_COLUMNS]
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow([*SHEET_COLUMNS, *extra])
    pages, written, typed, unmerged, reanswered = [], set(), 0, [], []
    for record in records:
        answers = read_answers(students, record)
        for part in record.written:
            pages.append(f"<h2>{escape(record.id)} {escape(part.name)} ({part.points:g} pt)</h2>")
            pages.append(f"<p class=muted>{escape(part.prompt)}</p>")
            for student in sorted(answers):
                key = (student, record.id, part.name)
                written.add(key)
                old = old_rows.get(key, {})
                kept = scores.get(student, {}).get(f"{record.id} {part.name}", {})
                merged = f"{kept['points']:g}" if "points" in kept else ""
                points = old.get("points", "").strip() or merged
                comment = old.get("comment", "").strip() or kept.get("comment", "")
                answer = untrusted.csv_cell(answers[student], ANSWER_CHARS, newlines=True)
                if old.get("points", "").strip():
                    typed += 1
                    if _differs(old["points"], merged):
                        unmerged.append(f"{student} {record.id} {part.name}")
                if points and old and old.get("answer", answer) != answer:
                    reanswered.append(f"{student} {record.id} {part.name}")
                writer.writerow(
                    [
                        untrusted.csv_cell(student),
                        record.id,
                        part.name,
                        f"{part.points:g}",
                        points,  # as typed: a TA's cells are written back unchanged
                        comment,
                        answer,
                        *[old.get(column, "") for column in extra],
                    ]
                )
                body = escape(answers[student]) or "<i>no answer written</i>"
                pages.append(
                    f"<h3 id='{escape(record.id)}-{escape(student)}'>{escape(student)}</h3>"
                    f"<pre style='white-space:pre-wrap'>{body}</pre>"
                )
    text = buffer.getvalue()
    update = SheetUpdate(sheet)
    if sheet.exists() and _loses_cells(
        _parse_sheet(text, students)[1], old_header, old_rows, readable, written
    ):
        update.backup = _backup_path(sheet)
        shutil.copy2(sheet, update.backup)
    atomic_write(sheet, text)
    atomic_write(
        folder / "review.html",
        "<!DOCTYPE html><html lang=en><head><meta charset=utf-8><title>Written answers</title>"
        "</head><body style='font:15px/1.45 system-ui,sans-serif;max-width:60rem;margin:auto'>"
        "<h1>Written answers</h1><p>Score them in review.csv (the points column), then run "
        "<code>grader merge review.csv --out DIR</code>.</p>" + "".join(pages) + "</body></html>",
    )
    update.notes = _sheet_notes(update, old_rows, written, typed, unmerged, reanswered)
    return update


def _differs(typed: str, merged: str) -> bool:
    try:
        return not merged or float(typed) != float(merged)
    except ValueError:
        return True


def _loses_cells(new_rows: dict, old_header, old_rows, readable, written) -> bool:
    """Whether some cell of the old sheet is not in the new one as it was: a row dropped (its
    student is no longer in the class), an answer changed, a cell rewritten."""
    if not readable:
        return True
    for key, old in old_rows.items():
        new = new_rows.get(key)
        if key not in written or new is None:
            return True
        if any(old.get(column, "") != new.get(column, "") for column in old_header):
            return True
    return False


def _sheet_notes(update, old_rows, written, typed, unmerged, reanswered) -> list[str]:
    """What the TA is told about their sheet (grader batch prints it)."""
    notes = []
    if typed:
        notes.append(
            _(
                "{sheet}: merged into, not overwritten: the {count} scores typed there are kept.",
                sheet=update.path,
                count=typed,
            )
        )
    if unmerged:
        notes.append(
            _(
                "{sheet}: {count} typed scores are not merged yet ({parts}); run `grader merge "
                "{sheet} --out {out}` to count them.",
                sheet=update.path,
                count=len(unmerged),
                parts=", ".join(unmerged[:5]) + (", …" if len(unmerged) > 5 else ""),
                out=update.path.parent.parent,
            )
        )
    if reanswered:
        notes.append(
            _(
                "The answer changed since it was scored (the points are kept; read it again): "
                "{parts}",
                parts=", ".join(reanswered),
            )
        )
    dropped = sorted(
        f"{s} {e} {p}"
        for (s, e, p), row in old_rows.items()
        if (s, e, p) not in written and (row.get("points", "").strip() or row.get("comment"))
    )
    if dropped:
        notes.append(
            _(
                "Scored rows left the sheet (their student or part is no longer in this "
                "batch): {parts}",
                parts=", ".join(dropped),
            )
        )
    if update.backup:
        notes.append(
            _(
                "The earlier review sheet, as it was, is kept as {backup}.",
                backup=update.backup,
            )
        )
    return notes


def load_scores(out: Path) -> dict[str, dict[str, dict]]:
    """Student -> "exercise part" -> {"points", "max_points", "comment"}: the merged points."""
    try:
        return json.loads((Path(out) / FOLDER / SCORES).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}


def merge_scores(out: Path, sheet: Path, records, students: list[str]) -> int:
    """Check the filled sheet against the batch (its students, its exercises' written parts)
    and keep its points; returns how many were merged. Rows with an empty `points` cell are
    not scored yet and are left alone."""
    try:
        text = Path(sheet).read_text(encoding="utf-8-sig")
    except (OSError, UnicodeDecodeError) as error:
        raise MergeError(f"cannot read {sheet}: {error}") from None
    reader = csv.DictReader(io.StringIO(text))
    missing = {"student", "exercise", "part", "points"} - set(reader.fieldnames or [])
    if missing:
        raise MergeError(
            f"{sheet}: no column {', '.join(sorted(missing))}; start from the review sheet "
            "(grader batch --written writes written/review.csv)"
        )
    parts = {(r.id, p.name): float(p.points) for r in records for p in r.written}
    known = set(students)
    # The sheet shows an id as a safe cell ("'=x" for "=x"): back to the id.
    shown = {untrusted.csv_cell(student): student for student in students}
    problems, merged = [], {}
    for line, row in enumerate(reader, start=2):
        cell = row["student"] or ""
        student = shown.get(cell, shown.get(cell.strip(), cell.strip()))
        exercise = (row["exercise"] or "").strip()
        part, points = (row["part"] or "").strip(), (row["points"] or "").strip()
        if not points:
            continue
        where = f"line {line}"
        if student not in known:
            problems.append(f"{where}: no student {student!r} in this batch")
            continue
        if (exercise, part) not in parts:
            choices = ", ".join(f"{e} {p}" for e, p in parts) or "none"
            problems.append(
                f"{where}: no written part {part!r} of exercise {exercise!r} in this batch "
                f"(written parts: {choices})"
            )
            continue
        try:
            value = float(points)
        except ValueError:
            problems.append(f"{where}: points {points!r} is not a number")
            continue
        maximum = parts[(exercise, part)]
        if not 0 <= value <= maximum:
            problems.append(
                f"{where}: {value:g} points for {exercise} {part}, out of 0–{maximum:g}"
            )
            continue
        key = f"{exercise} {part}"
        if key in merged.get(student, {}):
            problems.append(f"{where}: {student} {key} is scored twice")
            continue
        merged.setdefault(student, {})[key] = {
            "points": value,
            "max_points": maximum,
            "comment": (row.get("comment") or "").strip(),
        }
    if problems:
        raise MergeError(f"{sheet}: nothing merged:\n  " + "\n  ".join(problems))
    scores = load_scores(out)
    for student, by_part in merged.items():
        scores.setdefault(student, {}).update(by_part)
    (Path(out) / FOLDER).mkdir(parents=True, exist_ok=True)
    atomic_write(
        Path(out) / FOLDER / SCORES,
        untrusted.json_text(scores, indent=1, sort_keys=True),
    )
    return sum(len(by_part) for by_part in merged.values())


def written_section(out: Path, scores: dict | None = None) -> str:
    """The report's section: the written points per student (`scores`: these, else the merged
    ones; grader.instructor.workbench.gradebook passes the review page's too)."""
    scores = load_scores(out) if scores is None else scores
    if not scores:
        return ""
    rows = "".join(
        f"<tr><td>{escape(student)}</td><td>{escape(key)}</td>"
        f"<td class=num>{entry['points']:g}/{entry['max_points']:g}</td>"
        f"<td>{escape(entry.get('comment', ''))}</td></tr>"
        for student, by_part in sorted(scores.items())
        for key, entry in sorted(by_part.items())
    )
    return (
        "<h2>Written answers</h2><p class=muted>Scored by hand (the review page, `grader "
        "review`, or a review sheet merged with `grader merge`); included in the totals.</p>"
        "<table><tr><th>student</th><th>part</th>"
        f"<th class=num>points</th><th>comment</th></tr>{rows}</table>"
    )
