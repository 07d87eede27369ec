"""The commands that grade a class on several machines: `grader slurm`, `grader kubernetes`
and `grader actions-matrix`. They parse and delegate: the plan to grader.instructor.cluster,
the files to grader.instructor.outputs.cluster_jobs."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from grader.cli.common import echo_lines, exercises_option, records_of, timeout_option
from grader.i18n import _


def _cluster_options(command):
    """What the three commands share: the batch's own options, passed on to every shard, and
    the number of shards."""
    options = [
        click.argument(
            "submissions", type=click.Path(exists=True, file_okay=False, path_type=Path)
        ),
        exercises_option,
        click.option(
            "--shards",
            type=click.IntRange(min=1),
            required=True,
            help="Shards the class is split in (one task, pod or job each).",
        ),
        click.option(
            "--out",
            "out_dir",
            type=click.Path(file_okay=False, path_type=Path),
            default=Path("grading-results"),
            show_default=True,
            help="Where the gathered results go (the shards' folders are OUT/shards/shard-K).",
        ),
        click.option(
            "--seed",
            type=click.IntRange(min=0),
            default=None,
            help="Seed of the hidden checks (default: drawn once, written in every shard's "
            "command).",
        ),
        click.option(
            "--jobs",
            "-j",
            type=click.IntRange(min=1),
            default=2,
            show_default=True,
            help="Submissions graded at once in a shard: the cores each task asks for.",
        ),
        timeout_option,
        click.option(
            "--memory",
            "memory_mb",
            type=click.IntRange(min=64),
            default=2048,
            show_default=True,
            help="Memory (MB) a submission may use beyond the grader's own.",
        ),
        click.option("--unsandboxed", is_flag=True, help="Passed on to every shard."),
        click.option("--pictures/--no-pictures", default=True, show_default=True),
        click.option("--similarity/--no-similarity", default=True, show_default=True),
        click.option("--written", is_flag=True, help="Passed on to the gather."),
        click.option(
            "--course",
            type=click.Path(dir_okay=False, exists=True, path_type=Path),
            default=None,
            help="Course file (TOML) with a [late] policy: due date, penalty per day, cap.",
        ),
    ]
    for option in reversed(options):
        command = option(command)
    return command


def _plan(params: dict, submissions_as: str, out_as: str, grader: list[str]):
    from grader.instructor.cluster import ClusterError, plan_from_options

    records = records_of(params["exercise_ids"], False)
    try:
        return plan_from_options(
            params | {"exercise_ids": [r.id for r in records]}, submissions_as, out_as, grader
        )
    except ClusterError as error:
        raise click.ClickException(str(error)) from None


def _relative(path: Path, what: str) -> str:
    if path.is_absolute():
        raise click.BadParameter(
            _("give {what} relative to {root}. Received: {path}", what=what, root="/", path=path)
        )
    return path.as_posix()


def _write_or_print(text: str, path: Path | None, seed: int) -> None:
    if path is None:
        click.echo(text, nl=False)
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    click.echo(_("{path}: written. Hidden-check seed {seed}.", path=path, seed=seed))


@click.command("slurm")
@_cluster_options
@click.option("--submit", is_flag=True, help="Also submit both jobs with sbatch.")
def slurm_command(**params):
    """(Instructors) A Slurm array of `grader batch --shard K/N`, one task per shard, and a
    gather job that waits for it (afterok); written in OUT/slurm/, submitted with --submit."""
    from grader.instructor.cluster import ClusterError, submit_slurm, write_slurm
    from grader.instructor.console import slurm_lines

    out = params["out_dir"]
    plan = _plan(
        params,
        str(params["submissions"].resolve()),
        str(out.resolve()),
        [sys.executable, "-m", "grader"],
    )
    array, gather = write_slurm(plan, out, Path.cwd())
    submitted = None
    if params["submit"]:
        try:
            submitted = submit_slurm(array, gather)
        except ClusterError as error:
            echo_lines(slurm_lines(plan, array, gather, None)[:1])
            raise click.ClickException(str(error)) from None
    echo_lines(slurm_lines(plan, array, gather, submitted))


@click.command("kubernetes")
@_cluster_options
@click.option("--image", required=True, help="A container image with this kit installed.")
@click.option(
    "--claim",
    required=True,
    help="The PersistentVolumeClaim holding SUBMISSIONS and OUT (mounted at /class; give both "
    "relative to it).",
)
@click.option(
    "--manifest",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="Write the two Jobs here [default: print them].",
)
def kubernetes_command(image, claim, manifest, **params):
    """(Instructors) A Kubernetes Indexed Job of `grader batch --shard K/N` (K is
    JOB_COMPLETION_INDEX) and the gather Job to apply once it has completed."""
    from grader.instructor.outputs.cluster_jobs import kubernetes_jobs

    plan = _plan(
        params,
        _relative(params["submissions"], "SUBMISSIONS"),
        _relative(params["out_dir"], "--out"),
        ["grader"],
    )
    _write_or_print(kubernetes_jobs(plan, image, claim), manifest, plan.seed)


@click.command("actions-matrix")
@_cluster_options
@click.option(
    "--workflow",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="Write the workflow here (e.g. .github/workflows/grade.yml) [default: print it].",
)
def actions_matrix_command(workflow, **params):
    """(Instructors) A GitHub Actions workflow grading the class in a matrix, one job per
    shard, and a gather job; for the private repository that holds the kit and the class."""
    from grader.instructor.outputs.cluster_jobs import actions_matrix

    plan = _plan(
        params,
        _relative(params["submissions"], "SUBMISSIONS"),
        _relative(params["out_dir"], "--out"),
        ["grader"],
    )
    _write_or_print(actions_matrix(plan), workflow, plan.seed)


COMMANDS = [slurm_command, kubernetes_command, actions_matrix_command]
