"""Grade a whole class: each student's exercise in a forked process of its own (its parts one
after another, see grader.sandbox.processes), results written as they come, so an interrupted run
resumes where it stopped.

Plain functions; `grader batch` is a thin layer over `run_batch`. With a shard (`--shard K/N`)
it grades that shard's students only and marks its folder (shard.json); `write_class_outputs`,
the class-wide step, then runs in `grader gather` (grader.instructor.gather).
"""

from __future__ import annotations

import hashlib
import itertools
import json
import os
import secrets
import shutil
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from grader import sandbox
from grader.engine import fresh_models
from grader.engine.cases import make_cases, save_cases
from grader.engine.judging import cannot_load, judge_part_or_fail
from grader.engine.references import LiveReference, default_reference
from grader.engine.results import ExerciseResult, PartResult
from grader.grading import output_cap_mb, part_jobs, refused_counts, unloadable
from grader.i18n import N_, _, tr
from grader.instructor import files
from grader.instructor.course.shards import shard_of
from grader.instructor.course.submissions import (
    FORBIDDEN_PACKAGES,
    NoStudents,
    Student,
    UnsafeSubmission,
    discover,
    find_exercise_file,
    fingerprint,
    scan,
    sharing_a_file,
    unpack,
)
from grader.instructor.outputs import gradebook, student_feedback
from grader.instructor.outputs.outcomes import SHARED_FILE
from grader.instructor.outputs.student_page import StudentPage
from grader.instructor.review.written import MergeError, merge_scores
from grader.records import UnknownExercise, get_exercise
from grader.sandbox.processes import Job, run_jobs
from grader.vocabulary import untrusted
from grader.vocabulary.bundle import cases_to_bundle
from grader.vocabulary.protocol import Outcome
from grader.vocabulary.spec import Exercise
from grader.vocabulary.status import Limit
from grader.vocabulary.text import printable
from grader.vocabulary.untrusted import file_stem

# Bump when a change to grading makes earlier per-student results stale.
RESULTS_FORMAT = 1
PUBLIC_SEED = 0
STATE_FILE = "batch.json"
# What marks the output folder of one shard (`grader batch --shard K/N`); `grader gather` reads it.
SHARD_FILE = "shard.json"
# Each concurrent job runs as its own user id, from here up, when the grader runs as root.


class BatchError(RuntimeError):
    """The batch cannot start (bad folder, a seed that contradicts the results already there)."""


@dataclass
class BatchOptions:
    exercises: list[str]
    out: Path = Path("grading-results")
    jobs: int | None = None
    timeout: float | None = None
    memory_mb: int = 2048
    processes: int = 64
    output_mb: int = 4
    threads: int = 256
    disk_mb: int = 256
    seed: int | None = None
    # Run submitted code even where this machine has no sandbox (grader.sandbox.status()).
    unsandboxed: bool = False
    # Report pairs of alike submissions (grader.instructor.review.similarity); never a grade.
    similarity: bool = True
    # Write the written answers' review sheet (grader.instructor.review.written).
    written: bool = False
    # The late policy (grader.instructor.course.late); None: no late penalties.
    late: object | None = None
    # Each student's feedback also as a page with pictures (feedback/<id>.html; needs matplotlib).
    pictures: bool = True
    # Each student's exercises that train nothing in one child (see one_child_per_student).
    one_child: bool = False
    # (K, N): grade only the students of shard K of N (grader.instructor.course.shards), and
    # leave the class-wide outputs to `grader gather`. Needs `seed`.
    shard: tuple[int, int] | None = None
    # The command that runs this batch again (written in shard.json, for gather's reruns).
    command: list[str] | None = None

    def limits(self) -> dict:
        return {
            "memory_mb": self.memory_mb,
            "processes": self.processes,
            "output_mb": self.output_mb,
            "threads": self.threads,
            "disk_mb": self.disk_mb,
        }


def require_sandbox(allowed_without: bool, flag: str = "--unsandboxed") -> dict:
    """This machine's protections; refuses (BatchError) where there is no sandbox, unless the
    instructor said to go on without one."""
    state = sandbox.status()
    if not state["complete"] and not allowed_without:
        raise BatchError(
            sandbox.describe(state)
            + f". Grade on a Linux machine with Landlock, or pass {flag} to run submitted code "
            "without a sandbox (only for submissions you trust)."
        )
    return state


def isolation_note(options: BatchOptions) -> str:
    words = [
        sandbox.describe(),
        f"memory {options.memory_mb} MB",
        f"output {options.output_mb} MB",
    ]
    trains = next((r for r in map(get_exercise, options.exercises) if r.trains), None)
    if trains is not None:
        cap = output_cap_mb(options.output_mb, trains.parts)
        words[-1] += f" ({cap} MB for a lab that trains a model: its report holds the model)"
    return "; ".join(words)


@dataclass
class BatchSummary:
    seed: int
    students: list[str]
    graded: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)
    # Graded only in part: the grader's own machinery failed on some part (a rerun retries).
    not_final: list[str] = field(default_factory=list)
    out: Path = Path()
    # Results of students no longer in SUBMISSIONS, moved to out/removed/.
    removed: list[str] = field(default_factory=list)
    # What the instructor must hear about what this run changed of an earlier one's (a late
    # policy dropped, a review sheet merged into, an export now stale).
    notes: list[str] = field(default_factory=list)


def timeout_too_short(timeout: float | None, records: list[Exercise]) -> str | None:
    """Why `--timeout` would fail every student of a lab that trains a model, or None. Such a
    lab's part trains the student's model (5 to 30 s of a core, longer on a busy machine), and
    the option replaces every exercise's own limit."""
    if timeout is None:
        return None
    short = [r for r in records if r.trains and timeout < r.timeout]
    if not short:
        return None
    return (
        f"--timeout {timeout:g} is shorter than the {max(r.timeout for r in short):g} s that "
        f"{', '.join(r.id for r in short)} gives a part to train the student's model: every "
        "student's lab would time out. Leave --timeout out (each exercise keeps its own "
        "limit), or grade the labs that train a model in a batch of their own"
    )


def run_batch(
    submissions: Path,
    options: BatchOptions,
    on_student: Callable[[str, dict], None] | None = None,
    on_start: Callable[[int, int], None] | None = None,
) -> BatchSummary:
    records = [get_exercise(exercise_id) for exercise_id in options.exercises]
    too_short = timeout_too_short(options.timeout, records)
    if too_short:
        raise BatchError(too_short)
    try:
        everyone = discover(Path(submissions))
    except (FileNotFoundError, NoStudents) as error:
        raise BatchError(str(error)) from None
    students = everyone
    if options.shard is not None:
        if options.seed is None:
            raise BatchError("a shard needs --seed: every shard must draw the same hidden cases")
        index, count = options.shard
        students = [s for s in everyone if shard_of(s.id, count) == index]
    out = Path(options.out)
    protections = require_sandbox(options.unsandboxed)
    out.mkdir(parents=True, exist_ok=True)
    # Late work is the class's, written by `grader gather` for a sharded class.
    late_notes = _late_work(out, options, students) if options.shard is None else []
    seed = _resolve_seed(out, options)
    for folder in (out, out / "results", out / "feedback"):
        folder.mkdir(parents=True, exist_ok=True)
    if hasattr(os, "geteuid") and os.geteuid() == 0:
        out.chmod(0o700)  # the slot users that run submissions cannot enter it
    _write_json(
        out / STATE_FILE,
        {
            "seed": seed,
            "exercises": options.exercises,
            "format": RESULTS_FORMAT,
            "isolation": isolation_note(options),
            "sandbox": protections,
        },
    )

    summary = BatchSummary(seed, [s.id for s in students], out=out, notes=late_notes)
    for folder in files.remove_abandoned_scratch():
        summary.notes.append(
            _("removed the scratch folder of a grader that was killed: {folder}", folder=folder)
        )
    shard_mark = None
    if options.shard is not None:
        shard_mark = _shard_mark(options, records, summary)
        _write_json(out / SHARD_FILE, shard_mark)
    pending = []
    for student in students:
        stamp = _stamp(student, options, seed)
        previous = _read_json(files.result_path(out, student.id))
        if previous and previous.get("stamp") == stamp and previous.get("final", True):
            summary.skipped.append(student.id)
        else:
            pending.append((student, stamp))
    if on_start:
        on_start(len(students), len(summary.skipped))

    if pending:
        references = {r.id: default_reference(r) for r in records}
        for record in records:
            if not isinstance(references[record.id], LiveReference):
                raise BatchError("batch grading draws hidden checks, which needs solutions/")
        policy = None
        if protections["complete"]:
            policy = {"protected": [str(out.resolve()), str(Path(submissions).resolve())]}
        run = _Run(records, references, options, seed, out, summary, on_student, policy)
        # Over the whole class, so that a shard flags a file shared with another shard's student.
        _grade_students(run, pending, sharing_a_file(everyone))

    if shard_mark is not None:
        shard_mark.update(finished=True, not_final=sorted(summary.not_final))
        _write_json(out / SHARD_FILE, shard_mark)
        return summary
    write_class_outputs(out, records, students, isolation_note(options), options, summary)
    return summary


def write_class_outputs(
    out: Path,
    records: list[Exercise],
    students: list[Student] | None,
    note: str,
    options: BatchOptions,
    summary: BatchSummary,
) -> None:
    """What a batch writes about the whole class once every student's result is in
    `out/results`: the written answers' sheet, the similarity report, the gradebook, the JUnit
    file and the report (the students no longer in the class set aside). `grader batch` calls it
    after grading; `grader gather` after bringing the shards' results together. `students` (the
    submissions) may be None only without `written` and `similarity`, which read them."""
    if options.written:
        from grader.instructor.review.written import write_review_sheet

        sheet = write_review_sheet(out, records, students)
        summary.notes += sheet.notes if sheet else []
    if options.similarity:
        from grader.instructor.review.similarity import write_for_batch

        write_for_batch(out, records, students)
    summary.removed = gradebook.set_aside_removed(out, summary.students)
    summary.notes += gradebook.write_all(out, summary.students, records, note, summary.removed)


def grader_version() -> str:
    """The grader's version and its results' format: shards of one class must agree on both."""
    from grader.kit import kit_version

    return f"{kit_version()}+results{RESULTS_FORMAT}"


def cases_hash(records: list[Exercise], seed: int) -> str:
    """A hash of every case (public and hidden) the batch grades with: shards whose hashes
    differ graded different checks, whatever their seeds and versions say."""
    digest = hashlib.sha256()
    for record in records:
        cases = make_cases(record, PUBLIC_SEED, seed)
        for part in record.parts:
            described, arrays = cases_to_bundle(cases[part.name], answer_codes=True)
            head = [record.id, part.name, described]
            digest.update(json.dumps(head, sort_keys=True, default=repr).encode())
            for name in sorted(arrays):
                array = np.ascontiguousarray(arrays[name])
                digest.update(f"{name}:{array.dtype.str}:{array.shape}".encode())
                digest.update(array.tobytes())
    return digest.hexdigest()


def _shard_mark(options: BatchOptions, records, summary: BatchSummary) -> dict:
    """shard.json: what this shard is (gather refuses to mix shards that differ in any of it),
    who it grades, and whether it finished (written false first, true once every student's
    result is in)."""
    index, count = options.shard
    return {
        "shard": [index, count],
        "exercises": options.exercises,
        "seed": summary.seed,
        "grader_version": grader_version(),
        "cases_hash": cases_hash(records, summary.seed),
        "limits": {**options.limits(), "timeout": options.timeout},
        "students": summary.students,
        "finished": False,
        "not_final": [],
        "command": options.command,
        # Its results carry signatures (files.sign_result): gather then needs the key.
        "signed": files.shard_key() is not None,
    }


def _late_work(out: Path, options: BatchOptions, students: list[Student]) -> list[str]:
    """Each student's lateness under the policy, before grading: a bad roster stops the batch
    before any time is spent."""
    from grader.instructor.course.late import PolicyError, write_late

    try:
        return write_late(out, options.late, students)
    except PolicyError as error:
        raise BatchError(str(error)) from None


def _resolve_seed(out: Path, options: BatchOptions) -> int:
    state = _read_json(out / STATE_FILE) or {}
    if options.seed is not None:
        if "seed" in state and state["seed"] != options.seed:
            raise BatchError(
                f"{out} holds results graded with --seed {state['seed']}; rerun with that seed "
                "to resume, or choose another --out for a new run"
            )
        return options.seed
    return state.get("seed", secrets.randbelow(2**31))


def _stamp(student: Student, options: BatchOptions, seed: int) -> str:
    """What a stored result was graded from; a different stamp means grade again."""
    return f"{RESULTS_FORMAT}:{seed}:{','.join(options.exercises)}:{fingerprint(student)}"


@dataclass
class _Run:
    """What every student of one batch is graded with, and where the results go."""

    records: list[Exercise]
    references: dict  # exercise id -> its reference (grader.engine.references)
    options: BatchOptions
    seed: int
    out: Path
    summary: BatchSummary
    on_student: Callable[[str, dict], None] | None
    policy: dict | None  # the sandbox's (None: not sandboxed)
    # Filled as the batch goes: exercise id -> part name -> cases, case files, expected outputs.
    cases: dict = field(default_factory=dict)
    case_files: dict = field(default_factory=dict)
    expected: dict = field(default_factory=dict)
    one_child: bool = False  # see one_child_per_student

    @property
    def seeds(self) -> tuple[int, int]:
        return (PUBLIC_SEED, self.seed)

    def timeout(self, record: Exercise) -> float:
        return self.options.timeout or record.timeout


def _grade_students(run: _Run, pending: list[tuple[Student, str]], shared: set[str]) -> None:
    """Plan every student (while the zygote starts), then run the references and the students'
    exercises in one go: a student's result is written once its parts and every reference are
    in."""
    # The grader's alone (mkdtemp's 0700): a child reads its cases and its submission before
    # it becomes a user of its own, and reaches its folder through its own mount namespace.
    scratch = files.new_scratch()
    if run.policy is not None:  # a child reads its own inputs only, by name
        run.policy = {**run.policy, "protected": [*run.policy["protected"], str(scratch.resolve())]}
    records, references, seeds = run.records, run.references, run.seeds
    try:
        run.cases = {r.id: references[r.id].cases(r, seeds) for r in records}
        run.case_files = {r.id: _save_cases(scratch, r, run.cases[r.id]) for r in records}
        run.one_child = one_child_per_student(len(pending), run.options.jobs, run.options.one_child)
        plans, jobs = {}, []
        for number, (student, stamp) in enumerate(pending):
            plans[student.id] = _plan_student(run, student, stamp, scratch / f"s{number}", jobs)
        for student_id in shared & set(plans):
            plans[student_id].flags.append(SHARED_FILE)
        owner = {job.key: plan for plan in plans.values() for job in plan.jobs.values()}

        reference_of = {}
        for record in records:
            key = f"reference-{record.id}"
            job = references[record.id].job(record, seeds, scratch, run.cases[record.id], key=key)
            if job:
                reference_of[key] = (record, job)
            else:  # remembered from an earlier run in this process
                run.expected[record.id] = references[record.id].expected(
                    record, seeds, run.cases[record.id], None
                )
        waiting = [plan for plan in plans.values() if not plan.waiting]

        def finish_ready():
            """Write the results of every student whose parts are in, once all references are."""
            if len(run.expected) == len(records):
                while waiting:
                    plan = waiting.pop(0)
                    _finish(run, plan)
                    shutil.rmtree(plan.home, ignore_errors=True)

        def done(job: Job, outcome: Outcome):
            if job.key in reference_of:  # a failing reference stops the batch (GraderError)
                record = reference_of[job.key][0]
                run.expected[record.id] = references[record.id].expected(
                    record, seeds, run.cases[record.id], outcome
                )
            else:
                plan = owner[job.key]
                plan.outcomes[job.key] = outcome
                plan.waiting.discard(job.key)
                if not plan.waiting:
                    waiting.append(plan)
            finish_ready()

        if reference_of or jobs:
            references_jobs = [job for _, job in reference_of.values()]
            run_jobs(
                references_jobs + jobs,
                run.options.jobs,
                on_done=done,
                scratch=scratch,
                follow_up=fresh_models.follow_up,
            )
        finish_ready()
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


@dataclass
class _Plan:
    student: Student
    stamp: str
    home: Path = Path()
    flags: list[str] = field(default_factory=list)
    problems: dict[str, str] = field(default_factory=dict)  # exercise id -> why it cannot run
    jobs: dict[str, Job] = field(default_factory=dict)  # job key -> job
    parts: dict[tuple[str, str], str] = field(default_factory=dict)  # (exercise, part) -> key
    waiting: set[str] = field(default_factory=set)
    outcomes: dict[str, Outcome] = field(default_factory=dict)
    # exercise id -> the submitted file as unpacked (out of every child's reach), read to say
    # where an error's code is
    sources: dict[str, Path] = field(default_factory=dict)


def _save_cases(scratch: Path, record, cases) -> dict[str, Path]:
    """Each part's cases, written once for the whole class (every child reads, none writes)."""
    folder = scratch / "cases" / record.id
    folder.mkdir(parents=True, mode=0o755)
    files = {}
    for part in record.parts:
        files[part.name] = folder / f"{part.name}.npz"
        save_cases(files[part.name], cases[part.name])
        files[part.name].chmod(0o600)
    return files


def _plan_student(run: _Run, student: Student, stamp: str, home: Path, jobs: list[Job]) -> _Plan:
    """Unpack a student's submission and make the jobs of each exercise it has (added to
    `jobs`, the batch's); what cannot run is kept as a problem, with its flag."""
    plan = _Plan(student, stamp, home)
    # `home` is named by number, not by student: a child can read its own memory (forked from
    # the helper, which knows every job's folder) and must not learn classmates' names from it.
    home.mkdir(mode=0o700)
    source = home / "submission"
    try:
        refused = unpack(student, source)
    except UnsafeSubmission as error:
        plan.flags.append("unsafe-submission")
        plan.problems = {record.id: str(error) for record in run.records}
        return plan
    shared_copy = None  # the folder of the one child that runs the exercises training nothing
    for record in run.records:
        found = find_exercise_file(source, record.file, refused)
        problem = found.problem or unloadable(found.path)
        if problem:
            plan.flags.append(("missing-" if found.missing else "unusable-") + record.id)
            plan.problems[record.id] = problem
            continue
        if found.renamed_from:
            plan.flags.append(f"renamed-{record.id}")
        plan.flags.extend(f"{flag}:{record.id}" for flag in scan(found.path))
        plan.sources[record.id] = found.path
        # A copy of the submission for each child, which works (and may write) in it, its parts
        # one after another: one child for all the exercises that train nothing (their files
        # one after another, see grader.sandbox.shared_state), one for each that trains.
        if run.one_child and not record.trains:
            if shared_copy is None:
                shared_copy = home / f"ex{len(jobs)}"
                shutil.copytree(source, shared_copy)
            directory = shared_copy
        else:
            directory = home / f"ex{len(jobs)}"
            shutil.copytree(source, directory)
        mine = part_jobs(
            record.parts,
            directory / found.path.relative_to(source),
            run.case_files[record.id],
            directory,
            timeout=run.timeout(record),
            group=directory.name,
            keys=(f"job{number}" for number in itertools.count(len(jobs))),
            limits=run.options.limits(),
            blocked_imports=FORBIDDEN_PACKAGES,
            sandbox=run.policy,
            origin=source,
        )
        for name, job in mine.items():
            jobs.append(job)
            plan.jobs[job.key] = job
            plan.parts[(record.id, name)] = job.key
            plan.waiting.add(job.key)
    return plan


def one_child_per_student(students: int, parallel: int | None, asked: bool) -> bool:
    """Whether each student's exercises that train nothing run in one child, one file after
    another (`--one-child`): TensorFlow's kernels, warm after the first file, serve the rest, and
    a student pays one start of a child instead of one per exercise; where the class has
    students enough to keep every slot busy (two per slot), so that a small batch still runs
    its exercises side by side. Not by default: files of one process can reach one another
    (a file's code can leave code that a later file runs, a stub then graded on it: the r9 red
    team, tests/heldout_attacks_r9/), which only a process of its own rules out.
    GRADER_ONE_CHILD=on or off decides for every batch (benchmarks/course_bench.py)."""
    forced = os.environ.get("GRADER_ONE_CHILD")
    if forced in ("on", "off"):
        asked = forced == "on"
    return asked and students >= 2 * max(1, parallel or os.cpu_count() or 1)


def _finish(run: _Run, plan: _Plan) -> None:
    """Judge a student's parts, then write their result and feedback (and tell `on_student`)."""
    exercises, flags, refused, grader_errors = [], list(plan.flags), {}, {}
    page = StudentPage(
        run.out / "feedback" / f"{file_stem(plan.student.id)}.html", run.options.pictures
    )
    for record in run.records:
        result = ExerciseResult(record.id, [], submission=plan.student.id, seed=run.seed)
        if record.id in plan.problems:
            problem = printable(plan.problems[record.id])
            result.parts = [cannot_load(part, problem) for part in record.parts]
            exercises.append(result)
            continue
        outcomes = {p.name: plan.outcomes[plan.parts[(record.id, p.name)]] for p in record.parts}
        not_graded = False
        for part in record.parts:
            judged = judge_part_or_fail(
                part,
                run.cases[record.id][part.name],
                run.expected[record.id][part.name],
                outcomes[part.name],
                run.timeout(record),
                source=_readable(plan.sources.get(record.id)),
            )
            result.parts.append(_explain_limits(judged, run.options, record))
            page.observe(
                record,
                part,
                run.cases[record.id][part.name],
                run.expected[record.id][part.name],
                outcomes[part.name],
                judged,
            )
            if judged.grader_error:
                grader_errors[f"{record.id} {part.name}"] = judged.grader_error
                not_graded = True
            if judged.report_refused:
                flags.append(f"malformed-report:{record.id}")
        seen, examples = refused_counts(outcomes.values())
        if seen:
            refused[record.id] = {"counts": seen, "examples": examples}
            flags.extend(f"refused-{kind}:{record.id}" for kind in seen)
        if not_graded:
            flags.append(f"grader-error:{record.id}")
        exercises.append(result)
    document = gradebook.student_document(
        plan.student.id, exercises, flags, run.seed, PUBLIC_SEED, plan.stamp
    )
    document["final"] = not grader_errors
    if grader_errors:
        document["grader_errors"] = grader_errors
    if refused:
        document["refused"] = refused
    path = files.result_path(run.out, plan.student.id)
    document = gradebook.merge_previous(document, _read_json(path), run.options.exercises)
    _write_json(path, document)
    if run.options.shard is not None:
        files.sign_result(run.out, plan.student.id, run.seed)
    student_feedback.write_feedback(
        files.feedback_path(run.out, plan.student.id), document, run.records
    )
    page.write(plan.student.id, run.records, exercises)
    run.summary.graded.append(plan.student.id)
    if grader_errors:
        run.summary.not_final.append(plan.student.id)
    if run.on_student:
        run.on_student(plan.student.id, document)


def _readable(path: Path | None) -> Path | None:
    return path if path is not None and path.is_file() else None


# What a failure that ran into a limit is told, before its own words: the option whose value it
# names, and the words.
LIMIT_WORDS = {
    Limit.MEMORY: ("memory_mb", N_("it ran out of memory: the limit is {value} MB")),
    Limit.PROCESSES: (
        "processes",
        N_("it tried to start too many processes (at most {value} more)"),
    ),
    Limit.OUTPUT: ("output_mb", N_("it printed or wrote more than the {value} MB output cap")),
    Limit.SANDBOX: (
        None,
        N_(
            "the sandbox does not allow that (a new process, a signal to another process, a "
            "network socket, ...)"
        ),
    ),
}


def _explain_limits(part: PartResult, options: BatchOptions, record: Exercise) -> PartResult:
    for check in part.checks:
        if check.limit is not None:
            option, words = LIMIT_WORDS[check.limit]
            value = getattr(options, option) if option else None
            if option == "output_mb":  # the cap its child had (a lab that trains has more)
                value = output_cap_mb(options.output_mb, record.parts)
            check.message = f"{tr(words).format(value=value)} ({check.message})"
    return part


def _read_json(path: Path):
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


def _write_json(path: Path, data) -> None:
    files.atomic_write(path, untrusted.json_text(data, indent=1, sort_keys=True) + "\n")


def merge_into_batch(out: Path, sheet: Path) -> tuple[int, list[str]]:
    """`grader merge`: check and keep the sheet's points, then write the batch's gradebook
    again (grades.csv, results, feedback, report) with them; returns how many were merged and
    what the instructor must be told (an export made before the merge)."""
    out = Path(out)
    try:
        state = json.loads((out / "batch.json").read_text(encoding="utf-8"))
        records = [get_exercise(e) for e in state["exercises"]]
    except (OSError, ValueError, KeyError, UnknownExercise):
        raise MergeError(f"{out} holds no batch (no readable batch.json): give --out") from None
    students = files.students_in(out)
    count = merge_scores(out, sheet, records, students)
    return count, gradebook.write_all(out, students, records, state.get("isolation", ""))
