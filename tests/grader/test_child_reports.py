"""A child's report is data (issue 45): a submission that rewrites the report its child writes
is refused and flagged, and the newlines of a message it raises never start a line of any
output (Markdown, HTML, junit.xml, CSV, the terminal). One batch of three students of 8-2: an
honest one, a forger, and one whose exception message holds forged lines."""

import csv
import json
import re
from pathlib import Path

import pytest
from click.testing import CliRunner

from grader.cli import main
from grader.instructor.batch import BatchOptions, run_batch
from grader.instructor.course.stubs import package_dir

pytestmark = pytest.mark.ex8_2

GOOD = (Path(package_dir("solutions")) / "ex8_2.py").read_text(encoding="utf-8")

# Found from the submission's own frames: the child's module, and the protocol it writes with.
FORGER = (
    GOOD
    + """

import sys as _sys

_frame = _sys._getframe()
while _frame is not None:
    _protocol = _frame.f_globals.get("protocol")
    if _protocol is not None and hasattr(_protocol, "answered"):
        _answered = _protocol.answered

        def _forged(*args, _answered=_answered, **kwargs):
            report = _answered(*args, **kwargs)
            report["output_dtype"] = "float32\\nTotal: 10 / 10"
            report["passed"] = True
            return report

        _protocol.answered = _forged
        break
    _frame = _frame.f_back
"""
)
FORGED_LINES = (
    "oops\n\nTotal: 10 / 10\n- ✓ dot_product_variance passed\r\n</li><script>x()</script>"
)
NEWLINER = GOOD.replace(
    "def dot_product_variance(d, var_q=1.0, var_k=1.0):",
    f"def dot_product_variance(d, var_q=1.0, var_k=1.0):\n    raise ValueError({FORGED_LINES!r})",
)


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    root = tmp_path_factory.mktemp("reports")
    for student, source in (("honest", GOOD), ("forger", FORGER), ("newliner", NEWLINER)):
        (root / "class" / student).mkdir(parents=True)
        (root / "class" / student / "ex8_2.py").write_text(source, encoding="utf-8")
    out = root / "out"
    run_batch(root / "class", BatchOptions(["8-2"], out, jobs=2, timeout=20, pictures=False))
    return root, out


def _rows(out):
    with open(out / "grades.csv", newline="", encoding="utf-8") as handle:
        return {row["student"]: row for row in csv.DictReader(handle)}


def test_a_rewritten_report_is_refused_flagged_and_harms_no_classmate(graded):
    _root, out = graded
    rows = _rows(out)
    assert rows["honest"]["8-2"] == "10" and rows["honest"]["flags"] == ""
    assert rows["forger"]["8-2"] == "0" and "malformed-report:8-2" in rows["forger"]["flags"]
    forger = json.loads((out / "results" / "forger.json").read_text(encoding="utf-8"))
    assert all(p["score"] == 0 for p in forger["exercises"][0]["parts"])


def _forged_lines(text: str) -> list[str]:
    """Lines of an output that begin with what the submission wrote after a newline."""
    return [
        line
        for line in text.splitlines()
        if re.match(r"\s*(?:[-*]\s*)?(?:Total: 10 / 10|- ✓ dot_product|✓ dot_product|</li>)", line)
    ]


def test_newlines_of_a_message_start_no_line_of_any_output(graded):
    _root, out = graded
    outputs = [
        out / "feedback" / "newliner.md",
        out / "feedback" / "forger.md",
        out / "junit.xml",
        out / "grades.csv",
        out / "report.html",
    ]
    for path in outputs:
        text = path.read_text(encoding="utf-8")
        assert not _forged_lines(text), (path.name, _forged_lines(text))
        assert "<script>x()" not in text, path.name
    markdown = (out / "feedback" / "newliner.md").read_text(encoding="utf-8")
    told = [line for line in markdown.splitlines() if "oops" in line]
    # Shown, on the line of its check: the message's newlines written as \n.
    assert told and all("Total: 10 / 10" in line for line in told)


def test_the_terminal_shows_a_message_on_one_line(graded):
    root, _out = graded
    result = CliRunner().invoke(
        main, ["--lang", "en", "check", "8-2", "--submission", str(root / "class" / "newliner")]
    )
    assert "oops" in result.output
    assert not _forged_lines(result.output), result.output
