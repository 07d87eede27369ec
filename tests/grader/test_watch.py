"""`grader watch`: a re-check on each save, printing only what changed, with the helper warm."""

from __future__ import annotations

import shutil
import time

import pytest

from grader.engine.results import CheckResult, ExerciseResult, PartResult
from grader.engine.status import Status
from grader.instructor.stubs import package_dir
from grader.records import get_exercise
from grader.watch import Watcher, changes

DEMO = package_dir("examples") / "submissions"


def result(**parts) -> ExerciseResult:
    made = []
    for name, (status, message) in parts.items():
        checks = [CheckResult("output, case", status == Status.PASSED, message)]
        made.append(PartResult(name, 2, status, checks))
    return ExerciseResult("8-2", made)


def test_only_the_parts_that_changed_are_printed_then_the_score():
    before = result(a=(Status.FAILED, "scale is missing"), b=(Status.PASSED, ""))
    after = result(a=(Status.PASSED, ""), b=(Status.PASSED, ""))
    assert changes(before, after) == ["  ✓ a  2/2  passed (was failed, 0)", "Score: 4/4"]
    worse = result(a=(Status.PASSED, ""), b=(Status.FAILED, "sign flipped"))
    lines = changes(after, worse)
    assert lines == [
        "  ✗ b  0/2  failed (was passed, 2)",
        "      output, case: sign flipped",
        "Score: 2/4",
    ]
    assert changes(worse, worse) == ["  no change", "Score: 2/4"]


@pytest.mark.ex8_2
def test_a_save_is_regraded_warm_and_an_unchanged_file_is_not(tmp_path):
    path = tmp_path / "ex8_2.py"
    shutil.copyfile(DEMO / "bob" / "ex8_2.py", path)
    watcher = Watcher(get_exercise("8-2"), path)
    first = watcher.poll()
    assert "Score: 6/10" in first
    assert watcher.poll() is None  # nothing saved since
    path.touch()
    assert watcher.poll() is None  # saved, but the same bytes: not graded again
    shutil.copyfile(DEMO / "alice" / "ex8_2.py", path)
    start = time.perf_counter()
    lines = watcher.poll()
    seconds = time.perf_counter() - start
    assert lines[1:] == [
        "  ✓ ScaledDotScore  3/3  passed (was failed, 0)",
        "  ✓ bilinear_asymmetry  1/1  passed (was failed, 0)",
        "Score: 10/10",
    ]
    # Warm: no TensorFlow import, no reference run. Generous, for a busy CI machine.
    assert seconds < 10, seconds
