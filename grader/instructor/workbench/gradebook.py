"""The workbench's scores in the gradebook. `grader batch`, `gather`, `merge` (and `grader
review OUT gradebook`, which `grader export` runs first when there is a review database:
grader.instructor.reviewed) write the gradebook through
grader.instructor.outputs.adjustments, which reads from here:

- written scores: those merged from review.csv (`grader merge`, written/scores.json) and those
  given in the workbench; for an answer scored in both, the workbench's (the newest word: a
  review.csv comes into the workbench with `grader review OUT import-csv`, which never
  replaces a score typed in the page without saying so);
- regrades of autograded parts: the points a TA set, with the reason, in place of the
  autograder's for that part, in the total, the feedback and the report, at every rerun.

Nothing is created here: a batch folder without a review database reads as before."""

from __future__ import annotations

import json
from pathlib import Path

from grader.i18n import _
from grader.vocabulary import untrusted


class ReviewDatabaseError(RuntimeError):
    pass


def _database(out: Path):
    from grader.instructor.workbench.db import existing_database

    try:
        return existing_database(out)
    except Exception as error:  # cannot connect: the gradebook would lack the TAs' scores
        raise ReviewDatabaseError(
            f"the review database of {out} cannot be opened ({error}); the gradebook is not "
            "written without the TAs' scores: make it reachable and run the command again"
        ) from None


def review_adjustments(out: Path) -> tuple[dict, dict]:
    """(written scores as load_scores has them, with the workbench's over the merged ones;
    regrades: student -> "exercise part" -> {points, was, max_points, reason, by})."""
    from grader.instructor.review.written import load_scores

    written = load_scores(out)
    database = _database(out)
    if database is None:
        return written, {}
    from grader.instructor.workbench.scores import review_scores

    try:
        page, regrades = review_scores(database)
    finally:
        database.dispose()
    for student, by_part in page.items():
        written.setdefault(student, {}).update(by_part)
    return written, regrades


def overridden_merges(out: Path) -> list[str]:
    """Scores merged from a review.csv that the workbench's replace (they differ)."""
    from grader.instructor.review.written import load_scores

    merged = load_scores(out)
    database = _database(out)
    if database is None or not merged:
        return []
    from grader.instructor.workbench.scores import review_scores

    try:
        page, _regrades = review_scores(database)
    finally:
        database.dispose()
    return sorted(
        f"{student} {key} ({entry['points']:g} merged, "
        f"{page[student][key]['points']:g} in the page)"
        for student, by_part in merged.items()
        for key, entry in by_part.items()
        if key in page.get(student, {}) and page[student][key]["points"] != entry["points"]
    )


def apply_regrades(document: dict, regrades: dict) -> float:
    """Set document["regrades"] from this student's regrades (each part's `was`: its points in
    the result now); returns what they add to the total."""
    document.pop("regrades", None)
    mine = regrades.get(document["student"], {})
    if not mine:
        return 0.0
    now = {
        f"{e['exercise']} {p['name']}": float(p["score"])
        for e in document["exercises"]
        for p in e.get("parts", [])
    }
    kept = {}
    for key, entry in mine.items():
        if key in now:
            kept[key] = {**entry, "was": now[key]}
    if kept:
        document["regrades"] = kept
    return sum(entry["points"] - entry["was"] for entry in kept.values())


def regrade_lines(document: dict) -> list[str]:
    lines = []
    for key, entry in sorted(document.get("regrades", {}).items()):
        lines.append(
            _(
                "- **{part}** regraded by hand: {points:g}/{max:g} (was {was:g})",
                part=untrusted.markdown(key),
                points=entry["points"],
                max=entry["max_points"],
                was=entry["was"],
            )
        )
        if entry.get("reason"):
            lines.append(f"  - {untrusted.markdown(entry['reason'])}")
    return lines


def regrade_section(out: Path) -> str:
    """The report's section: every regrade, from the result files (as the gradebook has them)."""
    rows = []
    for path in sorted((Path(out) / "results").glob("*.json")):
        try:
            document = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        if not isinstance(document, dict):
            continue
        for key, entry in sorted(document.get("regrades", {}).items()):
            esc = untrusted.html
            rows.append(
                f"<tr><td>{esc(document.get('student', ''))}</td><td>{esc(key)}</td>"
                f"<td class=num>{entry['was']:g} → {entry['points']:g}/{entry['max_points']:g}"
                f"</td><td>{esc(entry.get('reason', ''))}</td><td>{esc(entry.get('by', ''))}</td>"
                "</tr>"
            )
    if not rows:
        return ""
    return (
        "<h2>Regrades</h2><p class=muted>Autograded parts regraded by a TA in grader review; "
        "included in the totals.</p><table><tr><th>student</th><th>part</th>"
        "<th class=num>points</th><th>reason</th><th>by</th></tr>" + "".join(rows) + "</table>"
    )


def written_section(out: Path) -> str:
    """The report's section of written scores: the merged ones and the page's."""
    from grader.instructor.review.written import written_section as section

    return section(out, review_adjustments(out)[0])
