"""What a batch leaves in its output folder: per-student results and feedback, the gradebook,
a JUnit file and the HTML report. Everything is written from the per-student result files, so
a resumed run produces the same files as an uninterrupted one.

A student's files are named by grader.vocabulary.untrusted.file_stem (a folder's name may be
anything a file system allows), and every text written goes through that module's escaper for
its output: ids and messages come from students and their code."""

from __future__ import annotations

import csv
import io
import json
import os
from pathlib import Path

from grader.engine.results import ExerciseResult
from grader.instructor.files import atomic_write, result_path, student_of
from grader.instructor.outputs.outcomes import FILE_FLAGS
from grader.records import EXERCISES
from grader.vocabulary import untrusted
from grader.vocabulary.spec import Exercise
from grader.vocabulary.status import Status


def student_document(student, exercises: list[ExerciseResult], flags, seed, public_seed, stamp):
    """results/<student>.json: the result format of EXERCISES.md per exercise, plus flags and
    the seeds that reproduce the run."""
    return {
        "student": student,
        "seed": seed,
        "public_seed": public_seed,
        "flags": sorted(set(flags)),
        "total": float(sum(e.score for e in exercises)),
        "max_total": float(sum(e.max_score for e in exercises)),
        "exercises": [
            {**e.to_dict(), "flags": sorted(f for f in set(flags) if f.endswith(e.exercise))}
            for e in exercises
        ],
        "mistakes": {
            f"{e.exercise} {p.name}": p.mistakes for e in exercises for p in e.parts if p.mistakes
        },
        "stamp": stamp,
    }


def _about(flag: str, exercise: str) -> bool:
    """Whether a student's flag is about this exercise (see grader.instructor.batch)."""
    return flag.endswith(f":{exercise}") or flag in (f"{kind}-{exercise}" for kind in FILE_FLAGS)


def merge_previous(document: dict, previous: dict | None, regraded: list[str]) -> dict:
    """`document` (this run's exercises) with the exercises of `previous` (the student's result
    already in the output folder) that this run did not grade, so that grading other exercises
    into the same folder keeps the earlier columns instead of dropping them."""
    if not isinstance(previous, dict) or not isinstance(previous.get("exercises"), list):
        return document
    kept = [e for e in previous["exercises"] if e.get("exercise") not in regraded]
    if not kept:
        return document
    ids = {e["exercise"] for e in kept}
    order = list(EXERCISES)
    merged = dict(document)
    merged["exercises"] = sorted(
        [*document["exercises"], *kept],
        key=lambda e: order.index(e["exercise"]) if e["exercise"] in order else len(order),
    )
    merged["total"] = float(sum(e["score"] for e in merged["exercises"]))
    merged["max_total"] = float(sum(e["max_score"] for e in merged["exercises"]))
    merged["flags"] = sorted(
        set(document["flags"])
        | {f for f in previous.get("flags", []) if any(_about(f, i) for i in ids)}
    )
    for field, belongs in (
        ("mistakes", lambda key: key.split(" ")[0] in ids),
        ("grader_errors", lambda key: key.split(" ")[0] in ids),
        ("refused", lambda key: key in ids),
    ):
        earlier = {k: v for k, v in previous.get(field, {}).items() if belongs(k)}
        if earlier or field in document:
            merged[field] = {**earlier, **document.get(field, {})}
    merged["final"] = document.get("final", True) and not merged.get("grader_errors")
    return merged


def set_aside_removed(out: Path, students: list[str]) -> list[str]:
    """Move the results and feedback of students no longer among the submissions to
    `out/removed/` (kept, not graded, not in the gradebook); returns who was moved."""
    present = {untrusted.file_stem(student) for student in students}
    moved = []
    for result in sorted((out / "results").glob("*.json")):
        if result.stem in present:
            continue
        student = student_of(result)
        for kind, name in (
            ("results", f"{result.stem}.json"),
            ("feedback", f"{result.stem}.md"),
            ("feedback", f"{result.stem}.html"),
        ):
            source = out / kind / name
            if source.exists():
                (out / "removed" / kind).mkdir(parents=True, exist_ok=True)
                os.replace(source, out / "removed" / kind / name)
        moved.append(student)
    return moved


def columns(documents: list[dict], records: list[Exercise]) -> list[Exercise]:
    """The exercises of the gradebook: this run's, and any kept from earlier runs."""
    ids = {r.id for r in records} | {e["exercise"] for d in documents for e in d["exercises"]}
    return [record for record in EXERCISES.values() if record.id in ids]


def load_documents(out: Path, students: list[str]) -> list[dict]:
    """Every student's result; one that is missing or unreadable is a row with no grade (never
    dropped from the gradebook, never a zero), flagged `no-result`."""
    documents = []
    for student in sorted(students):
        try:
            document = json.loads(result_path(out, student).read_text("utf-8"))
            if not isinstance(document, dict) or "exercises" not in document:
                raise ValueError("not a result")
        except (OSError, ValueError):
            document = {
                "student": student,
                "flags": ["no-result"],
                "total": 0.0,
                "max_total": 0.0,
                "exercises": [],
                "final": False,
                "grader_errors": {"all": "no readable result file: run the batch again"},
            }
        documents.append(document)
    return documents


def grades_csv(documents: list[dict], records: list[Exercise]) -> str:
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    from grader.instructor.outputs.adjustments import extra_columns  # issue 19: written, late

    extra_heads, extra_cells = extra_columns(documents)
    writer.writerow(
        untrusted.csv_row(
            ["student", *[r.id for r in records], "total", "max_total", "flags", *extra_heads]
        )
    )
    for document in documents:
        scores = {e["exercise"]: f"{e['score']:g}" for e in document["exercises"]}
        for failed in {p.split(" ")[0] for p in document.get("grader_errors", {})}:
            scores[failed] = ""  # not graded (the grader failed): never a zero
        if not document["exercises"]:
            scores = {r.id: "" for r in records}
        final = document.get("final", True)
        writer.writerow(
            untrusted.csv_row(
                [
                    document["student"],
                    *[scores.get(r.id, "0") for r in records],
                    f"{document['total']:g}" if final else "",
                    f"{document['max_total']:g}" if document["exercises"] else "",
                    ";".join(document["flags"]),
                    *extra_cells(document),
                ]
            )
        )
    return buffer.getvalue()


def junit_xml(documents: list[dict]) -> str:
    """One test case per student and part: for CI systems that read JUnit (well-formed XML
    whatever the ids and messages hold)."""
    xml = untrusted.xml
    cases, failures = [], 0
    for document in documents:
        for exercise in document["exercises"]:
            for part in exercise["parts"]:
                name = xml(f"{exercise['exercise']} {part['name']}", newlines=False)
                classname = xml(document["student"], newlines=False)
                if part["status"] == Status.PASSED:
                    cases.append(f'  <testcase classname="{classname}" name="{name}"/>')
                    continue
                failures += 1
                text = "\n".join(
                    f"{c['name']}: {c['message']}" for c in part["checks"] if not c["passed"]
                )
                cases.append(
                    f'  <testcase classname="{classname}" name="{name}">\n'
                    f'    <failure message="{xml(part["status"], newlines=False)}">'
                    f"{xml(text, 20_000)}</failure>\n"
                    "  </testcase>"
                )
    return (
        '<?xml version="1.0" encoding="utf-8"?>\n'
        f'<testsuite name="attnkit-grader" tests="{len(cases)}" failures="{failures}">\n'
        + "\n".join(cases)
        + "\n</testsuite>\n"
    )


def write_all(
    out: Path,
    students: list[str],
    records: list[Exercise],
    note: str = "",
    removed: list[str] = (),
    exporting: str | None = None,
) -> list[str]:
    """Write the gradebook, JUnit file and report from the result files; returns what the
    instructor must be told (an LMS export made from an earlier gradebook, but the one of
    `exporting`, about to be made again)."""
    from grader.instructor.outputs.adjustments import apply_adjustments
    from grader.instructor.outputs.lms import stale_exports
    from grader.instructor.outputs.report_html import report_html
    from grader.instructor.outputs.sections import instructor_sections

    documents = load_documents(out, students)
    records = columns(documents, records)
    apply_adjustments(out, documents, records)
    atomic_write(out / "grades.csv", grades_csv(documents, records))
    atomic_write(out / "junit.xml", junit_xml(documents))
    report = report_html(documents, records, note, list(removed), instructor_sections(out))
    atomic_write(out / "report.html", report)
    return stale_exports(out, exporting)
