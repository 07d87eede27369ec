"""The maintainers' commands: `grader stubs` (exercises/ from solutions/) and `grader fixtures`
(check cases and expected results for a kit without solutions/)."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from grader.cli.common import records_of
from grader.i18n import _


@click.command()
@click.option(
    "--check",
    "check_only",
    is_flag=True,
    help="Only report stubs and notebooks that differ from their solutions; exit 1 if any.",
)
@click.argument("exercise_ids", nargs=-1)
def stubs(check_only, exercise_ids):
    """(Maintainers) Make exercises/ (stubs and notebooks) and exercises/zh/ from solutions/ (all,
    or the exercises named)."""
    from grader.instructor.course.stubs import MarkerError, sync_stubs, sync_translated_stubs

    try:
        records_of(exercise_ids, not exercise_ids)
        changed = sync_stubs(write=not check_only, ids=list(exercise_ids) or None)
        changed += sync_translated_stubs(write=not check_only, ids=list(exercise_ids) or None)
    except MarkerError as error:
        raise click.ClickException(str(error)) from None
    for path in changed:
        click.echo(
            _("{path}: differs from its solution", path=path)
            if check_only
            else _("{path}: written", path=path)
        )
    if not changed:
        click.echo(_("every stub matches its solution"))
    sys.exit(1 if check_only and changed else 0)


@click.command()
@click.argument("exercise_ids", nargs=-1)
@click.option(
    "--out",
    "out_dir",
    type=click.Path(file_okay=False, path_type=Path),
    default=Path("fixtures"),
    show_default=True,
)
@click.option("--seed", type=click.IntRange(min=0), default=0, show_default=True)
def fixtures(exercise_ids, out_dir, seed):
    """(Maintainers) Save check cases and expected results, for a kit without solutions/."""
    from grader.engine.references import GraderError, LiveReference, write_fixture
    from grader.kit import KIT

    out_dir.mkdir(parents=True, exist_ok=True)
    for record in records_of(exercise_ids, not exercise_ids):
        try:
            write_fixture(
                record, seed, out_dir / f"{record.id}.npz", LiveReference(KIT / "solutions")
            )
        except GraderError as error:
            raise click.ClickException(str(error)) from None
        click.echo(f"{out_dir / (record.id + '.npz')}: seed {seed}")


COMMANDS = [stubs, fixtures]
