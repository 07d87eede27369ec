"""Planted submissions as small source patches of the reference solution: each mistake is a few
(old, new) replacements, so that a planted file is the solution with exactly that mistake."""

from __future__ import annotations

from pathlib import Path

from grader.instructor.stubs import package_dir
from grader.records import get_exercise


def patched_solution(exercise_id: str, *replacements: tuple[str, str]) -> str:
    """The solution's source with each `old` (which must occur exactly once) replaced."""
    record = get_exercise(exercise_id)
    source = (Path(package_dir("solutions")) / record.file).read_text(encoding="utf-8")
    for old, new in replacements:
        count = source.count(old)
        assert count == 1, f"{record.file}: {old!r} occurs {count} times, not once"
        source = source.replace(old, new)
    return source


def plant(folder: Path, exercise_id: str, *replacements: tuple[str, str]) -> str:
    """Write the patched solution as the exercise's submission in `folder`; return the folder."""
    folder.mkdir(parents=True, exist_ok=True)
    record = get_exercise(exercise_id)
    (folder / record.file).write_text(patched_solution(exercise_id, *replacements), "utf-8")
    return str(folder)
