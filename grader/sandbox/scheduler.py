"""The scheduler: run units (the parts of one submitted exercise) in children, at most N at once,
each part within its own wall-clock limit. It runs inside the zygote (forked children, see
grader.sandbox.zygote) or, with the spawn start method (grader.sandbox.platforms), in the grader
(fresh interpreters).

Every part's limit is enforced here, from outside the child: the child's own start (a fresh
interpreter's TensorFlow import, up to STARTUP_SECONDS) counts against no part; importing the
submission gets the first part's limit, then each part gets its own from the moment the bundle
of the one before it appeared. A child that overruns is killed with its whole process tree and
its running part reported as a timeout; a child that dies reports its exit status. Either way
the parts that had written a bundle keep it, and the parts not started yet run again in a fresh
child, so one part that hangs or crashes costs only that part. A child that hangs or dies while
importing the submission costs every part (each would import it again); one that fails before
any submitted code ran is tried again, then reported as the grader's failure. Progress is read
from files only, and each part is reported as one line (`{"key", "state", "exitcode",
"seconds"}`), whose state is a `RunState`.
"""

from __future__ import annotations

import contextlib
import json
import os
import select
import shutil
import signal
import subprocess
import sys
import time
from collections import deque
from typing import NoReturn

from grader import sandbox
from grader.i18n import N_
from grader.sandbox import limits, platforms, supervisor, world
from grader.sandbox.units import ready_marker, segments
from grader.vocabulary.labels import reported_text
from grader.vocabulary.status import RunState

SETUP_ATTEMPTS = 3
STARVED_LIMIT = limits.STARVED_FACTOR
WATCH_SECONDS = 0.2
MAX_FILES = 10000
# Why a child was stopped, translated where the grader shows it (grader.vocabulary.labels).
TOO_MANY_THREADS = reported_text(N_("it started {threads} threads (at most {most} allowed)"))
WROTE_TOO_MUCH = reported_text(
    N_("it wrote more than {megabytes} MB or {files} files in its folder")
)
# How long a child may take to start (a fresh interpreter imports TensorFlow, slowly on a cold
# laptop) before submitted code runs; past it, the grader's own machinery failed.
STARTUP_SECONDS = 120.0
TICK_SECONDS = 0.005


class ForkedChild:
    def __init__(self, job: dict):
        self.uid = world.slot_uid(job)
        self.exitcode: int | None = None
        mine, theirs = supervisor.channel()
        self.pid = os.fork()
        if self.pid == 0:  # the child: never return into the zygote's loop

            def prepare():
                signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGTERM})
                sandbox.protect_this_process(protect=False)
                mine.close()
                _close_inherited_files(keep=theirs.fileno())

            run_child(job, theirs, prepare)
        theirs.close()
        self.watch = supervisor.Watch(mine)

    @property
    def started(self) -> bool:
        """Whether submitted code may have run (the child said so, its sandbox in place)."""
        return self.watch.started

    def poll(self) -> int | None:
        self.watch.poll()
        if self.exitcode is None:
            pid, status = os.waitpid(self.pid, os.WNOHANG)
            if pid != 0:
                self.exitcode = os.waitstatus_to_exitcode(status)
                self.watch.close()
        return self.exitcode

    def fds(self) -> list[int]:
        return self.watch.fds()

    def sweep(self) -> None:
        """Kill whatever the job left behind: its process group, and its user id's processes."""
        _kill_group(self.pid)
        if self.uid is not None:
            _kill_user(self.uid)

    def kill(self) -> int | None:
        self.watch.poll()
        self.sweep()
        if self.exitcode is None:
            # Not reaped yet, so the id is still this child's: killing it by id as well covers a
            # child too young to have a process group of its own.
            os.kill(self.pid, signal.SIGKILL)
            _, status = os.waitpid(self.pid, 0)
            self.exitcode = os.waitstatus_to_exitcode(status)
        self.watch.close()
        return self.exitcode


def _close_inherited_files(keep: int) -> None:
    """Close every descriptor a forked child inherits beyond stdin, stdout, stderr and `keep`.

    The zygote's own pipe to the grader is one of them, and so are the channels of the other
    children: submitted code must not be able to write reports in anyone else's name.
    """
    highest = os.sysconf("SC_OPEN_MAX") if hasattr(os, "sysconf") else 4096
    os.closerange(3, keep)
    os.closerange(keep + 1, highest)


def run_child(job: dict, end, prepare=None) -> NoReturn:
    """The body of every child, forked or in a fresh interpreter: run the job, then exit at
    once (0 once every part is written, 1 otherwise), skipping TensorFlow's slow teardown."""
    code = 1
    try:
        if prepare is not None:
            prepare()
        from grader.sandbox.child import run_job

        run_job(job, end)
        code = 0
    except BaseException as error:  # noqa: BLE001 - the missing result is the report
        # One line, no traceback: this log may be shown to the student.
        print(f"{type(error).__name__}: {error}", file=sys.stderr)
    finally:
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except BaseException:  # noqa: BLE001 - past its output cap, or closed
                pass
        os._exit(code)


class InterpreterChild:
    """A child in a fresh interpreter (`python -m grader.sandbox.fresh`), the spawn start method
    (grader.sandbox.platforms). Where the platform can pass a socket to a new process (POSIX)
    it gets the same channel to its supervisor as a forked child, so a sandbox, its refused
    calls and the grader's own failures are told apart alike; elsewhere (Windows, never
    sandboxed) it marks a file once it has started."""

    def __init__(self, job: dict):
        stem = job["ready"]
        job = dict(job, started_marker=f"{stem}.started")
        discard(job["started_marker"])
        mine = theirs = None
        if supervisor.can_pass_channel():
            mine, theirs = supervisor.channel()
            job["channel"] = theirs.fileno()
        self.marker = job["started_marker"]
        self.job_file = f"{stem}.job.json"
        with _new_file(self.job_file) as handle:
            handle.write(json.dumps(job).encode("utf-8"))
        # Until the child sends its output to the first part's log, what a failed start prints
        # (a broken TensorFlow installation) goes there too, as a forked child's goes to its
        # helper's log.
        first_log = _new_file(job["parts"][0]["log"])
        # What the helper of the fork method starts in (grader.sandbox.processes imports this
        # module, hence the import here).
        from grader.sandbox.processes import child_environment

        try:
            self.process = subprocess.Popen(
                [sys.executable, "-m", "grader.sandbox.fresh", self.job_file],
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=first_log,
                env=child_environment(),
                pass_fds=[theirs.fileno()] if theirs is not None else (),
                **platforms.new_group_options(),
            )
        finally:
            first_log.close()
            if theirs is not None:
                theirs.close()
        self.watch = supervisor.Watch(mine) if mine is not None else None
        self._marked = False

    @property
    def pid(self) -> int:
        return self.process.pid

    @property
    def started(self) -> bool:
        if self.watch is not None:
            return self.watch.started
        self._marked = self._marked or os.path.exists(self.marker)
        return self._marked

    def poll(self) -> int | None:
        if self.watch is not None:
            self.watch.poll()
        exitcode = self.process.poll()
        if exitcode is not None:
            self._done()
        return exitcode

    def fds(self) -> list[int]:
        return self.watch.fds() if self.watch is not None else []

    def sweep(self) -> None:
        """Kill whatever the child left behind (its process group, on POSIX)."""
        platforms.kill_tree(self.process)

    def kill(self) -> int | None:
        if self.watch is not None:
            self.watch.poll()
        platforms.kill_tree(self.process)
        exitcode = self.process.wait()
        self._done()
        return exitcode

    def _done(self) -> None:
        if self.watch is not None:
            self.watch.close()
        discard(self.job_file)


def _new_file(path: str):
    """A new file at `path` for writing, never through whatever an earlier child left there."""
    discard(path)
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0)
    return os.fdopen(os.open(path, flags, 0o600), "wb")


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


class _Running:
    """One child at work on the parts of a unit still to run, and where it has got to.

    Progress is read from files only: the `ready` marker once the submission is imported, then
    each part's bundle. `current` is the part running now (len(parts) once all are written).
    """

    def __init__(self, unit: dict, attempt: int, slot: int, start):
        self.attempt = attempt
        # A unit given back for its rest (settle) still holds the user id of the slot its
        # earlier child ran in. The new child may run in another slot, beside a classmate's
        # child that now has that id: the first of the two to end would kill the other (the
        # sweep kills every process of its id) with no reason to tell. The id is the slot's.
        unit = {key: value for key, value in unit.items() if key != "uid"}
        self.job = dict(
            unit,
            slot=slot,
            uid=world.slot_uid(dict(unit, slot=slot)),  # chosen here, where the sweep is
            ready=os.path.join(unit["workdir"], f"{unit['key']}.ready{attempt}"),
        )
        self.parts = unit["parts"]
        # Each part's segment (the parts of one file): (its first part, which imports the
        # file; the next file's first, None for the last file).
        bounds = segments(self.parts, unit.get("module"))
        self.segment_of = {
            index: (first, end if end < len(self.parts) else None)
            for first, end in bounds
            for index in range(first, end)
        }
        self.firsts = {first for first, _end in bounds}
        self.ready = False
        self.current = 0
        self.seconds: list[float] = []
        self.phase_started = time.monotonic()
        for first in self.firsts:
            discard(ready_marker(self.job, first))
        # What earlier children of this unit left in the folder is not this child's doing.
        limits = unit.get("limits") or {}
        self.disk_at_start = _folder_usage(unit["workdir"], 2 * MAX_FILES) if limits else (0, 0)
        self.child = start(self.job)
        self.up = self.child.started  # it said it started: its machinery is in place
        # Time the child's main thread had spent runnable but waiting for a CPU (see overran).
        self.waited_at_phase_start = 0.0
        self.busy_at_phase_start = 0.0  # CPU time of all its threads (see overran)
        self.next_watch, self.reason = 0.0, ""

    def limit(self) -> float:
        if not self.up:  # a fresh interpreter still importing TensorFlow: not the part's time
            return max(STARTUP_SECONDS, float(self.parts[0]["timeout"]))
        return float(self.parts[min(self.current, len(self.parts) - 1)]["timeout"])

    def advance(self) -> None:
        now = time.monotonic()
        started = self.phase_started
        if not self.up and self.child.started:
            self.up, self.phase_started = True, now
        while self.current < len(self.parts):
            part = self.parts[self.current]
            if not self.ready:
                # The file of the current part imported: the part's own clock starts.
                if not (
                    os.path.exists(ready_marker(self.job, self.current))
                    or os.path.exists(part["out"])
                ):
                    break
                self.ready, self.phase_started = True, now
            if not os.path.exists(part["out"]):
                break
            self.seconds.append(round(now - self.phase_started, 3))
            self.current, self.phase_started = self.current + 1, now
            # The next part imports another file first: its import is a phase of its own.
            self.ready = self.current not in self.firsts
        if self.phase_started != started:
            self.waited_at_phase_start = self._waited()
            self.busy_at_phase_start = self._busy()

    def runaway(self) -> bool:
        """Whether the child has outgrown what its job allows (threads, disk); `reason` says
        how. Looked at a few times a second."""
        now = time.monotonic()
        limits = self.job.get("limits") or {}
        if now < self.next_watch or not limits or not self.child.started:
            return False
        self.next_watch = now + WATCH_SECONDS
        pid = getattr(self.child, "pid", None)
        threads = _thread_count(pid)
        if limits.get("threads") and threads > limits["threads"]:
            self.reason = TOO_MANY_THREADS.format(threads=threads, most=limits["threads"])
            return True
        if limits.get("disk_mb"):
            size, files = _folder_usage(self.job["workdir"], 2 * MAX_FILES)
            size, files = size - self.disk_at_start[0], files - self.disk_at_start[1]
            if size > limits["disk_mb"] * 2**20 or files > MAX_FILES:
                self.reason = WROTE_TOO_MUCH.format(megabytes=limits["disk_mb"], files=MAX_FILES)
                return True
        return False

    def overran(self) -> bool:
        """Past the part's limit, not counting the time it was kept from a CPU by others (a
        classmate's child that floods the machine with busy threads must not time this one
        out); never past STARVED_LIMIT times the limit. What is credited is at most the wall
        time it did not run (elapsed less its own CPU time): the waits of its threads add up
        to more than the wall time when it runs several, and the CPU it used itself is always
        its own, so that a child that keeps the cores busy stops once it has used its limit,
        however loaded the machine."""
        elapsed, limit = time.monotonic() - self.phase_started, self.limit()
        if elapsed <= limit:
            return False
        used = self._busy() - self.busy_at_phase_start
        waited = self._waited() - self.waited_at_phase_start
        starved = max(0.0, min(waited, elapsed - used))
        return elapsed - starved > limit or elapsed > STARVED_LIMIT * limit

    def _waited(self) -> float:
        return _waiting_seconds(getattr(self.child, "pid", None))

    def _busy(self) -> float:
        return _cpu_seconds(getattr(self.child, "pid", None))

    def settle(self, state: RunState, exitcode: int | None, report) -> dict | None:
        """Report every part this child got to; return the unit of parts it never started."""
        if state != RunState.TIMED_OUT:  # the child is gone: its last bundles are all there now
            self.advance()
        seen = getattr(self.child, "watch", None)

        def extra(index: int) -> dict:
            found = seen.report(*self.segment_of[index]) if seen is not None else {}
            return found | ({"reason": self.reason} if self.reason else {})

        if not self.child.started:  # it failed before any submitted code ran: ours, not theirs
            failures = self.job.get("setup_failures", 0) + 1
            if failures < SETUP_ATTEMPTS:
                return dict(self.job, setup_failures=failures)
            first = self.parts[0]["key"]
            for index, part in enumerate(self.parts):
                report(
                    part["key"], RunState.GRADER_FAILED, exitcode, 0.0, log_of=first, **extra(index)
                )
            return None
        for index, part in enumerate(self.parts[: self.current]):
            report(part["key"], RunState.FINISHED, exitcode, self.seconds[index], **extra(index))
        if self.current == len(self.parts):
            return None
        elapsed = round(time.monotonic() - self.phase_started, 3)
        if not self.ready:
            # It never finished importing the current part's file: every part of that file
            # would fail the same way. Another file's parts run again in a fresh child.
            first, end = self.segment_of[self.current]
            end = len(self.parts) if end is None else end
            for index in range(first, end):
                part = self.parts[index]
                report(
                    part["key"],
                    state,
                    exitcode,
                    elapsed,
                    log_of=self.parts[first]["key"],
                    importing=True,
                    **extra(index),
                )
            rest = self.parts[end:]
        else:
            report(self.parts[self.current]["key"], state, exitcode, elapsed, **extra(self.current))
            rest = self.parts[self.current + 1 :]
        for part in rest:  # nothing but this unit's next child may write them
            discard(part["out"])
        return dict(self.job, parts=rest) if rest else None


@contextlib.contextmanager
def _signals_held():
    """Hold SIGTERM back (where signals can be masked) until the block is over."""
    if not hasattr(signal, "pthread_sigmask"):
        yield
        return
    previous = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGTERM})
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, previous)


def discard(path: str) -> None:
    """Remove what a child may have left at `path` (a file, a link or a folder), if anything."""
    try:
        if os.path.isdir(path) and not os.path.islink(path):
            shutil.rmtree(path)
        else:
            os.unlink(path)
    except FileNotFoundError:
        pass


class Cancelled(Exception):
    """The run was given up (`grader watch`: the file was saved again); its children are dead."""


def schedule(
    units: list[dict],
    parallel: int,
    start,
    report=None,
    parent: int | None = None,
    stop=None,
    cancelled=None,
):
    """Run every unit, at most `parallel` children at once, each part within its own timeout.

    Each running child holds a slot number (0 .. parallel-1), which batch grading turns into a
    user id of its own. The parts a child never started (after a part that hung or crashed) go
    back to the front of the queue, for a fresh child. With `parent` set (in the zygote), the
    run stops and kills every child once that process is gone, so a grader killed with -9 leaves
    nothing running; likewise once `stop()` says so. Once `cancelled()` says so, every child
    is killed and Cancelled raised: the caller goes on with its next request.
    """
    pending = deque((unit, 0) for unit in units)
    running: list[_Running] = []
    free_slots = list(range(parallel))
    reports = {}

    def done(key, state, exitcode, seconds, log_of=None, **extra):
        reports[key] = {"key": key, "state": state, "exitcode": exitcode, "seconds": seconds}
        reports[key].update(extra)
        if log_of is not None:
            reports[key]["log_of"] = log_of
        if report:
            report(reports[key])

    try:
        while pending or running:
            # SIGTERM (the zygote told to stop) lands only in the wait, never half-way through
            # starting, reaping or reporting a child: every child alive is then in `running`.
            _wait_for_news(running)
            with _signals_held():
                if parent is not None and os.getppid() != parent:
                    raise SystemExit("the grader is gone")
                if stop is not None and stop():
                    raise SystemExit("asked to stop")
                if cancelled is not None and cancelled():
                    raise Cancelled
                _tick(pending, running, free_slots, start, done)
    finally:
        with _signals_held():
            for run in running:
                try:
                    run.child.kill()
                except OSError:  # gone already; kill the others all the same
                    pass
    return reports


def _wait_for_news(running: list) -> None:
    """Sleep a tick, or less when a child has something to tell (a refused call waits on it)."""
    fds = [fd for run in running for fd in run.child.fds()]
    if not fds:
        time.sleep(TICK_SECONDS)
        return
    try:
        select.select(fds, [], [], TICK_SECONDS)
    except (OSError, ValueError):
        time.sleep(TICK_SECONDS)


def _tick(pending: deque, running: list, free_slots: list, start, done) -> None:
    """Start children in free slots; settle those that finished or overran."""
    while pending and free_slots:
        unit, attempt = pending.popleft()
        running.append(_Running(unit, attempt, free_slots.pop(0), start))
    for run in list(running):
        run.advance()
        exitcode = run.child.poll()
        if exitcode is not None:  # exited: the part it had not finished crashed
            run.child.sweep()
            state = RunState.CRASHED
        elif run.overran():
            exitcode = run.child.kill()
            state = RunState.TIMED_OUT
        elif run.runaway():
            exitcode = run.child.kill()
            state = RunState.CRASHED
        else:
            continue
        running.remove(run)
        free_slots.append(run.job["slot"])
        rest = run.settle(state, exitcode, done)
        if rest:
            pending.appendleft((rest, run.attempt + 1))


def _thread_count(pid: int | None) -> int:
    try:
        with open(f"/proc/{pid}/status", "rb") as handle:
            for line in handle:
                if line.startswith(b"Threads:"):
                    return int(line.split()[1])
    except (OSError, ValueError, IndexError):
        pass
    return 0


def _folder_usage(folder: str, most: int) -> tuple[int, int]:
    """Bytes on disk and entries under `folder` (links not followed; stops past `most`)."""
    size, count, pending = 0, 0, [folder]
    while pending and count <= most:
        try:
            with os.scandir(pending.pop()) as entries:
                for entry in entries:
                    count += 1
                    try:
                        info = entry.stat(follow_symlinks=False)
                    except OSError:
                        continue
                    size += getattr(info, "st_blocks", 0) * 512 or info.st_size
                    if entry.is_dir(follow_symlinks=False):
                        pending.append(entry.path)
        except OSError:
            continue
    return size, count


def _waiting_seconds(pid: int | None) -> float:
    """How long `pid`'s main thread has waited, runnable, for a CPU (Linux schedstat)."""
    if pid is None:
        return 0.0
    try:
        with open(f"/proc/{pid}/schedstat", "rb") as handle:
            return int(handle.read().split()[1]) / 1e9
    except (OSError, ValueError, IndexError):
        return 0.0


def _cpu_seconds(pid: int | None) -> float:
    """CPU time used by every thread of `pid` (user and system, Linux /proc/<pid>/stat)."""
    if pid is None or not hasattr(os, "sysconf"):  # no /proc where there is no sysconf
        return 0.0
    try:
        with open(f"/proc/{pid}/stat", "rb") as handle:
            fields = handle.read().rsplit(b")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError):
        return 0.0


def _kill_group(pid: int) -> None:
    try:
        os.killpg(pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
