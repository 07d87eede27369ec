"""The one generic checker: grade any exercise record against any submission.

The grader's process makes the cases (NumPy, from a seed), asks a reference for the expected
outputs (the solution run in a child, or a fixture file), runs the submission's parts one after
another in a child process, each part with its own time limit (see grader.sandbox.scheduler), and
compares everything itself (grader.engine.judging).

The batch (grader.instructor.batch) grades a class the same way: it makes its jobs with
`part_jobs` and reads what the sandbox refused with `refused_counts`, so that a part runs and
is counted alike in both.
"""

from __future__ import annotations

import ast
import os
import tempfile
from collections.abc import Iterable, Mapping
from pathlib import Path

from grader.engine import fresh_models
from grader.engine.cases import save_cases
from grader.engine.filenames import near_names, not_utf8
from grader.engine.judging import cannot_load, judge_part_or_fail
from grader.engine.references import default_reference
from grader.engine.results import ExerciseResult
from grader.engine.safe_files import RefusedFile, read_plain_path
from grader.i18n import _
from grader.records import get_exercise
from grader.sandbox.processes import Job, run_jobs
from grader.vocabulary.protocol import refused_counts
from grader.vocabulary.spec import Exercise, Part
from grader.vocabulary.status import Answer

ANSWER_PLACEHOLDER = "<!-- Write your answer below this line. -->"

# A part that trains a model reports every stage's answers to every probe and the trained
# weights (about 6 MB a case for the reference transformer; a model of the size
# grader.engine.fresh_models accepts, more): the grader's own file, which its child writes
# under the same file-size cap as what the submission prints. Its child gets this much more
# room than the output cap, so that the cap keeps bounding what a submission writes and never
# refuses an honest model's report.
TRAINING_RESULT_MB = 64


def output_cap_mb(output_mb: int, parts: Iterable[Part]) -> int:
    """The file-size cap of the child that runs `parts` under an output cap of `output_mb`."""
    trains = any(part.training is not None for part in parts)
    return output_mb + TRAINING_RESULT_MB if trains else output_mb


def _limits_for(limits: dict | None, parts: list[Part]) -> dict | None:
    if not limits or not limits.get("output_mb"):
        return limits
    return dict(limits, output_mb=output_cap_mb(int(limits["output_mb"]), parts))


def grade(
    exercise_id: str,
    submission: str | Path,
    *,
    seed: int = 0,
    reference=None,
    parts: list[str] | None = None,
    timeout: float | None = None,
    parallel: int | None = None,
    hidden_seed: int | None = None,
    limits: dict | None = None,
    blocked_imports: tuple[str, ...] = (),
    sandbox: dict | None = None,
    observe=None,
) -> ExerciseResult:
    """Grade one exercise of one submission folder (or file).

    With `hidden_seed`, hidden cases with fresh values and shapes are graded too. `sandbox` is
    the policy of grader.sandbox the submission runs under (None: not sandboxed).
    `observe(part, cases, expected, outcome, part_result)`, if given, sees each judged part's
    arrays in this process (grader.pictures draws them).
    """
    record = get_exercise(exercise_id)
    chosen = [record.part(name) for name in parts] if parts else list(record.parts)
    submission = Path(submission)
    path = submission if submission.is_file() else submission / record.file
    result = ExerciseResult(record.id, [], submission=str(path), seed=seed)

    problem = unloadable(path)
    if problem:
        result.parts = [cannot_load(part, problem) for part in chosen]
        return result

    reference = reference or default_reference(record)
    seed = seed if hidden_seed is None else (seed, hidden_seed)
    cases = reference.cases(record, seed)
    with tempfile.TemporaryDirectory(prefix="attnkit-grade-") as scratch:
        # Three folders, so that the sandboxed child may write only its own: the cases it
        # reads, the reference's outputs it must never see, and its own outputs.
        inputs, expected_dir, workdir = (Path(scratch) / n for n in ("cases", "ref", "work"))
        for folder in (inputs, expected_dir, workdir):
            folder.mkdir()
        case_files = {}
        for part in chosen:
            case_files[part.name] = inputs / f"cases-{part.name}.npz"
            save_cases(case_files[part.name], cases[part.name])
        jobs = part_jobs(
            chosen,
            path.resolve(),
            case_files,
            workdir,
            timeout=timeout or record.timeout,
            group="submission",
            module_name=path.stem,
            limits=limits,
            blocked_imports=blocked_imports,
            sandbox=sandbox,
        )
        # The reference runs only the parts graded (`--part`).
        graded = [part.name for part in chosen] if parts else None
        reference_job = reference.job(record, seed, expected_dir, cases, parts=graded)
        outcomes = run_jobs(
            ([reference_job] if reference_job else []) + list(jobs.values()),
            parallel,
            follow_up=fresh_models.follow_up,
        )
        expected = reference.expected(record, seed, cases, outcomes.get("reference"), graded)
    result.for_instructor = written_answers(record, path.parent)
    mine = {name: outcomes[job.key] for name, job in jobs.items()}
    result.refused, result.refused_examples = refused_counts(mine.values())
    for part in chosen:
        result.parts.append(
            judge_part_or_fail(
                part,
                cases[part.name],
                expected[part.name],
                mine[part.name],
                timeout or record.timeout,
                source=path,
            )
        )
        if observe is not None:
            observe(part, cases[part.name], expected[part.name], mine[part.name], result.parts[-1])
    return result


def part_jobs(
    parts: Iterable[Part],
    module: Path,
    case_files: Mapping[str, Path],
    workdir: Path,
    *,
    timeout: float,
    group: str,
    keys: Iterable[str] | None = None,
    module_name: str | None = None,
    limits: dict | None = None,
    blocked_imports: tuple[str, ...] = (),
    sandbox: dict | None = None,
    origin: Path | None = None,
) -> dict[str, Job]:
    """The jobs of one submitted exercise, by part name: one per part, all in one `group`, so
    that one child imports the submission once and runs them one after another in `workdir`.
    `keys` name the parts' jobs (by default `part-<name>`; a job's key names its files in
    `workdir` and must be unique in a run); the submission is imported as `module_name` (by
    default its file's name); `origin`, the folder `workdir` was copied from (see Job)."""
    parts = list(parts)
    keys = keys if keys is not None else (f"part-{part.name}" for part in parts)
    limits = _limits_for(limits, parts)
    return {
        part.name: Job(
            key,
            module,
            case_files[part.name],
            workdir,
            timeout=timeout,
            module_name=module_name or module.stem,
            limits=limits,
            blocked_imports=blocked_imports,
            sandbox=sandbox,
            group=group,
            origin=origin,
        )
        for part, key in zip(parts, keys, strict=False)  # keys may run on
    }


def written_answers(record: Exercise, folder: Path) -> list[dict]:
    """Whether each written part was answered in `answers/<id>.md`; never a score."""
    if not record.written:
        return []
    path = folder / "answers" / f"{record.id}.md"
    try:  # never through a link or a FIFO: an answer that is one counts as not written
        text = read_plain_path(path).decode("utf-8", errors="replace")
    except RefusedFile:
        text = ""
    answer = text.split(ANSWER_PLACEHOLDER, 1)[-1].strip()
    status = Answer.WRITTEN if answer else Answer.MISSING
    return [
        {
            "name": part.name,
            "max_score": float(part.points),
            "status": status,
            "answer_file": f"answers/{record.id}.md",
        }
        for part in record.written
    ]


def unloadable(path: Path) -> str:
    """A reason the file cannot even be parsed, or "". Parsing runs none of its code."""
    if not os.path.lexists(path):
        folder = path.parent
        near = near_names(folder, path.name, anywhere=False) if folder.is_dir() else []
        if near:
            return _(
                "{path} not found, but found {found}: rename the file to grade to {name} (the "
                "exercise file must be named exactly that)",
                path=path,
                found=", ".join(p.name for p in near),
                name=path.name,
            )
        return _(
            "{path} not found: the exercise file must be named {name}", path=path, name=path.name
        )
    try:  # never through a link, never a FIFO (grader.engine.safe_files)
        data = read_plain_path(path)
    except RefusedFile as error:
        return str(error)
    encoding = not_utf8(data)
    if encoding == "UTF-16":
        return _(
            "{name} is saved as UTF-16 (Windows PowerShell's `>` and some editors do this); "
            "Python reads UTF-8: save it as UTF-8 and run again",
            name=path.name,
        )
    if encoding:
        return _(
            "{name} is not a text file (it holds NUL bytes): hand in the Python file itself",
            name=path.name,
        )
    try:
        ast.parse(data, filename=str(path))
    except SyntaxError as error:
        if error.lineno is None:
            return _(
                "{name}: SyntaxError: {error} — fix it and run again",
                name=path.name,
                error=error.msg,
            )
        return _(
            "{name}, line {line}: SyntaxError: {error} — fix it and run again",
            name=path.name,
            line=error.lineno,
            error=error.msg,
        )
    except ValueError as error:
        return _("{name} cannot be parsed: {error}", name=path.name, error=error)
    return ""
