"""`grader watch`: a re-check on each save, printing only what changed, with the helper warm."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from grader.engine.results import CheckResult, ExerciseResult, PartResult
from grader.instructor.course.stubs import package_dir
from grader.records import get_exercise
from grader.vocabulary.status import Status
from grader.watch import Watcher, changes
from tests.support.grading import ctrl_c_reaches_it, descendants, running
from tests.support.unprivileged import REPO

DEMO = package_dir("examples") / "submissions"


def result(**parts) -> ExerciseResult:
    made = []
    for name, (status, message) in parts.items():
        checks = [CheckResult("output, case", status == Status.PASSED, message)]
        made.append(PartResult(name, 2, status, checks))
    return ExerciseResult("8-2", made)


def settled(watcher: Watcher, seconds: float = 120) -> list[str] | None:
    """The lines of the run a save started, once it has ended (None: no run was started)."""
    end = time.monotonic() + seconds
    while watcher.busy and time.monotonic() < end:
        lines = watcher.poll()
        if lines is not None:
            return lines
        time.sleep(0.02)
    return None


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
    watcher.poll()
    first = settled(watcher)
    assert "Score: 6/10" in first
    assert watcher.poll() is None and not watcher.busy  # nothing saved since
    path.touch()
    assert watcher.poll() is None and not watcher.busy  # the same bytes: not graded again
    shutil.copyfile(DEMO / "alice" / "ex8_2.py", path)
    start = time.perf_counter()
    watcher.poll()
    lines = settled(watcher)
    seconds = time.perf_counter() - start
    assert lines[1:] == [
        "  ✓ ScaledDotScore  3/3  passed (was failed, 0)",
        "  ✓ bilinear_asymmetry  1/1  passed (was failed, 0)",
        "Score: 10/10",
    ]
    # Warm: no TensorFlow import, no reference run. Generous, for a busy CI machine.
    assert seconds < 10, seconds


def _alive_below(pid: int) -> list[int]:
    return [child for child in descendants(pid) if running(child)]


@pytest.mark.ex8_2
@pytest.mark.skipif(not Path("/proc").is_dir() or not hasattr(os, "fork"), reason="Linux only")
def test_a_save_during_a_hanging_run_stops_it_at_once_and_grades_the_new_code(tmp_path):
    """A real `grader watch`: the code hangs in a part; the student saves a fix while it hangs.
    The fix's grade must come before the hang's own time limit would have ended the old run,
    and nothing the old run started may be left running, then or after watch stops."""
    record = get_exercise("8-2")
    correct = (DEMO / "alice" / "ex8_2.py").read_text(encoding="utf-8")
    hanging = correct.replace(
        'return ops.einsum("bqd,bkd->bqk"',
        'while True:\n            pass\n        return ops.einsum("bqd,bkd->bqk"',
        1,
    )
    assert hanging != correct
    path = tmp_path / "ex8_2.py"
    path.write_text(hanging, encoding="utf-8")
    watch = subprocess.Popen(
        [sys.executable, "-m", "grader", "--lang", "en", "watch", "8-2", str(path)],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env={**os.environ, "PYTHONPATH": str(REPO), "PYTHONUNBUFFERED": "1"},
        preexec_fn=ctrl_c_reaches_it,
    )
    lines: list[str] = []
    reader = threading.Thread(target=lambda: lines.extend(watch.stdout), daemon=True)
    reader.start()
    try:
        # The hanging part runs once a child of the helper (forked: the same command line) has
        # spent two seconds of CPU; it started at least that long ago.
        hung_at = hung_child = None
        deadline = time.monotonic() + 120
        while hung_at is None and time.monotonic() < deadline:
            helpers = [pid for pid in _alive_below(watch.pid) if _parent(pid) == watch.pid]
            for pid in _alive_below(helpers[0]) if helpers else ():
                if _cpu_seconds(pid) > 2.0:
                    hung_at, hung_child = time.monotonic() - _cpu_seconds(pid), pid
            time.sleep(0.1)
        assert hung_at is not None, "".join(lines)
        assert not any("Score:" in line for line in lines)  # still waiting for the hang
        path.write_text(correct, encoding="utf-8")
        saved = time.monotonic()
        while time.monotonic() < deadline and not any("Score: 10/10" in x for x in lines):
            assert watch.poll() is None, "".join(lines)
            time.sleep(0.05)
        graded = time.monotonic()
        assert any("Score: 10/10" in line for line in lines), "".join(lines)
        # The old run would have held the fix back until its part's limit had passed.
        assert graded - hung_at < record.timeout, (graded - hung_at, "".join(lines))
        assert graded - saved < record.timeout / 2, graded - saved
        assert not running(hung_child)
        assert _alive_below(watch.pid) == helpers  # the helper, warm, and nothing below it
    finally:
        watch.send_signal(signal.SIGINT)
        try:
            watch.wait(timeout=30)
        except subprocess.TimeoutExpired:
            watch.kill()
            watch.wait()
    reader.join(timeout=5)
    assert "stopped" in lines[-1]
    time.sleep(0.5)
    assert not [pid for pid in helpers + [hung_child] if running(pid)]


def _cpu_seconds(pid: int) -> float:
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _parent(pid: int) -> int:
    try:
        return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])
    except OSError:
        return 0
