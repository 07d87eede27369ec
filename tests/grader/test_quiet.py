"""No framework start-up noise on any command (grader.quiet): each command run in a fresh
process with real TensorFlow, nothing quieted by the test's own environment, prints none of
TensorFlow's start-up lines, and a real error still shows."""

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from grader.instructor.course.release import SETUP
from grader.kit import KIT
from grader.quiet import MARK, dropped

# What TensorFlow 2.18+ writes to descriptor 2 when it is imported (seen on this machine), and
# what older versions wrote.
NOISE = re.compile(
    r"^[IW]\d{4} |oneDNN custom operations|Unable to register cu|"
    r"This TensorFlow binary is optimized|cuda_|cudart_stub|absl::InitializeLog",
    re.MULTILINE,
)
STARTUP_LINES = [
    b"WARNING: All log messages before absl::InitializeLog() is called are written to STDERR",
    b"I0000 00:00:1795699351.117137   14154 port.cc:153] oneDNN custom operations are on. You "
    b"may see slightly different numerical results due to floating-point round-off errors.",
    b"I0000 00:00:1795699351.117473   14154 cudart_stub.cc:31] Could not find cuda drivers on "
    b"your machine, GPU will not be used.",
    b"I0000 00:00:1795699351.402294   14154 cpu_feature_guard.cc:227] This TensorFlow binary is "
    b"optimized to use available CPU instructions in performance-critical operations.",
    b"To enable the following instructions: AVX2 AVX512F FMA, in other operations, rebuild "
    b"TensorFlow with the appropriate compiler flags.",
    b"E0000 00:00:1795699422.959476   15101 cuda_platform.cc:52] failed call to cuInit: INTERNAL:"
    b" CUDA error: Failed call to cuInit: UNKNOWN ERROR (303)",
    b"E0000 00:00:1732.123   17 cuda_dnn.cc:8310] Unable to register cuDNN factory: Attempting "
    b"to register factory for plugin cuDNN when one has already been registered",
    # At run time, not start-up: an int64 op (examples/pointer_sort.py) on a CPU without AVX-512.
    b"E0000 00:00:1795710419.786770    5487 util.cc:131] oneDNN supports DT_INT64 only on "
    b"platforms with AVX-512. Falling back to the default Eigen-based implementation if present.",
]
KEPT_LINES = [
    b"Traceback (most recent call last):",
    b'  File "ex8_2.py", line 3, in <module>',
    b"E0000 00:00:1795699422.959476   15101 status.cc:83] INTERNAL: out of memory",
    b"F0000 00:00:1795699422.959476   15101 check.cc:12] Check failed: rank >= 0",
    b"E0000 00:00:1795710419.786770    5487 util.cc:131] oneDNN: out of memory",
    b"ValueError: I0000 is not a shape",
    b"I0000 is the first line of the student's own output",
]


def test_only_the_known_start_up_lines_are_dropped():
    assert [line for line in STARTUP_LINES if not dropped(line)] == []
    assert [line for line in KEPT_LINES if dropped(line)] == []


def fresh(arguments: list[str], cwd: Path = KIT, timeout: float = 600) -> tuple[int, str]:
    """`python ARGUMENTS` in a fresh process, with none of the quieting this test run has (the
    suite's conftest sets TF_CPP_MIN_LOG_LEVEL); stdout and stderr together."""
    environment = {k: v for k, v in os.environ.items() if k not in ("TF_CPP_MIN_LOG_LEVEL", MARK)}
    environment["PYTHONPATH"] = str(KIT)
    done = subprocess.run(
        [sys.executable, *arguments],
        cwd=cwd,
        env=environment,
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    return done.returncode, done.stdout + done.stderr


def test_tensorflow_alone_is_noisy_here():
    """The control: without grader.quiet this TensorFlow prints its start-up lines, so the
    commands below are quiet because of it."""
    _, output = fresh(["-c", "import tensorflow"])
    if not NOISE.search(output):
        pytest.skip("this TensorFlow prints no start-up lines: nothing to quiet")


# setup.sh's import check, as its Python runs it.
SETUP_CHECK = re.search(r'-c "(import grader\.quiet[^"]*)"', SETUP).group(1)


@pytest.mark.parametrize(
    "arguments",
    [
        ["-m", "grader", "check", "8-2", "--submission", "examples/submissions/bob"]
        + ["--part", "variances"],
        ["-m", "grader", "release", "actions", "-e", "8-2"],
    ],
    ids=["check", "release-actions"],
)
def test_a_command_prints_no_start_up_lines(arguments):
    code, output = fresh(arguments)
    assert code == 0, output[-3000:]
    assert not NOISE.search(output), output[-3000:]


def test_setup_sh_imports_quietly_and_a_real_error_still_shows_with_its_traceback():
    """setup.sh's import check as its Python runs it, then a real error in the same process
    (one start of TensorFlow for both)."""
    code, output = fresh(
        [
            "-c",
            SETUP_CHECK + "\nimport tensorflow as tf; tf.constant([1, 2]) + tf.constant([1, 2, 3])",
        ]
    )
    assert code == 1
    assert "Traceback (most recent call last)" in output
    assert "InvalidArgumentError" in output and "Incompatible shapes" in output, output[-3000:]
    assert not NOISE.search(output), output[-3000:]
