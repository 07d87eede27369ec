"""A seccomp filter that keeps a child inside itself: no new process, no signal, ptrace or
memory access to any other process, no network socket, on x86-64 and arm64 Linux.

Threads are allowed (TensorFlow starts them); fork, vfork, exec and clone without CLONE_THREAD
are refused; clone3 answers ENOSYS, so that the C library falls back to clone for its threads.
A signal may go to the child itself (its pid, its own process group, which is its pid after
setsid) and to nothing else; ptrace, process_vm_readv/writev, pidfd_getfd, pidfd_send_signal and
kcmp are refused outright, and so are sockets other than Unix ones, namespaces, mounts, kernel
keys, BPF, perf events, userfaultfd and io_uring. Other ABIs (32-bit calls on x86-64, x32)
are refused too, since their call numbers differ.

Refusals go through a user-notification listener where the kernel has one (Linux 5.0): the
child hands the listener to its supervisor (the zygote, see grader.sandbox.supervisor), which
answers EPERM and counts what was tried, so the instructor learns of it. Where it has not, the
filter answers EPERM itself and nobody learns of the attempt.
"""

from __future__ import annotations

import ctypes
import errno
import platform
import struct

SECCOMP_SET_MODE_FILTER = 1
FILTER_FLAG_NEW_LISTENER = 1 << 3
CLONE_THREAD = 0x00010000
X32_SYSCALL_BIT = 0x40000000

RET_ALLOW = 0x7FFF0000
RET_USER_NOTIF = 0x7FC00000
RET_ERRNO = 0x00050000

LOAD_WORD = 0x20  # BPF_LD | BPF_W | BPF_ABS
JUMP_EQUAL = 0x15  # BPF_JMP | BPF_JEQ | BPF_K
JUMP_AT_LEAST = 0x35  # BPF_JMP | BPF_JGE | BPF_K
JUMP_SET = 0x45  # BPF_JMP | BPF_JSET | BPF_K
RETURN = 0x06  # BPF_RET | BPF_K

NR, ARCH, ARG0 = 0, 4, 16  # offsets in struct seccomp_data (ARG0: its low word, little-endian)

# What each refused call is, for the instructor.
PROCESS, SIGNAL, PTRACE, NETWORK, SYSTEM = "process", "signal", "ptrace", "network", "system"
AF_UNIX = 1

MACHINES = {
    "x86_64": {
        "arch": 0xC000003E,
        "seccomp": 317,
        "x32": True,
        "calls": {
            "fork": 57,
            "vfork": 58,
            "clone": 56,
            "clone3": 435,
            "execve": 59,
            "execveat": 322,
            "kill": 62,
            "tkill": 200,
            "tgkill": 234,
            "rt_sigqueueinfo": 129,
            "rt_tgsigqueueinfo": 297,
            "ptrace": 101,
            "process_vm_readv": 310,
            "process_vm_writev": 311,
            "kcmp": 312,
            "pidfd_send_signal": 424,
            "pidfd_getfd": 438,
            "socket": 41,
            "unshare": 272,
            "setns": 308,
            "mount": 165,
            "umount2": 166,
            "pivot_root": 155,
            "chroot": 161,
            "keyctl": 250,
            "add_key": 248,
            "request_key": 249,
            "bpf": 321,
            "perf_event_open": 298,
            "userfaultfd": 323,
            "io_uring_setup": 425,
            "io_uring_enter": 426,
            "io_uring_register": 427,
        },
    },
    "aarch64": {
        "arch": 0xC00000B7,
        "seccomp": 277,
        "x32": False,
        "calls": {
            "clone": 220,
            "clone3": 435,
            "execve": 221,
            "execveat": 281,
            "kill": 129,
            "tkill": 130,
            "tgkill": 131,
            "rt_sigqueueinfo": 138,
            "rt_tgsigqueueinfo": 240,
            "ptrace": 117,
            "process_vm_readv": 270,
            "process_vm_writev": 271,
            "kcmp": 272,
            "pidfd_send_signal": 424,
            "pidfd_getfd": 438,
            "socket": 198,
            "unshare": 97,
            "setns": 268,
            "mount": 40,
            "umount2": 39,
            "pivot_root": 41,
            "chroot": 51,
            "keyctl": 219,
            "add_key": 217,
            "request_key": 218,
            "bpf": 280,
            "perf_event_open": 241,
            "userfaultfd": 282,
            "io_uring_setup": 425,
            "io_uring_enter": 426,
            "io_uring_register": 427,
        },
    },
}

KINDS = {
    "fork": PROCESS,
    "vfork": PROCESS,
    "clone": PROCESS,
    "execve": PROCESS,
    "execveat": PROCESS,
    "kill": SIGNAL,
    "tkill": SIGNAL,
    "tgkill": SIGNAL,
    "rt_sigqueueinfo": SIGNAL,
    "rt_tgsigqueueinfo": SIGNAL,
    "pidfd_send_signal": SIGNAL,
    "ptrace": PTRACE,
    "process_vm_readv": PTRACE,
    "process_vm_writev": PTRACE,
    "kcmp": PTRACE,
    "pidfd_getfd": PTRACE,
    "socket": NETWORK,
    # Namespaces, mounts, kernel keys, BPF, perf and io_uring (whose operations would not pass
    # through this filter): nothing a graded exercise needs.
    **dict.fromkeys(
        (
            "unshare",
            "setns",
            "mount",
            "umount2",
            "pivot_root",
            "chroot",
            "keyctl",
            "add_key",
            "request_key",
            "bpf",
            "perf_event_open",
            "userfaultfd",
            "io_uring_setup",
            "io_uring_enter",
            "io_uring_register",
        ),
        SYSTEM,
    ),
}
ALWAYS_REFUSED = (
    "fork",
    "vfork",
    "execve",
    "execveat",
    "tkill",
    "pidfd_send_signal",
    *[name for name, kind in KINDS.items() if kind in (PTRACE, SYSTEM)],
)
TO_ITSELF_ONLY = ("tgkill", "rt_sigqueueinfo", "rt_tgsigqueueinfo")


class _SockFprog(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]


def supported() -> bool:
    return platform.system() == "Linux" and platform.machine() in MACHINES


def kind_of(number: int) -> str:
    """What a refused call number is (process, signal or ptrace), on this machine."""
    calls = MACHINES[platform.machine()]["calls"]
    return next((KINDS[name] for name, nr in calls.items() if nr == number), PROCESS)


def program(pid: int, refuse: int) -> list[tuple[int, int, int, int]]:
    """The filter for the process `pid`; `refuse` is what a refused call returns."""
    machine = MACHINES[platform.machine()]
    calls = machine["calls"]
    code: list[list] = []  # [opcode, true target, false target, k]; targets are labels

    def emit(opcode, k, true=None, false=None):
        code.append([opcode, true, false, k])

    emit(LOAD_WORD, ARCH)
    emit(JUMP_EQUAL, machine["arch"], None, "deny")
    emit(LOAD_WORD, NR)
    if machine["x32"]:
        emit(JUMP_AT_LEAST, X32_SYSCALL_BIT, "deny", None)
    for name in ALWAYS_REFUSED:
        if name in calls:
            emit(JUMP_EQUAL, calls[name], "refuse", None)
    emit(JUMP_EQUAL, calls["clone3"], "enosys", None)
    emit(JUMP_EQUAL, calls["clone"], "clone", None)
    emit(JUMP_EQUAL, calls["kill"], "kill", None)
    emit(JUMP_EQUAL, calls["socket"], "socket", None)
    for name in TO_ITSELF_ONLY:
        emit(JUMP_EQUAL, calls[name], "itself", None)
    emit(RETURN, RET_ALLOW)
    labels = {"clone": len(code)}
    emit(LOAD_WORD, ARG0)
    emit(JUMP_SET, CLONE_THREAD, "allow", "refuse")
    labels["socket"] = len(code)
    emit(LOAD_WORD, ARG0)
    emit(JUMP_EQUAL, AF_UNIX, "allow", "refuse")  # a local socket only: no network at all
    labels["kill"] = len(code)
    emit(LOAD_WORD, ARG0)
    emit(JUMP_EQUAL, 0, "allow", None)  # its own process group
    emit(JUMP_EQUAL, (-pid) & 0xFFFFFFFF, "allow", None)  # the same, by number
    labels["itself"] = len(code)
    emit(LOAD_WORD, ARG0)
    emit(JUMP_EQUAL, pid, "allow", "refuse")
    for label, value in (
        ("allow", RET_ALLOW),
        ("refuse", refuse),
        ("enosys", RET_ERRNO | errno.ENOSYS),
        ("deny", RET_ERRNO | errno.EPERM),
    ):
        labels[label] = len(code)
        emit(RETURN, value)

    program = []
    for index, (opcode, true, false, k) in enumerate(code):
        jt = 0 if true is None else labels[true] - index - 1
        jf = 0 if false is None else labels[false] - index - 1
        program.append((opcode, jt, jf, k))
    return program


def confine(pid: int, listen: bool = True) -> int | None:
    """Install the filter in this thread (for good; threads started later inherit it).

    With `listen`, returns the listener's descriptor for the supervisor, or None where the
    kernel has no user notification (then refused calls simply fail). Raises OSError if the
    kernel refuses the filter.
    """
    machine = MACHINES[platform.machine()]
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
            machine["seccomp"], SECCOMP_SET_MODE_FILTER, flags, ctypes.byref(fprog)
        )
        if result >= 0:
            return int(result) if flags else None
        if not flags:
            raise OSError(ctypes.get_errno(), "seccomp(SECCOMP_SET_MODE_FILTER) failed")
    return None
