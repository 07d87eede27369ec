"""report.html: one self-contained page (inline CSS and SVG, no scripts, nothing fetched)."""

from __future__ import annotations

from collections import Counter
from html import escape
from urllib.parse import quote

from grader.engine.spec import Exercise
from grader.engine.status import Status

STYLE = """
body { font: 15px/1.45 system-ui, sans-serif; margin: 2rem auto; max-width: 60rem; color: #222; }
h1 { font-size: 1.6rem; } h2 { font-size: 1.2rem; margin-top: 2rem; }
table { border-collapse: collapse; width: 100%; }
th, td { text-align: left; padding: .25rem .6rem; border-bottom: 1px solid #ddd; }
td.num, th.num { text-align: right; font-variant-numeric: tabular-nums; }
.bar { background: #4a7bd0; height: .8rem; display: inline-block; }
.flag { color: #b3261e; }
.muted { color: #666; }
"""


def _histogram(totals: list[float], maximum: float) -> str:
    bins = 10
    counts = [0] * bins
    for total in totals:
        index = min(bins - 1, int(bins * total / maximum)) if maximum else 0
        counts[index] += 1
    tallest = max(counts) or 1
    width, height, bar, top = 520, 180, 48, 24  # `top`: room for the tallest bar's label
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{top + height + 30}" '
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
        low = maximum * index / bins
        parts.append(
            f'<text x="{x + bar / 2}" y="{top + height + 18}" font-size="11" '
            f'text-anchor="middle">{low:g}–</text>'
        )
    parts.append("</svg>")
    return "".join(parts)


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
    documents: list[dict], records: list[Exercise], note: str = "", sections: str = ""
) -> str:
    maximum = sum(r.max_score for r in records)
    failures = _grader_failures(documents)
    documents = [d for d in documents if d.get("final", True)]  # graded ones only
    totals = [d["total"] for d in documents]
    mean = sum(totals) / len(totals) if totals else 0.0
    part_fail, part_seen = Counter(), Counter()
    check_fail, check_seen = Counter(), Counter()
    mistakes = Counter()
    for document in documents:
        for exercise in document["exercises"]:
            for part in exercise["parts"]:
                key = f"{exercise['exercise']} {part['name']}"
                part_seen[key] += 1
                part_fail[key] += part["status"] != Status.PASSED
                if part["status"] not in (Status.PASSED, Status.FAILED):
                    continue  # the code did not run: its checks say nothing about the check
                for check in part["checks"]:
                    name = f"{key}: {check['name']}"
                    check_seen[name] += 1
                    check_fail[name] += not check["passed"]
        for names in document.get("mistakes", {}).values():
            mistakes.update(names)

    def rate_rows(failed, seen, limit=None):
        rows = sorted(
            (k for k in seen if failed[k]), key=lambda k: (-failed[k], -failed[k] / seen[k], k)
        )[:limit]
        return "".join(
            f"<tr><td>{escape(k)}</td><td class=num>{failed[k]}/{seen[k]}</td>"
            f'<td><span class=bar style="width:{round(120 * failed[k] / seen[k])}px"></span>'
            f"</td></tr>"
            for k in rows
        )

    mistake_rows = "".join(
        f"<tr><td>{escape(name)}</td><td class=num>{count}</td></tr>"
        for name, count in mistakes.most_common(15)
    ) or ("<tr><td class=muted colspan=2>none recognised</td></tr>")
    student_rows = "".join(
        f'<tr><td><a href="feedback/{quote(d["student"])}.md">{escape(d["student"])}</a></td>'
        + "".join(f"<td class=num>{e['score']:g}</td>" for e in d["exercises"])
        + f"<td class=num>{d['total']:g}/{d['max_total']:g}</td>"
        f"<td class=flag>{escape(', '.join(d['flags']))}</td></tr>"
        for d in documents
    )
    exercise_heads = "".join(f"<th class=num>{escape(r.id)}</th>" for r in records)
    seed = documents[0]["seed"] if documents else "—"
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>Grading report</title>
<style>{STYLE}</style></head><body>
<h1>Grading report: {escape(", ".join(r.id for r in records))}</h1>
<p>{len(documents)} students · mean {mean:.2f} / {maximum:g} · hidden-check seed {seed}</p>
<p class=muted>Isolation: {escape(note)}</p>
<h2>Scores</h2>
{_histogram(totals, maximum)}
<h2>Parts failed</h2>
<table><tr><th>part</th><th class=num>failed</th><th></th></tr>{rate_rows(part_fail, part_seen)}
</table>
<h2>Checks failed most often</h2>
<p class=muted>Among students whose code for the part ran (not crashed, hung or unwritten).</p>
<table><tr><th>check</th><th class=num>failed</th><th></th></tr>
{rate_rows(check_fail, check_seen, 20)}</table>
<h2>Most common named mistakes</h2>
<table><tr><th>mistake</th><th class=num>students</th></tr>{mistake_rows}</table>
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
