"""Forbid new processes (but not threads) with a seccomp filter, on x86-64 and arm64 Linux.

A graded submission has no reason to start a process, and a fork bomb must not take the
machine down. RLIMIT_NPROC cannot stop one where the grader runs as root (root ignores it), so
batch grading installs this filter in each child instead: fork, vfork and clone without
CLONE_THREAD fail with EPERM; clone3 fails with ENOSYS, so that the C library falls back to
clone for the threads TensorFlow starts.
"""

from __future__ import annotations

import ctypes
import errno
import platform
import struct

PR_SET_NO_NEW_PRIVS = 38
PR_SET_SECCOMP = 22
SECCOMP_MODE_FILTER = 2
CLONE_THREAD = 0x00010000
RET_ALLOW = 0x7FFF0000
RET_ERRNO = 0x00050000
LOAD_WORD = 0x20  # BPF_LD | BPF_W | BPF_ABS
JUMP_EQUAL = 0x15  # BPF_JMP | BPF_JEQ | BPF_K
JUMP_SET = 0x45  # BPF_JMP | BPF_JSET | BPF_K
RETURN = 0x06  # BPF_RET | BPF_K
NEVER = 0xFFFFFFFF

# machine: (audit arch, fork, vfork, clone, clone3)
SYSCALLS = {
    "x86_64": (0xC000003E, 57, 58, 56, 435),
    "aarch64": (0xC00000B7, NEVER, NEVER, 220, 435),
}


class _SockFprog(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]


def supported() -> bool:
    return platform.system() == "Linux" and platform.machine() in SYSCALLS


def program() -> list[tuple[int, int, int, int]]:
    arch, fork, vfork, clone, clone3 = SYSCALLS[platform.machine()]
    return [
        (LOAD_WORD, 0, 0, 4),  # 0: the architecture
        (JUMP_EQUAL, 1, 0, arch),  # 1: ours: go on at 3
        (RETURN, 0, 0, RET_ALLOW),  # 2: another ABI: leave it alone
        (LOAD_WORD, 0, 0, 0),  # 3: the system call number
        (JUMP_EQUAL, 6, 0, fork),  # 4: -> 11
        (JUMP_EQUAL, 5, 0, vfork),  # 5: -> 11
        (JUMP_EQUAL, 5, 0, clone3),  # 6: -> 12
        (JUMP_EQUAL, 0, 2, clone),  # 7: clone: look at its flags; else -> 10
        (LOAD_WORD, 0, 0, 16),  # 8: low word of the first argument (the flags)
        (JUMP_SET, 0, 1, CLONE_THREAD),  # 9: a thread -> 10, a process -> 11
        (RETURN, 0, 0, RET_ALLOW),  # 10
        (RETURN, 0, 0, RET_ERRNO | errno.EPERM),  # 11
        (RETURN, 0, 0, RET_ERRNO | errno.ENOSYS),  # 12
    ]


def forbid_new_processes() -> None:
    """Install the filter in this process (irreversible). Raises OSError if the kernel refuses."""
    code = b"".join(struct.pack("HBBI", *instruction) for instruction in program())
    buffer = ctypes.create_string_buffer(code, len(code))
    fprog = _SockFprog(len(code) // 8, ctypes.cast(buffer, ctypes.c_void_p))
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_NO_NEW_PRIVS) failed")
    if libc.prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, ctypes.byref(fprog), 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_SECCOMP) failed")
