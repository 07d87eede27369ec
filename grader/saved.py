"""Results kept between runs of `grader check --results FILE`: a later check of the same work
(the same files, exercise, seed and limits, by the same grader) reports from FILE instead of
grading again. A GitHub Actions workflow runs one `grader check --part` per part; with this,
the first grades every part once and the others read their part (grader.instructor.outputs.
actions).

FILE is JSON the grader wrote, read as data (never run). A file that cannot be read, or whose
results are of other work, is graded again and written anew: a saved result is only ever the
result grading the same work gives.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

from grader.engine.results import ExerciseResult
from grader.kit import kit_version

FORMAT = "attnkit-check-results/1"
# The files of a submission folder hashed into the key, at most: the kit's exercises/ holds a
# few dozen; a folder of thousands is keyed by the first ones and graded again when those change.
MOST_FILES = 2000
MOST_BYTES = 64 * 1024 * 1024


def work_key(exercise_id: str, folder: Path, seed: int, timeout: float | None) -> str:
    """What a result depends on: the grader's version, the exercise, the seed and limit, and
    every file of the folder graded (names and contents; caches left out)."""
    digest = hashlib.sha256(
        json.dumps([FORMAT, kit_version(), exercise_id, seed, timeout]).encode("utf-8")
    )
    folder = Path(folder)
    if folder.is_file():  # a file under another name than the exercise's, graded as itself
        folder, files = folder.parent, [folder]
    else:
        files = sorted(
            path
            for path in folder.rglob("*")
            if "__pycache__" not in path.parts and path.is_file() and not path.is_symlink()
        )
    for path in files[:MOST_FILES]:
        digest.update(str(path.relative_to(folder)).encode("utf-8", "surrogateescape") + b"\0")
        try:
            digest.update(path.read_bytes()[:MOST_BYTES])
        except OSError:
            digest.update(b"\1unreadable")
        digest.update(b"\0")
    return digest.hexdigest()


def read(path: Path, exercise_id: str, key: str) -> tuple[ExerciseResult, list[str]] | None:
    """The saved result of this work and its flags, or None (no file, another work's, or a file
    that is not what this module writes)."""
    try:
        if path.stat().st_size > MOST_BYTES:
            return None
        document = json.loads(path.read_text(encoding="utf-8"))
        saved = document["results"][exercise_id]
        if document.get("format") != FORMAT or saved["key"] != key:
            return None
        result = ExerciseResult.from_dict(saved["result"], submission=str(saved["submission"]))
        flags = [str(flag) for flag in saved.get("flags", [])]
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return None
    if result.exercise != exercise_id or not result.parts:
        return None
    return result, flags


def write(path: Path, result: ExerciseResult, key: str, flags: list[str]) -> None:
    """Keep `result` in `path`, beside the results of other exercises kept there. Written
    through a temporary file, so a reader never sees half of it."""
    try:
        document = json.loads(path.read_text(encoding="utf-8"))
        if document.get("format") != FORMAT or not isinstance(document.get("results"), dict):
            raise ValueError
    except (OSError, ValueError, AttributeError):
        document = {"format": FORMAT, "results": {}}
    document["results"][result.exercise] = {
        "key": key,
        "submission": result.submission,
        "result": result.to_dict(),
        "flags": flags,
    }
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_name(path.name + ".partial")
    temporary.write_text(json.dumps(document, ensure_ascii=False), encoding="utf-8")
    os.replace(temporary, path)
