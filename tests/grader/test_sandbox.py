"""grader.sandbox: the allowlist a child gets, the calls it is refused, what the grader sees of
the attempts, and how failures of the grader's own machinery are kept apart from grades."""

import errno
import os
import socket
import struct
import sys
from pathlib import Path

import pytest

from grader import sandbox
from grader.engine.cases import save_cases
from grader.kit import KIT
from grader.sandbox import landlock, seccomp, world
from grader.sandbox.processes import Job, run_jobs
from grader.sandbox.syscall_numbers import NUMBERS
from grader.vocabulary.bundle import BundleError, load_bundle, open_plain_file, save_bundle
from grader.vocabulary.spec import FUNCTION, Case
from grader.vocabulary.status import CaseStatus, RunState, Status
from grader.vocabulary.text import printable

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


@pytest.mark.parametrize("machine", sorted(seccomp.ARCHES))
def test_the_filter_allows_what_grading_needs_and_refuses_everything_else(machine):
    calls, arch, me = NUMBERS[machine], seccomp.ARCHES[machine], 4242
    program = seccomp.program(me, seccomp.RET_USER_NOTIF, machine)
    allow, refuse = seccomp.RET_ALLOW, seccomp.RET_USER_NOTIF
    cases = [
        ("read", (0,), allow),
        ("futex", (0,), allow),
        ("mmap", (0, 4096, 3, 0x22), allow),
        ("openat", (-100 & 0xFFFFFFFF,), allow),  # files are Landlock's
        ("clone", (seccomp.CLONE_THREAD | 0x3D0F00,), allow),  # a thread
        ("clone", (0x01200011,), refuse),  # what fork() passes
        ("clone3", (0,), seccomp.RET_ERRNO | errno.ENOSYS),
        ("execve", (0,), refuse),
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
        ("pidfd_open", (me + 1, 0), refuse),
        # Another process's limits, priority, affinity, scheduling: never; its own: yes.
        ("prlimit64", (0, 9, 1), allow),
        ("prlimit64", (me, 9, 1), allow),
        ("prlimit64", (me + 1, 9, 1), refuse),
        ("prlimit64", (1, 0, 0), refuse),
        ("setpriority", (0, 0, 19), allow),
        ("setpriority", (0, me + 1, 19), refuse),
        ("setpriority", (1, 0, 19), refuse),  # PRIO_PGRP: a group, maybe the grader's
        ("setpriority", (2, 0, 19), refuse),  # PRIO_USER: every process of the user
        ("sched_setaffinity", (0,), allow),
        ("sched_setaffinity", (me + 1,), refuse),
        ("sched_setscheduler", (me + 1, 0), refuse),
        ("sched_setattr", (me + 1,), refuse),
        ("ioprio_set", (1, me + 1), refuse),
        ("sched_getaffinity", (me + 7,), allow),  # reading only: TensorFlow asks of its threads
        # No socket of any family (the supervisor's channel is made before the filter).
        ("socket", (1, 1), refuse),  # AF_UNIX: pathname sockets are reachable through files
        ("socket", (2, 2), refuse),
        ("socket", (16, 3), refuse),  # netlink
        ("socketpair", (1, 1), refuse),
        ("connect", (3,), refuse),
        ("sendmsg", (3,), allow),  # on the channel it was handed
        # Memory the address-space limit does not count, and objects that outlive the child.
        ("memfd_create", (0, 0), refuse),
        ("shmget", (0x1234, 1 << 30, 0o1666), refuse),
        ("msgget", (0x1234, 0o1666), refuse),
        ("semget", (0x1234, 1, 0o1666), refuse),
        # Privilege, the machine, the kernel.
        ("clock_settime", (0,), refuse),
        ("settimeofday", (0,), refuse),
        ("adjtimex", (0,), refuse),
        ("setuid", (0,), refuse),
        ("capset", (0,), refuse),
        ("fanotify_init", (0,), refuse),
        ("unshare", (0x10000000,), refuse),
        ("setns", (3, 0), refuse),
        ("mount", (0,), refuse),
        ("bpf", (0,), refuse),
        ("perf_event_open", (0,), refuse),
        ("io_uring_setup", (8, 0), refuse),
        ("init_module", (0,), refuse),
        ("reboot", (0,), refuse),
        ("personality", (0xFFFFFFFF,), refuse),
        ("seccomp", (1, 0), refuse),
        # ioctl and prctl by request only: no terminal input injected, no new filters.
        ("ioctl", (1, 0x5401), allow),  # TCGETS: isatty()
        ("ioctl", (0, 0x5412), refuse),  # TIOCSTI
        ("ioctl", (3, 0xC0502100), refuse),  # the seccomp listener's own requests
        ("prctl", (15,), allow),  # PR_SET_NAME: a thread's name
        ("prctl", (1, 9), refuse),  # PR_SET_PDEATHSIG
        ("prctl", (22, 2), refuse),  # PR_SET_SECCOMP
    ]
    if "fork" in calls:
        cases.append(("fork", (), refuse))
    for name, args, verdict in cases:
        words = [a & 0xFFFFFFFFFFFFFFFF for a in (*args, *[0] * (6 - len(args)))]
        got = run_bpf(program, calls[name], arch, tuple(words))
        assert got == verdict, (name, args, hex(got))
    assert run_bpf(program, 1023, arch) == refuse  # a number no table knows: refused
    assert run_bpf(program, calls["read"], 0x40000003) == seccomp.RET_ERRNO | errno.EPERM
    if machine == "x86_64":
        assert run_bpf(program, 57 | seccomp.X32_SYSCALL_BIT, arch) & 0xFFFF0000 == 0x00050000


def test_every_call_the_filter_names_is_a_call_of_a_machine_it_knows():
    """A misspelt name would silently allow nothing (or check nothing)."""
    for name in [*seccomp.ALLOWED, *seccomp.CHECKED, *seccomp.NOT_IMPLEMENTED]:
        assert any(name in numbers for numbers in NUMBERS.values()), name


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


def test_a_venv_inside_a_protected_folder_is_read_but_not_the_kit_installed_into_it(tmp_path):
    """Gradescope's layout: the venv in /autograder (protected), the kit's packages installed
    into its site-packages; and an instructor's venv inside the checkout."""
    autograder = tmp_path / "autograder"
    site = autograder / "venv" / "lib" / "python3" / "site-packages"
    for name in ("numpy/testing", "grader", "solutions"):
        (site / name).mkdir(parents=True)
    (autograder / "results").mkdir()
    in_checkout = KIT.resolve() / ".venv-probe-not-made"  # only its path is used
    work = tmp_path / "work"
    work.mkdir()
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(sandbox, "KIT", site)  # the kit as installed into that venv
        patch.setattr(
            sandbox,
            "installation_roots",
            lambda: [str(autograder / "venv"), str(site), str(in_checkout), str(autograder)],
        )
        pairs = sandbox.grants({"workdir": str(work), "protected": [str(autograder)]}, os.getpid())
    paths = {path for path, _ in pairs}
    assert str(site / "numpy") in paths and str(autograder / "venv" / "lib") not in paths
    for hidden in ("grader", "solutions"):
        assert not any(p == str(site / hidden) or p.startswith(f"{site / hidden}/") for p in paths)
    # A root that is itself protected (the whole /autograder) is not granted by being a root.
    assert not any(p in (str(autograder), str(autograder / "results")) for p in paths)
    assert not any(p.startswith(f"{autograder / 'results'}/") for p in paths)


# --- a sandboxed child, end to end ----------------------------------------------------------------

PROBE = """
import ctypes, os, resource, signal, socket, sys, time
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
        # Outside through a pathname Unix socket (a listener of the test's own).
        attempt(lambda: socket.socket(socket.AF_UNIX).connect(LISTENER)),
        attempt(lambda: socket.socketpair()),
        # Memory the address-space limit does not count, objects that outlive the child.
        attempt(lambda: os.memfd_create("held")),
        attempt(lambda: succeeded(int(ctypes.CDLL(None).shmget(0x5EED, 1 << 20, 0o1666) < 0))),
        # Another process's priority, affinity and limits (the zygote's: harmless values).
        attempt(lambda: os.setpriority(os.PRIO_PROCESS, parent, os.getpriority(0, parent))),
        attempt(lambda: os.sched_setaffinity(parent, os.sched_getaffinity(parent))),
        attempt(lambda: resource.prlimit(parent, resource.RLIMIT_CORE, (0, 0))),
        # The clock, set to what it reads (harmless if it ever worked).
        attempt(lambda: time.clock_settime(time.CLOCK_REALTIME, time.time())),
    ]
    status = dict(line.split(":", 1) for line in open("/proc/self/status") if ":" in line)
    facts = [
        float(os.getuid()),
        float(int(status["CapEff"], 16)),
        float(os.stat("/proc/self/ns/ipc").st_ino),
        float(os.stat("/proc/self/ns/net").st_ino),
    ]
    return np.array(results + facts)
"""


@pytest.fixture
def probe_folder(tmp_path) -> Path:
    secret = tmp_path / "secret.txt"
    secret.write_text("the hidden expected results")
    (tmp_path / "submission").mkdir()
    listener = str(tmp_path / "listener.sock")
    (tmp_path / "submission" / "probe.py").write_text(
        f"SECRET = {str(secret)!r}\nLISTENER = {listener!r}\n" + PROBE
    )
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
    listener = socket.socket(socket.AF_UNIX)
    listener.bind(str(probe_folder / "listener.sock"))
    os.chmod(probe_folder / "listener.sock", 0o777)
    listener.listen(1)
    listener.setblocking(False)
    try:
        outcome = run_jobs([job])["probe"]
        with pytest.raises(BlockingIOError):
            listener.accept()  # nobody came through
    finally:
        listener.close()
    assert outcome.state == RunState.FINISHED, outcome
    assert outcome.meta["cases"][0]["status"] == CaseStatus.OK, outcome.meta
    *done, uid, capabilities, ipc, net = outcome.arrays["case0/output"].tolist()
    # Only writing into its own folder worked.
    assert done == [0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0] + [0] * 8, done
    # A world of its own: no capability, its own IPC and network, its own user under root.
    assert capabilities == 0
    if sandbox.status()["namespaces"]:
        assert ipc != os.stat("/proc/self/ns/ipc").st_ino
        assert net != os.stat("/proc/self/ns/net").st_ino
    if os.geteuid() == 0:
        assert uid >= world.SLOT_UID_BASE
    assert outcome.refused.get("others", 0) >= 3, outcome.refused
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
    from grader.vocabulary.protocol import Outcome

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
