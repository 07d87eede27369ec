"""Results as short terminal text: one line a part, then what to fix first."""

from __future__ import annotations

import copy
import re
import sys

import click

from grader.engine import feedback
from grader.engine.results import ExerciseResult
from grader.i18n import N_, _, display_width, language, pad, stub_path, tr
from grader.vocabulary.spec import Exercise
from grader.vocabulary.status import Answer, CaseStatus, Status
from grader.vocabulary.untrusted import terminal

COLOURS = {
    Status.PASSED: "green",
    Status.NOT_IMPLEMENTED: "yellow",
    Status.TIMEOUT: "red",
    Status.ERROR: "red",
}
# Translated where shown (`tr`).
WORDS = {
    Status.PASSED: N_("passed"),
    Status.NOT_IMPLEMENTED: N_("not implemented yet"),
    Status.TIMEOUT: N_("timed out"),
    Status.ERROR: N_("error"),
    Status.FAILED: N_("failed"),
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

    result = cleaned(result)

    def style(text, **kwargs):
        return click.style(text, **kwargs) if color is not False else text

    ok_mark, fail_mark = _marks()
    name_width = max(display_width(part.name) for part in result.parts)
    lines = [
        style(_("Exercise {id} · {title}", id=record.id, title=tr(record.title)), bold=True),
        style(_("  graded file: {path}", path=result.submission), bold=True),
    ]
    common, shown = (
        ("", {}) if verbose else problem_lines(record, result, width=width, fail_mark=fail_mark)
    )
    if common:
        lines += common
    for part in result.parts:
        mark = ok_mark if part.status == Status.PASSED else fail_mark
        head = (
            f"  {mark} {pad(part.name, name_width)}  "
            f"{_points(part.score)}/{_points(part.max_score)}"
            f"  {tr(WORDS.get(part.status, part.status))}"
        )
        lines.append(style(head, fg=COLOURS.get(part.status, "red")))
        if verbose:
            failures = [check for check in part.checks if not check.passed]
            ranked = sorted(failures, key=lambda c: (feedback.rank(c), feedback.check_kind(c)))
            for check in ranked:
                lines += feedback.wrap(feedback.problem_text(check, first=True), width)
                if check.raw:
                    said = _("(the error as raised: {error})", error=check.raw)
                    lines += feedback.wrap(said, width, feedback.INDENT + "  ")
        else:
            lines += shown.get(part.name, [])
        if verbose:
            lines.extend(f"      {ok_mark} {check.name}" for check in part.checks if check.passed)
    for written in result.for_instructor:
        state = (
            _("written: for the instructor")
            if written["status"] == Answer.WRITTEN
            else _("not written yet ({file})", file=written["answer_file"])
        )
        lines.append(
            _(
                "  · {name}  {points} pt  {state}, not in the automatic score",
                name=pad(written["name"], name_width),
                points=_points(written["max_score"]),
                state=state,
            )
        )
    total = _("Score: {score}/{max}", score=_points(result.score), max=_points(result.max_score))
    lines.append(style(total, bold=True, fg="green" if result.passed else None))
    if not result.passed:
        lines.append(
            _(
                "Edit {path}, then run `{command}` again.",
                path=result.submission,
                command=again or f"grader check {record.id}",
            )
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
    result = cleaned(result)
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
        declared = next((p.mistakes for p in record.parts if p.name == part.name), ())
        own = {mistake.name for mistake in declared}
        shown[part.name] = feedback.part_lines(part, before, width, own)
    return [], shown


# A check's message, detail or raw error is shown up to this many characters.
MESSAGE_CHARS = 20_000


def cleaned(result: ExerciseResult) -> ExerciseResult:
    """A copy of `result` whose texts (a child's error messages, a submission's name) have no
    escape sequences or control characters: this module's colours are the only ones shown."""
    result = copy.deepcopy(result)
    result.submission = terminal(result.submission, 1000)
    for part in result.parts:
        for check in part.checks:
            check.message = terminal(check.message, MESSAGE_CHARS)
            check.detail = terminal(check.detail, MESSAGE_CHARS)
            check.raw = terminal(check.raw, MESSAGE_CHARS)
    return result


def _to_do(hint: str) -> str:
    """A "not implemented yet (Exercise 8-2: ...)" message as a short to-do line: its first
    sentence."""
    prefix = _("not implemented yet") + " ("
    if not hint.endswith(")") or not hint.startswith(prefix):
        return hint
    words = hint.removeprefix(prefix)[:-1]
    # A sentence ends at "。" or at ". ", not at the dots of a range ("0 .. maxlen-1").
    first = re.split(r"(?<![.\s])\.(?!\.) |。", words, maxsplit=1)[0].rstrip(".。")
    if first and first[-1] not in "?!？！":  # a question keeps its own mark
        # The full stop of the language the line is written in, not of the hint's characters:
        # an English hint may hold a formula (xᵀ, √d) and still end in ".".
        first += "。" if language() == "zh" else "."
    return _("to do: {hint}", hint=first)


def render_show(record: Exercise) -> str:
    lines = [
        _("Exercise {id} · {title}", id=record.id, title=tr(record.title)),
        _("Section: {section}", section=tr(record.section)),
        _("File to edit: {path}", path=stub_path(record)),
        "",
        tr(record.summary),
        "",
        _("Parts:"),
    ]
    width = max(display_width(part.name) for part in record.parts)
    for part in record.parts:
        lines.append(
            _(
                "  {name}  {points} pt  {description}",
                name=pad(part.name, width),
                points=_points(part.points),
                description=tr(part.description),
            )
        )
    for written in record.written:
        lines.append(
            _(
                "  {name}  {points} pt  written, in exercises/answers/{id}.md: {prompt} (for the "
                "instructor, not in the automatic score)",
                name=pad(written.name, width),
                points=_points(written.points),
                id=record.id,
                prompt=tr(written.prompt),
            )
        )
    lines += [
        "",
        _(
            "Total: {points} points. A part scores its points when every check of it passes "
            "(outputs, gradients, dtype).",
            points=_points(record.max_score),
        ),
        _("Grade it with: grader check {id}", id=record.id),
    ]
    return "\n".join(lines)
