"""The resource limits of a child that runs submitted code, set before it enters the sandbox:
memory, output size, core dumps, processes; and, where the grader runs as root and the Python
installation allows it, a user id of its own for each concurrent child.
"""

from __future__ import annotations

import os
import signal

from grader.sandbox import seccomp


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
