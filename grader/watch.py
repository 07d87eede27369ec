"""`grader watch 8-2 [FILE]`: re-grade each time the exercise file (or notebook) is saved.

The process stays alive between saves, and with it the helper that imported TensorFlow
(grader.sandbox.processes) and the reference's answers (grader.engine.references), so a re-check
costs only the forked child's run of the student's code. The file is polled (its size and
modification time, then its bytes), which needs no extra package and works in any editor, on any
file system. After the first full result, only what changed is printed: the parts whose status,
score or first failing message changed, then the score.

Grading runs beside the polling (a thread), so a save during a run that has not ended (code that
hangs, waiting for its time limit) gives that run up at once: its child and every process the
child started are killed (grader.sandbox.processes.cancel_runs), and the new contents are graded.
"""

from __future__ import annotations

import hashlib
import threading
import time
from collections.abc import Callable
from pathlib import Path

from grader.engine.results import ExerciseResult
from grader.i18n import _, language, tr
from grader.vocabulary.spec import Exercise
from grader.vocabulary.status import Status

# An editor may write a file in several steps: wait this long after a change before reading it.
SETTLE_SECONDS = 0.03


def status_words(status: Status) -> str:
    """A part's status in the language in use: the check's table's words, translated; in
    English the status's own word, as watch has always printed it."""
    from grader.report import WORDS

    return str(status) if language() == "en" else tr(WORDS.get(status, str(status)))


def part_states(result: ExerciseResult) -> dict[str, tuple]:
    states = {}
    for part in result.parts:
        failing = next((c for c in part.checks if not c.passed), None)
        message = (
            _("{check}: {detail}", check=failing.name, detail=failing.message) if failing else ""
        )
        states[part.name] = (part.status, part.score, part.max_score, message)
    return states


def changes(previous: ExerciseResult, current: ExerciseResult) -> list[str]:
    """The lines that tell what changed from `previous` to `current`, ending with the score."""
    before, after = part_states(previous), part_states(current)
    lines = []
    for name, (status, score, most, message) in after.items():
        if before.get(name) == after[name]:
            continue
        was = before.get(name)
        change = (
            _(" (was {status}, {score:g})", status=status_words(was[0]), score=was[1])
            if was and was[0] != status
            else ""
        )
        mark = "✓" if status == Status.PASSED else "✗"
        lines.append(f"  {mark} {name}  {score:g}/{most:g}  {status_words(status)}{change}")
        if message:
            lines.append(f"      {message}")
    if not lines:
        lines.append("  " + _("no change"))
    score, most = f"{current.score:g}", f"{current.max_score:g}"
    lines.append(_("Score: {score}/{max}", score=score, max=most))
    return lines


class Watcher:
    """Grades `path` when its contents change; `poll()` returns the lines to print, or None.

    A change starts a run in the background (giving up the one in progress); `poll()` returns
    its lines once it has ended.
    """

    def __init__(self, record: Exercise, path: Path, seed: int = 0):
        self.record, self.path, self.seed = record, Path(path), seed
        self.stamp: tuple | None = None
        self.digest = b""
        self.result: ExerciseResult | None = None
        self.running: threading.Thread | None = None
        self.ended: list = []  # the running thread's Graded, or the exception it raised
        self.gave_up = False  # a run was given up since the last lines printed

    def _changed(self) -> bool:
        try:
            status = self.path.stat()
        except OSError:
            return False
        stamp = (status.st_mtime_ns, status.st_size)
        if stamp == self.stamp:
            return False
        time.sleep(SETTLE_SECONDS)
        self.stamp = stamp
        digest = hashlib.sha256(self.path.read_bytes()).digest()
        if digest == self.digest:  # touched, or saved unchanged
            return False
        self.digest = digest
        return True

    @property
    def busy(self) -> bool:
        return self.running is not None

    def poll(self) -> list[str] | None:
        if self._changed():
            self.stop()
            self._start()
        if self.running is None or self.running.is_alive():
            return None
        self.running = None
        (ended,) = self.ended
        if isinstance(ended, BaseException):
            raise ended
        return self._lines(ended)

    def stop(self) -> None:
        """Give up the run in progress, if any, and wait until its children are gone."""
        from grader.sandbox.processes import allow_runs, cancel_runs

        if self.running is None:
            return
        if self.running.is_alive():
            cancel_runs()
            self.running.join()
            allow_runs()
            self.gave_up = True
        self.running = None

    def _start(self) -> None:
        self.ended = []
        self.running = threading.Thread(target=self._grade, daemon=True)
        self.running.start()

    def _grade(self) -> None:
        from grader.notebook.live import grade_path

        try:
            self.ended.append(grade_path(self.record, self.path, self.seed, pictures=False))
        except BaseException as error:  # noqa: BLE001 - raised again in the polling thread
            self.ended.append(error)

    def _lines(self, graded) -> list[str]:
        previous, self.result = self.result, graded.result
        gave_up, self.gave_up = self.gave_up, False
        if previous is None or graded.result is None:
            return graded.text().splitlines()
        heading = _("{time} {name} saved:", time=time.strftime("%H:%M:%S"), name=self.path.name)
        if gave_up:
            heading += " " + _("(the run before was stopped: the file changed while it ran)")
        return [heading, *changes(previous, graded.result)]


def watch(record: Exercise, path: Path, echo: Callable[[str], None], interval: float = 0.1):
    """Poll forever (until Ctrl+C), printing each new result's changes."""
    from grader.sandbox.processes import warm_up

    warm_up()
    watcher = Watcher(record, path)
    echo(_("watching {path} (Ctrl+C stops)", path=path))
    try:
        while True:
            lines = watcher.poll()
            if lines:
                echo("\n".join(lines))
            time.sleep(interval)
    finally:  # Ctrl+C during a run: its children go with it
        watcher.stop()
