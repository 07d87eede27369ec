"""The zygote: import Keras once, then fork one child per unit (see grader.sandbox.scheduler).

Protocol on stdin/stdout, one JSON document per line: the grader sends
`{"jobs": [units...], "parallel": N}`, a unit being the parts of one submitted exercise; the
zygote answers one line per part (`{"key", "state", "exitcode", "seconds"}`, and `"log_of"`: the
part whose log holds the output, where that is another part's) and then `{"done": true}`.
`{"cancel": true}`, sent while a request runs, gives it up: its children are killed and the
answer ends with `{"done": true, "cancelled": true}`; the zygote stays, warm, for the next
request. Sent in the same stream as the requests, a cancel is never mistaken for one meant for a
later request: one that comes after its request ended is skipped. It exits when stdin closes.
Its own stdout is kept for the protocol alone: anything else printed goes to stderr, and forked
children close it.
"""

import json
import os
import select
import shutil
import signal
import sys


class Lines:
    """The lines of the grader's requests on a descriptor, read whole or, during a run, only
    when some have come (Python's own buffered stdin cannot say whether a line is waiting)."""

    def __init__(self, fd: int):
        self.fd, self.buffer, self.ended = fd, b"", False
        # Whole lines read during a run that were not cancels: requests, answered in turn.
        self.kept: list[bytes] = []

    def _fill(self) -> None:
        data = os.read(self.fd, 65536)
        self.ended = not data
        self.buffer += data

    def next(self) -> bytes | None:
        """The next line, waiting for it; None once the grader closed the pipe."""
        if self.kept:
            return self.kept.pop(0)
        while b"\n" not in self.buffer and not self.ended:
            self._fill()
        if b"\n" not in self.buffer:
            return None
        line, self.buffer = self.buffer.split(b"\n", 1)
        return line

    def waiting(self) -> list[bytes]:
        """The whole lines that have come, without waiting."""
        while not self.ended and select.select([self.fd], [], [], 0)[0]:
            self._fill()
        *lines, self.buffer = self.buffer.split(b"\n")
        return lines


def main() -> None:
    protocol = os.fdopen(os.dup(1), "w", buffering=1)
    os.dup2(2, 1)
    sys.stdout = sys.stderr

    import grader.sandbox.preload  # noqa: F401 - Keras and the backend, imported before any fork
    from grader.sandbox import protect_this_process
    from grader.sandbox.scheduler import Cancelled, ForkedChild, schedule

    protect_this_process()  # its memory holds every job's paths: no same-user process reads it

    def report(message):
        protocol.write(json.dumps(message) + "\n")

    # Ctrl-C reaches the grader, which closes this process; SIGTERM unwinds `schedule`, which
    # kills every running child on the way out. The exception the handler raises is lost where
    # the signal lands in an at-fork hook (logging has one), so `schedule` also checks the flag.
    stopping = []

    def terminate(*_):
        stopping.append(True)
        sys.exit(1)

    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, terminate)
    parent = os.getppid()
    scratch = None  # the grader's folder of the last request's files
    requests = Lines(sys.stdin.fileno())

    def cancelled() -> bool:
        # A cancel gives the run up; any other line that came (a request of another thread of
        # the grader's) is kept and answered in turn, never dropped.
        found = False
        for line in requests.waiting():
            if json.loads(line).get("cancel"):
                found = True
            else:
                requests.kept.append(line)
        return found

    try:
        while (line := requests.next()) is not None:
            request = json.loads(line)
            if request.get("cancel"):  # its request had ended before it came
                continue
            scratch = request.get("scratch")
            try:
                schedule(
                    request["jobs"],
                    request["parallel"],
                    ForkedChild,
                    report,
                    parent=parent,
                    stop=lambda: bool(stopping),
                    cancelled=cancelled,
                )
            except Cancelled:
                report({"done": True, "cancelled": True})
                continue
            report({"done": True})
    finally:
        # The grader is gone (or done, and removed it already): what it left is removed here,
        # its children all dead, so that a grader killed with -9 leaves no cases behind.
        if scratch is not None and os.getppid() != parent:
            shutil.rmtree(scratch, ignore_errors=True)
        # Skip the interpreter's slow teardown of TensorFlow: every child is already gone.
        os._exit(0)


if __name__ == "__main__":
    main()
