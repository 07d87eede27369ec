"""Run jobs in child processes forked from a zygote that has already imported Keras.

The zygote is one long-lived helper process (`python -m grader.zygote`) that imports Keras and
TensorFlow once, runs no TensorFlow op itself (thread pools do not survive a fork), and forks one
child per job. Each child gets its own wall-clock limit: one that hangs is killed with its whole
process group and reported as a timeout; one that dies reports its exit status and the tail of
what it printed. Results come back only as bundle files, which the grader reads itself.

Where `os.fork` does not exist (Windows), each job runs in a fresh interpreter instead: slower,
same results.
"""

from __future__ import annotations

import atexit
import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
import traceback
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from grader.bundle import BundleError, load_bundle

FINISHED = "finished"
TIMED_OUT = "timeout"
CRASHED = "crashed"
LOG_TAIL_CHARS = 1500


def configure_backend() -> None:
    """TensorFlow unless the user chose another Keras backend; quiet TensorFlow logs."""
    os.environ.setdefault("KERAS_BACKEND", "tensorflow")
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")


@dataclass
class Job:
    key: str
    module: Path
    cases: Path
    directory: Path
    timeout: float
    module_name: str = "submission"
    # Batch grading only: see grader.runner.apply_limits.
    limits: dict | None = None
    blocked_imports: tuple[str, ...] = ()

    @property
    def out(self) -> Path:
        return self.directory / f"{self.key}.out.npz"

    @property
    def log(self) -> Path:
        return self.directory / f"{self.key}.log"

    def as_dict(self) -> dict:
        return {
            "key": self.key,
            "timeout": self.timeout,
            "module": str(self.module),
            "module_name": self.module_name,
            "cases": str(self.cases),
            "out": str(self.out),
            "log": str(self.log),
            "workdir": str(self.directory),
            "limits": self.limits,
            "blocked_imports": list(self.blocked_imports),
        }


@dataclass
class Outcome:
    state: str
    seconds: float
    exitcode: int | None = None
    meta: dict = field(default_factory=dict)
    arrays: dict[str, np.ndarray] = field(default_factory=dict)
    log_tail: str = ""
    problem: str = ""


class ZygoteError(RuntimeError):
    """The helper process that runs submissions could not start or died."""


class Zygote:
    def __init__(self):
        configure_backend()
        self._log = tempfile.NamedTemporaryFile(
            prefix="attnkit-zygote-", suffix=".log", delete=False
        )
        self.process = subprocess.Popen(
            [sys.executable, "-m", "grader.zygote"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self._log,
            text=True,
            bufsize=1,
        )
        self._lock = threading.Lock()

    def alive(self) -> bool:
        return self.process.poll() is None

    def run(self, jobs: list[dict], parallel: int, on_report=None) -> dict[str, dict]:
        with self._lock:
            try:
                self.process.stdin.write(json.dumps({"jobs": jobs, "parallel": parallel}) + "\n")
                self.process.stdin.flush()
                finished = {}
                for line in self.process.stdout:
                    message = json.loads(line)
                    if message.get("done"):
                        return finished
                    finished[message["key"]] = message
                    if on_report:
                        on_report(message)
            except (BrokenPipeError, ValueError) as error:
                raise ZygoteError(f"the grading helper process failed: {error}") from error
            raise ZygoteError("the grading helper process died; its log:\n" + self.log_tail())

    def log_tail(self) -> str:
        return _tail(Path(self._log.name))

    def close(self) -> None:
        if self.alive():
            self.process.terminate()
            try:
                self.process.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self.process.kill()
        self._log.close()
        Path(self._log.name).unlink(missing_ok=True)


_zygote: Zygote | None = None


def zygote() -> Zygote:
    """The process-wide zygote, started on first use (or by `warm_up`)."""
    global _zygote
    if _zygote is None or not _zygote.alive():
        _zygote = Zygote()
        atexit.register(_zygote.close)
    return _zygote


def warm_up() -> None:
    """Start the zygote now, so its Keras import overlaps the grader's own work."""
    if hasattr(os, "fork"):
        zygote()


def run_jobs(jobs: list[Job], parallel: int | None = None, on_done=None) -> dict[str, Outcome]:
    """Run every job; `on_done(job, outcome)` is called as each one finishes."""
    parallel = max(1, parallel or os.cpu_count() or 1)
    by_key = {job.key: job for job in jobs}
    outcomes = {}

    def collect(report):
        job = by_key[report["key"]]
        outcomes[job.key] = _collect(job, report)
        if on_done:
            on_done(job, outcomes[job.key])

    described = [job.as_dict() for job in jobs]
    if hasattr(os, "fork"):
        zygote().run(described, parallel, collect)
    else:
        schedule(described, parallel, start_interpreter, collect)
    for job in jobs:  # a job the scheduler never reported on counts as crashed
        if job.key not in outcomes:
            collect({"key": job.key, "state": CRASHED, "exitcode": None, "seconds": 0.0})
    return outcomes


# --- the scheduler, used inside the zygote (forked children) or here (fresh interpreters) -------


class ForkedChild:
    def __init__(self, job: dict):
        from grader.runner import run_job

        self.uid = _slot_uid(job)
        self.pid = os.fork()
        if self.pid == 0:  # the child: never return into the zygote's loop
            code = 1
            try:
                run_job(job)
                code = 0
            except BaseException:  # noqa: BLE001 - the missing result file is the report
                traceback.print_exc()
            finally:
                os._exit(code)

    def poll(self) -> int | None:
        pid, status = os.waitpid(self.pid, os.WNOHANG)
        if pid == 0:
            return None
        return os.waitstatus_to_exitcode(status)

    def sweep(self) -> None:
        """Kill whatever the job left behind: its process group, and its user id's processes."""
        _kill_group(self.pid)
        if self.uid is not None:
            _kill_user(self.uid)

    def kill(self) -> int | None:
        self.sweep()
        _, status = os.waitpid(self.pid, 0)
        return os.waitstatus_to_exitcode(status)


class InterpreterChild:
    def __init__(self, job: dict):
        self.process = subprocess.Popen(
            [sys.executable, "-m", "grader.runner", json.dumps(job)],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )

    def poll(self) -> int | None:
        return self.process.poll()

    def sweep(self) -> None:
        pass

    def kill(self) -> int | None:
        self.process.kill()
        return self.process.wait()


def _slot_uid(job: dict) -> int | None:
    """The user id a batch job runs as, one per slot, when the grader runs as root."""
    limits = job.get("limits") or {}
    if limits.get("uid_base") is None or not hasattr(os, "geteuid") or os.geteuid() != 0:
        return None
    return int(limits["uid_base"]) + int(job["slot"])


def _kill_user(uid: int) -> None:
    """Signal every process of `uid` (a slot's own user id, never a real one) to die."""
    pid = os.fork()
    if pid == 0:
        try:
            os.setgid(uid)
            os.setuid(uid)
            os.kill(-1, signal.SIGKILL)
        finally:
            os._exit(0)
    os.waitpid(pid, 0)


def start_interpreter(job: dict) -> InterpreterChild:
    return InterpreterChild(job)


def schedule(jobs: list[dict], parallel: int, start, report=None, parent: int | None = None):
    """Run every job, at most `parallel` at once, each within its own timeout.

    Each running job holds a slot number (0 .. parallel-1), which batch grading turns into a
    user id of its own. With `parent` set (in the zygote), the run stops and kills every child
    once that process is gone, so a grader killed with -9 leaves nothing running.
    """
    pending, running, reports = list(jobs), [], {}
    free_slots = list(range(parallel))

    def done(job, state, exitcode, started):
        reports[job["key"]] = {
            "key": job["key"],
            "state": state,
            "exitcode": exitcode,
            "seconds": round(time.monotonic() - started, 3),
        }
        if report:
            report(reports[job["key"]])

    try:
        while pending or running:
            while pending and free_slots:
                job = dict(pending.pop(0), slot=free_slots.pop(0))
                running.append((job, start(job), time.monotonic()))
            time.sleep(0.005)
            if parent is not None and os.getppid() != parent:
                raise SystemExit("the grader is gone")
            still = []
            for job, child, started in running:
                exitcode = child.poll()
                if exitcode is not None:
                    child.sweep()
                    free_slots.append(job["slot"])
                    done(job, FINISHED, exitcode, started)
                elif time.monotonic() - started > job["timeout"]:
                    exitcode = child.kill()
                    free_slots.append(job["slot"])
                    done(job, TIMED_OUT, exitcode, started)
                else:
                    still.append((job, child, started))
            running = still
    finally:
        for _, child, _ in running:
            child.kill()
    return reports


def _kill_group(pid: int) -> None:
    try:
        os.killpg(pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def _collect(job: Job, report: dict) -> Outcome:
    state, exitcode, seconds = report["state"], report.get("exitcode"), report.get("seconds", 0.0)
    tail = _tail(job.log)
    if state == TIMED_OUT:
        return Outcome(TIMED_OUT, seconds, exitcode, log_tail=tail)
    if not job.out.exists():
        return Outcome(CRASHED, seconds, exitcode, log_tail=tail, problem=_exit_words(exitcode))
    try:
        meta, arrays = load_bundle(job.out)
    except BundleError as error:
        return Outcome(CRASHED, seconds, exitcode, log_tail=tail, problem=str(error))
    return Outcome(FINISHED, seconds, exitcode, meta, arrays, tail)


def _exit_words(exitcode: int | None) -> str:
    if exitcode is None:
        return "the process did not report an exit status"
    if exitcode < 0:
        number = -exitcode
        name = signal.Signals(number).name if number in signal.valid_signals() else "?"
        return f"the process was killed by signal {number} ({name})"
    return f"the process exited with status {exitcode} before reporting any result"


def _tail(path: Path) -> str:
    try:
        with open(path, "rb") as handle:
            handle.seek(0, os.SEEK_END)
            handle.seek(max(0, handle.tell() - LOG_TAIL_CHARS))
            return handle.read().decode("utf-8", "replace")
    except OSError:
        return ""
