"""The student's commands: `grader list`, `show`, `check` and `watch`. They parse and delegate:
the file graded is chosen by grader.notebook.edited, graded by grader.student.check, shown by
grader.report."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import click

from grader.cli.common import records_of, timeout_option, warm_up
from grader.i18n import _, tr
from grader.records import EXERCISES


@click.command("list")
def list_exercises():
    """List the exercises with their points."""
    width = max(len(record.id) for record in EXERCISES.values())
    for record in EXERCISES.values():
        click.echo(
            _(
                "{id}  {points:>4g} pts  {title}  [{section}]",
                id=record.id.ljust(width),
                points=record.max_score,
                title=tr(record.title),
                section=tr(record.section),
            )
        )


@click.command()
@click.argument("exercise_id")
def show(exercise_id):
    """Explain one exercise: the task, the file to edit, the parts and points."""
    from grader.report import render_show

    click.echo(render_show(records_of((exercise_id,), False)[0]))


@click.command()
@click.argument("exercise_ids", nargs=-1)
@click.option("--all", "everything", is_flag=True, help="Check every exercise.")
@click.option(
    "--submission",
    default=None,
    help="Folder with your exercise files [default: the current folder when it holds the "
    "exercise's file, else the kit's exercises/].",
)
@click.option(
    "--format",
    "output_format",
    type=click.Choice(["text", "json"]),
    default="text",
    show_default=True,
    help="json: one result object per exercise, one per line.",
)
@click.option("--verbose", "-v", is_flag=True, help="List every check, passed or not.")
@click.option(
    "--seed",
    type=click.IntRange(min=0),
    default=0,
    show_default=True,
    help="Seed of the check cases.",
)
@timeout_option
@click.option("--part", "parts", multiple=True, help="Grade only this part (repeatable).")
@click.option(
    "--html",
    "html_path",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="Also write one self-contained HTML page of the results, with pictures.",
)
@click.option(
    "--results",
    "results_path",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="Keep the results in this file: a later check of the same files (same exercise, seed "
    "and limit) reports from it instead of grading again. The first grades every part, even "
    "with --part (a workflow's steps, one per part, then grade once).",
)
def check(
    exercise_ids,
    everything,
    submission,
    output_format,
    verbose,
    seed,
    timeout,
    parts,
    html_path,
    results_path,
):
    """Grade your exercise files against the reference: outputs and gradients."""
    from grader.student.check import named_submission, submission_path

    records = records_of(exercise_ids, everything)
    try:
        given = submission_path(submission) if submission is not None else None
    except ValueError as error:
        raise click.BadParameter(str(error), param_hint="--submission") from None
    given = given or named_submission(exercise_ids, records)
    for name in parts:
        if len(records) != 1 or name not in [p.name for p in records[0].parts]:
            known = ", ".join(p.name for r in records for p in r.parts)
            raise click.BadParameter(
                _("no part {name!r}; parts: {known}", name=name, known=known), param_hint="--part"
            )
    if results_path is None:
        warm_up()  # with --results the work may be graded already: the helper starts if not

    from grader import sandbox
    from grader.engine.references import GraderError
    from grader.notebook.edited import graded_form
    from grader.report import render
    from grader.student.check import (
        FLAG_WORDS,
        CheckError,
        again_command,
        check_one,
        other_edited,
    )

    color = None if sys.stdout.isatty() and not os.environ.get("NO_COLOR") else False
    protections = sandbox.status()
    policy = {} if protections["complete"] else None
    if policy is None:
        click.echo(
            _(
                "note: {protections}; your code runs with your own rights.",
                protections=sandbox.describe(protections),
            ),
            err=True,
        )
    all_passed, page = True, None
    if html_path is not None:
        from grader.notebook.html import HtmlPage

        page = HtmlPage(html_path)
    for record in records:
        chosen = given
        if chosen is None:
            form = graded_form(record.file)
            chosen = form.path
            if form.other_edited is not None:
                click.echo(other_edited(record, form), err=True)
        try:
            checked = check_one(
                record,
                chosen,
                seed=seed,
                timeout=timeout,
                parts=parts,
                results_path=results_path,
                policy=policy,
                observe=page.observer() if page else None,
            )
        except (GraderError, CheckError) as error:
            raise click.ClickException(str(error)) from None
        for note in checked.notes:
            click.echo(note, err=True)
        result = checked.result
        all_passed &= result.passed
        if output_format == "json":
            flagged = {"flags": checked.flags} if checked.flags else {}
            click.echo(json.dumps(result.to_dict() | flagged, ensure_ascii=False))
        else:
            again = again_command(record.id, submission, parts, seed, timeout)
            click.echo(
                render(record, result, verbose=verbose, color=color, again=again), color=color
            )
            for flag in checked.flags:
                words = tr(FLAG_WORDS.get(flag.split("-")[0], ""))
                click.echo(_("batch flag: {flag}: {words}", flag=flag, words=words), err=True)
        if page:
            page.add(record, result)
    if page:
        page.write()
        click.echo(_("{path}: the results with pictures", path=html_path), err=True)
    sys.exit(0 if all_passed else 1)


@click.command()
@click.argument("exercise_id")
@click.argument("path", required=False, type=click.Path(dir_okay=False, path_type=Path))
@click.option(
    "--interval",
    type=click.FloatRange(min=0.01),
    default=0.1,
    show_default=True,
    help="Seconds between looks at the file.",
)
def watch(exercise_id, path, interval):
    """Re-grade each time you save the exercise file or notebook (PATH, default
    exercises/<file>); print only what changed."""
    from grader.notebook.edited import graded_form
    from grader.student.check import other_edited
    from grader.watch import watch as watch_file

    record = records_of((exercise_id,), False)[0]
    if path is None:
        form = graded_form(record.file)
        path = form.path
        if form.other_edited is not None:
            click.echo(other_edited(record, form), err=True)
    if not path.is_file():
        raise click.BadParameter(_("{path} does not exist", path=path), param_hint="PATH")
    try:
        watch_file(record, path, click.echo, interval)
    except KeyboardInterrupt:
        click.echo(_("stopped"))


COMMANDS = [list_exercises, show, check, watch]
