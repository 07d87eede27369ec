"""`grader check` for one exercise: the file to grade (grader.notebook.edited chooses the form
the student edited), graded as `grader batch` grades it (the kit's own answers blocked), or
read back from the results a workflow's earlier step kept, with the flags a batch would raise."""

from __future__ import annotations

import contextlib
from dataclasses import dataclass, field
from pathlib import Path

from grader.i18n import N_, _, stubs_folder


class CheckError(Exception):
    """The work cannot be graded as given (a notebook that cannot be read): the message says
    what to do."""


# What `grader batch` flags, as `grader check` tells the student.
FLAG_WORDS = {
    "imports": N_(
        "your instructor's grading blocks this import, so those parts score 0 there "
        "(and here): write the code yourself"
    ),
    "opens": N_("your file names the solutions folder; your instructor sees this flag"),
}


@dataclass
class Checked:
    result: object  # grader.engine's ExerciseResult
    flags: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)  # for stderr: results that could not be kept


def submission_path(value: str) -> Path:
    """A folder (or file) as given; the kit's own `exercises` / `solutions` from anywhere.
    ValueError when it does not exist."""
    from grader.kit import KIT

    path = Path(value)
    if value.rstrip("/") == "exercises":  # the stubs of the language in use (exercises/zh)
        path = stubs_folder(path if path.exists() else KIT / "exercises")
    if path.exists():
        return path
    if value.rstrip("/") in ("exercises", "solutions"):
        return KIT / value.rstrip("/")
    raise ValueError(
        _("{value!r} does not exist: give the folder that holds your exercise files", value=value)
    )


def named_submission(exercise_ids, records) -> Path | None:
    """`grader check exercises/ex8_2.py`: that very file, whatever it is called (`ex8_2 (1).py`
    beside an `ex8_2.py`), or the notebook named; None when no single file is named."""
    named = [Path(value) for value in exercise_ids if Path(value).is_file()]
    if len(named) != 1 or len(records) != 1:
        return None
    own = named[0].name == records[0].file
    return named[0] if named[0].suffix == ".ipynb" or not own else named[0].parent


def check_one(record, chosen: Path, *, seed, timeout, parts, results_path, policy, observe):
    """Grade `chosen` (a folder, an exercise file or a notebook) for `record`, or read the
    result kept in `results_path` for the same files, seed and limit. With `results_path`
    every part is graded (a workflow's later steps read them) and `parts` only filters."""
    from grader import saved
    from grader.grading import grade
    from grader.instructor.course.submissions import FORBIDDEN_PACKAGES, scan

    notes = []
    with module_folder(record, chosen) as folder:
        key = saved.work_key(record.id, folder, seed, timeout) if results_path else ""
        kept = saved.read(results_path, record.id, key) if results_path else None
        if kept is not None:
            result, flags = kept
        else:
            # Imports of the kit's own answers are blocked as `grader batch` blocks them, so
            # that the score here is the score there.
            result = grade(
                record.id,
                folder,
                seed=seed,
                timeout=timeout,
                parts=None if results_path else parts or None,
                sandbox=policy,
                blocked_imports=FORBIDDEN_PACKAGES,
                observe=observe,
            )
            path = Path(result.submission)
            flags = scan(path) if path.is_file() else []
            if results_path:
                notes += _keep(results_path, result, key, flags)
    if results_path and parts:
        result.parts = [p for p in result.parts if p.name in parts]
    if chosen.suffix == ".ipynb":
        result.submission = str(chosen)
    return Checked(result, flags, notes)


def _keep(path: Path, result, key: str, flags: list[str]) -> list[str]:
    from grader import saved

    try:
        saved.write(path, result, key, flags)
    except OSError as error:
        return [
            _(
                "could not keep the results in {path} ({error}): the next check grades again",
                path=path,
                error=error.strerror or error,
            )
        ]
    return []


@contextlib.contextmanager
def module_folder(record, chosen: Path):
    """The folder to grade `chosen` in (a folder, or an exercise file or notebook): for a
    notebook, a scratch folder holding its code cells as the exercise's module, read as the
    batch reads it, with the written answers beside it."""
    if chosen.suffix != ".ipynb":
        # A file under another name than the exercise's is graded as itself (grade takes one).
        yield chosen.parent if chosen.is_file() and chosen.name == record.file else chosen
        return
    import tempfile

    from grader.engine import safe_files
    from grader.notebook.extract import NotebookError, notebook_code

    with tempfile.TemporaryDirectory(prefix="attnkit-check-") as scratch:
        try:
            code = notebook_code(safe_files.read_plain_path(chosen), chosen.name)
        except (NotebookError, safe_files.RefusedFile) as error:
            raise CheckError(str(error)) from None
        safe_files.write_new(Path(scratch), record.file, code.encode("utf-8"))
        answers = chosen.parent / "answers"
        if answers.is_dir() and not answers.is_symlink():
            safe_files.copy_tree(answers, Path(scratch) / "answers")
        yield Path(scratch)


def other_edited(record, form) -> str:
    return _(
        "note: {graded} and {other} are both edited; {graded} was graded, the newer. To grade "
        "the other: grader check {id} {other}",
        graded=form.path.name,
        other=form.other_edited,
        id=record.id,
    )


def again_command(exercise_id, submission, parts, seed, timeout) -> str:
    """`grader check` with the student's own options, to run after editing."""
    words = ["grader check", exercise_id]
    if submission is not None:
        words.append(f"--submission {submission}")
    words += [f"--part {name!r}" if " " in name else f"--part {name}" for name in parts]
    if seed:
        words.append(f"--seed {seed}")
    if timeout is not None:
        words.append(f"--timeout {timeout:g}")
    return " ".join(words)
