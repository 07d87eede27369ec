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


# A batch's scratch folder in the temporary directory: the cases, the reference's outputs and
# each student's unpacked files. Its owner is written in it, so that a later batch can tell a
# folder whose grader was killed (kill -9 leaves it) from one of a grader still at work.
SCRATCH_PREFIX = "attnkit-batch-"
OWNER_FILE = "owner.json"


def _started(pid: int) -> str | None:
    """When process `pid` started (Linux: its start time in clock ticks since boot), so that a
    pid used again by another process is not taken for the grader; None where not known."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as handle:
            return handle.read().rsplit(")", 1)[1].split()[19]
    except (OSError, IndexError):
        return None


def _running(pid: int, started: str | None) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's process: alive, and not ours to judge
        return True
    return started is None or _started(pid) in (None, started)


def new_scratch() -> Path:
    """A new scratch folder for this grader (0700, mkdtemp's), its owner written in it."""
    import tempfile

    scratch = Path(tempfile.mkdtemp(prefix=SCRATCH_PREFIX))
    write_owner(scratch)
    return scratch


def write_owner(folder: Path) -> None:
    """Write this process (its pid and start time) into `folder` as its owner: once the
    process is gone, `remove_abandoned_scratch` may remove the folder."""
    owner = {"pid": os.getpid(), "started": _started(os.getpid())}
    (Path(folder) / OWNER_FILE).write_text(json.dumps(owner), encoding="utf-8")


def remove_abandoned_scratch(prefix: str = SCRATCH_PREFIX) -> list[str]:
    """Remove the scratch folders of graders that are gone (killed before they could clean
    up), in the temporary directory, and return them by name: never one whose grader still
    runs, nor one whose owner cannot be read (another tool's, or an older grader's). `prefix`
    names the folders looked at (the test suite's own session folders have one of theirs)."""
    import shutil
    import tempfile

    removed = []
    for folder in sorted(Path(tempfile.gettempdir()).glob(prefix + "*")):
        try:
            if folder.is_symlink() or not folder.is_dir() or folder.stat().st_uid != os.getuid():
                continue
            owner = json.loads((folder / OWNER_FILE).read_text(encoding="utf-8"))
            pid, started = int(owner["pid"]), owner.get("started")
        except (OSError, ValueError, KeyError, TypeError):
            continue
        if pid == os.getpid() or _running(pid, started if isinstance(started, str) else None):
            continue
        shutil.rmtree(folder, ignore_errors=True)
        if not folder.exists():
            removed.append(f"{folder} (grader {pid}, gone)")
    return removed


# A shard's results signed with the course's secret (`GRADER_SHARD_KEY`, in the shard jobs'
# environment and in gather's, never in a child's: the sandbox's environment is an allowlist),
# so that `grader gather` takes only results the grader wrote: an edited, swapped or planted
# result file has no valid signature.
SHARD_KEY_VARIABLE = "GRADER_SHARD_KEY"
SIGNATURE_SUFFIX = ".sig"


def shard_key() -> bytes | None:
    key = os.environ.get(SHARD_KEY_VARIABLE, "")
    return key.encode("utf-8") if key else None


def result_signature(key: bytes, seed: int, student: str, data: bytes) -> str:
    """The HMAC of one student's result file, bound to the student and the seed."""
    import hashlib
    import hmac

    bound = json.dumps([seed, student], ensure_ascii=True).encode("ascii") + b"\0" + data
    return hmac.new(key, bound, hashlib.sha256).hexdigest()


def sign_result(out: Path, student: str, seed: int) -> None:
    """Write the signature of `student`'s result in `out`, where a key is set."""
    key = shard_key()
    if key is None:
        return
    path = result_path(out, student)
    signature = result_signature(key, seed, student, path.read_bytes())
    atomic_write(path.with_name(path.name + SIGNATURE_SUFFIX), signature + "\n")


def signature_problem(folder: Path, student: str, seed: int) -> str | None:
    """None when `student`'s result in `folder` carries the signature the key gives it (or no
    key is set); else what is wrong with it."""
    key = shard_key()
    if key is None:
        return None
    path = result_path(folder, student)
    try:
        data = path.read_bytes()
        given = path.with_name(path.name + SIGNATURE_SUFFIX).read_text(encoding="ascii").strip()
    except (OSError, UnicodeDecodeError):
        return "its result has no signature (graded without GRADER_SHARD_KEY, or removed)"
    import hmac

    if not hmac.compare_digest(given, result_signature(key, seed, student, data)):
        return "its result does not carry the grader's signature (changed after grading)"
    return None
