"""The report's sections for the instructor's week (similar submissions, written answers, late
work), each written by its own module from its own file in the batch's output folder; empty for
what a batch did not make."""

from __future__ import annotations

from pathlib import Path


def instructor_sections(out: Path) -> str:
    from grader.instructor.course.late import late_section
    from grader.instructor.review.similarity import similarity_section
    from grader.instructor.workbench.gradebook import regrade_section, written_section

    sections = (similarity_section, written_section, regrade_section, late_section)
    return "".join(section(Path(out)) for section in sections)
