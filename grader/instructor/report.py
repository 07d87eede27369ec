"""Results as short terminal text: one line a part, then what to fix first."""

from __future__ import annotations

import sys

import click

from grader.engine.results import ExerciseResult
from grader.engine.spec import Exercise
from grader.engine.status import Answer, CaseStatus, Status
from grader.i18n import N_, _, display_width, n_, pad, stub_path, tr

SHOWN_FAILURES = 2
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
    record: Exercise, result: ExerciseResult, *, verbose: bool = False, color: bool | None = None
) -> str:
    def style(text, **kwargs):
        return click.style(text, **kwargs) if color is not False else text

    ok_mark, fail_mark = _marks()
    width = max(display_width(part.name) for part in result.parts)
    lines = [
        style(_("Exercise {id} · {title}", id=record.id, title=tr(record.title)), bold=True),
        _("  file: {path}", path=result.submission),
    ]
    for part in result.parts:
        mark = ok_mark if part.status == Status.PASSED else fail_mark
        head = (
            f"  {mark} {pad(part.name, width)}  {_points(part.score)}/{_points(part.max_score)}"
            f"  {tr(WORDS.get(part.status, part.status))}"
        )
        lines.append(style(head, fg=COLOURS.get(part.status, "red")))
        failures = [check for check in part.checks if not check.passed]
        if part.status == Status.NOT_IMPLEMENTED and not verbose:
            hints = dict.fromkeys(
                c.message for c in failures if c.cause == CaseStatus.NOT_IMPLEMENTED
            )
            lines.extend(
                _(
                    "      to do: {hint}",
                    hint=hint.removeprefix(_("not implemented yet") + " (")[:-1],
                )
                if hint.endswith(")")
                else f"      {hint}"
                for hint in hints
            )
            continue
        shown = failures if verbose else _first_distinct(failures)
        for check in shown:
            lines.append(
                _("      {name}: {message}", name=check.name, message=check.message)
                if check.name not in check.message
                else f"      {check.message}"
            )
        if verbose:
            lines.extend(f"      {ok_mark} {check.name}" for check in part.checks if check.passed)
        elif len(failures) > len(shown):
            more = len(failures) - len(shown)
            lines.append(
                n_(
                    "      … {count} more failed check (--verbose lists every check)",
                    "      … {count} more failed checks (--verbose lists every check)",
                    more,
                    count=more,
                )
            )
    for written in result.for_instructor:
        state = (
            _("written: for the instructor")
            if written["status"] == Answer.WRITTEN
            else _("not written yet ({file})", file=written["answer_file"])
        )
        lines.append(
            _(
                "  · {name}  {points} pt  {state}, not in the automatic score",
                name=pad(written["name"], width),
                points=_points(written["max_score"]),
                state=state,
            )
        )
    total = _("Score: {score}/{max}", score=_points(result.score), max=_points(result.max_score))
    lines.append(style(total, bold=True, fg="green" if result.passed else None))
    if not result.passed:
        lines.append(
            _(
                "Edit {path}, then run `grader check {id}` again.",
                path=result.submission,
                id=record.id,
            )
        )
    return "\n".join(lines)


def _first_distinct(failures):
    """The first failures with different messages: a mistake repeated on every case shows once."""
    shown, seen = [], set()
    for check in failures:
        key = check.mistake or check.message.split(" (")[0].split("（")[0]
        if key not in seen:
            seen.add(key)
            shown.append(check)
        if len(shown) == SHOWN_FAILURES:
            break
    return shown


def render_show(record: Exercise) -> str:
    lines = [
        _("Exercise {id} · {title}", id=record.id, title=tr(record.title)),
        _("Section: {section}", section=record.section),
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
