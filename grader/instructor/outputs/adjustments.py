"""What the gradebook adds to the automatic score: merged written points
(grader.instructor.review.written), the written parts still pending review (in the maximum),
and late penalties (grader.instructor.course.late). Applied to the result documents every time
a gradebook is written, from their own files, so a rerun (or a regraded student) keeps them,
and applying twice changes nothing."""

from __future__ import annotations

import json
from pathlib import Path

from grader.i18n import _
from grader.instructor.course.late import FROM_CANVAS_MARK, load_late
from grader.instructor.files import atomic_write, feedback_path, result_path
from grader.instructor.outputs.student_feedback import write_feedback
from grader.instructor.review.written import FOLDER
from grader.vocabulary.untrusted import json_text, markdown


def written_counted(out: Path) -> bool:
    """Whether this batch grades written answers (a review sheet was written or scores were
    merged): then every written part of its exercises counts in every student's maximum,
    scored or pending, so that all students share one maximum."""
    return (Path(out) / FOLDER).is_dir()


def apply_adjustments(out: Path, documents: list[dict], records) -> None:
    """Set each document's `written`, `pending`, `late`, `total` and `max_total` (the one place
    they are computed; gradebook, feedback and report read them); rewrite its result file and
    feedback where they changed. `records`: the gradebook's columns."""
    from grader.instructor.workbench.gradebook import apply_regrades, review_adjustments

    (scores, regrades), late = review_adjustments(out), load_late(out)  # issue 46: + the page's
    counted = written_counted(out)
    for document in documents:
        if not document["exercises"]:
            continue  # no result to add to
        before = json.dumps(document, sort_keys=True)
        written = scores.get(document["student"], {})
        had = {e["exercise"]: e["max_score"] for e in document["exercises"]}
        # Every column's maximum, also of an exercise this student has no result for (the
        # gradebook shows it as 0).
        maximum = sum(had.get(r.id, r.max_score) for r in records)
        maximum += sum(v for e, v in had.items() if e not in {r.id for r in records})
        total = sum(e["score"] for e in document["exercises"])
        total += apply_regrades(document, regrades)  # a TA's points in place of the autograder's
        parts = (
            {f"{r.id} {p.name}": float(p.points) for r in records for p in r.written}
            if counted
            else {}
        )
        for key, entry in written.items():
            parts.setdefault(key, float(entry["max_points"]))
        for field in ("written", "pending", "late"):
            document.pop(field, None)
        if written:
            document["written"] = written
            total += sum(entry["points"] for entry in written.values())
        pending = {key: points for key, points in parts.items() if key not in written}
        if pending:
            document["pending"] = pending
        maximum += sum(parts.values())
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
        added = feedback_lines(document)
        atomic_write(feedback, feedback.read_text(encoding="utf-8") + added)
        _add_to_page(feedback.with_suffix(".html"), added)


# The feedback page's section of what the instructor added, replaced at every rewrite. The page
# is the grader's own HTML, every student text in it escaped, so the markers cannot be forged.
_SECTION_START = '<section id="added-by-instructor">'
_SECTION_END = "</section><!-- added-by-instructor -->"


def _add_to_page(page: Path, added_markdown: str) -> None:
    """`feedback/<id>.html` (written with pictures by the batch) gets the same "Added by the
    instructor" as the Markdown feedback: written scores, rubric items, comments, regrades."""
    if not page.is_file():
        return
    from markdown_it import MarkdownIt

    text = page.read_text(encoding="utf-8")
    start = text.find(_SECTION_START)
    if start >= 0:
        end = text.find(_SECTION_END, start)
        text = text[:start] + text[end + len(_SECTION_END) :] if end >= 0 else text
    if added_markdown.strip():
        # The lines are made safe for Markdown (untrusted.markdown); raw HTML stays off.
        rendered = MarkdownIt("commonmark", {"html": False}).disable("image").render(added_markdown)
        section = f"{_SECTION_START}{rendered}{_SECTION_END}"
        at = text.rfind("</body>")
        text = text[:at] + section + text[at:] if at >= 0 else text + section
    atomic_write(page, text)


def feedback_lines(document: dict) -> str:
    from grader.instructor.workbench.gradebook import regrade_lines

    lines = regrade_lines(document)
    for key, entry in sorted(document.get("written", {}).items()):
        lines.append(
            _(
                "- **{part}** (written) {points:g}/{max:g}",
                part=markdown(key),
                points=entry["points"],
                max=entry["max_points"],
            )
        )
        if "items" in entry:  # from the review page: each item, then the TA's note
            lines += [f"  - {markdown(item)}" for item in entry["items"]]
            if entry.get("note"):
                lines.append(_("  - Comment: {note}", note=markdown(entry["note"])))
        elif entry.get("comment"):
            lines.append(f"  - {markdown(entry['comment'])}")
    for key, points in sorted(document.get("pending", {}).items()):
        lines.append(
            _(
                "- **{part}** (written) pending review, {max:g} points",
                part=markdown(key),
                max=points,
            )
        )
    if "late" in document:
        late = document["late"]
        if late.get("submitted") is None and late.get("source") == FROM_CANVAS_MARK:
            line = _(
                "- **late** (marked late by Canvas; how late is not known, counted as {days} "
                "day(s)): -{penalty:g} points ({share})",
                days=late["days_late"],
                penalty=late["penalty"],
                share=f"{late['fraction']:.0%}",
            )
        else:
            line = _(
                "- **late** {days} day(s) after the due date: -{penalty:g} points ({share})",
                days=late["days_late"],
                penalty=late["penalty"],
                share=f"{late['fraction']:.0%}",
            )
        lines.append(line)
    heading = _("## Added by the instructor")
    return "\n".join(["", heading, "", *lines, ""]) if lines else ""


def extra_columns(documents: list[dict]) -> tuple[list[str], callable]:
    """The gradebook's columns for written points and late penalties: none when no document
    has either (a plain batch's grades.csv stays as it was)."""
    heads = []
    if any("written" in d or "pending" in d for d in documents):
        heads.append("written")
    if any("pending" in d for d in documents):
        heads.append("written_pending")
    if any("late" in d for d in documents):
        heads.append("late_penalty")
    if any("regrades" in d for d in documents):
        heads.append("regraded")  # issue 46: what a TA's regrades changed in the total

    def cells(document: dict) -> list[str]:
        values = []
        if "written" in heads:
            written = document.get("written", {})
            values.append(f"{sum(e['points'] for e in written.values()):g}" if written else "")
        if "written_pending" in heads:
            pending = document.get("pending", {})
            values.append(f"{sum(pending.values()):g}" if pending else "")
        if "late_penalty" in heads:
            values.append(f"{document['late']['penalty']:g}" if "late" in document else "")
        if "regraded" in heads:
            regrades = document.get("regrades", {}).values()
            change = sum(e["points"] - e["was"] for e in regrades)
            values.append(f"{change:g}" if regrades else "")
        return values

    return heads, cells
