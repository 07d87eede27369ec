"""`grader gather`: the folders of a class graded in shards (`grader batch --shard K/N`) made
into the one output folder an unsharded `grader batch` with the same seed writes: the same
per-student results, feedback and gradebook, byte for byte, and the class-wide outputs
(report, JUnit, similarity across every student, written answers, late work) written by the
batch's own `write_class_outputs`.

Shards are checked before anything is written: they must agree on exercises, seed, number of
shards, cases and grader version, and every shard must be there and finished. A missing or
unfinished shard is named with the command that grades just it (the shard's own, from its
shard.json; a rerun resumes where it stopped).
"""

from __future__ import annotations

import json
import shlex
import shutil
from dataclasses import dataclass, field
from pathlib import Path

from grader.instructor import files
from grader.instructor.batch import (
    SHARD_FILE,
    STATE_FILE,
    BatchOptions,
    BatchSummary,
    _late_work,
    _read_json,
    _write_json,
    cases_hash,
    grader_version,
    write_class_outputs,
)
from grader.instructor.course.shards import shard_of
from grader.instructor.course.submissions import NoStudents, Student, discover
from grader.instructor.outputs import gradebook, student_feedback
from grader.records import UnknownExercise, get_exercise

# What every shard of one class must agree on, as shard.json spells it.
AGREED = ("exercises", "seed", "grader_version", "cases_hash", "limits", "signed")


class GatherError(RuntimeError):
    """The shards cannot be gathered (mixed, missing or unfinished); the message says which and
    what to run."""


@dataclass
class Shard:
    folder: Path
    mark: dict

    @property
    def index(self) -> int:
        return self.mark["shard"][0]

    @property
    def count(self) -> int:
        return self.mark["shard"][1]


@dataclass
class GatherSummary(BatchSummary):
    # Students of SUBMISSIONS no shard graded (added after the shards ran): shard -> ids.
    ungraded: dict[int, list[str]] = field(default_factory=dict)


def split_arguments(paths: list[Path]) -> tuple[list[Path], Path | None]:
    """`grader gather`'s arguments as (the shards' folders, SUBMISSIONS): the one existing
    folder that is neither a shard's nor a batch's is the class; a folder that does not exist
    is a shard that never ran (named as missing)."""
    shards, others = [], []
    for path in map(Path, paths):
        is_output = (path / SHARD_FILE).exists() or (path / STATE_FILE).exists()
        (shards if is_output or not path.exists() else others).append(path)
    if len(others) > 1:
        raise GatherError(
            f"{', '.join(map(str, others))} are not shards' folders (no {SHARD_FILE}); at most "
            "one folder, the class's SUBMISSIONS, may be given besides the shards"
        )
    return shards, (others[0] if others else None)


def read_shards(folders: list[Path]) -> list[Shard]:
    """Every folder's shard.json, checked to be one class's shards, all there and finished;
    GatherError naming what is mixed, missing or unfinished (with the commands to run)."""
    shards, absent = [], []
    for folder in folders:
        mark = _read_json(Path(folder) / SHARD_FILE)
        if not isinstance(mark, dict) or not isinstance(mark.get("shard"), list):
            if Path(folder).exists():
                raise GatherError(f"{folder} is not a shard's folder (it has no {SHARD_FILE})")
            absent.append(Path(folder))
            continue
        shards.append(Shard(Path(folder), mark))
    if not shards:
        raise GatherError("none of the folders given is a shard's (`grader batch --shard K/N`)")
    first = shards[0]
    for shard in shards[1:]:
        if shard.count != first.count:
            raise GatherError(
                f"{shard.folder} is a shard of {shard.count} but {first.folder} of "
                f"{first.count}: gather the shards of one split"
            )
        for key in AGREED:
            if shard.mark.get(key) != first.mark.get(key):
                raise GatherError(
                    f"{shard.folder} and {first.folder} differ in {key} "
                    f"({_short(shard.mark.get(key))} and {_short(first.mark.get(key))}): they "
                    "are not shards of one batch; rerun the odd one with the others' options"
                )
    by_index: dict[int, Shard] = {}
    for shard in shards:
        if shard.index in by_index:
            raise GatherError(
                f"{shard.folder} and {by_index[shard.index].folder} are both shard "
                f"{shard.index}/{shard.count}: give each shard once"
            )
        by_index[shard.index] = shard
    missing = [k for k in range(first.count) if k not in by_index]
    unfinished = [s.index for s in shards if not s.mark.get("finished")]
    if missing or unfinished:
        raise GatherError(_rerun_message(first, missing, unfinished, absent, by_index))
    return [by_index[k] for k in range(first.count)]


def _short(value) -> str:
    text = json.dumps(value, sort_keys=True)
    return text if len(text) <= 60 else text[:57] + "..."


def _rerun_message(first: Shard, missing, unfinished, absent, by_index) -> str:
    lines = []
    if missing:
        lines.append(
            f"missing shards: {', '.join(f'{k}/{first.count}' for k in missing)} (no folder "
            "with their shard.json was given)"
        )
    if unfinished:
        lines.append(
            f"unfinished shards: {', '.join(f'{k}/{first.count}' for k in unfinished)} "
            f"({', '.join(str(by_index[k].folder) for k in unfinished)}: stopped before every "
            "student's result was in)"
        )
    lines.append("Grade just those (a rerun resumes where it stopped), then gather again:")
    for k in sorted([*missing, *unfinished]):
        lines.append("  " + shlex.join(shard_command(first, k, absent)))
    return "\n".join(lines)


def shard_command(known: Shard, index: int, absent: list[Path] = ()) -> list[str]:
    """The command that grades shard `index`: `known`'s own command (its shard.json) with that
    shard's number, into that shard's folder (a folder given but absent whose name ends in the
    number, else `known`'s folder renamed the same way)."""
    words = list(known.mark.get("command") or [])
    if not words:
        seed, count = known.mark["seed"], known.count
        words = ["grader", "batch", "SUBMISSIONS"]
        for exercise in known.mark["exercises"]:
            words += ["-e", exercise]
        words += ["--seed", str(seed), "--shard", f"{known.index}/{count}", "--out", ""]
    out = _shard_folder(known, index, absent)
    if "--out" in words:
        words[words.index("--out") + 1] = str(out)
    else:
        words += ["--out", str(out)]
    words[words.index("--shard") + 1] = f"{index}/{known.count}"
    return words


def _shard_folder(known: Shard, index: int, absent: list[Path]) -> Path:
    for folder in absent:
        if folder.name.endswith(str(index)):
            return folder
    name, suffix = known.folder.name, str(known.index)
    stem = name[: -len(suffix)] if name.endswith(suffix) else name + "-"
    return known.folder.with_name(stem + str(index))


def gather(
    folders: list[Path],
    out: Path,
    submissions: Path | None = None,
    options: BatchOptions | None = None,
) -> GatherSummary:
    """Write `out` from the shards' folders as `grader batch --out OUT` with their seed would
    have; `submissions` (the class's folder) for the outputs that read the students' files
    (similarity, written answers, late work) and to notice students no shard graded."""
    shards = read_shards(folders)
    first = shards[0].mark
    exercises, seed = first["exercises"], first["seed"]
    if first["grader_version"] != grader_version():
        raise GatherError(
            f"the shards were graded by grader {first['grader_version']}, this is "
            f"{grader_version()}: gather with the grader that graded them"
        )
    try:
        records = [get_exercise(e) for e in exercises]
    except UnknownExercise as error:
        raise GatherError(str(error)) from None
    if cases_hash(records, seed) != first["cases_hash"]:
        raise GatherError(
            "this grader draws other cases for the shards' exercises and seed than they were "
            "graded with: gather with the grader that graded them"
        )
    options = options or BatchOptions(exercises, similarity=submissions is not None)
    options.exercises, options.out, options.seed = exercises, Path(out), seed
    if submissions is None and (options.similarity or options.written or options.late):
        raise GatherError(
            "similarity, written answers and late work read the students' files: give "
            "SUBMISSIONS (or --no-similarity)"
        )

    owner = _owners(shards)
    _check_signing(shards)
    students: list[Student] | None = None
    summary = GatherSummary(seed, sorted(owner), out=Path(out))
    if submissions is not None:
        try:
            students = discover(Path(submissions))
        except (FileNotFoundError, NoStudents) as error:
            raise GatherError(str(error)) from None
        count = shards[0].count
        for student in students:
            if student.id not in owner:
                summary.ungraded.setdefault(shard_of(student.id, count), []).append(student.id)
        if summary.ungraded:
            raise GatherError(_ungraded_message(shards[0], summary.ungraded))
        summary.students = [s.id for s in students]
        ghosts = sorted(set(owner) - set(summary.students))
        if ghosts:
            raise GatherError(
                f"graded in a shard but not in {submissions}: {', '.join(map(repr, ghosts[:10]))}"
                " (a result planted in a shard's folder, or a student removed since): "
                + _rerun_words(owner[ghosts[0]])
            )

    _check_out(Path(out), seed)
    for folder in (out, Path(out) / "results", Path(out) / "feedback"):
        Path(folder).mkdir(parents=True, exist_ok=True)
    summary.notes += _late_work(Path(out), options, students or [])
    for student in summary.students:
        _bring(owner[student], student, Path(out), records, exercises, summary)
    state = _read_json(shards[0].folder / STATE_FILE) or {}
    note = state.get("isolation", "")
    _write_json(
        Path(out) / STATE_FILE,
        {
            "seed": seed,
            "exercises": exercises,
            "format": state.get("format"),
            "isolation": note,
            "sandbox": state.get("sandbox"),
        },
    )
    write_class_outputs(Path(out), records, students, note, options, summary)
    return summary


def _rerun_words(shard: Shard) -> str:
    return (
        f"grade shard {shard.index}/{shard.count} again into a fresh folder, then gather:\n  "
        + shlex.join(shard_command(shard, shard.index))
    )


def _owners(shards: list[Shard]) -> dict[str, Shard]:
    """Who each shard graded, checked to be what the split gives: a student listed by two
    shards, or by one they do not belong to, and a result file of no listed student are refused
    with the shard named (a shard's folder can be written by others than the grader)."""
    owner: dict[str, Shard] = {}
    for shard in shards:
        listed = shard.mark.get("students")
        if not isinstance(listed, list) or not all(isinstance(s, str) for s in listed):
            raise GatherError(
                f"{shard.folder}: {SHARD_FILE} lists no students: " + _rerun_words(shard)
            )
        for student in listed:
            if student in owner:
                raise GatherError(
                    f"{student!r} is listed by shard {owner[student].index}/{shard.count} and by "
                    f"shard {shard.index}/{shard.count} ({shard.folder}): a student is graded by "
                    f"one shard only. " + _rerun_words(shard)
                )
            if shard_of(student, shard.count) != shard.index:
                raise GatherError(
                    f"{shard.folder} lists {student!r}, who belongs to shard "
                    f"{shard_of(student, shard.count)}/{shard.count}, not {shard.index}: "
                    + _rerun_words(shard)
                )
            owner[student] = shard
        expected = {files.result_path(shard.folder, student).name for student in listed}
        for path in sorted((shard.folder / "results").glob("*.json")):
            if path.name not in expected:
                raise GatherError(
                    f"{path} is the result of no student {shard.folder}'s shard graded: "
                    + _rerun_words(shard)
                )
    return owner


def _check_signing(shards: list[Shard]) -> None:
    signed = bool(shards[0].mark.get("signed"))
    if signed and files.shard_key() is None:
        raise GatherError(
            f"the shards' results are signed: set {files.SHARD_KEY_VARIABLE} to the key they "
            "were graded with, then gather again"
        )
    if not signed and files.shard_key() is not None:
        raise GatherError(
            f"{files.SHARD_KEY_VARIABLE} is set but the shards' results carry no signature "
            "(graded without the key): grade them with the key, or gather without it"
        )


def _ungraded_message(known: Shard, ungraded: dict[int, list[str]]) -> str:
    lines = ["students in SUBMISSIONS that no shard graded (added after the shards ran):"]
    for index, ids in sorted(ungraded.items()):
        lines.append(f"  shard {index}/{known.count}: {', '.join(sorted(ids))}")
    lines.append("Run their shards again (the others' results are kept), then gather again:")
    for index in sorted(ungraded):
        lines.append("  " + shlex.join(shard_command(known, index)))
    return "\n".join(lines)


def _check_out(out: Path, seed: int) -> None:
    state = _read_json(out / STATE_FILE) or {}
    if "seed" in state and state["seed"] != seed:
        raise GatherError(
            f"{out} holds results graded with --seed {state['seed']}, the shards {seed}: "
            "choose another --out"
        )
    if (out / SHARD_FILE).exists():
        raise GatherError(f"{out} is a shard's folder: gather into a folder of its own")


def _bring(shard: Shard, student: str, out: Path, records, exercises, summary) -> None:
    """A student's result (merged with what `out` kept of other exercises, as a batch merges),
    feedback and page, as the batch that graded them wrote them."""
    document = _read_json(files.result_path(shard.folder, student))
    if not isinstance(document, dict) or "exercises" not in document:
        raise GatherError(
            f"{shard.folder} has no readable result for {student!r}: run shard "
            f"{shard.index}/{shard.count} again:\n  {shlex.join(shard_command(shard, shard.index))}"
        )
    seed = shard.mark["seed"]
    problem = files.signature_problem(shard.folder, student, seed)
    if problem is None and document.get("student") != student:
        problem = f"its result is {document.get('student')!r}'s"
    if problem is None and document.get("seed") != seed:
        problem = "its result was graded with another seed than the shard's"
    if problem:
        raise GatherError(f"{shard.folder}, {student!r}: {problem}. " + _rerun_words(shard))
    path = files.result_path(out, student)
    document = gradebook.merge_previous(document, _read_json(path), exercises)
    _write_json(path, document)
    student_feedback.write_feedback(files.feedback_path(out, student), document, records)
    page = files.feedback_path(shard.folder, student).with_suffix(".html")
    if page.is_file():
        shutil.copyfile(page, files.feedback_path(out, student).with_suffix(".html"))
    summary.graded.append(student)
    if not document.get("final", True):
        summary.not_final.append(student)
