"""An honest import is flagged on no path (issue 45): a correct 8-2 that imports NumPy's testing,
SciPy, matplotlib, Keras's ops and modules of the standard library (tests/support/
honest_imports.py) scores 10/10 with nothing refused, graded by `grader batch` and by `grader
check` as GitHub Actions runs it, each from the kit's folder (the checkout first on sys.path,
as where `python -m grader` runs from it). Gradescope's own layout grades the same file in
test_gradescope_autograder.py, and the Actions runner in test_actions_runner.py.

Measured before the fix: `grader batch` flagged this file `refused-process` (matplotlib runs
`fc-list` to list the fonts while it is imported: vfork, clone). Each path is one grading child
(about 10 s of CPU on two cores for both)."""

import csv
import json
import subprocess
import sys

import pytest

from grader import sandbox
from grader.kit import KIT
from grader.records import EXERCISES
from tests.support.honest_imports import MODULES, honest_file, installed

pytestmark = [
    pytest.mark.ex8_2,
    pytest.mark.skipif(not sandbox.status()["complete"], reason="needs Landlock and seccomp"),
]

FULL = EXERCISES["8-2"].max_score


@pytest.fixture(scope="module")
def honest_class(tmp_path_factory):
    assert {"scipy", "matplotlib"} <= {n.split(".")[0] for n in installed()}, (
        "the dev extras install SciPy and matplotlib: this test imports them for real",
        installed(),
        MODULES,
    )
    folder = tmp_path_factory.mktemp("honest") / "submissions"
    (folder / "lena").mkdir(parents=True)
    (folder / "lena" / "ex8_2.py").write_text(honest_file(), encoding="utf-8")
    return folder


def test_grader_batch_flags_no_honest_import(honest_class, tmp_path):
    out = tmp_path / "out"
    done = subprocess.run(
        [sys.executable, "-m", "grader.cli", "batch", str(honest_class), "-e", "8-2"]
        + ["--out", str(out), "--jobs", "1", "--no-similarity", "--no-pictures"],
        cwd=KIT,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    with open(out / "grades.csv", newline="", encoding="utf-8") as handle:
        rows = {row["student"]: row for row in csv.DictReader(handle)}
    assert float(rows["lena"]["8-2"]) == FULL, rows
    assert rows["lena"]["flags"] == "", rows
    result = json.loads((out / "results" / "lena.json").read_text(encoding="utf-8"))
    assert not result.get("refused"), result.get("refused")


def test_grader_check_as_actions_runs_it_flags_no_honest_import(honest_class, tmp_path):
    """A workflow's step: `grader check 8-2 --part NAME --results FILE` (the first grades every
    part). `grader check` shows a student nothing the sandbox refused: a wrapper of the command
    (tests/support/check_refusals.py) writes it out."""
    kept = tmp_path / "attnkit-check-results.json"
    done = subprocess.run(
        [sys.executable, "-m", "tests.support.check_refusals", "check", "8-2"]
        + ["--submission", str(honest_class / "lena"), "--part", "ScaledDotScore"]
        + ["--results", str(kept)],
        cwd=KIT,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    told = [
        json.loads(line[len("REFUSED ") :])
        for line in done.stderr.splitlines()
        if line.startswith("REFUSED ")
    ]
    assert len(told) == 1, done.stderr[-3000:]
    assert told[0]["refused"] == {}, told
    saved = json.loads(kept.read_text(encoding="utf-8"))["results"]["8-2"]["result"]
    assert saved["score"] == FULL, saved
