"""Results as short terminal text: one line a part, then what to fix first."""

from __future__ import annotations

import sys

import click

from grader.engine import feedback
from grader.engine.results import ExerciseResult
from grader.engine.spec import Exercise
from grader.engine.status import Answer, CaseStatus, Status

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
    record: Exercise,
    result: ExerciseResult,
    *,
    verbose: bool = False,
    color: bool | None = None,
    again: str | None = None,
    width: int | None = None,
) -> str:
    """`again`: the command that grades the same files again (the student's own options); by
    default `grader check <id>`."""

    def style(text, **kwargs):
        return click.style(text, **kwargs) if color is not False else text

    ok_mark, fail_mark = _marks()
    name_width = max(len(part.name) for part in result.parts)
    lines = [
        style(f"Exercise {record.id} · {record.title}", bold=True),
        style(f"  graded file: {result.submission}", bold=True),
    ]
    common, shown = (
        ("", {}) if verbose else problem_lines(record, result, width=width, fail_mark=fail_mark)
    )
    if common:
        lines += common
    for part in result.parts:
        mark = ok_mark if part.status == Status.PASSED else fail_mark
        head = (
            f"  {mark} {part.name:<{name_width}}  {_points(part.score)}/{_points(part.max_score)}"
            f"  {WORDS.get(part.status, part.status)}"
        )
        lines.append(style(head, fg=COLOURS.get(part.status, "red")))
        if verbose:
            failures = [check for check in part.checks if not check.passed]
            ranked = sorted(failures, key=lambda c: (feedback.rank(c), feedback.check_kind(c)))
            for check in ranked:
                lines += feedback.wrap(feedback.problem_text(check, first=True), width)
                if check.raw:
                    lines += feedback.wrap(f"(raw: {check.raw})", width, feedback.INDENT + "  ")
        else:
            lines += shown.get(part.name, [])
        if verbose:
            lines.extend(f"      {ok_mark} {check.name}" for check in part.checks if check.passed)
    for written in result.for_instructor:
        state = (
            "written: for the instructor"
            if written["status"] == Answer.WRITTEN
            else f"not written yet ({written['answer_file']})"
        )
        lines.append(
            f"  · {written['name']:<{name_width}}  {_points(written['max_score'])} pt  "
            f"{state}, not in the automatic score"
        )
    total = f"Score: {_points(result.score)}/{_points(result.max_score)}"
    lines.append(style(total, bold=True, fg="green" if result.passed else None))
    if not result.passed:
        lines.append(
            f"Edit {result.submission}, then run `{again or f'grader check {record.id}'}` again."
        )
    return "\n".join(lines)


def problem_lines(
    record: Exercise,
    result: ExerciseResult,
    *,
    width: int | None = None,
    fail_mark: str = "x",
    first_causes: dict[str, list[str]] | None = None,
) -> tuple[list[str], dict[str, list[str]]]:
    """What a student reads of a result without --verbose, the one renderer of `grader check`
    and of a batch's feedback files: the lines of a failure every part shares (a file that
    does not load, shown once), and under each failed part its most useful problems, each once
    (grader.engine.feedback). `first_causes` (part -> parts to fix first) defaults to those
    read from the submitted file."""
    common = feedback.common_failure(result)
    if common:
        return feedback.wrap(f"{fail_mark} {common}", width, "  "), {}
    if first_causes is None:
        first_causes = feedback.causes(record, result)
    shown = {}
    for part in result.parts:
        failures = [check for check in part.checks if not check.passed]
        if not failures:
            continue
        if part.status == Status.NOT_IMPLEMENTED:
            hints = dict.fromkeys(
                c.message for c in failures if c.cause == CaseStatus.NOT_IMPLEMENTED
            )
            shown[part.name] = [
                line for hint in hints for line in feedback.wrap(_to_do(hint), width)
            ]
            continue
        before = (
            [feedback.cause_words(part.name, first_causes[part.name])]
            if first_causes.get(part.name)
            else []
        )
        shown[part.name] = feedback.part_lines(part, before, width)
    return [], shown


def _to_do(hint: str) -> str:
    """A "not implemented yet (Exercise 8-2: ...)" message as a short to-do line: its first
    sentence."""
    if not hint.endswith(")") or "(" not in hint:
        return hint
    words = hint.removeprefix("not implemented yet (")[:-1]
    first = words.split(". ", 1)[0].rstrip(".")
    return f"to do: {first}" + ("." if first else "")


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
