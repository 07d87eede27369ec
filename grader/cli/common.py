"""What the command modules share: the exercises named, the options several commands take, the
command line to run again, and the lines a command prints."""

from __future__ import annotations

import json
from pathlib import Path

import click

from grader.i18n import _
from grader.records import EXERCISES, UnknownExercise, get_exercise


def records_of(ids: tuple[str, ...], everything: bool):
    if everything:
        return list(EXERCISES.values())
    if not ids:
        raise click.UsageError(_("Name an exercise to check (`grader list` shows them), or --all."))
    try:
        return [get_exercise(exercise_id) for exercise_id in ids]
    except UnknownExercise as error:
        raise click.UsageError(str(error)) from None


def warm_up() -> None:
    """Start the grading helper early; a GRADER_START_METHOD it cannot follow is a usage error."""
    from grader.sandbox.platforms import StartMethodError
    from grader.sandbox.processes import warm_up as start_helper

    try:
        start_helper()
    except StartMethodError as error:
        raise click.UsageError(str(error)) from None


def echo_lines(lines) -> None:
    """Lines of grader.instructor.console: (text, to stderr)."""
    for text, to_stderr in lines:
        click.echo(text, err=to_stderr)


exercises_option = click.option(
    "--exercise",
    "-e",
    "exercise_ids",
    multiple=True,
    required=True,
    help="Exercise to grade (repeat for several).",
)
timeout_option = click.option(
    "--timeout",
    type=click.FloatRange(min=0, min_open=True),
    default=None,
    help="Seconds each part may run (default: the exercise's own limit).",
)
# Options that `grader batch` and `grader gather` share.
out_option = click.option(
    "--out",
    "out_dir",
    type=click.Path(file_okay=False, path_type=Path),
    default=Path("grading-results"),
    show_default=True,
)
written_option = click.option(
    "--written",
    is_flag=True,
    help="Also write the written answers' review sheet (OUT/written/review.csv and .html).",
)
course_option = click.option(
    "--course",
    type=click.Path(dir_okay=False, exists=True, path_type=Path),
    default=None,
    help="Course file (TOML) with a [late] policy: due date, penalty per day, cap.",
)


def again_words(context: click.Context, out_dir: Path | None = None) -> list[str]:
    """The command line that runs this command again, as the instructor gave it, with the seed
    spelled out (read from OUT's batch.json when there is one) so that it does not depend on
    batch.json."""
    from grader.instructor.batch import STATE_FILE

    words = ["grader", context.info_name]
    for param in context.command.params:
        source = context.get_parameter_source(param.name)
        if param.name not in context.params or param.name == "seed":
            continue  # --lang (not passed on: see below), --seed (added below)
        value = context.params[param.name]
        if source is not click.core.ParameterSource.COMMANDLINE:
            continue
        if isinstance(param, click.Argument):
            words.append(str(value))
        elif param.name == "shard":
            words += [param.opts[0], "{}/{}".format(*value)]
        elif param.is_flag and param.secondary_opts:
            words.append(param.opts[0] if value else param.secondary_opts[0])
        elif param.is_flag:
            words.append(param.opts[0])
        elif param.multiple:
            for item in value:
                words += [param.opts[0], str(item)]
        else:
            words += [param.opts[0], str(value)]
    try:
        seed = json.loads((Path(out_dir) / STATE_FILE).read_text(encoding="utf-8"))["seed"]
    except (OSError, ValueError, KeyError, TypeError):  # TypeError: no out_dir
        seed = context.params.get("seed")
    if seed is not None:
        words += ["--seed", str(seed)]
    if any(
        c.get_parameter_source("lang") is click.core.ParameterSource.COMMANDLINE
        for c in (context, context.parent)
        if c
    ):
        from grader.i18n import language

        words += ["--lang", language()]
    return words
