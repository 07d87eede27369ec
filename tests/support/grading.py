"""Helpers shared by the tests of every exercise's and lab's grading (`tests/test_grader_*.py`).

Each exercise's tests grade the reference (full marks, hidden checks too), the generated stub ("not
implemented" everywhere), correct alternatives written another way (full marks) and planted
mistakes (the right part fails, with the named message).
"""

from __future__ import annotations

import functools
import os
import signal
import textwrap
from pathlib import Path

from grader import sandbox
from grader.engine.results import NOT_IMPLEMENTED, PASSED
from grader.grading import grade
from grader.instructor.course.stubs import package_dir
from grader.records import get_exercise
from grader.sandbox import seccomp

HEADER = "import keras\nfrom keras import ops\nimport numpy as np\n\n"


def replace_function(source: str, name: str, body: str) -> str:
    """`source` with function `name` replaced by one whose body is `body` (indented lines)."""
    start = source.index(f"def {name}(")
    end = source.find("\ndef ", start + 1)
    end = len(source) if end == -1 else end
    signature = source[start : source.index("\n", start)]
    return source[:start] + signature + "\n" + body + "\n" + source[end:]


def submit(tmp_path: Path, lab_id: str, body: str, header: str = HEADER) -> str:
    """Write `body` as the lab's submission file in `tmp_path`; return the folder."""
    record = get_exercise(lab_id)
    (tmp_path / record.file).write_text(header + textwrap.dedent(body), encoding="utf-8")
    return str(tmp_path)


def failures(part) -> list:
    return [check for check in part.checks if not check.passed]


def first_failures(result) -> list:
    """Per part, its name and first failing check: what an assertion message should show."""
    return [(p.name, p.status, failures(p)[:1]) for p in result.parts if p.status != PASSED]


def assert_full_marks(result) -> None:
    assert result.score == result.max_score > 0, first_failures(result)
    assert {part.status for part in result.parts} == {PASSED}


# The policy `grader check` grades with on this machine: the sandbox where it is whole (Linux
# with Landlock and seccomp), else none. The references are graded in it, as a class is: its
# seccomp filter is an allowlist, and a reference refused a call means the list lacks one that
# TensorFlow, Keras or Python needs (tests/grader/test_sandbox_calls.py).
SANDBOX = {} if sandbox.status()["complete"] else None


@functools.cache
def reference_result(exercise_id: str, hidden_seed: int | None = None):
    """The reference solution graded once per run (public seed 0, hidden checks from
    `hidden_seed`), in the sandbox where it is whole: the generic tests and each record's own
    assertions share it."""
    return grade(exercise_id, package_dir("solutions"), hidden_seed=hidden_seed, sandbox=SANDBOX)


def refused_calls(result) -> dict:
    """The system calls the sandbox's filter refused a graded run, by kind, and nothing else
    (the audit hook's "open" and "import" are the sandbox's other witness)."""
    kinds = {*seccomp.KINDS.values(), seccomp.SYSTEM}
    return {kind: count for kind, count in result.refused.items() if kind in kinds}


def assert_reference_scores_full_marks(lab_id: str, hidden_seed: int | None = None):
    """The reference solution passes every part (with hidden checks when a seed is given) and,
    graded in the sandbox, is refused no system call."""
    result = reference_result(lab_id, hidden_seed)
    assert_full_marks(result)
    assert result.max_score == get_exercise(lab_id).max_score
    if hidden_seed is not None:
        assert any("hidden" in check.name for part in result.parts for check in part.checks)
    assert refused_calls(result) == {}, (lab_id, result.refused_examples)
    return result


def assert_stub_reports_not_implemented(lab_id: str) -> None:
    result = grade(lab_id, package_dir("exercises"))
    assert result.score == 0.0
    for part in result.parts:
        assert part.status == NOT_IMPLEMENTED, (part.name, failures(part)[:1])
        assert all(
            c.message.startswith(f"not implemented yet (Exercise {lab_id}: ")
            for c in failures(part)
        )


def descendants(pid: int) -> list[int]:
    """Every process below `pid` (Linux: read from /proc)."""
    found, frontier = [], [pid]
    while frontier:
        parent = frontier.pop()
        for entry in Path("/proc").iterdir():
            if entry.name.isdigit():
                try:
                    fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
                except OSError:
                    continue
                if int(fields[1]) == parent:
                    found.append(int(entry.name))
                    frontier.append(int(entry.name))
    return found


def session_leaders(pids: list[int]) -> list[int]:
    """Those of `pids` that lead a session of their own; a process that has exited since it was
    listed is skipped, not an error (children come and go while a batch runs)."""
    leaders = []
    for pid in pids:
        try:
            if os.getsid(pid) == pid:
                leaders.append(pid)
        except ProcessLookupError:
            continue
    return leaders


def running(pid: int) -> bool:
    """Whether `pid` exists and is not a zombie; one that vanishes while being read is not."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[:1]
    except OSError:
        return False
    return "Z" not in state


def command_line(pid: int) -> bytes:
    """The start of `pid`'s command line, for a message; empty once it has exited."""
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes()[:80]
    except OSError:
        return b""


def ctrl_c_reaches_it() -> None:
    """A `preexec_fn` for a child that a test stops with Ctrl-C (SIGINT): a shell's background
    job (`cmd &` without job control) ignores SIGINT, its children inherit that, and Python
    started so keeps ignoring it; the test must not depend on how the suite was launched."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)
