"""Where expected outputs come from: the solutions run live, or a fixture file shipped with a
student copy of the kit (which has no solutions)."""

from __future__ import annotations

import tempfile
from pathlib import Path

from grader.engine.cases import make_cases, save_cases
from grader.engine.training import expected_output
from grader.i18n import _
from grader.kit import KIT
from grader.sandbox.processes import Job, run_jobs
from grader.vocabulary.bundle import cases_from_bundle, cases_to_bundle, load_bundle, save_bundle
from grader.vocabulary.protocol import (
    FAILURE_FIELDS,
    CaseOutput,
    Outcome,
    answered,
    read_case_outputs,
)
from grader.vocabulary.protocol import failed as failed_report
from grader.vocabulary.spec import TRAIN, Case, Exercise
from grader.vocabulary.status import CaseStatus, RunState

# In a fixture file, the arrays of the reference's answers are those a child would write, under
# this prefix (and each part's under its name).
EXPECTED = "expected/"


class GraderError(RuntimeError):
    """The grader itself cannot grade (no reference, a broken fixture): not the student's fault."""


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

    def _known(self, record, seed, parts):
        """The memoised (cases, expected) that holds `parts` (None: every part), or None."""
        key = self._key(record, seed)
        if key in self._memo:
            return self._memo[key]
        return self._memo.get(key + (tuple(parts),)) if parts else None

    def job(
        self, record, seed, workdir: Path, cases, key: str = "reference", parts=None
    ) -> Job | None:
        """The child that runs the solution on the cases of `parts` (names; None: every part),
        or None when their outputs are known already or none is needed."""
        if self._known(record, seed, parts) is not None:
            return None
        path = workdir / f"cases-{key}.npz"
        run = _run_by_reference(record, cases, parts)
        if not run:
            return None
        save_cases(path, run)
        return Job(
            key,
            self.directory / record.file,
            path,
            workdir,
            timeout=300.0,
            module_name="reference_solution",
        )

    def expected(self, record, seed, cases, outcome: Outcome | None, parts=None):
        """The expected outputs of `parts` (None: every part), by part name."""
        known = self._known(record, seed, parts)
        if known is not None:
            return known[1]
        everything = _run_by_reference(record, cases, parts)
        try:
            if not everything:
                outputs = []
            elif outcome is None or outcome.state != RunState.FINISHED:
                raise ValueError(outcome.problem if outcome else _("it did not run"))
            elif outcome.meta.get("import_error"):
                raise ValueError(str(outcome.meta["import_error"]))
            else:
                outputs = read_case_outputs(outcome, len(everything))
        except ValueError as error:
            raise GraderError(f"the reference solution could not run: {error}") from error
        failed = [
            (c, o)
            for c, o in zip(everything, outputs, strict=True)
            if (o.status != CaseStatus.OK) != bool(c.raises) or o.exception != c.raises
        ]
        if failed:
            case, output = failed[0]
            if case.raises and output.status == CaseStatus.OK:
                raise GraderError(
                    f"the reference solution did not raise {case.raises} on {case.target}, "
                    f"{case.label}"
                )
            raise GraderError(
                f"the reference solution failed on {case.target}, {case.label}: "
                f"{output.exception}: {output.message} ({output.where})"
            )
        expected, answered = {}, iter(outputs)
        for part in _chosen(record, parts):
            expected[part.name] = [
                expected_output(part, case) if case.kind == TRAIN else next(answered)
                for case in cases[part.name]
            ]
        key = self._key(record, seed) + ((tuple(parts),) if parts else ())
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
                RunState.FINISHED,
                0.0,
                meta={"cases": entry["expected"]},
                arrays={k[len(EXPECTED) :]: v for k, v in own.items() if k.startswith(EXPECTED)},
            )
            expected[part.name] = read_case_outputs(outcome, len(cases[part.name]))
        return cases, expected

    def cases(self, record, seed):
        return self._load(record, seed)[0]

    def job(self, record, seed, workdir, cases, key: str = "reference", parts=None):
        return None

    def expected(self, record, seed, cases, outcome, parts=None):
        return self._load(record, seed)[1]


def _chosen(record: Exercise, parts) -> list:
    return [record.part(name) for name in parts] if parts else list(record.parts)


def _run_by_reference(record: Exercise, cases, parts=None) -> list[Case]:
    """The cases of `parts` (None: every part) whose expected outputs come from running the
    reference solution: all but those that train a model, whose right answers the grader
    computes itself (and whose reference would only cost a second training)."""
    return [
        case for part in _chosen(record, parts) for case in cases[part.name] if case.kind != TRAIN
    ]


def _seeds(seed) -> tuple[int, int | None]:
    return tuple(seed) if isinstance(seed, tuple | list) else (seed, None)


def reference_outputs(records, seed: int, reference: LiveReference) -> dict[str, tuple]:
    """Each record's cases and the reference's outputs for them, by exercise id; the reference
    runs for every record at once (its children in parallel)."""
    cases = {record.id: reference.cases(record, seed) for record in records}
    with tempfile.TemporaryDirectory(prefix="attnkit-fixture-") as workdir:
        jobs = {
            record.id: reference.job(
                record, seed, Path(workdir), cases[record.id], key=f"reference-{record.id}"
            )
            for record in records
        }
        outcomes = run_jobs([job for job in jobs.values() if job])
        return {
            record.id: (
                cases[record.id],
                reference.expected(
                    record, seed, cases[record.id], outcomes.get(f"reference-{record.id}")
                ),
            )
            for record in records
        }


def write_fixture(
    record: Exercise, seed: int, path: str | Path, reference: LiveReference, outputs=None
) -> tuple:
    """Save the cases and the reference's outputs, for copies of the kit without solutions/;
    return them (cases, expected), as `reference_outputs` gives them (pass them as `outputs`
    where they are already known)."""
    cases, expected = outputs or reference_outputs([record], seed, reference)[record.id]
    meta, arrays = {"exercise": record.id, "seed": seed, "parts": {}}, {}
    for part in record.parts:
        described, case_arrays = cases_to_bundle(cases[part.name], answer_codes=True)
        answers: dict = {}
        reports = [
            answered(index, output.output, output.grads, answers)
            if output.status == CaseStatus.OK
            else failed_report(output.status, {key: getattr(output, key) for key in FAILURE_FIELDS})
            for index, output in enumerate(expected[part.name])
        ]
        case_arrays.update({EXPECTED + key: value for key, value in answers.items()})
        meta["parts"][part.name] = {"cases": described, "expected": reports}
        arrays.update({f"{part.name}/{key}": value for key, value in case_arrays.items()})
    save_bundle(path, meta, arrays)
    return cases, expected


FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"


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
