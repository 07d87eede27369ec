"""`grader review OUT …` (issue 46): the TA workbench's commands. They parse and delegate: the
page and the database are grader.instructor.workbench's, opening a batch's database and writing
its gradebook again grader.instructor.reviewed's."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from grader.i18n import _

DEFAULT_PORT = 8765
DEFAULT_OUT = "grading-results"  # grader batch's --out


def _open(context: click.Context):
    from grader.instructor.reviewed import ReviewError, open_review

    try:
        return open_review(context.obj["out"], context.obj["db"])
    except ReviewError as error:
        raise click.ClickException(str(error)) from None


class _ReviewGroup(click.Group):
    """`grader review OUT --port 8000` as well as `grader review --port 8000 OUT`: the group's
    options given after OUT (before a subcommand's name) are moved in front of it."""

    OPTIONS = ("--db", "--host", "--port", "--origin")

    def parse_args(self, ctx, args):
        front, kept, rest = [], [], list(args)
        while rest and rest[0] not in self.commands:
            token = rest.pop(0)
            if token in self.OPTIONS and rest:
                front += [token, rest.pop(0)]
            elif token.startswith(tuple(f"{o}=" for o in self.OPTIONS)):
                front.append(token)
            else:
                kept.append(token)
        if rest and not [k for k in kept if not k.startswith("-")]:
            kept.append(DEFAULT_OUT)  # `grader review add-ta NAME`: the default batch folder
        return super().parse_args(ctx, front + kept + rest)


@click.group("review", cls=_ReviewGroup, invoke_without_command=True)
@click.argument("out", type=click.Path(file_okay=False, path_type=Path))
@click.option(
    "--db",
    "db",
    metavar="URL",
    help="postgresql://USER@HOST/NAME (kept in OUT/review/database.txt, without a password; "
    "the password from PGPASSWORD or ~/.pgpass). Default: SQLite in OUT/review/.",
)
@click.option(
    "--host",
    default="127.0.0.1",
    show_default=True,
    help="Address to listen on. Anything but this machine: put it behind TLS.",
)
@click.option("--port", type=click.IntRange(0, 65535), default=DEFAULT_PORT, show_default=True)
@click.option(
    "--origin",
    metavar="URL",
    help="The address TAs open (https://grading.example.edu behind a TLS proxy): the only "
    "origin whose forms are accepted. Default: http://HOST:PORT.",
)
@click.pass_context
def review(context, out, db, host, port, origin):
    """(Instructors, TAs) Grade written answers and regrade autograded parts on a page several
    TAs share, stored in a database (docs/review.md). `grader review OUT` serves the page;
    `grader review OUT add-ta NAME` prints a TA's one-time sign-in link. OUT: the batch's
    folder (default: grading-results)."""
    context.obj = {"out": out, "db": db, "host": host, "port": port, "origin": origin}
    if context.invoked_subcommand is not None:
        return
    database, counts = _open(context)
    import uvicorn

    from grader.instructor.reviewed import base_url
    from grader.instructor.workbench.app import make_app

    base = base_url(host, port, origin)
    if host not in ("127.0.0.1", "localhost", "::1"):
        click.echo(
            _(
                "Warning: listening on {host}, not only this machine. Sign-in links and session "
                "cookies travel in clear over plain http: put the page behind TLS (a reverse "
                "proxy with https) and give its address with --origin https://….",
                host=host,
            ),
            err=True,
        )
    click.echo(
        _(
            "{students} new students, {answers} new answers, {changed} changed. Database: {url}",
            students=counts["students"],
            answers=counts["answers"],
            changed=counts["changed"],
            url=database.url.render_as_string(hide_password=True),
        )
    )
    click.echo(
        _(
            "Serving {base}/ (Ctrl-C stops). Sign-in links: grader review {out} add-ta NAME",
            base=base,
            out=out,
        )
    )
    origins = (base,) if origin else (base, f"http://localhost:{port}")
    uvicorn.run(make_app(database, out, origins, port), host=host, port=port, log_level="warning")


@review.command("add-ta")
@click.argument("name")
@click.pass_context
def add_ta_command(context, name):
    """Create a TA's account (or keep it) and print a one-time sign-in link for it."""
    from grader.instructor.reviewed import base_url
    from grader.instructor.workbench.auth import add_ta

    database, _counts = _open(context)
    params = context.parent.params
    token = add_ta(database, name)
    base = base_url(params["host"], params["port"], params["origin"])
    click.echo(f"{base}/signin/{token}")
    click.echo(_("One use, valid 7 days; give it to the TA only (it signs them in)."), err=True)


@review.command("import-csv")
@click.argument("sheet", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option(
    "--overwrite",
    is_flag=True,
    help="Also replace scores a TA gave in the page (else they are kept and named).",
)
@click.pass_context
def import_command(context, sheet, overwrite):
    """Points and comments of a filled review.csv into the database."""
    from grader.instructor.workbench.scores import import_sheet

    database, _counts = _open(context)
    result = import_sheet(
        database, sheet.read_text(encoding="utf-8-sig"), f"import {sheet.name}", overwrite
    )
    if result.problems:
        raise click.ClickException(
            _("{sheet}: nothing imported:", sheet=sheet) + "\n  " + "\n  ".join(result.problems)
        )
    click.echo(_("{count} scores imported from {sheet}.", count=len(result.imported), sheet=sheet))
    if result.kept:
        click.echo(
            _(
                "{count} scores typed in the page were kept, not overwritten (--overwrite "
                "replaces them): {scores}",
                count=len(result.kept),
                scores="; ".join(result.kept),
            ),
            err=True,
        )


@review.command("export-csv")
@click.option("--to", "target", type=click.Path(dir_okay=False, path_type=Path))
@click.pass_context
def export_command(context, target):
    """The written answers with their points and comments, as review.csv (default: stdout)."""
    from grader.instructor.workbench.scores import export_sheet

    database, _counts = _open(context)
    text = export_sheet(database)
    if target:
        target.write_text(text, encoding="utf-8")
        click.echo(str(target))
    else:
        sys.stdout.write(text)


@review.command("audit")
@click.option("--to", "target", type=click.Path(dir_okay=False, path_type=Path))
@click.pass_context
def audit_command(context, target):
    """The audit log (who, what, when, before, after) as CSV (default: stdout)."""
    from grader.instructor.workbench.scores import audit_csv

    database, _counts = _open(context)
    with database.reading() as session:
        text = audit_csv(session)
    if target:
        target.write_text(text, encoding="utf-8")
        click.echo(str(target))
    else:
        sys.stdout.write(text)


@review.command("gradebook")
@click.pass_context
def gradebook_command(context):
    """Write the batch's gradebook again (grades.csv, results, feedback, report) with the
    scores and regrades given in the page. `grader export` does it first by itself."""
    from grader.instructor.reviewed import refresh_gradebook
    from grader.instructor.workbench.gradebook import overridden_merges

    out = context.obj["out"]
    _open(context)
    for note in refresh_gradebook(out):
        click.echo(note, err=True)
    replaced = overridden_merges(out)
    if replaced:
        click.echo(
            _(
                "{count} scores merged from a review.csv are replaced by the page's: {scores}",
                count=len(replaced),
                scores="; ".join(replaced),
            ),
            err=True,
        )
    click.echo(str(out / "grades.csv"))


COMMANDS = [review]
