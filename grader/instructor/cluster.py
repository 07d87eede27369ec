"""A class graded in shards on a cluster: the plan (one seed drawn for every shard, each task's
cores, memory and time from the exercises' limits and the largest shard), the Slurm scripts
written and submitted (`grader slurm`); the Kubernetes and Actions files are made from the same
plan (grader.instructor.outputs.cluster_jobs).
"""

from __future__ import annotations

import secrets
import shutil
import subprocess
from pathlib import Path

from grader.instructor.batch import BatchOptions, timeout_too_short
from grader.instructor.course.shards import shard_of
from grader.instructor.course.submissions import NoStudents, discover
from grader.instructor.outputs.cluster_jobs import (
    ShardPlan,
    slurm_array,
    slurm_gather,
    task_minutes,
)
from grader.records import get_exercise

SLURM_FOLDER = "slurm"


class ClusterError(RuntimeError):
    """The files cannot be made or submitted (no students, no sbatch, sbatch refused)."""


def plan_shards(
    submissions: Path,
    options: BatchOptions,
    shards: int,
    *,
    submissions_as: str,
    out_as: str,
    batch_options: list[str],
    gather_options: list[str],
    grader: list[str],
) -> ShardPlan:
    """The plan of `options` (its exercises, seed, jobs, limits) split in `shards`; the paths
    as the jobs will see them (`submissions_as`, `out_as`). A seed is drawn when none is
    given: every shard must use the same one."""
    if shards < 1:
        raise ClusterError(f"a class is graded in at least 1 shard. Received: shards={shards}")
    try:
        students = discover(Path(submissions))
    except (FileNotFoundError, NoStudents) as error:
        raise ClusterError(str(error)) from None
    sizes = [0] * shards
    for student in students:
        sizes[shard_of(student.id, shards)] += 1
    records = [get_exercise(e) for e in options.exercises]
    too_short = timeout_too_short(options.timeout, records)
    if too_short:  # before any job is written, not once every machine has started
        raise ClusterError(too_short)
    jobs = options.jobs or 2
    return ShardPlan(
        submissions=submissions_as,
        out=out_as,
        exercises=list(options.exercises),
        seed=options.seed if options.seed is not None else secrets.randbelow(2**31),
        shards=shards,
        jobs=jobs,
        memory_mb=options.memory_mb,
        minutes=task_minutes(records, max(sizes), jobs, options.timeout),
        batch_options=batch_options,
        gather_options=gather_options,
        grader=grader,
    )


def write_slurm(plan: ShardPlan, out: Path, workdir: Path) -> tuple[Path, Path]:
    """OUT/slurm/shards.sbatch and gather.sbatch (their logs beside them)."""
    folder = Path(out) / SLURM_FOLDER
    folder.mkdir(parents=True, exist_ok=True)
    logs = str(folder.resolve())
    array, gather = folder / "shards.sbatch", folder / "gather.sbatch"
    _write_key(folder / KEY_FILE)
    array.write_text(slurm_array(plan, str(workdir), logs), encoding="utf-8")
    gather.write_text(slurm_gather(plan, str(workdir), logs), encoding="utf-8")
    return array, gather


# The key the shards sign their results with and the gather checks them by (docs/cluster.md):
# made once, readable by the instructor's user alone; the jobs read it, children never do.
KEY_FILE = "shard.key"


def _write_key(path: Path) -> None:
    import os
    import secrets

    if path.exists():  # a rerun keeps the key the shards already signed with
        return
    descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(descriptor, "w", encoding="ascii") as handle:
        handle.write(secrets.token_hex(32) + "\n")


def submit_slurm(array: Path, gather: Path) -> tuple[str, str]:
    """sbatch the array, then the gather depending on it (afterok); their job ids."""
    if shutil.which("sbatch") is None:
        raise ClusterError(
            "sbatch is not on PATH: submit from a Slurm login node, or run without --submit"
        )
    array_id = _sbatch([str(array)])
    return array_id, _sbatch([f"--dependency=afterok:{array_id}", str(gather)])


def _sbatch(arguments: list[str]) -> str:
    try:
        done = subprocess.run(
            ["sbatch", "--parsable", *arguments],
            capture_output=True,
            text=True,
            check=False,
            timeout=120,
        )
    except (OSError, subprocess.TimeoutExpired) as error:
        raise ClusterError(f"sbatch failed: {error}") from None
    if done.returncode != 0:
        raise ClusterError(f"sbatch {' '.join(arguments)} failed: {done.stderr.strip()}")
    return done.stdout.strip().split(";")[0]


def plan_from_options(params: dict, submissions_as: str, out_as: str, grader: list[str]):
    """The plan of `grader slurm`, `grader kubernetes` and `grader actions-matrix` from their
    options (`params`, as the command parsed them): the batch's own options passed on to every
    shard, the class's (similarity, written answers, course file) to the gather."""
    batch_options = []
    if params["timeout"] is not None:
        batch_options += ["--timeout", f"{params['timeout']:g}"]
    if params["memory_mb"] != 2048:
        batch_options += ["--memory", str(params["memory_mb"])]
    batch_options += ["--unsandboxed"] if params["unsandboxed"] else []
    batch_options += [] if params["pictures"] else ["--no-pictures"]
    gather_options = [] if params["similarity"] else ["--no-similarity"]
    gather_options += ["--written"] if params["written"] else []
    if params["course"] is not None:
        gather_options += ["--course", str(params["course"])]
    options = BatchOptions(
        list(params["exercise_ids"]),
        jobs=params["jobs"],
        timeout=params["timeout"],
        memory_mb=params["memory_mb"],
        seed=params["seed"],
    )
    return plan_shards(
        params["submissions"],
        options,
        params["shards"],
        submissions_as=submissions_as,
        out_as=out_as,
        batch_options=batch_options,
        gather_options=gather_options,
        grader=grader,
    )
