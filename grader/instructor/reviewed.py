"""A batch's review database seen from the batch (issue 46): opened with the batch's new
answers taken in, and the gradebook written again with the scores and regrades given in the
page (`grader review OUT gradebook`, and `grader export` first). Above the workbench, because
the gradebook is written by the outputs' layer."""

from __future__ import annotations

import json
from pathlib import Path

from grader.i18n import _


class ReviewError(Exception):
    """The folder or the database cannot be reviewed: the message says what to give."""


def open_review(out: Path, db_url: str | None):
    """(database, counts of what was new) for the batch in `out`, its new students and
    answers taken into the database first."""
    from grader.instructor.workbench.db import DatabaseError, open_database
    from grader.instructor.workbench.ingest import ingest

    if not (Path(out) / "results").is_dir():
        raise ReviewError(
            _(
                "{out} holds no graded batch (no results/): give the folder "
                "`grader batch … --written --out OUT` wrote",
                out=out,
            )
        )
    try:
        database = open_database(out, db_url)
    except DatabaseError as error:
        raise ReviewError(str(error)) from None
    return database, ingest(database, out)


def base_url(host: str, port: int, origin: str | None) -> str:
    """The address TAs open: `origin` when given (a TLS proxy's), else http://HOST:PORT."""
    if origin:
        return origin.rstrip("/")
    shown = "127.0.0.1" if host in ("127.0.0.1", "localhost") else host
    if ":" in shown and not shown.startswith("["):
        shown = f"[{shown}]"
    return f"http://{shown}:{port}"


def refresh_gradebook(out: Path, exporting: str | None = None) -> list[str]:
    """Write the batch's gradebook again (grades.csv, results, feedback, report) with the
    workbench's scores; returns what the instructor must be told (but that the export of
    `exporting`, about to be made again, is out of date)."""
    from grader.instructor import files
    from grader.instructor.outputs import gradebook
    from grader.records import get_exercise

    out = Path(out)
    state = json.loads((out / "batch.json").read_text(encoding="utf-8"))
    records = [get_exercise(e) for e in state["exercises"]]
    students = files.students_in(out)
    return gradebook.write_all(
        out, students, records, state.get("isolation", ""), exporting=exporting
    )


def refresh_if_reviewed(out: Path, exporting: str) -> list[str]:
    """`grader export SYSTEM`: when the batch has a review database, the gradebook is written
    again first, so that the export carries every score given in the page until now."""
    from grader.instructor.workbench.db import database_url

    out = Path(out)
    if database_url(out, create=False) is None or not (out / "batch.json").is_file():
        return []
    return refresh_gradebook(out, exporting)
