"""Run jobs in child processes forked from a zygote that has already imported Keras.

The zygote is one long-lived helper process (`python -m grader.sandbox.zygote`) that imports
Keras and TensorFlow once, runs no TensorFlow op itself (thread pools do not survive a fork),
and forks the children. A job is one part of one exercise; jobs of the same `group` (the parts
of one submitted exercise) run one after another in a single child, which copies nothing,
imports the submission once and starts TensorFlow's runtime once. The child writes each part's
bundle as soon as that part is done.

How children are started, timed and killed is the scheduler's (grader.sandbox.scheduler), which
runs in the zygote. This module is the grader's side: `run_jobs` sends the units to the zygote
(and starts another if it dies), and turns each part's report into an `Outcome`, reading the
part's bundle and the tail of its log. Results come back only as bundle files, which the grader
reads itself.

With the spawn start method (Windows, macOS, or GRADER_START_METHOD=spawn; see
grader.sandbox.platforms), the scheduler runs here instead and each group in a fresh
interpreter: slower, same results.
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
from dataclasses import dataclass
from pathlib import Path

from grader import sandbox
from grader.i18n import N_
from grader.sandbox import platforms
from grader.sandbox.scheduler import Cancelled, InterpreterChild, discard, schedule
from grader.vocabulary.bundle import BundleError, load_bundle, open_plain_file
from grader.vocabulary.labels import reported_text
from grader.vocabulary.protocol import Outcome
from grader.vocabulary.status import RunState

HELPER_ATTEMPTS = 3
LOG_TAIL_CHARS = 1500


def configure_backend() -> None:
    """TensorFlow unless the user chose another Keras backend; quiet TensorFlow logs; float64 on
    JAX, whose children (forked or fresh) read JAX_ENABLE_X64 when they first import it."""
    os.environ.setdefault("KERAS_BACKEND", "tensorflow")
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    if os.environ["KERAS_BACKEND"] == "jax":
        os.environ["JAX_ENABLE_X64"] = "1"


# What a grading child runs with where the user set nothing else: TensorFlow's Eigen kernels
# rather than its oneDNN ones. A child runs each op a few times on small tensors, where oneDNN's
# ops cost more, most on a new shape (every planted mistake graded: 72 s of CPU with them, 58 s
# without; docs/maintainers.md).
CHILD_DEFAULTS = {"TF_ENABLE_ONEDNN_OPTS": "0"}


def child_environment() -> dict:
    """The environment a grading child starts in (the helper of the fork method, or a fresh
    interpreter): the grader's, cut down to the allowlist, over CHILD_DEFAULTS. The defaults go
    to the children alone: a notebook's `check()` grades from the student's own kernel, whose
    TensorFlow keeps its kernels."""
    configure_backend()
    return CHILD_DEFAULTS | sandbox.clean_environment()


@dataclass
class Job:
    key: str
    module: Path
    cases: Path
    directory: Path
    timeout: float
    module_name: str = "submission"
    # Batch grading only: see grader.sandbox.limits.apply.
    limits: dict | None = None
    blocked_imports: tuple[str, ...] = ()
    # None: trusted code (a reference solution). Else the sandbox's policy (grader.sandbox):
    # {"protected": [paths never to grant], "read": [extra paths to read]}.
    sandbox: dict | None = None
    # Jobs with the same group run in one child, in the order given; they must share the
    # directory, limits, blocked imports and sandbox, and may come from several files of one
    # submission (grader.sandbox.units). None: a child of its own.
    group: str | None = None
    # The folder `directory` was copied from, as the grader made it (batch: the student's
    # submission), where the module lies inside `directory`: a later child of the same
    # submission (grader.engine.fresh_models) starts from a new copy of it, never from what
    # this job's child left in `directory`.
    origin: Path | None = None

    @property
    def out(self) -> Path:
        return self.directory / f"{self.key}.out.npz"

    @property
    def log(self) -> Path:
        return self.directory / f"{self.key}.log"

    def part(self) -> dict:
        return {
            "key": self.key,
            "timeout": self.timeout,
            "cases": str(self.cases),
            "out": str(self.out),
            "log": str(self.log),
            "module": str(self.module),
            "module_name": self.module_name,
        }


def describe_units(jobs: list[Job]) -> list[dict]:
    """What each child is asked to run: one unit per group (or per job without a group). The
    unit's `module` is its first part's; each part names its own."""
    units: dict[str, dict] = {}
    for job in jobs:
        name = job.group or job.key
        shared = {
            "key": name,
            "workdir": str(job.directory),
            "limits": job.limits,
            "blocked_imports": list(job.blocked_imports),
            "sandbox": job.sandbox,
        }
        first = {"module": str(job.module), "module_name": job.module_name, "parts": []}
        unit = units.setdefault(name, {**shared, **first})
        if {k: unit[k] for k in shared} != shared:
            raise ValueError(f"the jobs of group {name!r} differ in more than their cases")
        unit["parts"].append(job.part())
    return list(units.values())


class ZygoteError(RuntimeError):
    """The helper process that runs submissions could not start or died."""


class Zygote:
    def __init__(self):
        # Nameless once the helper has it open: a grader killed with -9 leaves no log behind.
        self._log = tempfile.TemporaryFile(prefix="attnkit-zygote-", suffix=".log")
        self.process = subprocess.Popen(
            [sys.executable, "-m", "grader.sandbox.zygote"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self._log,
            text=True,
            bufsize=1,
            env=child_environment(),
        )
        self._lock = threading.Lock()
        # Held while writing to the helper: a cancel comes from another thread than the run's.
        self._writing = threading.Lock()
        self.busy = False  # a request sent, its answer not all read

    def alive(self) -> bool:
        return self.process.poll() is None

    def run(self, units: list[dict], parallel: int, on_report=None, scratch=None) -> dict:
        request = {"jobs": units, "parallel": parallel}
        if scratch is not None:
            request["scratch"] = str(scratch)
        with self._lock:
            try:
                with self._writing:
                    if _cancelling.is_set():  # cancelled before its request was sent
                        raise Cancelled
                    self.process.stdin.write(json.dumps(request) + "\n")
                    self.process.stdin.flush()
                    self.busy = True
                finished = {}
                for line in self.process.stdout:
                    message = json.loads(line)
                    if message.get("cancelled"):
                        raise Cancelled
                    if message.get("done"):
                        return finished
                    finished[message["key"]] = message
                    if on_report:
                        on_report(message)
            except Cancelled:
                raise  # answered in full: the helper is ready for the next request
            except (BrokenPipeError, ValueError) as error:
                self.close()
                raise ZygoteError(f"the grading helper process failed: {error}") from error
            except BaseException:
                # Given up mid-request (the caller's callback raised, Ctrl-C): the children still
                # running and the answers still to come must not reach the next request.
                self.close()
                raise
            finally:
                with self._writing:
                    self.busy = False
            tail = self.log_tail()
            self.close()
            raise ZygoteError("the grading helper process died; its log:\n" + tail)

    def cancel(self) -> None:
        """Ask the helper to give up the request in progress (see grader.sandbox.zygote)."""
        with self._writing:
            if not self.busy:
                return
            try:
                self.process.stdin.write(json.dumps({"cancel": True}) + "\n")
                self.process.stdin.flush()
            except (BrokenPipeError, ValueError):  # the helper is gone: nothing left running
                pass

    def log_tail(self) -> str:
        try:
            return _tail_of(self._log)
        except ValueError:  # closed already
            return ""

    def close(self) -> None:
        if self.alive():
            self.process.terminate()
            try:
                self.process.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        self._log.close()


_zygote: Zygote | None = None
# Set by `cancel_runs`, cleared by `allow_runs`: while set, every run in this process is given up.
_cancelling = threading.Event()


def cancel_runs() -> None:
    """Give up the runs in progress in this process, and any started until `allow_runs`: their
    children are killed (with every process they started) and `run_jobs` raises Cancelled.
    Called from another thread than the one waiting for the run (`grader watch`)."""
    _cancelling.set()
    if _zygote is not None:
        _zygote.cancel()


def allow_runs() -> None:
    _cancelling.clear()


def zygote() -> Zygote:
    """The process-wide zygote, started on first use (or by `warm_up`)."""
    global _zygote
    if _zygote is None or not _zygote.alive():
        _zygote = Zygote()
        atexit.register(_zygote.close)
    return _zygote


def warm_up() -> None:
    """Start the zygote now (fork start method), so its Keras import overlaps the grader's own
    work. Raises StartMethodError for a GRADER_START_METHOD that cannot be followed."""
    if platforms.start_method() == platforms.FORK:
        zygote()


def run_jobs(
    jobs: list[Job],
    parallel: int | None = None,
    on_done=None,
    scratch: Path | None = None,
    follow_up=None,
) -> dict[str, Outcome]:
    """Run every job, at most `parallel` children at once (one per group).

    `on_done(job, outcome)` is called for each job as its child finishes with it. `scratch`,
    the caller's folder of the jobs' files, is removed by the helper if the caller dies (killed
    with -9, it cannot remove it itself). Raises Cancelled after `cancel_runs`.

    `follow_up(job, outcome)`, if given, may return a second job to run in a child of its own
    once the first ones are done, and a function that makes the job's outcome from the first
    one and the second's (grader.engine.fresh_models); `on_done` then sees the job when both
    are in.
    """
    if _cancelling.is_set():
        raise Cancelled
    sandbox.protect_this_process()  # the grader's memory holds the expected results
    parallel = max(1, parallel or os.cpu_count() or 1)
    by_key = {job.key: job for job in jobs}
    outcomes = {}

    later = {}  # job key -> (its second job, the function that merges the two outcomes)

    def collect(report):
        job = by_key[report["key"]]
        if job.key in outcomes:  # reported twice: the first report stands
            return
        log = by_key.get(report.get("log_of"), job).log
        outcomes[job.key] = _collect(job, report, log)
        second = follow_up(job, outcomes[job.key]) if follow_up else None
        if second is not None:
            later[job.key] = second
        elif on_done:
            on_done(job, outcomes[job.key])

    if platforms.start_method() == platforms.FORK:
        for _ in range(HELPER_ATTEMPTS):
            remaining = [job for job in jobs if job.key not in outcomes]
            if not remaining:
                break
            for job in remaining:  # what a dead helper's children left is not a result
                discard(str(job.out))
            try:
                zygote().run(describe_units(remaining), parallel, collect, scratch)
                break
            except ZygoteError as error:  # the helper died: ours to retry, never a grade
                _log_grader_failure(str(error))
        for job in jobs:
            if job.key not in outcomes:
                collect({"key": job.key, "state": RunState.GRADER_FAILED, "exitcode": None})
    else:
        schedule(
            describe_units(jobs),
            parallel,
            InterpreterChild,
            collect,
            cancelled=_cancelling.is_set,
        )
    for job in jobs:  # a job the scheduler never reported on counts as crashed
        if job.key not in outcomes:
            collect({"key": job.key, "state": RunState.CRASHED, "exitcode": None, "seconds": 0.0})
    if later:
        seconds = run_jobs([second for second, _merge in later.values()], parallel, None, scratch)
        for key, (second, merge) in later.items():
            outcomes[key] = merge(seconds[second.key])
            if on_done:
                on_done(by_key[key], outcomes[key])
    return outcomes


def _log_grader_failure(text: str) -> None:
    print(f"attnkit grader: {text}; trying again", file=sys.stderr)


def _collect(job: Job, report: dict, log: Path | None = None) -> Outcome:
    state, exitcode, seconds = report["state"], report.get("exitcode"), report.get("seconds", 0.0)
    tail = _tail(log or job.log)
    seen = {
        "refused": dict(report.get("refused") or {}),
        "refused_examples": dict(report.get("refused_examples") or {}),
    }
    if state == RunState.GRADER_FAILED:
        problem = "the grader's helper failed before the submission ran: " + _exit_words(exitcode)
        return Outcome(
            RunState.GRADER_FAILED, seconds, exitcode, log_tail=tail, problem=problem, **seen
        )
    if state == RunState.TIMED_OUT:
        return Outcome(
            RunState.TIMED_OUT,
            seconds,
            exitcode,
            log_tail=tail,
            importing=bool(report.get("importing")),
            **seen,
        )
    if state != RunState.FINISHED or not job.out.exists():
        problem = report.get("reason") or _exit_words(exitcode)
        return Outcome(RunState.CRASHED, seconds, exitcode, log_tail=tail, problem=problem, **seen)
    try:
        meta, arrays = load_bundle(job.out)
    except BundleError as error:
        return Outcome(
            RunState.CRASHED, seconds, exitcode, log_tail=tail, problem=str(error), **seen
        )
    return Outcome(RunState.FINISHED, seconds, exitcode, meta, arrays, tail, **seen)


# How a child ended without a report, in words translated where they are shown
# (grader.vocabulary.labels.shown_report: the scheduler's reasons are made outside the grader too).
NO_EXIT_STATUS = reported_text(N_("the process did not report an exit status"))
KILLED = reported_text(N_("the process was killed by signal {number} ({name})"))
EXITED = reported_text(N_("the process exited with status {status} before reporting any result"))
ENDED_ITSELF = reported_text(
    N_(
        "the process ended itself (status 0) before reporting any result: does the code call "
        "os._exit(), exit() or quit() outside a function?"
    )
)


def _exit_words(exitcode: int | None) -> str:
    if exitcode is None:
        return NO_EXIT_STATUS
    if exitcode < 0:
        number = -exitcode
        name = signal.Signals(number).name if number in signal.valid_signals() else "?"
        return KILLED.format(number=number, name=name)
    return ENDED_ITSELF if exitcode == 0 else EXITED.format(status=exitcode)


def _tail(path: Path) -> str:
    try:
        with open_plain_file(path) as handle:
            return _tail_of(handle)
    except OSError:
        return ""


def _tail_of(handle) -> str:
    """The last LOG_TAIL_CHARS bytes of an open binary file, as text (OSError if unreadable)."""
    handle.seek(0, os.SEEK_END)
    handle.seek(max(0, handle.tell() - LOG_TAIL_CHARS))
    return handle.read().decode("utf-8", "replace")
