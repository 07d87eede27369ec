"""The small helpers every part of the instructor's package shares: where a batch keeps each
student's files in its output folder, and writing a file so that no reader sees half of it.
Below course/, review/ and outputs/ (docs/architecture.md): any of them may use these, and
none reaches into another for them."""

from __future__ import annotations

import json
import os
from pathlib import Path

from grader.vocabulary import untrusted


def result_path(out: Path, student: str) -> Path:
    return Path(out) / "results" / f"{untrusted.file_stem(student)}.json"


def feedback_path(out: Path, student: str) -> Path:
    return Path(out) / "feedback" / f"{untrusted.file_stem(student)}.md"


def student_of(result: Path) -> str:
    """The id a result file is about (its name is only derived from it)."""
    try:
        document = json.loads(result.read_text(encoding="utf-8"))
        if isinstance(document, dict) and isinstance(document.get("student"), str):
            return document["student"]
    except (OSError, ValueError):
        pass
    return result.stem


def students_in(out: Path) -> list[str]:
    """The students that have a result in `out`."""
    return sorted(student_of(path) for path in (Path(out) / "results").glob("*.json"))


def atomic_write(path: Path, text: str) -> None:
    """Write through a temporary file, so a reader (or a resumed run) never sees half a file."""
    temporary = path.with_name(path.name + ".partial")
    # "replace": a lone surrogate (from a child's JSON, "\ud800") must not stop the batch.
    temporary.write_bytes(text.encode("utf-8", "replace"))
    os.replace(temporary, path)
