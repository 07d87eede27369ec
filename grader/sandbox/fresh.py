"""A child in a fresh interpreter, the spawn start method (grader.sandbox.platforms): what a
forked child does (grader.sandbox.scheduler.run_child), after importing Keras itself.

`python -m grader.sandbox.fresh JOB_FILE`: the job is a JSON file the grader wrote (paths only).
Its `channel`, where there is one, is the number of this process's end of its channel to the
supervisor (grader.sandbox.supervisor); without one, the `started_marker` file says that the
machinery is in place and the part's clock may start.
"""

import json
import os
import socket
import sys


def main() -> None:
    with open(sys.argv[1], encoding="utf-8") as handle:
        job = json.load(handle)
    # As in the fork helper, whose children inherit it: print() goes through stderr, which is
    # line-buffered, so what a submission printed reaches its log even if it then kills itself.
    sys.stdout = sys.stderr
    # Its namespaces while it is one thread: importing TensorFlow starts others.
    from grader.sandbox import world

    world.unshare_world(job)
    if job.get("workdir"):
        # Keras, imported next, makes its `~/.keras/`: in the child's own folder, never in the
        # folder the grader ran from (in its namespaces `~` may not resolve, and stay `~`).
        os.chdir(job["workdir"])
        os.environ["HOME"] = job["workdir"]
    import grader.sandbox.preload  # noqa: F401 - Keras and the backend, as the fork helper has
    from grader.sandbox.scheduler import run_child

    channel = job.get("channel")
    end = socket.socket(fileno=channel) if channel is not None else None
    if end is None and job.get("sandbox") is not None:
        # The seccomp listener would stay with the submission, which could then answer its own
        # refused calls: no sandbox without a supervisor to hand it to.
        raise SystemExit("a sandboxed child needs a channel to its supervisor; there is none")
    if end is None:
        os.close(os.open(job["started_marker"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600))
    run_child(job, end)


if __name__ == "__main__":
    main()
