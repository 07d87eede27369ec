"""A batch's output folder without running a batch: result files for made-up students (which
parts passed), then the gradebook written from them the way `grader batch` ends."""

from __future__ import annotations

import json
from pathlib import Path

from grader.engine.results import ExerciseResult, PartResult
from grader.instructor.outputs import gradebook, student_feedback
from grader.records import get_exercise
from grader.vocabulary.status import Status


def write_class(out: Path, passed: dict[str, dict[str, set[str]]], not_final=()) -> list[str]:
    """`passed`: student -> exercise id -> names of the parts that passed (the others failed).
    Students in `not_final` had a part the grader itself failed on (no final total)."""
    out = Path(out)
    (out / "results").mkdir(parents=True, exist_ok=True)
    (out / "feedback").mkdir(exist_ok=True)
    exercise_ids = sorted({e for by_exercise in passed.values() for e in by_exercise})
    records = [get_exercise(e) for e in exercise_ids]
    for student, by_exercise in passed.items():
        results = []
        for record in records:
            good = by_exercise.get(record.id, set())
            parts = [
                PartResult(p.name, p.points, Status.PASSED if p.name in good else Status.FAILED)
                for p in record.parts
            ]
            results.append(ExerciseResult(record.id, parts, submission=student, seed=5))
        document = gradebook.student_document(student, results, [], 5, 0, "stamp")
        if student in not_final:
            document["final"] = False
            document["grader_errors"] = {f"{records[0].id} {records[0].parts[0].name}": "boom"}
        (out / "results" / f"{student}.json").write_text(json.dumps(document), "utf-8")
        student_feedback.write_feedback(out / "feedback" / f"{student}.md", document, records)
    (out / "batch.json").write_text(json.dumps({"seed": 5, "exercises": exercise_ids}), "utf-8")
    gradebook.write_all(out, list(passed), records)
    return exercise_ids
