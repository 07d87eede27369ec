"""What the gradebook adds to the automatic score: merged written points
(grader.instructor.written) and late penalties (grader.instructor.late). Applied to the result
documents every time a gradebook is written, from their own files, so a rerun (or a regraded
student) keeps them, and applying twice changes nothing."""

from __future__ import annotations

import json
from pathlib import Path

from grader.engine.untrusted import json_text, markdown
from grader.instructor.gradebook import atomic_write, feedback_path, result_path, write_feedback
from grader.instructor.late import load_late
from grader.instructor.written import load_scores


def apply_adjustments(out: Path, documents: list[dict], records) -> None:
    """Set each document's `written`, `late`, `total` and `max_total`; rewrite its result file
    and feedback where they changed."""
    scores, late = load_scores(out), load_late(out)
    for document in documents:
        if not document["exercises"]:
            continue  # no result to add to
        before = json.dumps(document, sort_keys=True)
        written = scores.get(document["student"], {})
        total = sum(e["score"] for e in document["exercises"])
        maximum = sum(e["max_score"] for e in document["exercises"])
        document.pop("written", None)
        document.pop("late", None)
        if written:
            document["written"] = written
            total += sum(entry["points"] for entry in written.values())
            maximum += sum(entry["max_points"] for entry in written.values())
        entry = late.get(document["student"])
        if entry and entry["days_late"]:
            penalty = round(total * entry["fraction"], 2)
            document["late"] = {**entry, "penalty": penalty}
            total -= penalty
        document["total"], document["max_total"] = float(total), float(maximum)
        if json.dumps(document, sort_keys=True) == before:
            continue
        student = document["student"]
        atomic_write(
            result_path(Path(out), student),
            json_text(document, indent=1, sort_keys=True) + "\n",
        )
        feedback = feedback_path(Path(out), student)
        write_feedback(feedback, document, records)
        atomic_write(feedback, feedback.read_text(encoding="utf-8") + feedback_lines(document))


def feedback_lines(document: dict) -> str:
    lines = []
    for key, entry in sorted(document.get("written", {}).items()):
        lines.append(f"- **{markdown(key)}** (written) {entry['points']:g}/{entry['max_points']:g}")
        if entry.get("comment"):
            lines.append(f"  - {markdown(entry['comment'])}")
    if "late" in document:
        late = document["late"]
        lines.append(
            f"- **late** {late['days_late']} day(s) after the due date: "
            f"-{late['penalty']:g} points ({late['fraction']:.0%})"
        )
    return "\n".join(["", "## Added by the instructor", "", *lines, ""]) if lines else ""


def extra_columns(documents: list[dict]) -> tuple[list[str], callable]:
    """The gradebook's columns for written points and late penalties: none when no document
    has either (a plain batch's grades.csv stays as it was)."""
    heads = []
    if any("written" in d for d in documents):
        heads.append("written")
    if any("late" in d for d in documents):
        heads.append("late_penalty")

    def cells(document: dict) -> list[str]:
        values = []
        if "written" in heads:
            written = document.get("written", {})
            values.append(f"{sum(e['points'] for e in written.values()):g}" if written else "")
        if "late_penalty" in heads:
            values.append(f"{document['late']['penalty']:g}" if "late" in document else "")
        return values

    return heads, cells
