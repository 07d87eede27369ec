"""The zygote: import Keras once, then fork one child per unit (see grader.sandbox.scheduler).

Protocol on stdin/stdout, one JSON document per line: the grader sends
`{"jobs": [units...], "parallel": N}`, a unit being the parts of one submitted exercise; the
zygote answers one line per part (`{"key", "state", "exitcode", "seconds"}`, and `"log_of"`: the
part whose log holds the output, where that is another part's) and then `{"done": true}`. It
exits when stdin closes. Its own stdout is kept for the protocol alone: anything else printed
goes to stderr, and forked children close it.
"""

import json
import os
import shutil
import signal
import sys


def main() -> None:
    protocol = os.fdopen(os.dup(1), "w", buffering=1)
    os.dup2(2, 1)
    sys.stdout = sys.stderr

    import grader.sandbox.preload  # noqa: F401 - Keras and the backend, imported before any fork
    from grader.sandbox import protect_this_process
    from grader.sandbox.scheduler import ForkedChild, schedule

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
    try:
        for line in sys.stdin:
            request = json.loads(line)
            scratch = request.get("scratch")
            schedule(
                request["jobs"],
                request["parallel"],
                ForkedChild,
                report,
                parent=parent,
                stop=lambda: bool(stopping),
            )
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
