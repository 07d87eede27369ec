"""What the workbench does to its data, for the pages, the CLI, the gradebook and the benchmark.

An answer's score is computed, never stored: a written answer scores its part's base points
plus the points of the rubric items applied to it, kept within 0 and the part's maximum (or the
points typed for it, when a TA typed some or a review.csv was imported); an autograded part
scores the autograder's points, or a TA's regrade. Editing an item therefore re-scores and
re-words every answer that has it, at once.

Saving an answer is optimistic: the save names the version it was made from and is refused when
the answer has changed since (another TA saved it), atomically (one conditional UPDATE), on
SQLite and PostgreSQL alike. Every change is written to the audit log in the same transaction."""

from __future__ import annotations

import csv
import io
import json
import math
from dataclasses import dataclass, field
from datetime import datetime

from sqlalchemy import delete, func, insert, select, update

from grader.i18n import _
from grader.instructor.workbench.ingest import now
from grader.instructor.workbench.models import (
    TA,
    Answer,
    Applied,
    Audit,
    Part,
    RubricItem,
    Student,
)
from grader.vocabulary import untrusted

COMMENT_CHARS = 5_000


def clamp(value: float, maximum: float) -> float:
    return round(min(max(finite(value), 0.0), maximum), 4)


def finite(points: float) -> float:
    """`points`, refused unless a finite number: NaN passes min and max untouched (every
    comparison with it is false) and would reach the scores, the gradebook and the LMS; no
    caller may store one, nor an infinity (r8 red team)."""
    if not math.isfinite(points):
        raise ValueError(_("points must be a finite number. Received: {points}", points=points))
    return float(points)


def score(part: Part, answer: Answer, applied_sum: float) -> float | None:
    if part.kind == "auto":
        return answer.points if answer.points is not None else answer.auto_points
    if not answer.graded:
        return None
    if answer.points is not None:
        return answer.points
    return clamp(part.base_points + applied_sum, part.max_points)


def applied_sums(session, part_id: int) -> dict[int, float]:
    """Answer id -> the sum of the points of the items applied to it, for one part."""
    rows = session.execute(
        select(Applied.answer_id, func.sum(RubricItem.points))
        .join(RubricItem, RubricItem.id == Applied.item_id)
        .where(RubricItem.part_id == part_id)
        .group_by(Applied.answer_id)
    )
    return {answer_id: float(total or 0) for answer_id, total in rows}


def items_of(session, part_id: int) -> list[RubricItem]:
    return list(
        session.scalars(
            select(RubricItem)
            .where(RubricItem.part_id == part_id)
            .order_by(RubricItem.position, RubricItem.id)
        )
    )


def applied_ids(session, answer_id: int) -> set[int]:
    return set(session.scalars(select(Applied.item_id).where(Applied.answer_id == answer_id)))


def ta_names(session) -> dict[int, str]:
    return {ta_id: name for ta_id, name in session.execute(select(TA.id, TA.name))}


# -- the queue and one answer -----------------------------------------------------------------


@dataclass
class QueueRow:
    answer_id: int
    alias: str
    sid: str
    graded: bool
    score: float | None
    graded_by: str
    version: int
    preview: str


def queue(session, part: Part) -> list[QueueRow]:
    """The part's answers, in a fixed order that shows nothing of the ids (by alias)."""
    sums = applied_sums(session, part.id)
    names = ta_names(session)
    rows = session.execute(
        select(Answer, Student.alias, Student.sid)
        .join(Student, Student.id == Answer.student_id)
        .where(Answer.part_id == part.id)
        .order_by(Student.alias)
    )
    result = []
    for answer, alias, sid in rows:
        graded = answer.graded or (part.kind == "auto" and answer.points is not None)
        result.append(
            QueueRow(
                answer.id,
                alias,
                sid,
                graded,
                score(part, answer, sums.get(answer.id, 0.0)),
                names.get(answer.graded_by, ""),
                answer.version,
                answer.text[:140],
            )
        )
    return result


def neighbours(session, answer: Answer) -> tuple[int | None, int | None]:
    """The previous and next answer of the same part, in the queue's order."""
    ids = list(
        session.scalars(
            select(Answer.id)
            .join(Student, Student.id == Answer.student_id)
            .where(Answer.part_id == answer.part_id)
            .order_by(Student.alias)
        )
    )
    at = ids.index(answer.id)
    return (ids[at - 1] if at else None, ids[at + 1] if at + 1 < len(ids) else None)


def snapshot(session, answer: Answer, part: Part) -> dict:
    """An answer's grading as the audit log and a refused save show it."""
    have = applied_ids(session, answer.id)
    items = [i for i in items_of(session, part.id) if i.id in have]
    total = sum(i.points for i in items)
    return {
        "version": answer.version,
        "graded": bool(answer.graded),
        "items": [{"id": i.id, "points": i.points, "text": i.text} for i in items],
        "points": answer.points,
        "comment": answer.comment,
        "score": score(part, answer, total),
    }


def autograded_beside(session, answer: Answer, part: Part) -> list[dict]:
    """The student's autograded parts of the same exercise, to show beside a written answer."""
    rows = session.execute(
        select(Part, Answer)
        .join(Answer, Answer.part_id == Part.id)
        .where(
            Answer.student_id == answer.student_id,
            Part.exercise == part.exercise,
            Part.kind == "auto",
        )
        .order_by(Part.position)
    )
    return [
        {
            "name": p.name,
            "auto": a.auto_points,
            "points": score(p, a, 0.0),
            "max": p.max_points,
            "status": a.auto_status,
            "regraded": a.points is not None,
            "reason": a.comment,
            "answer_id": a.id,
        }
        for p, a in rows
    ]


# -- saving -----------------------------------------------------------------------------------


@dataclass
class Saved:
    ok: bool
    version: int
    current: dict = field(default_factory=dict)
    by: str = ""


def _audit(session, who: str, action: str, target: str, before, after) -> None:
    session.add(
        Audit(
            at=now(),
            who=who,
            action=action,
            target=target,
            before=json.dumps(before, ensure_ascii=False, sort_keys=True) if before else "",
            after=json.dumps(after, ensure_ascii=False, sort_keys=True) if after else "",
        )
    )


def _target(session, answer: Answer, part: Part) -> str:
    sid = session.scalar(select(Student.sid).where(Student.id == answer.student_id))
    return f"{sid} {part.exercise} {part.name}"


def save_answer(
    database,
    ta: TA,
    answer_id: int,
    version: int,
    item_ids=(),
    comment: str = "",
    points: float | None = None,
    graded: bool = True,
    source: str = "page",
) -> Saved:
    """Save a TA's grading of an answer made from `version`: the items applied (a written
    part), the comment (a regrade's reason), typed points (a written part's override, an
    autograded part's regrade; None: none). Refused, with the answer as it is now, when the
    answer is no longer at `version`."""
    comment = untrusted.clean(comment or "", COMMENT_CHARS)
    with database.writing() as session:
        answer = session.get(Answer, answer_id)
        if answer is None:
            raise KeyError(answer_id)
        part = session.get(Part, answer.part_id)
        if points is not None and not 0 <= points <= part.max_points:
            raise ValueError(_("points must be within 0 and {max:g}", max=part.max_points))
        valid = {i.id for i in items_of(session, part.id)}
        wanted = {int(i) for i in item_ids} & valid
        before = snapshot(session, answer, part)
        changed = session.execute(
            update(Answer)
            .where(Answer.id == answer_id, Answer.version == version)
            .values(
                version=Answer.version + 1,
                graded=graded if part.kind == "written" else points is not None,
                points=points,
                comment=comment,
                source=source if points is not None else "",
                graded_by=ta.id,
                updated_at=now(),
            )
            .execution_options(synchronize_session=False)
        ).rowcount
        if changed != 1:
            session.expire(answer)
            current = snapshot(session, answer, part)
            names = ta_names(session)
            return Saved(False, answer.version, current, names.get(answer.graded_by, ""))
        if part.kind == "written":
            session.execute(delete(Applied).where(Applied.answer_id == answer_id))
            if wanted:
                session.execute(
                    insert(Applied), [{"answer_id": answer_id, "item_id": i} for i in wanted]
                )
        session.expire(answer)
        after = snapshot(session, answer, part)
        action = "regrade" if part.kind == "auto" else "grade"
        _audit(session, ta.name, action, _target(session, answer, part), before, after)
        return Saved(True, answer.version, after, ta.name)


def add_item(database, ta: TA, part_id: int, points: float, text: str) -> int:
    points = finite(points)
    text = untrusted.clean(text, 1000).strip()
    with database.writing() as session:
        part = session.get(Part, part_id)
        if part is None or part.kind != "written":
            raise KeyError(part_id)
        position = (
            session.scalar(
                select(func.max(RubricItem.position)).where(RubricItem.part_id == part_id)
            )
            or 0
        ) + 1
        item = RubricItem(part_id=part_id, position=position, points=points, text=text, version=1)
        session.add(item)
        session.flush()
        _audit(
            session,
            ta.name,
            "add rubric item",
            f"{part.exercise} {part.name} item {position}",
            None,
            {"points": points, "text": text},
        )
        return item.id


@dataclass
class ItemEdit:
    """What an item's edit did: saved or not; how many answers have it; when refused, the
    item as it is now and who changed it last."""

    ok: bool
    affected: int
    now: dict | None = None
    by: str = ""


def edit_item(database, ta: TA, item_id: int, version: int, points: float, text: str) -> ItemEdit:
    """Change an item's points and text (every answer that has it is re-scored: scores are
    computed; each answer's score before and after is in the audit log). Refused when the item
    changed since `version`."""
    points = finite(points)
    text = untrusted.clean(text, 1000).strip()
    with database.writing() as session:
        item = session.get(RubricItem, item_id)
        if item is None:
            raise KeyError(item_id)
        part = session.get(Part, item.part_id)
        before = {"points": item.points, "text": item.text}
        having = list(
            session.scalars(
                select(Answer)
                .join(Applied, Applied.answer_id == Answer.id)
                .where(Applied.item_id == item_id)
                .order_by(Answer.id)
            )
        )
        sums = applied_sums(session, part.id)
        was = {a.id: score(part, a, sums.get(a.id, 0.0)) for a in having}
        changed = session.execute(
            update(RubricItem)
            .where(RubricItem.id == item_id, RubricItem.version == version)
            .values(points=points, text=text, version=RubricItem.version + 1)
            .execution_options(synchronize_session=False)
        ).rowcount
        target = f"{part.exercise} {part.name} item {item.position}"
        if changed != 1:
            session.expire(item)
            last = session.scalar(
                select(Audit.who)
                .where(
                    (Audit.target == target) | Audit.target.startswith(target + " ("),
                    Audit.action.in_(("add rubric item", "edit rubric item")),
                )
                .order_by(Audit.id.desc())
                .limit(1)
            )
            now_item = {"points": item.points, "text": item.text}
            return ItemEdit(False, len(having), now_item, last or "")
        _audit(
            session,
            ta.name,
            "edit rubric item",
            f"{target} ({len(having)} answers re-scored)",
            before,
            {"points": points, "text": text},
        )
        sums = applied_sums(session, part.id)
        for answer in having:
            after = score(part, answer, sums.get(answer.id, 0.0))
            if after != was[answer.id]:
                _audit(
                    session,
                    ta.name,
                    "re-scored by an item's edit",
                    _target(session, answer, part),
                    {"score": was[answer.id]},
                    {"score": after},
                )
        return ItemEdit(True, len(having))


def set_base(database, ta: TA, part_id: int, base: float) -> None:
    with database.writing() as session:
        part = session.get(Part, part_id)
        if part is None or part.kind != "written":
            raise KeyError(part_id)
        base = clamp(base, part.max_points)
        before = {"base_points": part.base_points}
        part.base_points = base
        _audit(
            session,
            ta.name,
            "rubric start",
            f"{part.exercise} {part.name}",
            before,
            {"base_points": base},
        )


# -- progress, audit --------------------------------------------------------------------------


def parts(session) -> list[Part]:
    return list(session.scalars(select(Part).order_by(Part.position, Part.id)))


def progress(session) -> tuple[dict[int, dict], dict[str, dict[int, int]]]:
    """Per part: answers, graded; per TA: part id -> answers they graded last."""
    per_part = {}
    for part_id, kind, graded, points, count in session.execute(
        select(Part.id, Part.kind, Answer.graded, Answer.points.is_not(None), func.count())
        .join(Answer, Answer.part_id == Part.id)
        .group_by(Part.id, Part.kind, Answer.graded, Answer.points.is_not(None))
    ):
        entry = per_part.setdefault(part_id, {"answers": 0, "graded": 0})
        entry["answers"] += count
        if (kind == "written" and graded) or (kind == "auto" and points):
            entry["graded"] += count
    per_ta: dict[str, dict[int, int]] = {}
    # Answers graded now (a regrade cleared back to the autograder's points is no longer one).
    graded_now = ((Part.kind == "written") & Answer.graded.is_(True)) | (
        (Part.kind == "auto") & Answer.points.is_not(None)
    )
    for name, part_id, count in session.execute(
        select(TA.name, Answer.part_id, func.count())
        .join(Answer, Answer.graded_by == TA.id)
        .join(Part, Part.id == Answer.part_id)
        .where(graded_now)
        .group_by(TA.name, Answer.part_id)
    ):
        per_ta.setdefault(name, {})[part_id] = count
    return per_part, per_ta


AUDIT_COLUMNS = ["at", "who", "action", "target", "before", "after"]


@dataclass(frozen=True)
class Logged:
    """One line of the audit log, as a reader may see it."""

    at: datetime
    who: str
    action: str
    target: str
    before: str
    after: str


def audit_rows(session, limit: int | None = None, reveal: bool = True) -> list[Logged]:
    """The audit log, newest first. Without `reveal`, the student a line is about is named by
    their alias, as on every page of a TA who has not revealed the ids (r8 red team: the log
    and its CSV named them)."""
    query = select(Audit).order_by(Audit.id.desc())
    if limit:
        query = query.limit(limit)
    rows = list(session.scalars(query))
    named = (lambda target: target) if reveal else _aliased_targets(session)
    return [Logged(r.at, r.who, r.action, named(r.target), r.before, r.after) for r in rows]


def _aliased_targets(session):
    """target -> the same target with its student's id replaced by their alias (`_target`
    writes "<sid> <exercise> <part>"; a target that names no student is kept)."""
    aliases = dict(session.execute(select(Student.sid, Student.alias)).all())
    suffixes = [f" {p.exercise} {p.name}" for p in session.scalars(select(Part))]

    def named(target: str) -> str:
        for suffix in suffixes:
            sid = target[: -len(suffix)] if target.endswith(suffix) else None
            if sid in aliases:
                return aliases[sid] + suffix
        return target

    return named


def audit_csv(session, reveal: bool = True) -> str:
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(AUDIT_COLUMNS)
    for row in reversed(audit_rows(session, reveal=reveal)):
        writer.writerow(
            [
                row.at.isoformat(timespec="seconds") + "Z",
                untrusted.csv_cell(row.who),
                untrusted.csv_cell(row.action),
                untrusted.csv_cell(row.target),
                untrusted.csv_cell(row.before, 20_000),
                untrusted.csv_cell(row.after, 20_000),
            ]
        )
    return buffer.getvalue()


# -- scores out -------------------------------------------------------------------------------


def _wording(items: list[RubricItem], comment: str) -> str:
    words = [f"{item.points:+g} {item.text}" for item in items]
    if comment:
        words.append(comment)
    return "; ".join(words)


def review_scores(database) -> tuple[dict, dict]:
    """What the gradebook adds: written scores (student -> "exercise part" -> {points,
    max_points, comment}, as grader.instructor.review.written.load_scores has them) and
    regrades (student -> "exercise part" -> {points, was, max_points, reason, by})."""
    written, regrades = {}, {}
    with database.reading() as session:
        names = ta_names(session)
        items = {i.id: i for i in session.scalars(select(RubricItem))}
        applied: dict[int, list[RubricItem]] = {}
        for answer_id, item_id in session.execute(select(Applied.answer_id, Applied.item_id)):
            applied.setdefault(answer_id, []).append(items[item_id])
        rows = session.execute(
            select(Answer, Part, Student.sid)
            .join(Part, Part.id == Answer.part_id)
            .join(Student, Student.id == Answer.student_id)
            .where((Answer.graded.is_(True)) | (Answer.points.is_not(None)))
        )
        for answer, part, sid in rows:
            key = f"{part.exercise} {part.name}"
            if part.kind == "written" and answer.graded:
                have = sorted(applied.get(answer.id, []), key=lambda i: (i.position, i.id))
                written.setdefault(sid, {})[key] = {
                    "points": float(score(part, answer, sum(i.points for i in have))),
                    "max_points": float(part.max_points),
                    # One text as review.csv has it; the feedback shows items and note apart.
                    "comment": _wording(have, answer.comment),
                    "items": [f"{item.points:+g} {item.text}" for item in have],
                    "note": answer.comment,
                }
            elif part.kind == "auto" and answer.points is not None:
                regrades.setdefault(sid, {})[key] = {
                    "points": float(answer.points),
                    "was": float(answer.auto_points or 0.0),
                    "max_points": float(part.max_points),
                    "reason": answer.comment,
                    "by": names.get(answer.graded_by, ""),
                }
    return written, regrades


SHEET_COLUMNS = ["student", "exercise", "part", "max_points", "points", "comment", "answer"]


def export_sheet(database, reveal: bool = True) -> str:
    """review.csv, as `grader batch --written` writes it, with the points and comments given
    in the workbench (a spreadsheet's way back in: `grader review OUT import-csv`). Without
    `reveal`, students are named by their aliases, which the import reads back."""
    written, _regrades = review_scores(database)
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(SHEET_COLUMNS)
    with database.reading() as session:
        rows = session.execute(
            select(Answer, Part, Student.sid, Student.alias)
            .join(Part, Part.id == Answer.part_id)
            .join(Student, Student.id == Answer.student_id)
            .where(Part.kind == "written")
            .order_by(Part.position, Student.sid if reveal else Student.alias)
        )
        for answer, part, sid, alias in rows:
            entry = written.get(sid, {}).get(f"{part.exercise} {part.name}", {})
            writer.writerow(
                [
                    untrusted.csv_cell(sid if reveal else alias),
                    part.exercise,
                    part.name,
                    f"{part.max_points:g}",
                    f"{entry['points']:g}" if entry else "",
                    untrusted.csv_cell(entry.get("comment", ""), COMMENT_CHARS),
                    untrusted.csv_cell(answer.text, 20_000, newlines=True),
                ]
            )
    return buffer.getvalue()


@dataclass
class Imported:
    imported: list[str] = field(default_factory=list)
    kept: list[str] = field(default_factory=list)  # typed in the page: not overwritten
    problems: list[str] = field(default_factory=list)


def import_sheet(database, text: str, who: str, overwrite: bool = False) -> Imported:
    """Points and comments of a filled review.csv into the database. A score a TA gave in the
    page is never replaced unless `overwrite`: it is named in `kept` instead. Nothing is
    imported when a line is wrong (all named in `problems`)."""
    result = Imported()
    reader = csv.DictReader(io.StringIO(text))
    missing = {"student", "exercise", "part", "points"} - set(reader.fieldnames or [])
    if missing:
        result.problems.append(f"no column {', '.join(sorted(missing))}")
        return result
    with database.writing() as session:
        sids = {s.sid: s for s in session.scalars(select(Student))}
        shown = {untrusted.csv_cell(s): s for s in sids}
        # A sheet exported by a TA who had not revealed the ids names students by alias.
        shown |= {s.alias: s.sid for s in sids.values() if s.alias not in shown}
        parts_by = {
            (p.exercise, p.name): p
            for p in session.scalars(select(Part).where(Part.kind == "written"))
        }
        plan = []
        for line, row in enumerate(reader, start=2):
            points = (row.get("points") or "").strip()
            if not points:
                continue
            cell = row.get("student") or ""
            sid = shown.get(cell, shown.get(cell.strip(), cell.strip()))
            key = ((row.get("exercise") or "").strip(), (row.get("part") or "").strip())
            if sid not in sids:
                result.problems.append(f"line {line}: no student {sid!r}")
                continue
            if key not in parts_by:
                result.problems.append(f"line {line}: no written part {' '.join(key)!r}")
                continue
            part = parts_by[key]
            try:
                value = float(points)
            except ValueError:
                result.problems.append(f"line {line}: points {points!r} is not a number")
                continue
            if not 0 <= value <= part.max_points:
                result.problems.append(
                    f"line {line}: {value:g} points, out of 0–{part.max_points:g}"
                )
                continue
            plan.append((sids[sid], part, value, (row.get("comment") or "").strip()))
        if result.problems:
            return result
        for student, part, value, comment in plan:
            answer = session.scalar(
                select(Answer).where(Answer.student_id == student.id, Answer.part_id == part.id)
            )
            label = f"{student.sid} {part.exercise} {part.name}"
            if answer is None:
                result.problems.append(f"{label}: no answer in the database")
                continue
            sums = applied_sums(session, part.id).get(answer.id, 0.0)
            current = score(part, answer, sums)
            if answer.graded and answer.source != "csv" and not overwrite:
                if current != value:
                    result.kept.append(f"{label} ({current:g} in the page, {value:g} in the sheet)")
                continue
            before = snapshot(session, answer, part)
            answer.points, answer.comment, answer.graded = value, comment, True
            answer.source, answer.version, answer.updated_at = "csv", answer.version + 1, now()
            session.flush()
            _audit(
                session, who, "import review.csv", label, before, snapshot(session, answer, part)
            )
            result.imported.append(label)
    return result
