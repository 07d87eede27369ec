"""A grading result as HTML: in a notebook cell (a fragment) and as one self-contained page
(`grader check ID --html FILE`): parts, points, the first failing checks' messages, the named
mistakes and the pictures, embedded as data URIs. Every word that came from grading (a child's
message may hold anything) is escaped."""

from __future__ import annotations

from grader.engine.results import ExerciseResult
from grader.i18n import N_, _, language, tr
from grader.vocabulary.spec import Exercise
from grader.vocabulary.status import Status
from grader.vocabulary.untrusted import html as escape  # cleaned, bounded, then escaped

SHOWN_FAILURES = 3
COLOURS = {Status.PASSED: "#1a7f37", Status.NOT_IMPLEMENTED: "#9a6700"}
WORDS = {
    Status.PASSED: N_("passed"),
    Status.FAILED: N_("failed"),
    Status.NOT_IMPLEMENTED: N_("not implemented yet"),
    Status.ERROR: N_("error"),
    Status.TIMEOUT: N_("too slow"),
}
STYLE = """
.attnkit{font-family:system-ui,sans-serif;max-width:1200px;line-height:1.4}
.attnkit table{border-collapse:collapse;margin:.4em 0}
.attnkit td,.attnkit th{padding:.25em .7em;border-bottom:1px solid #ddd;text-align:left;
vertical-align:top}
.attnkit .status{font-weight:600}
.attnkit .mistake{background:#fff1e5;border-radius:3px;padding:0 .3em}
.attnkit .warning{background:#ffebe9;border:2px solid #cf222e;padding:.6em;border-radius:6px}
.attnkit img{max-width:100%;display:block;margin:.3em 0}
.attnkit pre{white-space:pre-wrap;margin:.2em 0}
"""


def result_html(record: Exercise, result: ExerciseResult, pictures=(), note: str = "") -> str:
    """The result as an HTML fragment (its own style included), for a notebook or a page."""
    from grader.report import problem_lines

    colour = COLOURS[Status.PASSED] if result.passed else "#cf222e"
    # The very lines `grader check` prints (one renderer: what to fix first, the named mistake,
    # each problem once), unwrapped: the page wraps them itself.
    common, shown = problem_lines(record, result, width=UNWRAPPED, fail_mark="✗")
    rows = []
    for part in result.parts:
        status = tr(WORDS.get(part.status, str(part.status)))
        cell = [
            f'<span class="status" style="color:{COLOURS.get(part.status, "#cf222e")}">'
            f"{escape(status)}</span>"
        ]
        said = "\n".join(line.strip() for line in shown.get(part.name, []))
        if said:
            cell.append(f"<pre>{escape(said)}</pre>")
        for picture in pictures:
            if picture.part == part.name:
                width = "480px" if picture.kind == "at work" else "100%"
                cell.append(
                    f'<img src="{picture.data_uri()}" alt="{escape(picture.title)}" '
                    f'title="{escape(picture.title)}" style="max-width:{width}">'
                )
        rows.append(
            f"<tr><td><b>{escape(part.name)}</b></td>"
            f"<td>{part.score:g}/{part.max_score:g}</td><td>{''.join(cell)}</td></tr>"
        )
    written = "".join(
        "<li>"
        + escape(
            _(
                "{name} ({points} pt): {state} in {file}, for the instructor",
                name=item["name"],
                points=f"{item['max_score']:g}",
                state=_("written") if item["status"] == "written" else _("not written yet"),
                file=item["answer_file"],
            )
        )
        + "</li>"
        for item in result.for_instructor
    )
    return (
        f'<div class="attnkit"><style>{STYLE}</style>'
        + _heading(record)
        + (f"<p>{note}</p>" if note else "")
        + (
            f'<div class="warning"><pre>{escape(chr(10).join(line.strip() for line in common))}'
            "</pre></div>"
            if common
            else ""
        )
        + "<table><tr>"
        + "".join(f"<th>{escape(word)}</th>" for word in (_("part"), _("points"), _("result")))
        + f"</tr>{''.join(rows)}</table>"
        + (f"<ul>{written}</ul>" if written else "")
        + f'<p style="font-size:1.2em;color:{colour}"><b>'
        + escape(_("Score: {score}/{max}", score=f"{result.score:g}", max=f"{result.max_score:g}"))
        + "</b></p></div>"
    )


UNWRAPPED = 1_000_000  # columns: a line is never broken by the renderer, only by the page


def _heading(record: Exercise) -> str:
    title = _("Exercise {id}: {title}", id=record.id, title=tr(record.title))
    return f"<h3>{escape(title)}</h3>"


def problem_html(record: Exercise, problem: str) -> str:
    """Nothing was graded, and why (for example unsaved changes), loud and clear."""
    return (
        f'<div class="attnkit"><style>{STYLE}</style>'
        + _heading(record)
        + '<div class="warning"><b>'
        + escape(_("Not graded."))
        + f"</b><pre>{escape(problem)}</pre></div></div>"
    )


def page(title: str, body: str) -> str:
    """One self-contained HTML page: no scripts, no links, images inside."""
    return (
        f'<!DOCTYPE html>\n<html lang="{language()}"><head><meta charset="utf-8">'
        f"<title>{escape(title)}</title></head><body>{body}</body></html>\n"
    )


class HtmlPage:
    """The page of `grader check ... --html FILE`: each exercise's result and pictures."""

    def __init__(self, path):
        self.path = path
        self.sections: list[str] = []
        self._collector = None

    def observer(self):
        from grader.pictures import PictureCollector

        self._collector = PictureCollector()
        return self._collector

    def add(self, record: Exercise, result: ExerciseResult) -> None:
        pictures = self._collector.pictures if self._collector else []
        self.sections.append(result_html(record, result, pictures))

    def write(self) -> None:
        title = _("attnkit results")
        self.path.write_text(page(title, "".join(self.sections)), encoding="utf-8")
