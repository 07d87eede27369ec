"""`grader check` on every platform a student grades on: the start method (fork on Linux, a
fresh interpreter elsewhere) and its override, the fresh-interpreter path grading exactly as the
fork path does (hangs and crashes included), and the student path free of POSIX-only calls,
checked on Linux by an interpreter that lacks them as Windows does (tests/support/windows)."""

import json
import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from grader import sandbox
from grader.engine.results import ERROR, NOT_IMPLEMENTED, PASSED, TIMEOUT
from grader.grading import grade
from grader.sandbox import platforms
from grader.sandbox.platforms import FORK, SPAWN, START_METHOD_VARIABLE, StartMethodError
from tests.support.grading import SANDBOX, descendants, running

KIT = Path(__file__).resolve().parents[2]
WINDOWS = KIT / "tests" / "support" / "windows"
POSIX_ONLY = ("resource", "fcntl", "termios", "pwd", "grp")
TIMEOUT_SECONDS = 3.0


@pytest.mark.parametrize(
    "platform,expected", [("linux", FORK), ("win32", SPAWN), ("darwin", SPAWN), ("cygwin", SPAWN)]
)
def test_each_platform_gets_its_start_method(platform, expected):
    assert platforms.start_method({}, platform, can_fork=True) == expected


def test_without_fork_the_fresh_interpreter_is_the_only_way():
    assert platforms.start_method({}, "linux", can_fork=False) == SPAWN


@pytest.mark.parametrize("value", ["fork", "spawn", " Spawn ", "FORK"])
def test_the_variable_forces_either_method(value):
    for platform in ("linux", "darwin"):
        chosen = platforms.start_method({START_METHOD_VARIABLE: value}, platform, can_fork=True)
        assert chosen == value.strip().lower()


def test_an_unknown_method_is_refused_with_what_to_set_instead():
    with pytest.raises(StartMethodError) as raised:
        platforms.start_method({START_METHOD_VARIABLE: "forkserver"}, "linux", can_fork=True)
    message = str(raised.value)
    assert "GRADER_START_METHOD='forkserver' is not a start method" in message
    assert "'fork'" in message and "'spawn'" in message and "unset it" in message


def test_fork_where_there_is_none_is_refused():
    with pytest.raises(StartMethodError, match="this platform has no fork"):
        platforms.start_method({START_METHOD_VARIABLE: "fork"}, "win32", can_fork=False)


def test_check_with_an_unknown_method_is_a_usage_error_before_anything_runs():
    from click.testing import CliRunner

    from grader.cli import main

    result = CliRunner().invoke(
        main, ["check", "8-2"], env={START_METHOD_VARIABLE: "threads"}, catch_exceptions=False
    )
    assert result.exit_code == 2
    assert "GRADER_START_METHOD='threads' is not a start method" in result.output


@pytest.mark.skipif(not Path("/proc").is_dir(), reason="reads the process tree from /proc")
def test_the_tree_of_a_child_is_killed_whole_on_posix():
    """A fresh child leads its own process group: a grandchild it started dies with it."""
    child = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import subprocess, sys, time; subprocess.Popen(['sleep', '60']); time.sleep(60)",
        ],
        **platforms.new_group_options(),
    )
    try:
        deadline = time.monotonic() + 30
        while not descendants(child.pid) and time.monotonic() < deadline:
            time.sleep(0.05)
        grandchildren = descendants(child.pid)
        assert grandchildren
        platforms.kill_tree(child)
        assert child.wait(timeout=10) == -9
        deadline = time.monotonic() + 10
        while any(running(pid) for pid in grandchildren) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not any(running(pid) for pid in grandchildren)
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()


class _Running:
    pid = 4321

    def __init__(self):
        self.killed = False

    def poll(self):
        return 1 if self.killed else None

    def kill(self):
        self.killed = True


def test_on_windows_the_tree_is_killed_with_taskkill(monkeypatch):
    monkeypatch.delattr(platforms.os, "killpg")
    calls = []

    def run(command, **options):
        calls.append(command)
        return subprocess.CompletedProcess(command, 0)

    monkeypatch.setattr(platforms.subprocess, "run", run)
    process = _Running()
    platforms.kill_tree(process)
    assert calls == [["taskkill", "/F", "/T", "/PID", "4321"]]
    assert process.killed  # taskkill did not reach it (here: did nothing): killed all the same
    assert "start_new_session" not in platforms.new_group_options()


def _windows_like(code: str, *args: str) -> subprocess.CompletedProcess:
    """Run `code` in an interpreter without the POSIX-only modules and calls (and so do the
    children it starts: PYTHONPATH carries the simulation)."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(WINDOWS), str(KIT)]))
    env.pop(START_METHOD_VARIABLE, None)
    return subprocess.run(
        [sys.executable, "-c", code, *args],
        capture_output=True,
        text=True,
        env=env,
        cwd=KIT,
        timeout=300,
    )


def test_the_student_path_imports_no_posix_only_module():
    code = textwrap.dedent(
        f"""
        import os, sys
        from click.testing import CliRunner
        import grader.cli, grader.grading, grader.report
        from grader.sandbox import (
            child, fresh, limits, platforms, processes, scheduler, supervisor, zygote
        )
        assert not hasattr(os, "fork") and not hasattr(os, "killpg"), "not simulated"
        assert platforms.start_method() == "spawn"
        for args in (["list"], ["show", "8-2"]):
            result = CliRunner().invoke(grader.cli.main, args, catch_exceptions=False)
            assert result.exit_code == 0, result.output
            print(result.output)
        print("imported:", sorted(m for m in {POSIX_ONLY!r} if m in sys.modules))
        """
    )
    done = _windows_like(code)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "imported: []" in done.stdout
    assert "8-2" in done.stdout and "Total: 10 points" in done.stdout


# One submission of 8-2 that does everything a check must survive, part by part: right, wrong
# in a way the grader names, hanging, crashing the child, not written yet.
SUBMISSION = """
import os
import time

import keras
from keras import ops


class ScaledDotScore(keras.layers.Layer):
    def call(self, query, key):
        return ops.matmul(query, ops.transpose(key, (0, 2, 1))) / key.shape[-1] ** 0.5


class BilinearScore(keras.layers.Layer):
    def build(self, query_shape, key_shape):
        self.kernel = self.add_weight(name="kernel", shape=(query_shape[-1], key_shape[-1]))

    def call(self, query, key):
        return ops.einsum("bip,qp,bjq->bij", query, self.kernel, key)


def dot_product_variance(d, var_q=1.0, var_k=1.0):
    time.sleep(600)


def scaled_dot_product_variance(d, var_q=1.0, var_k=1.0):
    return var_q * var_k


def bilinear_asymmetry(W):
    print("about to leave")
    os._exit(3)


def softmax_jacobian(scores):
    raise NotImplementedError("Exercise 8-2: a stable softmax, then diag(p) minus p pᵀ")
"""
EXPECTED = {
    "ScaledDotScore": PASSED,
    "BilinearScore": ERROR,  # some cases named the mistake, the others cannot multiply
    "variances": TIMEOUT,
    "bilinear_asymmetry": ERROR,
    "softmax_jacobian": NOT_IMPLEMENTED,
}


@pytest.fixture(scope="module")
def submission(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("everything")
    (folder / "ex8_2.py").write_text(SUBMISSION, encoding="utf-8")
    return folder


def _as_check_grades(submission):
    """What `grader check` does: sandboxed where this machine can (the spawn path then passes
    the seccomp listener to its supervisor as the fork path does)."""
    return grade("8-2", submission, timeout=TIMEOUT_SECONDS, sandbox=SANDBOX)


@pytest.fixture(scope="module")
def graded_by_fork(submission):
    previous = os.environ.pop(START_METHOD_VARIABLE, None)
    try:
        return _as_check_grades(submission)
    finally:
        if previous is not None:
            os.environ[START_METHOD_VARIABLE] = previous


def _everything(result) -> list[dict]:
    """All a student or an instructor is shown of each part."""
    return [
        {**part.to_dict(), "summary": part.summary, "mistakes": part.mistakes}
        | {"grader_error": part.grader_error}
        for part in result.parts
    ]


@pytest.mark.ex8_2
def test_the_fork_path_grades_each_kind_of_submission(graded_by_fork):
    result = graded_by_fork
    assert {part.name: part.status for part in result.parts} == EXPECTED
    assert result.score == 3.0
    assert "kernel transposed" in result.part("BilinearScore").mistakes
    crashed = result.part("bilinear_asymmetry").checks[0].message
    assert "exited with status 3" in crashed and "about to leave" in crashed
    assert "stopped after 3 s" in result.part("variances").checks[0].message


@pytest.mark.ex8_2
def test_a_fresh_interpreter_grades_exactly_as_a_fork(graded_by_fork, submission, monkeypatch):
    monkeypatch.setenv(START_METHOD_VARIABLE, SPAWN)
    result = _as_check_grades(submission)
    assert _everything(result) == _everything(graded_by_fork)
    assert result.refused == graded_by_fork.refused


@pytest.mark.ex8_2
def test_check_on_a_windows_like_interpreter_grades_the_same(graded_by_fork, submission):
    """`grader check` itself, its children too, without fork, process groups or SIGKILL: the
    reference is run and a part that hangs is still stopped (the parts after a hang or a crash
    are the previous test's)."""
    parts = ("variances",)
    done = _windows_like(
        "import sys; from grader.cli import main; main(sys.argv[1:])",
        "check",
        "8-2",
        "--submission",
        str(submission),
        "--timeout",
        str(TIMEOUT_SECONDS),
        "--format",
        "json",
        *(arg for name in parts for arg in ("--part", name)),
    )
    assert done.returncode == 1, done.stderr[-3000:]
    shown = json.loads(done.stdout)["parts"]
    assert shown == [graded_by_fork.part(name).to_dict() for name in parts]


def test_children_on_windows_keep_what_python_needs_there(monkeypatch):
    grader_environment = {"SYSTEMROOT": r"C:\\Windows", "PATH": "p", "GITHUB_TOKEN": "secret"}
    monkeypatch.setattr(sandbox.os, "name", "nt")
    assert sandbox.clean_environment(grader_environment) == {
        "SYSTEMROOT": r"C:\\Windows",
        "PATH": "p",
    }
    monkeypatch.setattr(sandbox.os, "name", "posix")
    assert sandbox.clean_environment(grader_environment) == {"PATH": "p"}
