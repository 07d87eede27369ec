"""A finished batch's folder into the workbench's database: its students (results/*.json),
their autograded parts (with the points the autograder gave) and, for every exercise with
written parts, their written answers (written/review.csv, which `grader batch --written`
writes). Run at every start of `grader review`: new students and parts are added, an answer
whose text changed is updated (and the change is in the audit log), nothing graded is lost."""

from __future__ import annotations

import csv
import io
import json
import secrets
from datetime import datetime, timezone
from pathlib import Path

from sqlalchemy import select

from grader.instructor.workbench.models import Answer, Audit, Part, Student
from grader.records import EXERCISES
from grader.vocabulary import untrusted

ANSWER_CHARS = 20_000


def now() -> datetime:
    return datetime.now(timezone.utc).replace(tzinfo=None)


def _results(out: Path) -> list[dict]:
    documents = []
    for path in sorted((Path(out) / "results").glob("*.json")):
        try:
            document = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        if isinstance(document, dict) and isinstance(document.get("student"), str):
            documents.append(document)
    return documents


def _sheet_answers(out: Path, students: list[str]) -> dict[tuple[str, str, str], str]:
    """(student, exercise, part) -> the answer, from written/review.csv."""
    sheet = Path(out) / "written" / "review.csv"
    try:
        text = sheet.read_text(encoding="utf-8-sig")
    except OSError:
        return {}
    shown = {untrusted.csv_cell(s): s for s in students}
    answers = {}
    for row in csv.DictReader(io.StringIO(text)):
        cell = row.get("student") or ""
        student = shown.get(cell, shown.get(cell.strip(), cell.strip()))
        answer = row.get("answer") or ""
        if answer.startswith("'") and answer[1:2] in ("=", "+", "-", "@"):
            answer = answer[1:]  # the sheet's guard against formulas, taken off again
        key = (student, (row.get("exercise") or "").strip(), (row.get("part") or "").strip())
        answers[key] = answer
    return answers


def _alias(taken: set[str]) -> str:
    while True:
        alias = "student-" + secrets.token_hex(3)
        if alias not in taken:
            taken.add(alias)
            return alias


def ingest(database, out: Path) -> dict[str, int]:
    """Add what the batch folder holds; returns counts of what was added or changed."""
    documents = _results(out)
    sids = [d["student"] for d in documents]
    answers = _sheet_answers(out, sids)
    written_batch = (Path(out) / "written").is_dir()
    counts = {"students": 0, "parts": 0, "answers": 0, "changed": 0}
    with database.writing() as session:
        students = {s.sid: s for s in session.scalars(select(Student))}
        taken = {s.alias for s in students.values()}
        parts = {(p.exercise, p.name): p for p in session.scalars(select(Part))}
        existing = {(a.student_id, a.part_id): a for a in session.scalars(select(Answer))}
        order = list(EXERCISES)

        def part_of(exercise, name, kind, maximum, prompt, position):
            key = (exercise, name)
            if key not in parts:
                rank = order.index(exercise) if exercise in order else len(order)
                parts[key] = Part(
                    exercise=exercise,
                    name=name,
                    kind=kind,
                    max_points=float(maximum),
                    prompt=prompt,
                    base_points=0.0,
                    position=rank * 1000 + position,
                )
                session.add(parts[key])
                session.flush()
                counts["parts"] += 1
            return parts[key]

        for document in documents:
            sid = document["student"]
            if sid not in students:
                students[sid] = Student(sid=sid, alias=_alias(taken))
                session.add(students[sid])
                session.flush()
                counts["students"] += 1
            student = students[sid]
            for exercise in document.get("exercises", []):
                eid = exercise.get("exercise")
                record = EXERCISES.get(eid)
                for number, item in enumerate(exercise.get("parts", [])):
                    part = part_of(eid, item["name"], "auto", item["max_score"], "", number)
                    _answer(
                        session,
                        existing,
                        student,
                        part,
                        counts,
                        auto_points=float(item["score"]),
                        auto_status=str(item.get("status", "")),
                    )
                if record is None or not written_batch:
                    continue
                for number, written in enumerate(record.written):
                    part = part_of(
                        eid, written.name, "written", written.points, written.prompt, 500 + number
                    )
                    text = answers.get((sid, eid, written.name), "")
                    _answer(session, existing, student, part, counts, text=text)
    return counts


def _answer(session, existing, student, part, counts, text=None, auto_points=None, auto_status=""):
    key = (student.id, part.id)
    answer = existing.get(key)
    if answer is None:
        answer = Answer(
            student_id=student.id,
            part_id=part.id,
            text=untrusted.clean(text or "", ANSWER_CHARS),
            version=1,
            graded=False,
            comment="",
            source="",
            auto_points=auto_points,
            auto_status=auto_status,
        )
        session.add(answer)
        existing[key] = answer
        counts["answers"] += 1
        return
    changed = {}
    if text is not None and untrusted.clean(text, ANSWER_CHARS) != answer.text:
        changed["text"] = (answer.text, untrusted.clean(text, ANSWER_CHARS))
    if part.kind == "auto" and (answer.auto_points, answer.auto_status) != (
        auto_points,
        auto_status,
    ):
        changed["auto_points"] = (answer.auto_points, auto_points)
        changed["auto_status"] = (answer.auto_status, auto_status)
    if not changed:
        return
    for name, (_, value) in changed.items():
        setattr(answer, name, value)
    answer.version += 1
    counts["changed"] += 1
    session.add(
        Audit(
            at=now(),
            who="grader batch",
            action="answer changed in the batch",
            target=f"{student.sid} {part.exercise} {part.name}",
            before=json.dumps({k: v[0] for k, v in changed.items()}, ensure_ascii=False),
            after=json.dumps({k: v[1] for k, v in changed.items()}, ensure_ascii=False),
        )
    )
