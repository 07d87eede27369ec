"""Planted submissions, and grading many of them at once.

A planted mistake is a submission with exactly one known mistake, written either as small source
patches of the reference solution (`patched_solution`: a few (old, new) replacements) or as a
whole file. Each exercise's test file lists its planted mistakes in one table (`PLANTED`, made
by its `planted()`), and tests/grader/test_records.py grades every table in ONE grading run per
exercise (`grade_many`: every planted file a submission of its own, all run by one zygote, the
reference's outputs computed once), then checks that each fails the right part with its
mistake named.
"""

from __future__ import annotations

import tempfile
import textwrap
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from grader.engine import fresh_models
from grader.engine.cases import save_cases
from grader.engine.judging import judge_part
from grader.engine.references import default_reference
from grader.engine.results import ExerciseResult
from grader.grading import part_jobs
from grader.instructor.course.stubs import package_dir
from grader.records import get_exercise
from grader.sandbox.processes import run_jobs

HEADER = "import keras\nfrom keras import ops\nimport numpy as np\n\n"


@dataclass(frozen=True)
class Planted:
    """One planted mistake: the whole submitted `source`, the `part` it must fail, the named
    `mistake` the feedback must recognise (None: no name, the phrase only) and a `phrase` (or
    several, each) a failing check's message must contain."""

    part: str
    source: str
    mistake: str | None
    phrase: str | tuple[str, ...]

    @property
    def phrases(self) -> tuple[str, ...]:
        return (self.phrase,) if isinstance(self.phrase, str) else self.phrase

    @property
    def label(self) -> str:
        return f"{self.part}: {self.mistake or self.phrases[0]}"


def from_table(table, header: str = HEADER, make_source=None) -> list[Planted]:
    """Planted mistakes from a table of (part, body, mistake, phrase): the body is the whole
    submission after `header` (dedented), or `make_source(body)` when given."""
    make_source = make_source or (lambda body: header + textwrap.dedent(body))
    return [
        Planted(part, make_source(body), mistake, phrase) for part, body, mistake, phrase in table
    ]


def patched_solution(exercise_id: str, *replacements: tuple[str, str]) -> str:
    """The solution's source with each `old` (which must occur exactly once) replaced."""
    record = get_exercise(exercise_id)
    source = (Path(package_dir("solutions")) / record.file).read_text(encoding="utf-8")
    for old, new in replacements:
        count = source.count(old)
        assert count == 1, f"{record.file}: {old!r} occurs {count} times, not once"
        source = source.replace(old, new)
    return source


def patched(part: str, mistake: str | None, phrase, exercise_id: str, *replacements) -> Planted:
    """A planted mistake made by patching the exercise's solution."""
    return Planted(part, patched_solution(exercise_id, *replacements), mistake, phrase)


def plant(folder: Path, exercise_id: str, *replacements: tuple[str, str]) -> str:
    """Write the patched solution as the exercise's submission in `folder`; return the folder."""
    folder.mkdir(parents=True, exist_ok=True)
    record = get_exercise(exercise_id)
    (folder / record.file).write_text(patched_solution(exercise_id, *replacements), "utf-8")
    return str(folder)


def grade_many(
    exercise_id: str, sources: Mapping[str, tuple[str, list[str]]], folder: Path
) -> dict[str, ExerciseResult]:
    """Grade many submissions of one exercise in one run: `sources` maps a label to (the
    file's source, the parts to grade). Each is a submission of its own (its own child, forked
    from the one zygote), graded on the public cases of seed 0 like `grade`; the reference's
    outputs are those every other test uses (memoised per process)."""
    record = get_exercise(exercise_id)
    reference = default_reference(record)
    cases = reference.cases(record, 0)
    with tempfile.TemporaryDirectory(prefix="attnkit-planted-") as scratch:
        scratch = Path(scratch)
        inputs, expected_dir = scratch / "cases", scratch / "ref"
        inputs.mkdir()
        expected_dir.mkdir()
        case_files = {}
        for part in record.parts:
            case_files[part.name] = inputs / f"cases-{part.name}.npz"
            save_cases(case_files[part.name], cases[part.name])
        jobs, paths = {}, {}
        for index, (label, (source, part_names)) in enumerate(sources.items()):
            submission = folder / f"planted-{index}"
            (submission / "work").mkdir(parents=True)
            paths[label] = submission / record.file
            paths[label].write_text(source, encoding="utf-8")
            jobs[label] = part_jobs(
                [record.part(name) for name in part_names],
                paths[label].resolve(),
                case_files,
                submission / "work",
                timeout=record.timeout,
                group=f"planted-{index}",
                keys=[f"planted-{index}-{name}" for name in part_names],
                module_name=paths[label].stem,
            )
        reference_job = reference.job(record, 0, expected_dir, cases)
        everything = [job for by_part in jobs.values() for job in by_part.values()]
        outcomes = run_jobs(
            ([reference_job] if reference_job else []) + everything,
            follow_up=fresh_models.follow_up,
        )
        expected = reference.expected(record, 0, cases, outcomes.get("reference"))
    results = {}
    for label, by_part in jobs.items():
        result = ExerciseResult(record.id, [], submission=str(paths[label]), seed=0)
        for name, job in by_part.items():
            part = record.part(name)
            result.parts.append(
                judge_part(
                    part,
                    cases[name],
                    expected[name],
                    outcomes[job.key],
                    record.timeout,
                    source=paths[label],
                )
            )
        results[label] = result
    return results
