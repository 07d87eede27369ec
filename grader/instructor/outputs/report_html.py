"""report.html: one self-contained page (inline CSS and SVG, no scripts, nothing fetched)."""

from __future__ import annotations

import math
from collections import Counter, defaultdict
from urllib.parse import quote

from grader.instructor.outputs.outcomes import COLOURS, ORDER, Outcome, part_outcomes
from grader.vocabulary.labels import mistake_words
from grader.vocabulary.spec import Exercise
from grader.vocabulary.status import Status
from grader.vocabulary.untrusted import file_stem
from grader.vocabulary.untrusted import html as escape  # every text shown: cleaned, then escaped

STYLE = """
body { font: 15px/1.45 system-ui, sans-serif; margin: 2rem auto; max-width: 60rem; color: #222; }
h1 { font-size: 1.6rem; } h2 { font-size: 1.2rem; margin-top: 2rem; }
table { border-collapse: collapse; width: 100%; }
th, td { text-align: left; padding: .25rem .6rem; border-bottom: 1px solid #ddd; }
td.num, th.num { text-align: right; font-variant-numeric: tabular-nums; }
.bar { background: #4a7bd0; height: .8rem; display: inline-block; }
.flag { color: #b3261e; }
.muted { color: #666; }
.outcome { font-size: .85rem; white-space: nowrap; margin-right: .4rem; }
.outcome b { font-weight: 600; }
td.zero { color: #bbb; }
"""
HISTOGRAM_BINS = 10


def histogram_bins(maximum: float) -> tuple[int, int]:
    """(width, count) of the histogram's bins: a whole number of points each, about
    HISTOGRAM_BINS of them, the last one holding the maximum score alone or with others."""
    top = math.ceil(maximum)
    width = max(1, math.ceil(top / HISTOGRAM_BINS))
    return width, top // width + 1


def bin_label(index: int, width: int, maximum: float) -> str:
    low, high = index * width, min(index * width + width - 1, math.ceil(maximum))
    return f"{low}" if high == low else f"{low}–{high}"


def _histogram(totals: list[float], maximum: float) -> str:
    width_points, bins = histogram_bins(maximum)
    counts = [0] * bins
    for total in totals:
        counts[min(bins - 1, int(total // width_points))] += 1
    tallest = max(counts) or 1
    bar = max(24, min(56, 520 // bins - 2))
    width, height, top = 20 + bins * (bar + 2), 180, 24  # `top`: room for the tallest label
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{top + height + 46}" '
        'role="img" aria-label="score histogram">'
    ]
    for index, count in enumerate(counts):
        h = round(height * count / tallest)
        x = 10 + index * (bar + 2)
        parts.append(
            f'<rect x="{x}" y="{top + height - h}" width="{bar}" height="{h}" fill="#4a7bd0">'
            f"<title>{count}</title></rect>"
        )
        parts.append(
            f'<text x="{x + bar / 2}" y="{top + height - h - 5}" font-size="12" '
            f'text-anchor="middle">{count or ""}</text>'
        )
        parts.append(
            f'<text x="{x + bar / 2}" y="{top + height + 18}" font-size="11" '
            f'text-anchor="middle">{bin_label(index, width_points, maximum)}</text>'
        )
    parts.append(
        f'<text x="10" y="{top + height + 38}" font-size="11" fill="#666">points (total of '
        f"{maximum:g})</text></svg>"
    )
    return "".join(parts)


def check_kind(name: str) -> str:
    """What a check compares, without the case: "output", "gradient wrt q", a property's name
    (check names are "<kind>, <case>"; a case that gave no answer is named by its case only)."""
    head, comma, _ = name.partition(", ")
    target, colon, kind = head.rpartition(": ")
    if not comma or any(c in kind for c in "=()") or kind == "hidden":
        return f"{target}: the case ran" if colon else "the case ran"
    return head


def _outcome_word(outcome: Outcome) -> str:
    return f'<span class=outcome style="color:{COLOURS[outcome]}"><b>{escape(outcome)}</b></span>'


def _grader_failures(documents: list[dict]) -> str:
    rows = "".join(
        f"<tr><td>{escape(d['student'])}</td><td>{escape(part)}</td>"
        f"<td><pre>{escape(detail[-400:])}</pre></td></tr>"
        for d in documents
        for part, detail in sorted(d.get("grader_errors", {}).items())
    )
    if not rows:
        return "<p class=muted>none</p>"
    return (
        "<p>Not graded, and not the students' failures: run the same command again to grade "
        "them.</p><table><tr><th>student</th><th>part</th><th>what failed</th></tr>"
        + rows
        + "</table>"
    )


def _refusals(documents: list[dict]) -> str:
    rows = "".join(
        f"<tr><td>{escape(d['student'])}</td><td>{escape(exercise)}</td><td>"
        + escape(", ".join(f"{kind} ×{count}" for kind, count in sorted(seen["counts"].items())))
        + "</td><td>"
        + escape("; ".join(p for paths in seen.get("examples", {}).values() for p in paths[:3]))
        + "</td></tr>"
        for d in documents
        for exercise, seen in sorted(d.get("refused", {}).items())
    )
    if not rows:
        return "<p class=muted>none</p>"
    return (
        "<table><tr><th>student</th><th>exercise</th><th>refused</th><th>for example</th></tr>"
        + rows
        + "</table>"
    )


def report_html(
    documents: list[dict],
    records: list[Exercise],
    note: str = "",
    removed: list[str] = (),
    sections: str = "",
) -> str:
    # The gradebook's maximum (grader.instructor.outputs.adjustments: written parts included), so
    # the mean and the histogram are of the same totals over the same maximum as grades.csv.
    maxima = [d["max_total"] for d in documents if d["exercises"]]
    maximum = max(maxima) if maxima else sum(r.max_score for r in records)
    failures = _grader_failures(documents)
    outcomes = {d["student"]: part_outcomes(d) for d in documents}
    graded = [d for d in documents if d.get("final", True)]  # totals of graded ones only
    totals = [d["total"] for d in graded]
    mean = sum(totals) / len(totals) if totals else 0.0

    overall = Counter(o for parts in outcomes.values() for o in parts.values())
    by_part = defaultdict(Counter)
    for parts in outcomes.values():
        for key, outcome in parts.items():
            by_part[key][outcome] += 1
    # Checks by kind across shapes, and mistakes by part: each counts students, not checks.
    kind_failed, kind_ran, mistakes = defaultdict(set), defaultdict(set), defaultdict(set)
    for document in graded:
        student = document["student"]
        for exercise in document["exercises"]:
            for part in exercise["parts"]:
                key = f"{exercise['exercise']} {part['name']}"
                if part["status"] not in (Status.PASSED, Status.FAILED):
                    continue  # the code did not run: its checks say nothing about the check
                for check in part["checks"]:
                    kind = (key, check_kind(check["name"]))
                    kind_ran[kind].add(student)
                    if not check["passed"]:
                        kind_failed[kind].add(student)
        for key, names in document.get("mistakes", {}).items():
            for name in names:
                mistakes[(key, name)].add(student)

    summary = (
        " · ".join(_outcome_word(o) + f" {overall[o]}" for o in ORDER if overall[o])
        or "<span class=muted>no parts graded</span>"
    )
    heads = "".join(f'<th class=num style="color:{COLOURS[o]}">{escape(o)}</th>' for o in ORDER)
    part_rows = "".join(
        f"<tr><td>{escape(key)}</td>"
        + "".join(
            f"<td class={'num' if by_part[key][o] else 'num zero'}>{by_part[key][o]}</td>"
            for o in ORDER
        )
        + "</tr>"
        for key in _part_keys(records, by_part)
    )
    kinds = sorted(kind_failed, key=lambda k: (-len(kind_failed[k]), k))[:15]
    kind_rows = (
        "".join(
            _rate_row(
                f"<td>{escape(part)}</td><td>{escape(kind)}</td>", kind_failed[k], kind_ran[k]
            )
            for k in kinds
            for part, kind in [k]
        )
        or "<tr><td class=muted colspan=4>none</td></tr>"
    )
    mistake_rows = (
        "".join(
            f"<tr><td>{escape(part)}</td><td>{escape(mistake_words(name))}</td>"
            f"<td class=num>{len(mistakes[(part, name)])}</td></tr>"
            for part, name in sorted(mistakes, key=lambda k: (-len(mistakes[k]), k))[:15]
        )
        or "<tr><td class=muted colspan=3>none recognised</td></tr>"
    )
    student_rows = "".join(_student_row(d, records, outcomes[d["student"]]) for d in documents)
    exercise_heads = "".join(f"<th>{escape(r.id)}</th>" for r in records)
    seed = graded[0]["seed"] if graded and "seed" in graded[0] else "—"
    moved = (
        "<p class=flag>Moved aside (no longer in SUBMISSIONS; their files are in removed/): "
        + escape(", ".join(removed))
        + "</p>"
        if removed
        else ""
    )
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>Grading report</title>
<style>{STYLE}</style></head><body>
<h1>Grading report: {escape(", ".join(r.id for r in records))}</h1>
<p>{len(documents)} students · mean {mean:.2f} / {maximum:g} · hidden-check seed {seed}</p>
<p>Parts: {summary}</p>
{moved}
<p class=muted>Isolation: {escape(note)}</p>
<h2>Scores</h2>
{_histogram(totals, maximum)}
<h2>Parts</h2>
<p class=muted>Each student's part counted once, by what happened to it.</p>
<table><tr><th>part</th>{heads}</tr>{part_rows}</table>
<h2>Checks failed most often</h2>
<p class=muted>By what the check compares, across every shape; students failing it among
those whose code for the part ran to the end.</p>
<table><tr><th>part</th><th>check</th><th class=num>students</th><th></th></tr>
{kind_rows}</table>
<h2>Most common named mistakes</h2>
<table><tr><th>part</th><th>mistake</th><th class=num>students</th></tr>{mistake_rows}</table>
<h2>The grader's own failures</h2>
{failures}
<h2>Attempts the sandbox refused</h2>
{_refusals(documents)}
{sections}
<h2>Students</h2>
<table><tr><th>student</th>{exercise_heads}<th class=num>total</th><th>flags</th></tr>
{student_rows}</table>
</body></html>
"""


def _rate_row(cells: str, failed: set, ran: set) -> str:
    share = len(failed) / len(ran)
    return (
        f"<tr>{cells}<td class=num>{len(failed)}/{len(ran)}</td>"
        f'<td><span class=bar style="width:{round(120 * share)}px"></span></td></tr>'
    )


def _part_keys(records: list[Exercise], seen) -> list[str]:
    keys = [f"{r.id} {p.name}" for r in records for p in r.parts]
    return keys + sorted(k for k in seen if k not in keys)


def _student_row(document: dict, records: list[Exercise], outcomes: dict) -> str:
    scores = {e["exercise"]: e for e in document["exercises"]}
    cells = []
    for record in records:
        exercise = scores.get(record.id)
        if exercise is None:
            cells.append("<td class=muted>not graded</td>")
            continue
        notes = [
            f"{_outcome_word(outcomes[key])} {escape(key.split(' ', 1)[1])}"
            for key in (f"{record.id} {p['name']}" for p in exercise["parts"])
            if outcomes.get(key, Outcome.PASSED) != Outcome.PASSED
        ]
        shown = notes if len(notes) <= 3 else notes[:2] + [f"… {len(notes) - 2} more"]
        cells.append(
            f"<td><b>{exercise['score']:g}</b>/{exercise['max_score']:g} "
            + ("<br>".join(shown) if shown else _outcome_word(Outcome.PASSED))
            + "</td>"
        )
    final = document.get("final", True)
    total = f"{document['total']:g}/{document['max_total']:g}" if final else "not final"
    return (
        f'<tr><td><a href="feedback/{quote(file_stem(document["student"]))}.md">'
        f"{escape(document['student'])}</a></td>" + "".join(cells) + f"<td class=num>{total}</td>"
        f"<td class=flag>{escape(', '.join(document['flags']))}</td></tr>"
    )
