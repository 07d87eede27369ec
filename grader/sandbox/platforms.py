"""What differs between the platforms a student grades on, decided here and nowhere else: how a
child that runs submitted code is started, and how its whole process tree is killed.

Two start methods:
- `fork` (Linux): a helper process imports Keras and TensorFlow once and forks one child per
  exercise (grader.sandbox.zygote), so no child pays the import again;
- `spawn` (Windows, macOS): each exercise runs in a fresh interpreter (grader.sandbox.fresh),
  which imports TensorFlow itself: a few seconds slower, the same results and messages.

macOS gets `spawn` although it has `os.fork`: Apple's frameworks (Accelerate, which NumPy and
TensorFlow use there, and the Objective-C runtime) do not promise to survive a fork after they
started threads, and Python's own multiprocessing switched to spawn there for that reason (3.8).
No macOS machine was at hand to show fork is safe there, so the safe choice is the default.

`GRADER_START_METHOD=fork|spawn` forces one, for tests and for users who hit a problem.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys

START_METHOD_VARIABLE = "GRADER_START_METHOD"
FORK, SPAWN = "fork", "spawn"
START_METHODS = (FORK, SPAWN)
TASKKILL_SECONDS = 10


class StartMethodError(ValueError):
    """The start method asked for (GRADER_START_METHOD) is unknown or not possible here."""


def default_start_method(platform: str | None = None) -> str:
    """`fork` on Linux, `spawn` everywhere else (Windows, macOS)."""
    platform = sys.platform if platform is None else platform
    return FORK if platform.startswith("linux") else SPAWN


def start_method(environ=None, platform: str | None = None, can_fork: bool | None = None) -> str:
    """The start method of this run: GRADER_START_METHOD if set, else the platform's default."""
    environ = os.environ if environ is None else environ
    can_fork = hasattr(os, "fork") if can_fork is None else can_fork
    asked = environ.get(START_METHOD_VARIABLE, "").strip()
    if not asked:
        chosen = default_start_method(platform)
        return chosen if chosen == SPAWN or can_fork else SPAWN
    if asked.lower() not in START_METHODS:
        raise StartMethodError(
            f"{START_METHOD_VARIABLE}={asked!r} is not a start method: set it to 'fork' (one "
            "helper forks every child; Linux) or 'spawn' (a fresh interpreter per exercise; "
            "every platform), or unset it for this platform's default "
            f"({default_start_method(platform)})"
        )
    chosen = asked.lower()
    if chosen == FORK and not can_fork:
        raise StartMethodError(
            f"{START_METHOD_VARIABLE}=fork, but this platform has no fork (Windows): set it to "
            "'spawn' or unset it"
        )
    return chosen


def new_group_options() -> dict:
    """Popen options that start a child at the head of a process tree of its own, which
    `kill_tree` can then kill whole: a session of its own on POSIX, a process group on Windows."""
    if hasattr(os, "killpg"):
        return {"start_new_session": True}
    return {"creationflags": getattr(subprocess, "CREATE_NEW_PROCESS_GROUP", 0)}


def kill_tree(process: subprocess.Popen) -> None:
    """Kill `process` and everything it started, the platform's way: its process group on POSIX
    (it leads one, see `new_group_options`), `taskkill /T` on Windows (which finds the tree
    through the parent ids of processes still alive). The caller reaps `process`."""
    if hasattr(os, "killpg"):
        try:
            os.killpg(process.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
    elif process.poll() is None:
        try:
            subprocess.run(
                ["taskkill", "/F", "/T", "/PID", str(process.pid)],
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                timeout=TASKKILL_SECONDS,
                check=False,
            )
        except (OSError, subprocess.SubprocessError):
            pass
    if process.poll() is None:
        process.kill()  # where neither reached it: at least the child itself
