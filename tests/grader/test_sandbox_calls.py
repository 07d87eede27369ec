"""The seccomp filter is an allowlist (grader.sandbox.seccomp): a reference solution, graded in
the sandbox with its hidden cases, is refused no call. A TensorFlow, JAX or Python that starts
to need a call the list lacks fails here, by the call's name, instead of opening a hole or
failing students in silence. Forked from the helper, every exercise's reference is checked so
by tests/grader/test_records.py; here, the other ways a child starts: a fresh interpreter, and
the JAX backend.
"""

from __future__ import annotations

import importlib.util
import os

import pytest

from grader import sandbox
from grader.grading import grade
from tests.support.grading import refused_calls
from tests.support.unprivileged import REPO

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(
        not sandbox.status()["complete"], reason="needs Linux with Landlock and seccomp"
    ),
]

SOLUTIONS = REPO / "solutions"


def test_a_solution_in_a_fresh_interpreter_is_refused_no_call(monkeypatch):
    """Multi-head attention, the most ops of one exercise. (8-2 in a fresh interpreter is
    refused exactly what it is refused forked: test_platforms.py.)"""
    monkeypatch.setenv("GRADER_START_METHOD", "spawn")
    result = grade("mha", SOLUTIONS, seed=3, hidden_seed=11, sandbox={}, timeout=120)
    assert result.passed, [p.status for p in result.parts]
    assert refused_calls(result) == {}, result.refused_examples


@pytest.mark.skipif(importlib.util.find_spec("jax") is None, reason="JAX is not installed")
def test_a_solution_on_jax_scores_full_marks_and_is_refused_no_call():
    """On JAX, in a process of its own (the backend is chosen once per process). Also issue 33:
    JAX computes float64 in float32 unless told otherwise, which made the grader fail correct
    solutions on their float64 cases (2/10 on 8-2), so JAX_ENABLE_X64 is not set here. The
    generous limit: JAX compiles op by op on its first run, slowly on a busy CI machine."""
    import json
    import subprocess
    import sys

    script = (
        "import json\n"
        "from grader.grading import grade\n"
        f"r = grade('8-2', {str(SOLUTIONS)!r}, seed=3, sandbox={{}}, timeout=300)\n"
        "from tests.support.grading import refused_calls\n"
        "print(json.dumps({'score': r.score, 'max_score': r.max_score,\n"
        "    'statuses': [str(p.status) for p in r.parts],\n"
        "    'refused': refused_calls(r), 'examples': repr(r.refused_examples)}))\n"
    )
    env = dict(os.environ, KERAS_BACKEND="jax", JAX_PLATFORMS="cpu", PYTHONPATH=str(REPO))
    env.pop("JAX_ENABLE_X64", None)
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, env=env, timeout=600
    )
    assert done.returncode == 0, done.stderr[-2000:]
    found = json.loads(done.stdout.strip().splitlines()[-1])
    assert found["score"] == found["max_score"] == 10, found
    assert found["refused"] == {}, found
