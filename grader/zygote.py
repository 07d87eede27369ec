"""The zygote: import Keras once, then fork one child per job (see grader.processes).

Protocol on stdin/stdout, one JSON document per line: the grader sends
`{"jobs": [...], "parallel": N}`; the zygote answers one line per finished job
(`{"key", "state", "exitcode", "seconds"}`) and then `{"done": true}`. It exits when stdin
closes. Its own stdout is kept for the protocol alone: anything else printed goes to stderr.
"""

import json
import os
import signal
import sys


def main() -> None:
    protocol = os.fdopen(os.dup(1), "w", buffering=1)
    os.dup2(2, 1)
    sys.stdout = sys.stderr

    import grader._preload  # noqa: F401 - Keras and the backend, imported before any fork
    from grader.processes import ForkedChild, schedule

    def report(message):
        protocol.write(json.dumps(message) + "\n")

    # Ctrl-C reaches the grader, which closes this process; SIGTERM unwinds `schedule`, which
    # kills every running child on the way out.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(1))
    parent = os.getppid()
    try:
        for line in sys.stdin:
            request = json.loads(line)
            schedule(request["jobs"], request["parallel"], ForkedChild, report, parent=parent)
            report({"done": True})
    finally:
        # Skip the interpreter's slow teardown of TensorFlow: every child is already gone.
        os._exit(0)


if __name__ == "__main__":
    main()
