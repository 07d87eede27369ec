"""benchmarks/review_bench.py runs with --quick (SQLite, a short burst of savers), so that it
cannot rot: its table is printed, no update is lost, the queue opens within its second."""

import subprocess
import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parents[2] / "benchmarks" / "review_bench.py"


def test_review_benchmark_quick_loses_no_update():
    done = subprocess.run(
        [sys.executable, str(BENCH), "--quick", "--seconds", "2"],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    lines = done.stdout.splitlines()
    assert lines[0].split()[:2] == ["backend", "answers"]
    row = lines[1].split()
    assert row[0] == "sqlite" and row[1] == "100"
    assert int(row[-3]) > 0 and row[-1] == "0"  # saves made, none lost
