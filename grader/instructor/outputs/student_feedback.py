"""Each student's feedback in Markdown (`feedback/<id>.md`), the record a student reads
beside their results file: the total, what is pending or not final, flags, then each exercise's
parts with the same problem lines `grader check` shows (grader.report). Written by the batch
and again, with the written points and late penalty, by grader.instructor.outputs.adjustments."""

from __future__ import annotations

from pathlib import Path

from grader.engine.results import ExerciseResult
from grader.i18n import N_, _, tr
from grader.instructor.files import atomic_write
from grader.records import EXERCISES
from grader.vocabulary import untrusted
from grader.vocabulary.spec import Exercise

# The part statuses as feedback shows them (translated there).
STATUS_WORDS = (N_("passed"), N_("failed"), N_("not implemented"), N_("error"), N_("timeout"))
# A width no feedback line reaches: each problem is one markdown line.
UNWRAPPED = 100_000


def write_feedback(path: Path, document: dict, records: list[Exercise]) -> None:
    known = {r.id: r for r in [*EXERCISES.values(), *records]}
    md = untrusted.markdown
    lines = [
        _("# Feedback for {student}", student=md(document["student"])),
        "",
        _("Total: {total:g} / {max:g}", total=document["total"], max=document["max_total"]),
        "",
    ]
    pending = sum(document.get("pending", {}).values())
    if pending:
        lines += [
            _(
                "{points:g} points pending review: your written answers are scored by hand; "
                "the total above adds them once they are.",
                points=pending,
            ),
            "",
        ]
    if not document.get("final", True):
        lines += [
            _(
                "Some parts were not graded: the grader itself failed there, not your code. "
                "They will be graded again; the total above is not final."
            ),
            "",
        ]
    if document["flags"]:
        lines += [_("Flags: {flags}", flags=md(", ".join(document["flags"]))), ""]
    for flag in document["flags"]:
        exercise = flag.removeprefix("renamed-")
        if flag.startswith("renamed-") and exercise in known:
            sentence = _(
                "Exercise {id}: no file was named {file}; the one file of a near name was "
                "graded as it. Name it exactly {file} next time.",
                id=exercise,
                file=known[exercise].file,
            )
            lines += [sentence, ""]
    for exercise in document["exercises"]:
        record = known.get(exercise["exercise"])
        lines += [
            _(
                "## Exercise {id}: {title}",
                id=exercise["exercise"],
                title=tr(record.title) if record else "",
            ),
            "",
            _("Score: {score:g} / {max:g}", score=exercise["score"], max=exercise["max_score"]),
            "",
        ]
        common, shown = _problems(exercise)
        lines += [md(line.strip()) for line in common]
        for part in exercise["parts"]:
            lines.append(
                f"- **{md(part['name'])}** {part['score']:g}/{part['max_score']:g} — "
                f"{md(tr(part['status'].replace('_', ' ')))}"
            )
            lines += [f"  - {md(line.strip())}" for line in shown.get(part["name"], [])]
        lines.append("")
    atomic_write(path, "\n".join(lines))


def _problems(exercise: dict) -> tuple[list[str], dict[str, list[str]]]:
    """The lines `grader check` shows for an exercise of a result file (the same renderer:
    grader.report.problem_lines), one line a problem (markdown wraps them)."""
    from grader.report import problem_lines

    record = EXERCISES.get(exercise.get("exercise"))
    if record is None:
        return [], {}
    # No "fix that part first": the submitted file (maybe a zip) is not at hand here.
    result = ExerciseResult.from_dict(exercise)
    return problem_lines(record, result, width=UNWRAPPED, first_causes={})
