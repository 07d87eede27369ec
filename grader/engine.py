"""The one generic checker: grade any exercise record against any submission.

The grader's process makes the cases (NumPy, from a seed), asks a reference for the expected
outputs (the solution run in a child, or a fixture file), runs the submission's parts one after
another in a child process, each part with its own time limit (see grader.sandbox.processes), and
compares everything itself.
"""

from __future__ import annotations

import ast
import re
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from grader import KIT, compare
from grader.bundle import cases_from_bundle, cases_to_bundle, load_bundle, save_bundle
from grader.records import get_exercise
from grader.results import (
    ERROR,
    FAILED,
    NOT_IMPLEMENTED,
    PASSED,
    TIMEOUT,
    CheckResult,
    ExerciseResult,
    PartResult,
)
from grader.sandbox.child import NOT_IMPLEMENTED as CASE_NOT_IMPLEMENTED
from grader.sandbox.child import OK
from grader.sandbox.processes import CRASHED, GRADER_FAILED, TIMED_OUT, Job, Outcome, run_jobs
from grader.spec import LAYER, Case, Exercise


class GraderError(RuntimeError):
    """The grader itself cannot grade (no reference, a broken fixture): not the student's fault."""


@dataclass
class CaseOutput:
    status: str
    output: np.ndarray | None = None
    grads: dict[str, np.ndarray] = field(default_factory=dict)
    dtype: str = ""
    exception: str = ""
    message: str = ""
    where: str = ""


def make_cases(record: Exercise, seed: int, hidden_seed: int | None = None):
    """Each part's public cases from `seed`, then hidden ones from `hidden_seed` if given.

    Hidden cases come from the same maker asked for fresh shapes; their labels say "hidden"
    and their feedback never shows expected values.
    """
    cases = {}
    for index, part in enumerate(record.parts):
        cases[part.name] = part.make_cases(np.random.default_rng([seed, index]))
        if hidden_seed is not None:
            extra = part.make_cases(np.random.default_rng([hidden_seed, index, 1]), hidden=True)
            for case in extra:
                case.hidden = True
                case.label = f"hidden, {case.label}"
            cases[part.name] += extra
    return cases


def save_cases(path: Path, cases: list[Case]) -> None:
    described, arrays = cases_to_bundle(cases)
    save_bundle(path, {"cases": described}, arrays)


def read_case_outputs(outcome: Outcome, count: int) -> list[CaseOutput]:
    """Parse a child's report; anything malformed raises ValueError (treated as a crash)."""
    reports = outcome.meta.get("cases")
    if not isinstance(reports, list) or len(reports) != count:
        raise ValueError("the process reported a malformed result")
    outputs = []
    for index, report in enumerate(reports):
        if not isinstance(report, dict) or report.get("status") not in (
            OK,
            CASE_NOT_IMPLEMENTED,
            "error",
        ):
            raise ValueError("the process reported a malformed result")
        text = {key: printable(report.get(key, "")) for key in ("exception", "message", "where")}
        if report["status"] != OK:
            outputs.append(CaseOutput(report["status"], **text))
            continue
        prefix = f"case{index}/grad/"
        outputs.append(
            CaseOutput(
                OK,
                output=outcome.arrays.get(f"case{index}/output"),
                grads={
                    k[len(prefix) :]: v for k, v in outcome.arrays.items() if k.startswith(prefix)
                },
                dtype=str(report.get("output_dtype", "")),
            )
        )
    return outputs


_ANSI = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]")
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f]")


# An absolute path (POSIX or Windows) of two or more folders, not inside a word or a formula.
_PATH = re.compile(r"(?<![\w.])(?:[A-Za-z]:)?(?:[/\\][^\s/\\:'\"<>|,;()\[\]]+){2,}")
_FRAME = re.compile(r'^\s*File "[^"]*", line \d+')


def printable(text, limit: int = 2000) -> str:
    """Text from a child, safe to print and to show a student: no terminal escapes or control
    characters, no traceback frames and no file paths (of the grader's, or anyone's: a file is
    named by its name alone)."""
    return scrub(_CONTROL.sub("", _ANSI.sub("", str(text))))[:limit]


def scrub(text: str) -> str:
    """`text` without traceback frames, and with every absolute path cut to its last name."""
    kept, skip_code = [], False
    for line in text.split("\n"):
        if line.startswith("Traceback (most recent call last)"):
            continue
        if _FRAME.match(line):
            skip_code = True
            continue
        if skip_code and line.startswith("    "):
            skip_code = False
            continue
        skip_code = False
        kept.append(line)
    return _PATH.sub(lambda m: re.split(r"[/\\]", m.group(0))[-1], "\n".join(kept))


class LiveReference:
    """Expected outputs from running the solution file, memoised per exercise, seed and file."""

    _memo: dict[tuple, tuple[dict[str, list[Case]], dict[str, list[CaseOutput]]]] = {}

    def __init__(self, directory: str | Path):
        self.directory = Path(directory)

    def _key(self, record, seed):
        path = self.directory / record.file
        if not path.is_file():
            raise GraderError(f"the reference solution {path} is missing")
        return (record.id, seed, str(path.resolve()), path.stat().st_mtime_ns)

    def cases(self, record, seed):
        """`seed` is the public seed, or a pair (public seed, hidden seed)."""
        key = self._key(record, seed)
        return self._memo[key][0] if key in self._memo else make_cases(record, *_seeds(seed))

    def job(self, record, seed, workdir: Path, cases, key: str = "reference") -> Job | None:
        if self._key(record, seed) in self._memo:
            return None
        path = workdir / f"cases-{key}.npz"
        save_cases(path, [case for part in record.parts for case in cases[part.name]])
        return Job(
            key,
            self.directory / record.file,
            path,
            workdir,
            timeout=300.0,
            module_name="reference_solution",
        )

    def expected(self, record, seed, cases, outcome: Outcome | None):
        key = self._key(record, seed)
        if key in self._memo:
            return self._memo[key][1]
        everything = [case for part in record.parts for case in cases[part.name]]
        try:
            if outcome is None or outcome.state != "finished":
                raise ValueError(outcome.problem if outcome else "it did not run")
            if outcome.meta.get("import_error"):
                raise ValueError(str(outcome.meta["import_error"]))
            outputs = read_case_outputs(outcome, len(everything))
        except ValueError as error:
            raise GraderError(f"the reference solution could not run: {error}") from error
        failed = [(c, o) for c, o in zip(everything, outputs, strict=True) if o.status != OK]
        if failed:
            case, output = failed[0]
            raise GraderError(
                f"the reference solution failed on {case.target}, {case.label}: "
                f"{output.exception}: {output.message} ({output.where})"
            )
        expected, start = {}, 0
        for part in record.parts:
            expected[part.name] = outputs[start : start + len(cases[part.name])]
            start += len(cases[part.name])
        self._memo[key] = (cases, expected)
        return expected


class FixtureReference:
    """Cases and expected outputs read from a fixture file written by `write_fixture`."""

    def __init__(self, path: str | Path):
        self.path = Path(path)

    def _load(self, record, seed):
        if _seeds(seed)[1] is not None:
            raise GraderError("hidden checks need the reference solutions, not a fixture file")
        if not self.path.is_file():
            raise GraderError(f"the fixture file {self.path} is missing")
        meta, arrays = load_bundle(self.path)
        if meta.get("exercise") != record.id or meta.get("seed") != seed:
            raise GraderError(
                f"{self.path} holds exercise {meta.get('exercise')} with seed {meta.get('seed')}"
                f", not exercise {record.id} with seed {seed}"
            )
        cases, expected = {}, {}
        for part in record.parts:
            entry = meta["parts"][part.name]
            prefix = f"{part.name}/"
            own = {k[len(prefix) :]: v for k, v in arrays.items() if k.startswith(prefix)}
            cases[part.name] = cases_from_bundle(entry["cases"], own)
            outcome = Outcome(
                "finished",
                0.0,
                meta={"cases": entry["expected"]},
                arrays={
                    k[len("expected/") :]: v for k, v in own.items() if k.startswith("expected/")
                },
            )
            expected[part.name] = read_case_outputs(outcome, len(cases[part.name]))
        return cases, expected

    def cases(self, record, seed):
        return self._load(record, seed)[0]

    def job(self, record, seed, workdir, cases, key: str = "reference"):
        return None

    def expected(self, record, seed, cases, outcome):
        return self._load(record, seed)[1]


def _seeds(seed) -> tuple[int, int | None]:
    return tuple(seed) if isinstance(seed, tuple | list) else (seed, None)


def write_fixture(record: Exercise, seed: int, path: str | Path, reference: LiveReference) -> None:
    """Save the cases and the reference's outputs, for copies of the kit without solutions/."""
    cases = reference.cases(record, seed)
    with tempfile.TemporaryDirectory(prefix="attnkit-fixture-") as workdir:
        job = reference.job(record, seed, Path(workdir), cases)
        outcome = run_jobs([job])["reference"] if job else None
        expected = reference.expected(record, seed, cases, outcome)
    meta, arrays = {"exercise": record.id, "seed": seed, "parts": {}}, {}
    for part in record.parts:
        described, case_arrays = cases_to_bundle(cases[part.name])
        reports = []
        for index, output in enumerate(expected[part.name]):
            reports.append(
                {"status": OK, "output_dtype": output.dtype, "grads": list(output.grads)}
            )
            case_arrays[f"expected/case{index}/output"] = output.output
            for name, grad in output.grads.items():
                case_arrays[f"expected/case{index}/grad/{name}"] = grad
        meta["parts"][part.name] = {"cases": described, "expected": reports}
        arrays.update({f"{part.name}/{key}": value for key, value in case_arrays.items()})
    save_bundle(path, meta, arrays)


FIXTURES = Path(__file__).resolve().parent / "fixtures"


def default_reference(record: Exercise):
    """This kit's own solutions when it has them, else the fixture shipped with its grader.

    A student copy of the kit (`grader release student`) has no solutions/, only fixtures.
    """
    solutions = KIT / "solutions"
    if (solutions / record.file).is_file():
        return LiveReference(solutions)
    fixture = FIXTURES / f"{record.id}.npz"
    if fixture.is_file():
        return FixtureReference(fixture)
    raise GraderError(
        f"no reference for exercise {record.id}: neither {solutions / record.file} nor {fixture}"
    )


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


ANSWER_PLACEHOLDER = "<!-- Write your answer below this line. -->"


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


GRADER_FAILED_WORDS = (
    "not graded: the grader itself failed here, not your code; it will be graded again"
)


def judge_part(part, cases, expected, outcome: Outcome, timeout: float) -> PartResult:
    if outcome.state == GRADER_FAILED:
        return grader_failure(part, outcome.problem + _instructor_tail(outcome))
    if outcome.state == TIMED_OUT:
        message = (
            f"stopped after {timeout:g} s without finishing: an endless loop, or far too "
            "much work for these small inputs"
        )
        return PartResult(
            part.name,
            part.points,
            TIMEOUT,
            [CheckResult(part.name, False, message)],
            summary=message,
        )
    try:
        if outcome.state == CRASHED:
            raise ValueError(outcome.problem)
        if outcome.meta.get("import_error"):
            info = outcome.meta["import_error"]
            message = _error_words(
                CaseOutput(
                    "error",
                    **{k: printable(info.get(k, "")) for k in ("exception", "message", "where")},
                )
            )
            message = "could not import the file: " + message
            return PartResult(
                part.name,
                part.points,
                ERROR,
                [CheckResult("import", False, message)],
                summary=message,
            )
        received = read_case_outputs(outcome, len(cases))
    except Exception as error:  # noqa: BLE001 - whatever a child reported is its own doing
        if not isinstance(error, ValueError):
            error = ValueError("the process reported a malformed result")
        message = f"crashed: {error}"
        if outcome.log_tail.strip():
            message += "; its last output:\n" + printable(outcome.log_tail.strip()[-600:])
        return PartResult(
            part.name, part.points, ERROR, [CheckResult(part.name, False, message)], summary=message
        )

    checks = []
    for case, want, got in zip(cases, expected, received, strict=True):
        checks.extend(judge_case(part, case, want, got))
    statuses = {got.status for got in received}
    if all(check.passed for check in checks):
        status = PASSED
    elif statuses == {CASE_NOT_IMPLEMENTED} or (
        CASE_NOT_IMPLEMENTED in statuses
        and "error" not in statuses
        and all(c.passed for c in checks if not c.message.startswith("not implemented"))
    ):
        status = NOT_IMPLEMENTED
    elif "error" in statuses:
        status = ERROR
    else:
        status = FAILED
    return PartResult(part.name, part.points, status, checks)


def grader_failure(part, detail: str) -> PartResult:
    """A part the grader could not grade: no score, the student told so, the detail kept for
    the instructor."""
    return PartResult(
        part.name,
        part.points,
        ERROR,
        [CheckResult(part.name, False, GRADER_FAILED_WORDS)],
        summary=GRADER_FAILED_WORDS,
        grader_error=detail or "unknown",
    )


def _instructor_tail(outcome: Outcome) -> str:
    tail = outcome.log_tail.strip()
    return f"; its log ends:\n{tail[-1500:]}" if tail else ""


def judge_case(part, case: Case, want: CaseOutput, got: CaseOutput) -> list[CheckResult]:
    prefix = f"{case.target}: " if len(part.targets) > 1 else ""
    if got.status == CASE_NOT_IMPLEMENTED:
        message = "not implemented yet" + (f" ({got.message})" if got.message else "")
        return [CheckResult(f"{prefix}{case.label}", False, message)]
    if got.status != OK:
        return [CheckResult(f"{prefix}{case.label}", False, _error_words(got))]
    if got.output is None:
        return [CheckResult(f"{prefix}output, {case.label}", False, "no output was reported")]
    hidden = case.hidden
    checks = [
        _check(
            f"{prefix}output, {case.label}",
            compare.difference(want.output, got.output, case, part.mistakes),
            hidden,
        )
    ]
    if case.kind == LAYER:
        dtype_problem = compare.dtype_difference(case, got.dtype)
        checks.append(_check(f"{prefix}dtype, {case.label}", dtype_problem, hidden))
        for name, grad in want.grads.items():
            wrt = name.split(":", 1)[-1]
            found = got.grads.get(name)
            if found is None:
                problem = compare.Difference(f"no gradient with respect to {wrt} came back")
            else:
                problem = compare.gradient_difference(grad, found, case, wrt)
            checks.append(_check(f"{prefix}gradient wrt {wrt}, {case.label}", problem, hidden))
    for prop in part.properties:
        if not prop.targets or case.target in prop.targets:
            broken = prop.check(case, np.asarray(got.output))
            checks.append(
                CheckResult(
                    f"{prefix}{prop.name}, {case.label}",
                    broken is None,
                    broken or "",
                    "property: " + prop.name if broken else None,
                )
            )
    return checks


def _check(name: str, problem: compare.Difference | None, hidden: bool = False) -> CheckResult:
    if problem is None:
        return CheckResult(name, True)
    return CheckResult(name, False, problem.text(reveal=not hidden), problem.mistake)


def _error_words(output: CaseOutput) -> str:
    words = f"{output.exception}: {output.message}" if output.exception else output.message
    return words + (f" [{output.where}]" if output.where else "")
