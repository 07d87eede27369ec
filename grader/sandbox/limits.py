"""The resource limits of a child that runs submitted code, set before it enters the sandbox:
memory, output size, core dumps, processes, CPU time.

Also how a failure shows that it ran into one of them (`limit_of`, `limit_in_log`), so that the
grader can say "it ran out of memory" from a field of the child's report, not from its words.
"""

from __future__ import annotations

import errno
import os
import signal

from grader.sandbox import seccomp
from grader.vocabulary.status import Limit

# What a system call refused by a limit fails with: address space (RLIMIT_AS), threads and
# processes (RLIMIT_NPROC), the output cap (RLIMIT_FSIZE, SIGXFSZ ignored), the seccomp filter.
LIMIT_OF_ERRNO = {
    errno.ENOMEM: Limit.MEMORY,
    errno.EAGAIN: Limit.PROCESSES,
    errno.EFBIG: Limit.OUTPUT,
    errno.EPERM: Limit.SANDBOX,
}
# A dead process leaves only what it printed: the C library's and Python's words for the same
# failures, in the order they are looked for.
# The CPU-time backstop (see apply): the scheduler never lets a part run past STARVED_FACTOR
# times its time, and a child may take this long to start before its parts' clocks start.
STARVED_FACTOR = 4
CPU_MARGIN_SECONDS = 180
LIMIT_IN_LOG = (
    ("MemoryError", Limit.MEMORY),
    ("Cannot allocate memory", Limit.MEMORY),
    ("Resource temporarily unavailable", Limit.PROCESSES),
    ("File too large", Limit.OUTPUT),
    ("Operation not permitted", Limit.SANDBOX),
)


def apply(
    limits: dict | None, uid: int | None, sandboxed: bool = False, seconds: float = 0
) -> None:
    """Batch grading's limits: memory, processes, output size, CPU time.

    Files, processes and signals are the sandbox's (grader.sandbox), entered after these, and
    so is the change to a user of its own (`uid`, grader.sandbox.world). Memory is capped as
    address space on top of what the forked process already maps (Keras and TensorFlow are
    large). Threads count as processes for RLIMIT_NPROC, so the process cap is an allowance
    above what the user already runs. CPU time is capped by the kernel as a backstop to the
    scheduler's wall clock, for a child whose scheduler is gone: `seconds` (the parts' time)
    on every core the child may use, and a margin for starting.
    """
    if not limits:
        return
    import resource

    def cap(kind, value, hard=None):
        _, most = resource.getrlimit(kind)
        value = value if most == resource.RLIM_INFINITY else min(value, most)
        hard = value if hard is None or most != resource.RLIM_INFINITY else hard
        resource.setrlimit(kind, (value, hard))

    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a write past the cap fails instead of killing
    cap(resource.RLIMIT_CORE, 0)
    if limits.get("memory_mb"):
        cap(resource.RLIMIT_AS, _mapped_bytes() + int(limits["memory_mb"]) * 2**20)
    if limits.get("output_mb"):
        cap(resource.RLIMIT_FSIZE, int(limits["output_mb"]) * 2**20)
    if seconds:
        cores = os.cpu_count() or 1
        most = int(CPU_MARGIN_SECONDS + seconds * cores * STARVED_FACTOR)
        cap(resource.RLIMIT_CPU, most, most + 1)  # SIGXCPU, then SIGKILL a second later
    # RLIMIT_NPROC counts every thread of the user id: under a user id shared with classmates'
    # children, one child's threads would starve theirs. Where the sandbox refuses new processes
    # that cap is only kept for a slot's own user id; the scheduler watches threads itself.
    # Where the filter refuses processes, the cap counts threads alone: a backstop well above
    # the scheduler's own watch of threads, so that the watch is what a student is told of.
    confined = sandboxed and seccomp.supported()
    if limits.get("processes") and not (confined and uid is None):
        allowance = 4 * int(limits.get("threads") or 256) if confined else limits["processes"]
        cap(resource.RLIMIT_NPROC, _tasks_of(uid if uid is not None else os.getuid()) + allowance)


def limit_of(error: BaseException) -> Limit | None:
    """The limit `error` ran into, if any: a MemoryError, or an OSError whose errno a limit
    gives. Keras re-raises an error from inside a layer as a new one of the same type with a
    longer message (and no errno): then the one it replaced is looked at."""
    for _ in range(8):  # a chain a submission made circular ends too
        if isinstance(error, MemoryError):
            return Limit.MEMORY
        if isinstance(error, OSError) and isinstance(error.errno, int):
            if error.errno in LIMIT_OF_ERRNO:
                return LIMIT_OF_ERRNO[error.errno]
        context = error.__context__
        if type(context) is not type(error):
            break
        error = context
    return None


def limit_in_log(text: str) -> Limit | None:
    """The limit a process that died without a report ran into, read from the end of its log:
    the only trace it leaves."""
    for words, limit in LIMIT_IN_LOG:
        if words in text:
            return limit
    return None


def _mapped_bytes() -> int:
    with open("/proc/self/statm") as handle:
        return int(handle.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")


def _tasks_of(uid: int) -> int:
    """Threads of every process of `uid` (what RLIMIT_NPROC counts)."""
    count = 0
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/status") as handle:
                fields = dict(line.split(":", 1) for line in handle if ":" in line)
        except OSError:
            continue
        if int(fields.get("Uid", "-1").split()[0]) == uid:
            count += int(fields.get("Threads", "1"))
    return count
