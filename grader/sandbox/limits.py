"""The resource limits of a child that runs submitted code, set before it enters the sandbox:
memory, output size, core dumps, processes; and, where the grader runs as root and the Python
installation allows it, a user id of its own for each concurrent child.

Also how a failure shows that it ran into one of them (`limit_of`, `limit_in_log`), so that the
grader can say "it ran out of memory" from a field of the child's report, not from its words.
"""

from __future__ import annotations

import errno
import os
import signal

from grader.engine.status import Limit
from grader.sandbox import seccomp

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
LIMIT_IN_LOG = (
    ("MemoryError", Limit.MEMORY),
    ("Cannot allocate memory", Limit.MEMORY),
    ("Resource temporarily unavailable", Limit.PROCESSES),
    ("File too large", Limit.OUTPUT),
    ("Operation not permitted", Limit.SANDBOX),
)


def apply(limits: dict | None, slot: int, sandboxed: bool = False) -> None:
    """Batch grading's limits: memory, processes, output size; a user id of its own as root.

    Files, processes and signals are the sandbox's (grader.sandbox), entered after these.
    Memory is capped as address space on top of what the forked process already maps (Keras
    and TensorFlow are large). Threads count as processes for RLIMIT_NPROC, so the process cap
    is an allowance above what the user already runs. As root, the child drops to the slot's
    own user id, which makes that cap apply, keeps the child out of files only root may read
    or write (the results folder), and lets the grader kill everything it started.
    """
    if not limits:
        return
    import resource

    def cap(kind, value):
        soft, hard = resource.getrlimit(kind)
        value = value if hard == resource.RLIM_INFINITY else min(value, hard)
        resource.setrlimit(kind, (value, value))

    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a write past the cap fails instead of killing
    cap(resource.RLIMIT_CORE, 0)
    if limits.get("memory_mb"):
        cap(resource.RLIMIT_AS, _mapped_bytes() + int(limits["memory_mb"]) * 2**20)
    if limits.get("output_mb"):
        cap(resource.RLIMIT_FSIZE, int(limits["output_mb"]) * 2**20)
    uid = None
    if limits.get("uid_base") is not None and os.geteuid() == 0:
        uid = int(limits["uid_base"]) + slot
    # RLIMIT_NPROC counts every thread of the user id: under a user id shared with classmates'
    # children, one child's threads would starve theirs. Where the sandbox refuses new processes
    # that cap is only kept for a slot's own user id; the scheduler watches threads itself.
    shared_uid = uid is None
    if limits.get("processes") and not (sandboxed and seccomp.supported() and shared_uid):
        cap(
            resource.RLIMIT_NPROC,
            _tasks_of(uid if uid is not None else os.getuid()) + int(limits["processes"]),
        )
    if uid is not None:
        workdir = os.getcwd()
        # Never through a link: an earlier child of this unit may have left one to anywhere.
        for folder, folders, files in os.walk(workdir):
            for name in [*folders, *files]:
                os.chown(os.path.join(folder, name), uid, uid, follow_symlinks=False)
        os.chown(workdir, uid, uid, follow_symlinks=False)
        os.chmod(workdir, 0o700)
        os.setgroups([])
        os.setgid(uid)
        os.setuid(uid)
        # A change of user id makes a process non-dumpable, and its /proc/<pid> root's.
        from grader.sandbox import protect_this_process

        protect_this_process(protect=False)


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
