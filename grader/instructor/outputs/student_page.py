"""Each student's feedback as one self-contained HTML page (`feedback/<id>.html`): the same page
as `grader check ID --html FILE`, pictures of the worst case included.

The page is a courtesy beside the Markdown feedback and the results JSON, which are the record:
when a picture or the page cannot be made (no matplotlib, a figure that fails), the student's
grade and the rest of the batch go on, and the page says what is missing."""

from __future__ import annotations

import os
from pathlib import Path

from grader.engine.results import ExerciseResult
from grader.i18n import _
from grader.vocabulary.spec import Exercise
from grader.vocabulary.untrusted import html as escape  # cleaned, bounded, then escaped


class StudentPage:
    """Collects one student's pictures while their parts are judged, then writes the page."""

    def __init__(self, path: Path, enabled: bool = True):
        self.path = path
        self.enabled = enabled
        self.pictures: dict[str, list] = {}
        self.missing: list[str] = []

    def observe(self, record: Exercise, part, cases, expected, outcome, judged) -> None:
        if not self.enabled:
            return
        try:
            from grader.pictures import PictureCollector

            collector = PictureCollector()
            collector(part, cases, expected, outcome, judged)
        except Exception as error:  # noqa: BLE001 - a picture must never cost a grade
            self.missing.append(f"{record.id} {part.name}: {type(error).__name__}")
            return
        self.pictures.setdefault(record.id, []).extend(collector.pictures)

    def write(self, student: str, records: list[Exercise], results: list[ExerciseResult]) -> None:
        if not self.enabled:
            return
        from grader.notebook.html import page, result_html

        note = (
            _(
                "No picture for {parts} (the grade does not depend on it).",
                parts=", ".join(self.missing),
            )
            if self.missing
            else ""
        )
        by_id = {record.id: record for record in records}
        heading = _("Feedback for {student}", student=student)
        body = f"<h2>{escape(heading)}</h2>" + "".join(
            result_html(
                by_id[result.exercise], result, self.pictures.get(result.exercise, []), escape(note)
            )
            for result in results
            if result.exercise in by_id
        )
        temporary = self.path.with_name(self.path.name + ".tmp")
        temporary.write_text(page(heading, body), encoding="utf-8")
        os.replace(temporary, self.path)
