"""The supervisor's side of a sandboxed child: what it tells, and the calls it was refused.

Each forked child gets one end of a socket pair (SOCK_SEQPACKET, one message a datagram). It
sends `start` once its sandbox is in place, just before any submitted code runs, with the
seccomp listener attached (see grader.sandbox.seccomp); later messages are what its audit hook
saw (`open <path>`, `import <name>`). A child that dies before `start` failed in the grader's
own machinery, not in the submission. Messages after `start` come from a process that runs
submitted code, so they are only ever counted, never obeyed.

The listener is the reliable witness: the kernel hands the supervisor every refused fork,
signal or ptrace and the supervisor answers EPERM, so a submission cannot hide the attempt.
"""

from __future__ import annotations

import errno
import os
import select
import socket
import struct

from grader.sandbox import seccomp

START = b"start"
# "next <part>": the child goes on to another file of the same submission (grader.sandbox.units);
# what is refused from then on is counted for it. Sent after `start`, so never obeyed: a child
# that sends it falsely only moves its own refusals between its own exercises.
NEXT = "next"
MAX_MESSAGE = 4096
MAX_EXAMPLES = 5
PER_POLL = 256
NOTIF_SIZE, RESPONSE_SIZE = 80, 24
IOCTL_RECV = 0xC0000000 | (NOTIF_SIZE << 16) | (ord("!") << 8) | 0
IOCTL_SEND = 0xC0000000 | (RESPONSE_SIZE << 16) | (ord("!") << 8) | 1
NOTICE = "=QIIiIQ6Q"  # struct seccomp_notif: id, pid, flags, then seccomp_data
CONTINUE = 1  # SECCOMP_USER_NOTIF_FLAG_CONTINUE
TRACE_LOG = os.environ.get("GRADER_SYSCALL_LOG")


def _log_call(number: int, args) -> None:
    with open(TRACE_LOG, "a", encoding="utf-8") as handle:
        handle.write(" ".join([seccomp.name_of(number), *(hex(a) for a in args)]) + "\n")


def can_pass_channel() -> bool:
    """Whether a channel can reach a child (Unix sockets that carry descriptors: POSIX).
    Windows has neither; a child there is never sandboxed, so nothing is lost but `start`."""
    return hasattr(socket, "AF_UNIX") and hasattr(socket, "send_fds")


def channel() -> tuple[socket.socket, socket.socket]:
    """(the supervisor's end, the child's end). A stream where there is no SOCK_SEQPACKET
    (macOS): there no sandbox sends events, and only the `start` at its head is read."""
    try:
        return socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    except (OSError, AttributeError):
        return socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)


def tell_started(end: socket.socket | None, listener: int | None) -> None:
    """In the child: the sandbox is in place; hand over the listener (and close it here)."""
    if end is None:
        return
    fds = [listener] if listener is not None else []
    socket.send_fds(end, [START], fds)
    if listener is not None:
        os.close(listener)  # the child must never answer its own refused calls
    end.setblocking(False)


class Watch:
    """What one child told and tried. `poll()` reads without blocking; call it often."""

    def __init__(self, end: socket.socket):
        self.end = end
        self.end.setblocking(False)
        self.listener: int | None = None
        self.started = False
        # By segment (the index of its first part): what was refused while the child ran it.
        self.segment = 0
        self.by_segment: dict[int, tuple[dict[str, int], dict[str, list[str]]]] = {0: ({}, {})}

    def fds(self) -> list[int]:
        fds = [] if self.end is None else [self.end.fileno()]
        return fds + ([self.listener] if self.listener is not None else [])

    def poll(self) -> None:
        self._read_messages()
        self._answer_refused_calls()

    def _count(self, kind: str, example: str = "") -> None:
        refused, examples = self.by_segment[self.segment]
        refused[kind] = refused.get(kind, 0) + 1
        seen = examples.setdefault(kind, [])
        if example and len(seen) < MAX_EXAMPLES and example not in seen:
            seen.append(example)

    def _next(self, detail: str) -> None:
        try:
            first = int(detail)
        except ValueError:
            return
        if first > self.segment and first not in self.by_segment:
            self.segment = first
            self.by_segment[first] = ({}, {})

    def _read_messages(self) -> None:
        # A bounded number a call: a child that floods its end must not hold up the scheduler.
        for _ in range(PER_POLL):
            if self.end is None:
                return
            try:
                message, fds, _, _ = socket.recv_fds(self.end, MAX_MESSAGE, 1, socket.MSG_DONTWAIT)
            except (BlockingIOError, InterruptedError):
                return
            except OSError:
                self._close_end()
                return
            if not message and not fds:  # the child's end is closed
                self._close_end()
                return
            if not self.started:
                if message.startswith(START):
                    self.started = True
                    if fds:
                        self.listener = fds.pop()
                for fd in fds:
                    os.close(fd)
                continue
            for fd in fds:  # a submission has nothing to hand over
                os.close(fd)
            kind, _, detail = message.decode("utf-8", "replace").partition(" ")
            if kind in ("open", "import"):
                self._count(kind, detail[:300])
            elif kind == NEXT:
                self._next(detail[:20])

    def _answer_refused_calls(self) -> None:
        if self.listener is None:
            return
        import fcntl  # POSIX only; a listener exists only on Linux

        for _ in range(PER_POLL):
            if self.listener is None:
                return
            waiting = select.poll()
            waiting.register(self.listener, select.POLLIN)
            events = waiting.poll(0)
            if not events:
                return
            if not events[0][1] & select.POLLIN:  # every task of the child is gone
                self._close_listener()
                return
            notice = bytearray(NOTIF_SIZE)
            try:
                fcntl.ioctl(self.listener, IOCTL_RECV, notice)
            except OSError as error:
                if error.errno == errno.EINTR:
                    continue
                if error.errno != errno.ENOENT:  # ENOENT: the caller died meanwhile
                    self._close_listener()
                return
            ident, _pid, _flags, number, _arch, _ip, *args = struct.unpack_from(NOTICE, notice)
            # The child sent what it told before this call: a `next` among it moves the count.
            self._read_messages()
            if TRACE_LOG:  # a maintainer's trace (grader.sandbox.seccomp): let it go on
                _log_call(number, args)
                answer = struct.pack("QqiI", ident, 0, 0, CONTINUE)
            else:
                self._count(seccomp.kind_of(number), seccomp.describe_call(number, tuple(args)))
                answer = struct.pack("QqiI", ident, 0, -errno.EPERM, 0)
            try:
                fcntl.ioctl(self.listener, IOCTL_SEND, bytearray(answer))
            except OSError:
                pass

    def _close_end(self) -> None:
        if self.end is not None:
            self.end.close()
            self.end = None

    def _close_listener(self) -> None:
        if self.listener is not None:
            os.close(self.listener)
            self.listener = None

    def close(self) -> None:
        self.poll()
        self._close_end()
        self._close_listener()

    def report(self, first: int = 0, end: int | None = None) -> dict:
        """What was refused while the parts `first` to `end` ran (one file's; None: to the
        last; by default, all). A `next` a child sent falsely, past its real parts, moves its
        refusals to its last file's, never out of every count."""
        refused: dict[str, int] = {}
        examples: dict[str, list[str]] = {}
        for segment in sorted(self.by_segment):
            if segment < first or (end is not None and segment >= end):
                continue
            counts, seen = self.by_segment[segment]
            for kind, count in counts.items():
                refused[kind] = refused.get(kind, 0) + count
            for kind, found in seen.items():
                kept = examples.setdefault(kind, [])
                kept += [e for e in found if e not in kept][: MAX_EXAMPLES - len(kept)]
        return {"refused": refused, "refused_examples": examples}


def send_mark(end: socket.socket | None, first: int) -> None:
    """In the child: tell the supervisor that the part `first` starts another file. Waits for
    room (a few seconds at most): what this file's code tries must be counted for it."""
    if end is None:
        return
    try:
        end.settimeout(5.0)
        end.send(f"{NEXT} {first}".encode())
    except OSError:
        pass
    finally:
        try:
            end.setblocking(False)
        except OSError:
            pass


def send_event(end: socket.socket | None, kind: str, detail: str) -> None:
    """In the child: tell the supervisor what was tried (dropped if it is not reading)."""
    if end is None:
        return
    try:
        end.send(f"{kind} {detail}".encode("utf-8", "replace")[:MAX_MESSAGE])
    except OSError:
        pass
