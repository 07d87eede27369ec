"""The seccomp filter of a child: an allowlist of system calls, everything else refused.

A child may make the calls in `ALLOWED` (what Python, NumPy and Keras on TensorFlow or JAX make
while a part is graded, found by tracing real grading runs: see `GRADER_SYSCALL_LOG` below), and
the calls in `CHECKED` only with the arguments named there: a thread but never a process
(`clone` with CLONE_THREAD), a signal to itself only, its own resource limits, priority, CPU
affinity and scheduling only (pid 0 or its own), terminal-free `ioctl`s, a few `prctl`s.
`clone3` answers ENOSYS, so that the C library falls back to `clone`, whose flags a filter can
read. Every other call is refused: new processes, other processes' limits, sockets of any
family (the channel to the supervisor is made before the filter and handed down), SysV IPC,
memfds, namespaces, mounts, keys, BPF, perf, io_uring, the clock, modules, ... A call a new
TensorFlow starts to need is therefore refused and reported, never allowed in silence: the
test that grades every exercise's solution in the sandbox fails and names it.

Refusals go through a user-notification listener: the child hands it to its supervisor (see
grader.sandbox.supervisor), which answers EPERM and counts the call by name, so the instructor
learns of it and a submission cannot hide it. Where the kernel has no listener (before Linux
5.0) the filter answers EPERM itself. Other ABIs (32-bit calls on x86-64, x32) are refused
outright: their numbers differ.

With GRADER_SYSCALL_LOG set to a file, the supervisor lets every refused call go on instead and
appends its name and arguments there: how `ALLOWED` was found, and how to find what a new
version needs (`GRADER_SYSCALL_LOG=/tmp/calls pytest tests/grader/test_records.py
tests/grader/test_sandbox_calls.py -k refused`, then `python -m
grader.sandbox.seccomp /tmp/calls`). Never for grading.
"""

from __future__ import annotations

import ctypes
import errno
import platform
import struct
import sys

from grader.sandbox.syscall_numbers import NAMES, NUMBERS

SECCOMP_SET_MODE_FILTER = 1
FILTER_FLAG_NEW_LISTENER = 1 << 3
CLONE_THREAD = 0x00010000
X32_SYSCALL_BIT = 0x40000000
ARCHES = {"x86_64": 0xC000003E, "aarch64": 0xC00000B7}
SECCOMP_CALL = {"x86_64": 317, "aarch64": 277}

RET_ALLOW = 0x7FFF0000
RET_USER_NOTIF = 0x7FC00000
RET_ERRNO = 0x00050000

LOAD_WORD = 0x20  # BPF_LD | BPF_W | BPF_ABS
JUMP_EQUAL = 0x15  # BPF_JMP | BPF_JEQ | BPF_K
JUMP_AT_LEAST = 0x35  # BPF_JMP | BPF_JGE | BPF_K
JUMP_SET = 0x45  # BPF_JMP | BPF_JSET | BPF_K
RETURN = 0x06  # BPF_RET | BPF_K

NR, ARCH = 0, 4  # offsets in struct seccomp_data
ARGS = 16  # args[i] at 16 + 8 i; its low word first (little-endian machines only)

# The calls a child makes while a part is graded. Hot ones first: the filter is a linear scan
# (the kernel caches the verdict of calls whose answer does not depend on their arguments).
ALLOWED = (
    *("futex", "read", "write", "mmap", "munmap", "mprotect", "madvise", "mremap", "brk"),
    *("sched_yield", "clock_gettime", "clock_nanosleep", "nanosleep", "gettid", "getpid"),
    *("openat", "open", "close", "fstat", "newfstatat", "stat", "lstat", "statx", "lseek"),
    *("pread64", "pwrite64", "readv", "writev", "preadv", "pwritev", "preadv2", "pwritev2"),
    *("getdents64", "getdents", "readlink", "readlinkat", "access", "faccessat", "faccessat2"),
    *("fcntl", "dup", "dup2", "dup3", "pipe", "pipe2", "close_range"),
    *("poll", "ppoll", "select", "pselect6", "epoll_create1", "epoll_ctl", "epoll_wait"),
    *("epoll_pwait", "epoll_pwait2", "eventfd2", "getcwd", "chdir", "fchdir"),
    *("mkdir", "mkdirat", "unlink", "unlinkat", "rename", "renameat", "renameat2", "rmdir"),
    *("ftruncate", "fsync", "fdatasync", "fadvise64", "fallocate", "umask", "fchmod"),
    *("statfs", "fstatfs", "flock", "utimensat"),
    *("rt_sigaction", "rt_sigprocmask", "rt_sigreturn", "rt_sigpending", "rt_sigtimedwait"),
    *("rt_sigsuspend", "sigaltstack", "restart_syscall", "exit", "exit_group"),
    *("set_robust_list", "get_robust_list", "rseq", "set_tid_address", "membarrier"),
    *("getppid", "getuid", "geteuid", "getgid", "getegid", "getgroups", "getresuid"),
    *("getresgid", "getpgrp", "getpgid", "getsid", "capget", "getcpu"),
    *("clock_getres", "gettimeofday", "time", "times", "getrusage", "sysinfo", "uname"),
    *("getrandom", "getrlimit", "sendmsg", "sendto", "recvmsg", "recvfrom", "mlock", "munlock"),
    *("msync", "mincore", "arch_prctl", "set_mempolicy", "get_mempolicy", "mbind"),
    # Reading how any thread is scheduled (TensorFlow's and XLA's pools ask it of their own
    # threads by thread id): reading only; setting is for the child itself (CHECKED).
    *("sched_getaffinity", "sched_getparam", "sched_getscheduler", "sched_getattr"),
    *("sched_get_priority_max", "sched_get_priority_min", "getpriority"),
)

# Argument checks: name -> conditions that must all hold, each (argument, kind, values) with
# kind "in" (the argument's low word is one of `values`) or "has" (it has the bits of values[0]).
# SELF is the child's pid, MINUS_SELF its process group as kill() writes it.
SELF, MINUS_SELF = "self", "-self"
OWN_PROCESS = ((0, "in", (0, SELF)),)
TCGETS, TIOCGWINSZ, FIONREAD, FIONBIO, FIOCLEX, FIONCLEX = (
    0x5401,
    0x5413,
    0x541B,
    0x5421,
    0x5451,
    0x5450,
)
PR_GET_DUMPABLE, PR_SET_NAME, PR_GET_NAME, PR_SET_VMA = 3, 15, 16, 0x53564D41
CHECKED = {
    "clone": ((0, "has", (CLONE_THREAD,)),),
    "kill": ((0, "in", (0, SELF, MINUS_SELF)),),
    "tgkill": ((0, "in", (SELF,)),),
    "rt_sigqueueinfo": ((0, "in", (SELF,)),),
    "rt_tgsigqueueinfo": ((0, "in", (SELF,)),),
    "prlimit64": OWN_PROCESS,
    "setpriority": ((0, "in", (0,)), (1, "in", (0, SELF))),  # PRIO_PROCESS, itself
    "sched_setaffinity": OWN_PROCESS,
    "sched_setparam": OWN_PROCESS,
    "sched_setscheduler": OWN_PROCESS,
    "sched_setattr": OWN_PROCESS,
    "ioctl": ((1, "in", (TCGETS, TIOCGWINSZ, FIONREAD, FIONBIO, FIOCLEX, FIONCLEX)),),
    "prctl": ((0, "in", (PR_GET_DUMPABLE, PR_SET_NAME, PR_GET_NAME, PR_SET_VMA)),),
}
# Answered ENOSYS, never counted: the C library then uses the call above that a filter can read.
NOT_IMPLEMENTED = ("clone3",)

# What a refused call is, for the instructor (grader.vocabulary.labels words these).
PROCESS, SIGNAL, PTRACE, NETWORK, SYSTEM = "process", "signal", "ptrace", "network", "system"
OTHERS = "others"  # setting another process's limits, priority, affinity, scheduling
KINDS = {
    **dict.fromkeys(("fork", "vfork", "clone", "execve", "execveat"), PROCESS),
    **dict.fromkeys(("kill", "tkill", "tgkill", "rt_sigqueueinfo", "rt_tgsigqueueinfo"), SIGNAL),
    **dict.fromkeys(("pidfd_send_signal", "pidfd_open"), SIGNAL),
    **dict.fromkeys(
        ("ptrace", "process_vm_readv", "process_vm_writev", "kcmp", "pidfd_getfd"), PTRACE
    ),
    **dict.fromkeys(
        ("socket", "socketpair", "connect", "bind", "listen", "accept", "accept4"), NETWORK
    ),
    **dict.fromkeys(
        (
            "prlimit64",
            "setpriority",
            "sched_setaffinity",
            "sched_setscheduler",
            "sched_setparam",
            "sched_setattr",
            "ioprio_set",
            "migrate_pages",
            "move_pages",
            "process_madvise",
            "process_mrelease",
        ),
        OTHERS,
    ),
}


class _SockFprog(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]


def supported() -> bool:
    return platform.system() == "Linux" and platform.machine() in ARCHES


def name_of(number: int) -> str:
    return NAMES.get(platform.machine(), {}).get(number, f"system call {number}")


def kind_of(number: int) -> str:
    """What a refused call is (process, signal, ptrace, network, other processes, system)."""
    return KINDS.get(name_of(number), SYSTEM)


def describe_call(number: int, args: tuple[int, ...]) -> str:
    """A refused call in words for the instructor: its name, and the target where it has one."""
    name = name_of(number)
    if KINDS.get(name) in (SIGNAL, OTHERS, PTRACE) and args:
        target = ctypes.c_int32(args[1] if name == "setpriority" else args[0])
        return f"{name} on pid {target.value}"
    if name == "socket" and args:
        return f"socket of family {args[0] & 0xFFFFFFFF}"
    return name


def program(pid: int, refuse: int, machine: str | None = None) -> list[tuple[int, int, int, int]]:
    """The filter for the process `pid`; `refuse` is what a refused call returns.

    Every jump is short (a BPF jump reaches 255 instructions at most): each allowed call is a
    test followed by its own return, each checked call a test followed by its own block.
    """
    machine = machine or platform.machine()
    numbers = NUMBERS[machine]
    code: list[tuple[int, int, int, int]] = []
    emit = code.append

    def word(value) -> int:
        value = {SELF: pid, MINUS_SELF: -pid}.get(value, value)
        return value & 0xFFFFFFFF

    emit((LOAD_WORD, 0, 0, ARCH))
    emit((JUMP_EQUAL, 1, 0, ARCHES[machine]))
    emit((RETURN, 0, 0, RET_ERRNO | errno.EPERM))
    emit((LOAD_WORD, 0, 0, NR))
    if machine == "x86_64":
        emit((JUMP_AT_LEAST, 0, 1, X32_SYSCALL_BIT))
        emit((RETURN, 0, 0, RET_ERRNO | errno.EPERM))
    for name in NOT_IMPLEMENTED:
        emit((JUMP_EQUAL, 0, 1, numbers[name]))
        emit((RETURN, 0, 0, RET_ERRNO | errno.ENOSYS))
    for name in ALLOWED:
        if name in numbers:  # a call this machine lacks (open on arm64) is simply not made
            emit((JUMP_EQUAL, 0, 1, numbers[name]))
            emit((RETURN, 0, 0, RET_ALLOW))
    for name, conditions in CHECKED.items():
        if name not in numbers:
            continue
        block: list[tuple[int, int, int, int]] = []
        for argument, kind, values in conditions:
            block.append((LOAD_WORD, 0, 0, ARGS + 8 * argument))
            if kind == "has":
                block.append((JUMP_SET, 1, 0, values[0]))
                block.append((RETURN, 0, 0, refuse))
                continue
            for index, value in enumerate(values):  # equal: skip the rest and the refusal
                block.append((JUMP_EQUAL, len(values) - index, 0, word(value)))
            block.append((RETURN, 0, 0, refuse))
        block.append((RETURN, 0, 0, RET_ALLOW))
        emit((JUMP_EQUAL, 0, len(block), numbers[name]))
        code.extend(block)
    emit((RETURN, 0, 0, refuse))
    return code


def confine(pid: int, listen: bool = True) -> int | None:
    """Install the filter in this thread (for good; threads started later inherit it).

    With `listen`, returns the listener's descriptor for the supervisor, or None where the
    kernel has no user notification (then refused calls simply fail). Raises OSError if the
    kernel refuses the filter.
    """
    machine = platform.machine()
    libc = ctypes.CDLL(None, use_errno=True)
    libc.syscall.restype = ctypes.c_long
    if libc.prctl(38, 1, 0, 0, 0) != 0:  # PR_SET_NO_NEW_PRIVS
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_NO_NEW_PRIVS) failed")
    for refuse, flags in ((RET_USER_NOTIF, FILTER_FLAG_NEW_LISTENER), (RET_ERRNO | errno.EPERM, 0)):
        if flags and not listen:
            continue
        code = b"".join(struct.pack("HBBI", *op) for op in program(pid, refuse))
        buffer = ctypes.create_string_buffer(code, len(code))
        fprog = _SockFprog(len(code) // 8, ctypes.cast(buffer, ctypes.c_void_p))
        result = libc.syscall(
            SECCOMP_CALL[machine], SECCOMP_SET_MODE_FILTER, flags, ctypes.byref(fprog)
        )
        if result >= 0:
            return int(result) if flags else None
        if not flags:
            raise OSError(ctypes.get_errno(), "seccomp(SECCOMP_SET_MODE_FILTER) failed")
    return None


def summarize_log(path: str) -> dict[str, set[str]]:
    """What a GRADER_SYSCALL_LOG file holds: each call the filter would have refused, with the
    distinct first arguments it was made with."""
    calls: dict[str, set[str]] = {}
    with open(path, encoding="utf-8") as handle:
        for line in handle:
            name, _, args = line.strip().partition(" ")
            calls.setdefault(name, set()).add(args.split(" ")[0] if args else "")
    return calls


if __name__ == "__main__":  # python -m grader.sandbox.seccomp LOG: what a traced run needed
    for call, firsts in sorted(summarize_log(sys.argv[1]).items()):
        print(call, " ".join(sorted(firsts)[:8]))
