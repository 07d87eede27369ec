"""Results as short terminal text: one line a part, then what to fix first."""

from __future__ import annotations

import sys

import click

from grader.engine.results import ExerciseResult
from grader.engine.spec import Exercise
from grader.engine.status import Answer, CaseStatus, Status

SHOWN_FAILURES = 2
COLOURS = {
    Status.PASSED: "green",
    Status.NOT_IMPLEMENTED: "yellow",
    Status.TIMEOUT: "red",
    Status.ERROR: "red",
}
WORDS = {
    Status.PASSED: "passed",
    Status.NOT_IMPLEMENTED: "not implemented yet",
    Status.TIMEOUT: "timed out",
    Status.ERROR: "error",
    Status.FAILED: "failed",
}


def _marks() -> tuple[str, str]:
    encoding = (getattr(sys.stdout, "encoding", "") or "").lower()
    return ("✓", "✗") if "utf" in encoding else ("+", "x")


def _points(value: float) -> str:
    return f"{value:g}"


def render(
    record: Exercise, result: ExerciseResult, *, verbose: bool = False, color: bool | None = None
) -> str:
    def style(text, **kwargs):
        return click.style(text, **kwargs) if color is not False else text

    ok_mark, fail_mark = _marks()
    width = max(len(part.name) for part in result.parts)
    lines = [
        style(f"Exercise {record.id} · {record.title}", bold=True),
        f"  file: {result.submission}",
    ]
    for part in result.parts:
        mark = ok_mark if part.status == Status.PASSED else fail_mark
        head = (
            f"  {mark} {part.name:<{width}}  {_points(part.score)}/{_points(part.max_score)}"
            f"  {WORDS.get(part.status, part.status)}"
        )
        lines.append(style(head, fg=COLOURS.get(part.status, "red")))
        failures = [check for check in part.checks if not check.passed]
        if part.status == Status.NOT_IMPLEMENTED and not verbose:
            hints = dict.fromkeys(
                c.message for c in failures if c.cause == CaseStatus.NOT_IMPLEMENTED
            )
            lines.extend(
                f"      to do: {hint.removeprefix('not implemented yet (')[:-1]}"
                if hint.endswith(")")
                else f"      {hint}"
                for hint in hints
            )
            continue
        shown = failures if verbose else _first_distinct(failures)
        for check in shown:
            lines.append(
                f"      {check.name}: {check.message}"
                if check.name not in check.message
                else f"      {check.message}"
            )
        if verbose:
            lines.extend(f"      {ok_mark} {check.name}" for check in part.checks if check.passed)
        elif len(failures) > len(shown):
            lines.append(
                f"      … {len(failures) - len(shown)} more failed "
                f"check{'s' if len(failures) - len(shown) > 1 else ''} "
                "(--verbose lists every check)"
            )
    for written in result.for_instructor:
        state = (
            "written: for the instructor"
            if written["status"] == Answer.WRITTEN
            else f"not written yet ({written['answer_file']})"
        )
        lines.append(
            f"  · {written['name']:<{width}}  {_points(written['max_score'])} pt  "
            f"{state}, not in the automatic score"
        )
    total = f"Score: {_points(result.score)}/{_points(result.max_score)}"
    lines.append(style(total, bold=True, fg="green" if result.passed else None))
    if not result.passed:
        lines.append(f"Edit {result.submission}, then run `grader check {record.id}` again.")
    return "\n".join(lines)


def _first_distinct(failures):
    """The first failures with different messages: a mistake repeated on every case shows once."""
    shown, seen = [], set()
    for check in failures:
        key = check.mistake or check.message.split(" (")[0]
        if key not in seen:
            seen.add(key)
            shown.append(check)
        if len(shown) == SHOWN_FAILURES:
            break
    return shown


def render_show(record: Exercise) -> str:
    lines = [
        f"Exercise {record.id} · {record.title}",
        f"Section: {record.section}",
        f"File to edit: exercises/{record.file}",
        "",
        record.summary,
        "",
        "Parts:",
    ]
    width = max(len(part.name) for part in record.parts)
    for part in record.parts:
        lines.append(f"  {part.name:<{width}}  {_points(part.points)} pt  {part.description}")
    for written in record.written:
        lines.append(
            f"  {written.name:<{width}}  {_points(written.points)} pt  written, in "
            f"exercises/answers/{record.id}.md: {written.prompt} (for the instructor, not in "
            "the automatic score)"
        )
    lines += [
        "",
        f"Total: {_points(record.max_score)} points. A part scores its points when "
        "every check of it passes (outputs, gradients, dtype).",
        f"Grade it with: grader check {record.id}",
    ]
    return "\n".join(lines)
