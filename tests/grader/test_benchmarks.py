"""The benchmark scripts run in CI with --quick, so that they cannot rot."""

import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest

from grader.records import EXERCISES
from tests.support.backends import jax_on_cpu

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"


@pytest.mark.long
def test_grader_benchmark_quick_prints_its_table():
    done = subprocess.run(
        [sys.executable, str(BENCHMARKS / "grader_bench.py"), "--quick"],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0].split()[:3] == ["what", "seconds", "ratio"]
    assert any(line.startswith("grader batch of 1, --jobs 2") for line in lines)
    assert any(line.startswith("grader watch 8-2: save -> new score (warm)") for line in lines)
    assert "imports TensorFlow: False" in done.stdout


@pytest.mark.long
def test_attention_benchmark_quick_prints_its_tables():
    done = subprocess.run(
        [sys.executable, str(BENCHMARKS / "attention_bench.py"), "--quick"],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr
    assert "Forward + backward time" in done.stdout and "Peak memory" in done.stdout
    lines = done.stdout.strip().splitlines()
    header = next(line.split() for line in lines if line.split()[:2] == ["T", "xla"])
    assert {"keras_s", "plain_s", "blockwise_s", "auto_s", "auto/keras"} <= set(header)
    speed_rows = [line.split() for line in lines if line.split()[:1] == ["64"]]
    assert len(speed_rows) == 2  # eager and XLA
    for row in speed_rows:
        assert all(float(value) > 0 for value in row[2:]), row
    start = next(i for i, line in enumerate(lines) if line.startswith("Peak memory of forward"))
    memory_row = lines[start + 2].split()
    assert memory_row[0] == "256" and "None" not in memory_row
    assert all(float(value) > 0 for value in memory_row[1:]), memory_row
    start = next(i for i, line in enumerate(lines) if line.startswith("Peak memory of the block"))
    mask_rows = [line.split() for line in lines[start + 2 : start + 3]]
    assert [row[:2] for row in mask_rows] == [["256", "fwd+bwd"]]
    assert all(float(value) > 0 for row in mask_rows for value in row[2:]), mask_rows


@pytest.mark.long  # the same training as test_records' reference of train-memn2n
def test_train_labs_benchmark_quick_passes_one_seed_of_a_training_lab():
    """One seed of the cheapest training lab (about 6 s of one core), graded as the child
    grades it: the summary line counts it passed."""
    done = subprocess.run(
        [
            sys.executable,
            str(BENCHMARKS / "train_labs_bench.py"),
            "--quick",
            "--lab",
            "train-memn2n",
        ],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.splitlines()[0] == "lab seed passed cpu_s wall_s"
    assert "train-memn2n: 1/1 seeds passed" in done.stdout, done.stdout


def test_no_record_is_longer_than_its_solution_without_its_teaching():
    """Issue 13: a record holds its cases as data, so what is left once its teaching (mistakes,
    properties, texts) is set aside is no longer than the solution it grades."""
    done = subprocess.run(
        [sys.executable, str(BENCHMARKS / "record_size.py")],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    rows = [line.split() for line in done.stdout.splitlines()[1:-1]]
    assert len(rows) == len(EXERCISES), done.stdout  # one row per record
    longer = [row[0] for row in rows if int(row[3]) > int(row[4])]
    assert not longer, done.stdout
    assert done.stdout.splitlines()[-1].endswith(": none")


@pytest.mark.long
@pytest.mark.skipif(importlib.util.find_spec("jax") is None, reason="JAX is not installed")
def test_gpu_check_quick_passes_its_checks_and_prints_its_tables():
    """Issue 33: the GPU check, run on the CPU as CI runs it, on JAX (the GPU machine's backend)."""
    done = subprocess.run(
        [sys.executable, str(BENCHMARKS / "gpu_check.py"), "--quick"],
        capture_output=True,
        text=True,
        env=jax_on_cpu(),
        timeout=600,
    )
    assert done.returncode == 0, done.stdout + done.stderr[-3000:]
    lines = done.stdout.splitlines()
    assert lines[0].startswith("no accelerator: running on the CPU; Keras backend jax")
    layer_rows = [line.split(" | ") for line in lines if line.startswith("| ScaledDotScore |")]
    assert len(layer_rows) == 1 and layer_rows[0][-1] == "yes |", layer_rows
    assert any(line.startswith("layer checks: 2 passed, 0 failed") for line in lines)
    header = next(line for line in lines if line.startswith("| T |"))
    assert "keras f32 s" in header and "auto f32 s" in header and "keras flash bf16 s" in header
    row = next(line for line in lines if line.startswith("| 64 |")).split(" | ")
    assert float(row[1]) > 0 and "×" in row[3], row  # Keras's seconds; plain's, as a ratio
    assert "| 8-2 | 3.0/3.0 |" in lines
    assert any(line.startswith("grader checks: 1 full marks, 0 not") for line in lines)
