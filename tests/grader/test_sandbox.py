"""grader.sandbox: the allowlist a child gets, the calls it is refused, what the grader sees of
the attempts, and how failures of the grader's own machinery are kept apart from grades."""

import errno
import os
import platform
import struct
import sys
from pathlib import Path

import pytest

from grader import KIT, sandbox
from grader.engine.bundle import BundleError, load_bundle, open_plain_file, save_bundle
from grader.engine.cases import save_cases
from grader.engine.spec import FUNCTION, Case
from grader.engine.status import CaseStatus, RunState, Status
from grader.engine.text import printable
from grader.sandbox import landlock, seccomp
from grader.sandbox.processes import Job, run_jobs

needs_sandbox = pytest.mark.skipif(
    not sandbox.status()["complete"], reason="needs Linux with Landlock and seccomp"
)


# --- the seccomp program, run by an independent BPF interpreter -------------------------------


def run_bpf(program, nr: int, arch: int, args=(0,) * 6) -> int:
    """The verdict of a classic-BPF seccomp program on one call (a from-scratch interpreter)."""
    data = struct.pack("<iIQ6Q", nr, arch, 0, *[a & 0xFFFFFFFFFFFFFFFF for a in args])
    accumulator, pc = 0, 0
    while True:
        code, jt, jf, k = program[pc]
        if code == 0x20:
            accumulator = struct.unpack_from("<I", data, k)[0]
            pc += 1
        elif code in (0x15, 0x35, 0x45):
            taken = {
                0x15: accumulator == k,
                0x35: accumulator >= k,
                0x45: bool(accumulator & k),
            }[code]
            pc += 1 + (jt if taken else jf)
        elif code == 0x06:
            return k
        else:
            raise AssertionError(f"unknown opcode {code:#x}")


@pytest.mark.skipif(platform.machine() not in seccomp.MACHINES, reason="x86-64 or arm64 only")
def test_the_filter_lets_a_child_act_on_itself_only():
    machine = seccomp.MACHINES[platform.machine()]
    calls, arch, me = machine["calls"], machine["arch"], 4242
    program = seccomp.program(me, seccomp.RET_USER_NOTIF)
    allow, refuse = seccomp.RET_ALLOW, seccomp.RET_USER_NOTIF
    cases = [
        ("clone", (seccomp.CLONE_THREAD | 0x3D0F00,), allow),  # a thread
        ("clone", (0x01200011,), refuse),  # what fork() passes
        ("kill", (me,), allow),
        ("kill", (0,), allow),  # its own process group
        ("kill", (-me,), allow),
        ("kill", (-1,), refuse),  # every process it may signal
        ("kill", (me + 1,), refuse),
        ("kill", (-(me + 1),), refuse),
        ("tgkill", (me, 7), allow),
        ("tgkill", (me + 1, 7), refuse),
        ("ptrace", (16, me + 1), refuse),
        ("process_vm_readv", (me + 1,), refuse),
        ("execve", (0,), refuse),
        ("clone3", (0,), seccomp.RET_ERRNO | errno.ENOSYS),
        ("socket", (1, 1), allow),  # AF_UNIX
        ("socket", (2, 2), refuse),  # AF_INET, UDP
        ("socket", (10, 1), refuse),  # AF_INET6
        ("unshare", (0x10000000,), refuse),
        ("io_uring_setup", (8, 0), refuse),
        ("mount", (0,), refuse),
    ]
    if "fork" in calls:
        cases.append(("fork", (), refuse))
    for name, args, verdict in cases:
        got = run_bpf(program, calls[name], arch, (*args, *[0] * (6 - len(args))))
        assert got == verdict, (name, args, hex(got))
    assert run_bpf(program, 0, arch) == allow  # read(2), or any other call
    assert run_bpf(program, calls["kill"], 0x40000003) == seccomp.RET_ERRNO | errno.EPERM
    if machine["x32"]:
        assert run_bpf(program, 57 | seccomp.X32_SYSCALL_BIT, arch) & 0xFFFF0000 == 0x00050000


# --- the allowlist ------------------------------------------------------------------------------


def test_the_allowlist_never_holds_the_kit_or_a_protected_folder(tmp_path):
    work = tmp_path / "work"
    work.mkdir()
    secret = tmp_path / "results"
    secret.mkdir()
    kit = str(KIT.resolve())
    # As if the kit's checkout and the results were on the module search path.
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(sys, "path", [*sys.path, kit, str(tmp_path)])
        pairs = sandbox.grants({"workdir": str(work), "protected": [str(secret)]}, os.getpid())
    paths = [path for path, _ in pairs]
    for path in paths:
        for hidden in (kit, str(secret.resolve())):
            assert not (path == hidden or path.startswith(hidden + "/")), path
            assert not hidden.startswith(path.rstrip("/") + "/"), (path, "holds", hidden)
    writable = [path for path, rights in pairs if rights & landlock.MAKE_REG]
    assert writable == [str(work.resolve())]
    assert str(tmp_path.resolve() / "work") in paths


# --- a sandboxed child, end to end ----------------------------------------------------------------

PROBE = """
import ctypes, os, signal, sys
import numpy as np

def succeeded(result):
    if result != 0:
        raise OSError(result)

def attempt(action):
    try:
        action()
        return 1.0
    except Exception:
        return 0.0

def probe():
    parent = os.getppid()
    results = [
        attempt(lambda: open(SECRET).read()),
        attempt(lambda: open(os.path.join(os.path.dirname(os.getcwd()), "planted"), "w")),
        attempt(lambda: os.kill(parent, 0)),
        attempt(lambda: os.kill(-1, 0)),
        attempt(lambda: os.waitpid(os.fork(), 0) if True else None),
        attempt(lambda: open(f"/proc/{parent}/cmdline", "rb").read()),
        attempt(lambda: open("mine.txt", "w").write("ok")),
        attempt(lambda: __import__("solutions")),
        attempt(lambda: os.environ["ATTNKIT_TEST_SECRET"]),
        attempt(lambda: __import__("socket").socket(2, 2).sendto(b"x", ("127.0.0.1", 9))),
        attempt(lambda: succeeded(ctypes.CDLL(None).unshare(0x10000000))),  # CLONE_NEWUSER
    ]
    return np.array(results)
"""


@pytest.fixture
def probe_folder(tmp_path) -> Path:
    secret = tmp_path / "secret.txt"
    secret.write_text("the hidden expected results")
    (tmp_path / "submission").mkdir()
    (tmp_path / "submission" / "probe.py").write_text(f"SECRET = {str(secret)!r}\n" + PROBE)
    save_cases(tmp_path / "probe.npz", [Case("probe", FUNCTION, "no inputs")])
    return tmp_path


@needs_sandbox
def test_a_sandboxed_child_reaches_nothing_but_its_folder_and_its_attempts_are_counted(
    probe_folder, monkeypatch
):
    monkeypatch.setenv("ATTNKIT_TEST_SECRET", "hunter2")
    from grader.sandbox import processes

    if processes._zygote is not None:  # started before the variable was set
        processes._zygote.close()
        processes._zygote = None
    work = probe_folder / "work"
    work.mkdir()
    job = Job(
        "probe",
        probe_folder / "submission" / "probe.py",
        probe_folder / "probe.npz",
        work,
        60.0,
        blocked_imports=("solutions",),
        sandbox={"protected": [str(probe_folder / "submission")]},
    )
    outcome = run_jobs([job])["probe"]
    assert outcome.state == RunState.FINISHED, outcome
    assert outcome.meta["cases"][0]["status"] == CaseStatus.OK, outcome.meta
    done = outcome.arrays["case0/output"].tolist()
    # Only writing into its own folder worked.
    assert done == [0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0], done
    assert (work / "mine.txt").read_text() == "ok"
    assert not (probe_folder / "planted").exists()
    assert outcome.refused.get("signal", 0) >= 2, outcome.refused
    assert outcome.refused.get("process", 0) >= 1, outcome.refused
    assert outcome.refused.get("open", 0) >= 3, outcome.refused
    assert outcome.refused.get("import", 0) >= 1, outcome.refused
    assert outcome.refused.get("network", 0) >= 1, outcome.refused
    assert outcome.refused.get("system", 0) >= 1, outcome.refused
    examples = " ".join(outcome.refused_examples.get("open", []))
    assert "secret.txt" in examples and "cmdline" in examples


def test_a_child_that_fails_before_the_submission_runs_is_the_graders_failure(probe_folder):
    broken = probe_folder / "broken.npz"
    broken.write_bytes(b"not an array bundle")
    job = Job("probe", probe_folder / "submission" / "probe.py", broken, probe_folder, 60.0)
    outcome = run_jobs([job])["probe"]
    assert outcome.state == RunState.GRADER_FAILED, outcome
    assert "before the submission ran" in outcome.problem


# --- what the grader reads back -----------------------------------------------------------------


def test_files_a_child_leaves_are_never_read_through_links(tmp_path):
    real = tmp_path / "expected.npz"
    save_bundle(real, {"cases": []}, {})
    load_bundle(real)
    (tmp_path / "sym.npz").symlink_to(real)
    os.link(real, tmp_path / "hard.npz")
    for name in ("sym.npz", "hard.npz"):
        with pytest.raises(BundleError, match="could not be read"):
            load_bundle(tmp_path / name)
    os.mkfifo(tmp_path / "fifo")
    with pytest.raises(OSError):
        open_plain_file(tmp_path / "fifo")  # and never hangs on a FIFO


def test_text_a_student_reads_has_no_paths_or_traceback_frames():
    log = (
        "Traceback (most recent call last):\n"
        '  File "/opt/course/grader/sandbox/child.py", line 12, in run_job\n'
        "    module = load_submission(job)\n"
        "OSError: [Errno 27] File too large: '/tmp/attnkit-batch-x1/alice/ex0/job3.log'\n"
        "my result: W/2 = 0.5"
    )
    shown = printable(log)
    assert "/" not in shown.replace("W/2", "")
    assert "runner.py" not in shown and "Traceback" not in shown
    assert "File too large: 'job3.log'" in shown and "my result: W/2 = 0.5" in shown


def test_without_a_sandbox_batch_refuses_unless_told(tmp_path, monkeypatch):
    from grader.instructor.batch import BatchError, BatchOptions, run_batch

    missing = {**sandbox.status(), "files": False, "landlock_abi": 0, "complete": False}
    monkeypatch.setattr(sandbox, "status", lambda: missing)
    (tmp_path / "class" / "alice").mkdir(parents=True)
    (tmp_path / "class" / "alice" / "notes.txt").write_text("nothing yet")
    with pytest.raises(BatchError, match="--unsandboxed"):
        run_batch(tmp_path / "class", BatchOptions(["8-2"], tmp_path / "out", seed=1))
    assert not (tmp_path / "out" / "results").exists()
    run_batch(tmp_path / "class", BatchOptions(["8-2"], tmp_path / "out", seed=1, unsandboxed=True))
    state = __import__("json").loads((tmp_path / "out" / "batch.json").read_text())
    assert state["sandbox"]["complete"] is False
    assert state["isolation"].startswith("NOT sandboxed")
    assert "NOT sandboxed" in (tmp_path / "out" / "report.html").read_text()


def test_a_malformed_report_is_the_childs_crash_never_the_graders(tmp_path):
    from grader.engine.judging import judge_part
    from grader.records import get_exercise
    from grader.sandbox.processes import Outcome

    deep = tmp_path / "deep.npz"
    save_bundle(deep, {"cases": []}, {})
    import numpy as np

    nested = np.frombuffer(b"[" * 200_000 + b"]" * 200_000, dtype=np.uint8)
    np.savez(deep, __meta__=nested)
    with pytest.raises(BundleError, match="unreadable metadata"):
        load_bundle(deep)
    part = get_exercise("8-2").parts[0]
    for meta in (
        {"import_error": "a string, not a mapping", "cases": []},
        {"cases": [["not", "a", "mapping"]], "import_error": None},
        {"cases": [{"status": {"unhashable": []}}]},
        {"cases": "nope"},
    ):
        judged = judge_part(
            part, [None], [None], Outcome(RunState.FINISHED, 0.1, 0, meta=meta), 5.0
        )
        assert judged.status == Status.ERROR and judged.score == 0.0, meta
        assert judged.grader_error == "", meta
        assert "malformed" in judged.checks[0].message or "import" in judged.checks[0].message
