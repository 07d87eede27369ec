"""The one generic checker: grade any exercise record against any submission.

The grader's process makes the cases (NumPy, from a seed), asks a reference for the expected
outputs (the solution run in a child, or a fixture file), runs the submission's parts one after
another in a child process, each part with its own time limit (see grader.sandbox.processes), and
compares everything itself (grader.engine.judging).
"""

from __future__ import annotations

import ast
import tempfile
from pathlib import Path

from grader.engine.cases import save_cases
from grader.engine.judging import judge_part
from grader.engine.references import default_reference
from grader.engine.results import ERROR, CheckResult, ExerciseResult, PartResult
from grader.engine.spec import Exercise
from grader.records import get_exercise
from grader.sandbox.processes import Job, run_jobs

ANSWER_PLACEHOLDER = "<!-- Write your answer below this line. -->"


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
) -> ExerciseResult:
    """Grade one exercise of one submission folder (or file).

    With `hidden_seed`, hidden cases with fresh values and shapes are graded too. `sandbox` is
    the policy of grader.sandbox the submission runs under (None: not sandboxed).
    """
    record = get_exercise(exercise_id)
    chosen = [record.part(name) for name in parts] if parts else list(record.parts)
    submission = Path(submission)
    path = submission if submission.is_file() else submission / record.file
    result = ExerciseResult(record.id, [], submission=str(path), seed=seed)

    problem = unloadable(path)
    if problem:
        result.parts = [
            PartResult(
                p.name, p.points, ERROR, [CheckResult("load", False, problem)], summary=problem
            )
            for p in chosen
        ]
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
        jobs = []
        for part in chosen:
            case_path = inputs / f"cases-{part.name}.npz"
            save_cases(case_path, cases[part.name])
            jobs.append(
                Job(
                    f"part-{part.name}",
                    path.resolve(),
                    case_path,
                    workdir,
                    timeout=timeout or record.timeout,
                    module_name=path.stem,
                    limits=limits,
                    blocked_imports=blocked_imports,
                    sandbox=sandbox,
                    group="submission",
                )
            )
        reference_job = reference.job(record, seed, expected_dir, cases)
        outcomes = run_jobs(([reference_job] if reference_job else []) + jobs, parallel)
        expected = reference.expected(record, seed, cases, outcomes.get("reference"))
    result.for_instructor = written_answers(record, path.parent)
    for part in chosen:
        for kind, count in outcomes[f"part-{part.name}"].refused.items():
            result.refused[kind] = max(result.refused.get(kind, 0), int(count))
        result.parts.append(
            judge_part(
                part,
                cases[part.name],
                expected[part.name],
                outcomes[f"part-{part.name}"],
                timeout or record.timeout,
            )
        )
    return result


def written_answers(record: Exercise, folder: Path) -> list[dict]:
    """Whether each written part was answered in `answers/<id>.md`; never a score."""
    if not record.written:
        return []
    path = folder / "answers" / f"{record.id}.md"
    text = path.read_text(encoding="utf-8", errors="replace") if path.is_file() else ""
    answer = text.split(ANSWER_PLACEHOLDER, 1)[-1].strip()
    status = "written" if answer else "missing"
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
    if not path.is_file():
        return f"{path} not found: the exercise file must be named {path.name}"
    try:
        ast.parse(path.read_bytes(), filename=str(path))
    except SyntaxError as error:
        return f"{path.name}, line {error.lineno}: SyntaxError: {error.msg} — fix it and run again"
    except ValueError as error:
        return f"{path.name} cannot be parsed: {error}"
    return ""
