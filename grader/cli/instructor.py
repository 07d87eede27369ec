"""The instructor's commands on one machine: `grader batch`, `gather`, `merge`, `export` and
`release`. They parse and delegate: grading to grader.instructor.batch and .gather, what the
terminal shows to grader.instructor.console, exports and releases to their modules."""

from __future__ import annotations

from pathlib import Path

import click

from grader.cli.common import (
    again_words,
    course_option,
    echo_lines,
    exercises_option,
    out_option,
    records_of,
    timeout_option,
    warm_up,
    written_option,
)
from grader.i18n import _


def _shard(value: str | None) -> tuple[int, int] | None:
    from grader.instructor.course.shards import parse_shard

    if value is None:
        return None
    try:
        return parse_shard(value)
    except ValueError as error:
        raise click.BadParameter(str(error), param_hint="--shard") from None


def _read_policy(course):
    from grader.instructor.course.late import PolicyError, read_policy

    try:
        return read_policy(course) if course else None
    except PolicyError as error:
        raise click.ClickException(str(error)) from None


@click.command()
@click.argument("submissions", type=click.Path(exists=True, file_okay=False, path_type=Path))
@exercises_option
@out_option
@click.option(
    "--jobs",
    "-j",
    type=click.IntRange(min=1),
    default=None,
    help="Submissions graded at once [default: the number of cores].",
)
@timeout_option
@click.option(
    "--memory",
    "memory_mb",
    type=click.IntRange(min=64),
    default=2048,
    show_default=True,
    help="Memory (MB) a submission may use beyond the grader's own.",
)
@click.option(
    "--seed",
    type=click.IntRange(min=0),
    default=None,
    help="Seed of the hidden checks (default: drawn, then kept in the results).",
)
@click.option(
    "--format",
    "output_format",
    type=click.Choice(["text", "junit"]),
    default="text",
    show_default=True,
    help="junit: print the JUnit XML instead of the summary.",
)
@click.option(
    "--unsandboxed",
    is_flag=True,
    help="Run submitted code even where this machine has no sandbox (Landlock and seccomp): "
    "only for submissions you trust.",
)
@click.option(
    "--similarity/--no-similarity",
    default=True,
    show_default=True,
    help="Report pairs of unusually alike submissions (report.html, similarity.csv).",
)
@written_option
@course_option
@click.option(
    "--pictures/--no-pictures",
    default=True,
    show_default=True,
    help="Also write each student's feedback as a page with pictures (feedback/<id>.html).",
)
@click.option(
    "--one-child",
    is_flag=True,
    help="Run each student's exercises that train nothing in one process, one file after "
    "another (about a third less CPU for a course): faster, but a file's grade may then depend "
    "on the student's other files. See docs/sandbox.md.",
)
@click.option(
    "--shard",
    metavar="K/N",
    default=None,
    callback=lambda ctx, param, value: _shard(value),
    help="Grade only shard K of N (K from 0 to N-1; needs --seed); `grader gather` joins the "
    "shards' folders into one gradebook. See docs/cluster.md.",
)
def batch(
    submissions,
    exercise_ids,
    out_dir,
    jobs,
    timeout,
    memory_mb,
    seed,
    output_format,
    unsandboxed,
    similarity,
    written,
    course,
    pictures,
    one_child,
    shard,
):
    """(Instructors) Grade a whole class: one folder or .zip per student in SUBMISSIONS, or a
    Canvas or Moodle download as it comes."""
    from grader.instructor import console
    from grader.instructor.batch import BatchError, BatchOptions, run_batch

    records = records_of(exercise_ids, False)
    if shard is not None:
        if seed is None:
            raise click.UsageError(
                _(
                    "--shard needs --seed N: every shard must draw the same hidden cases (`grader "
                    "slurm`, `grader kubernetes` and `grader actions-matrix` draw one for you)."
                )
            )
        for given, name in ((course, "--course"), (written, "--written")):
            if given:
                raise click.UsageError(
                    _(
                        "{option} is about the whole class: give it to `grader gather`, not to "
                        "a shard.",
                        option=name,
                    )
                )
        if output_format == "junit":
            raise click.UsageError(_("a shard writes no junit.xml: `grader gather` does"))
        similarity = False  # across all students: `grader gather` writes it
    options = BatchOptions(
        [r.id for r in records],
        out_dir,
        jobs,
        timeout,
        memory_mb,
        seed=seed,
        unsandboxed=unsandboxed,
        similarity=similarity,
        written=written,
        late=_read_policy(course),
        pictures=pictures,
        one_child=one_child,
        shard=shard,
        command=again_words(click.get_current_context()) if shard else None,
    )
    warm_up()
    progress = console.BatchProgress(output_format == "text", lambda t: click.echo(t, err=True))
    try:
        with progress:
            summary = run_batch(submissions, options, progress.student, progress.start)
    except BatchError as error:
        raise click.ClickException(str(error)) from None
    except KeyboardInterrupt:
        _interrupted(progress, out_dir)
    if shard is not None:
        echo_lines(console.shard_lines(summary, shard))
    elif output_format == "junit":
        click.echo((summary.out / "junit.xml").read_text(encoding="utf-8"), nl=False)
    else:
        echo_lines(console.batch_lines(summary, submissions, similarity, written))


def _interrupted(progress, out_dir: Path) -> None:
    """Ctrl-C: what is saved, and the command that goes on from there (every result is
    written as it comes, so the same command resumes; the seed is spelled out so that it
    does not depend on batch.json)."""
    import shlex

    words = again_words(click.get_current_context(), out_dir)
    click.echo("", err=True)
    click.echo(progress.interrupted(out_dir), err=True)
    click.echo(f"  {shlex.join(words)}", err=True)
    raise click.exceptions.Exit(130)


@click.command("gather")
@click.argument("folders", nargs=-1, required=True, type=click.Path(path_type=Path))
@out_option
@click.option(
    "--similarity/--no-similarity",
    default=None,
    help="Report pairs of unusually alike submissions (report.html, similarity.csv).",
)
@written_option
@course_option
def gather_command(folders, out_dir, similarity, written, course):
    """(Instructors) Join the folders of a class graded in shards (`grader batch --shard K/N`)
    into one: FOLDERS are the shards' OUT-0 … OUT-(N-1), then optionally the class's
    SUBMISSIONS. Writes what `grader batch --out OUT` would."""
    from grader.instructor import console
    from grader.instructor.batch import BatchOptions
    from grader.instructor.gather import GatherError, gather, split_arguments

    late = _read_policy(course)
    try:
        shards, submissions = split_arguments(list(folders))
        if similarity is None:
            similarity = submissions is not None
        options = BatchOptions([], similarity=similarity, written=written, late=late)
        summary = gather(shards, out_dir, submissions, options)
    except GatherError as error:
        raise click.ClickException(str(error)) from None
    echo_lines(console.gather_lines(summary, len(shards), similarity, written))


@click.command("merge")
@click.argument("scores", type=click.Path(dir_okay=False, exists=True, path_type=Path))
@click.option(
    "--out",
    "out_dir",
    type=click.Path(file_okay=False, exists=True, path_type=Path),
    default=Path("grading-results"),
    show_default=True,
    help="The batch's output folder.",
)
def merge_command(scores, out_dir):
    """(Instructors) Add the written answers' points of SCORES (the filled review sheet) to the
    gradebook, results, feedback and report; a rerun of the batch keeps them."""
    from grader.instructor.batch import merge_into_batch
    from grader.instructor.review.written import MergeError

    try:
        count, notes = merge_into_batch(out_dir, scores)
    except MergeError as error:
        raise click.ClickException(str(error)) from None
    click.echo(
        _(
            "{count} written scores merged into {gradebook}",
            count=count,
            gradebook=out_dir / "grades.csv",
        )
    )
    for note in notes:
        click.echo(note, err=True)


@click.command("export")
@click.argument("system", type=click.Choice(["canvas", "moodle", "csv"]))
@click.option(
    "--out",
    "out_dir",
    type=click.Path(file_okay=False, exists=True, path_type=Path),
    default=Path("grading-results"),
    show_default=True,
    help="The batch's output folder (its grades.csv is exported).",
)
@click.option(
    "--roster",
    type=click.Path(dir_okay=False, exists=True, path_type=Path),
    required=True,
    help="CSV mapping submission ids to the LMS's student ids (README: Grades into the LMS).",
)
@click.option("--assignment", default="Attention exercises", show_default=True)
@click.option("--assignment-id", default="", help="Canvas: the assignment's id (else a new one).")
@click.option(
    "--moodle-id",
    type=click.Choice(["email", "idnumber", "username"]),
    default=None,
    help="Moodle: the roster column that identifies a user [default: the first filled one].",
)
def export_command(system, out_dir, roster, assignment, assignment_id, moodle_id):
    """(Instructors) The grade import file of Canvas or Moodle (or a plain CSV), in OUT/lms/."""
    from grader.instructor.course.roster import LmsError, read_roster
    from grader.instructor.outputs.lms import export_grades
    from grader.instructor.reviewed import refresh_if_reviewed

    for note in refresh_if_reviewed(out_dir, system):  # issue 46: the review page's scores first
        click.echo(note, err=True)
    try:
        export = export_grades(
            out_dir, read_roster(roster), system, assignment, assignment_id, moodle_id
        )
    except LmsError as error:
        raise click.ClickException(str(error)) from None
    click.echo(_("{path}: {count} students", path=export.path, count=len(export.exported)))
    for line in export.problems():
        click.echo(_("  not in the file: {line}", line=line), err=True)
    for line in export.notes():
        click.echo(line, err=True)


@click.group()
def release():
    """(Instructors) Copies of the kit: for students, a Gradescope autograder, a workflow."""


@release.command("student")
@click.argument("destination", type=click.Path(file_okay=False, path_type=Path))
def release_student_command(destination):
    """A kit without solutions (public fixtures instead) in DESTINATION."""
    from grader.instructor.course.release import ReleaseError, release_student

    try:
        release_student(destination)
    except ReleaseError as error:
        raise click.ClickException(str(error)) from None
    click.echo(_("{path}: stubs, grader and fixtures; no solutions, no answers", path=destination))


@release.command("gradescope")
@click.argument("target", type=click.Path(dir_okay=False, path_type=Path))
@click.option(
    "--exercise",
    "-e",
    "exercise_ids",
    multiple=True,
    help="Exercise to grade (repeat for several) [default: all].",
)
@click.option(
    "--unsandboxed",
    is_flag=True,
    help="Run submitted code even where this machine has no sandbox (Landlock and seccomp): "
    "only for submissions you trust.",
)
def release_gradescope_command(target, exercise_ids, unsandboxed):
    """A Gradescope autograder zip (setup.sh, run_autograder) in TARGET."""
    from grader.instructor.course.release import ReleaseError, release_gradescope

    records = records_of(exercise_ids, not exercise_ids)
    try:
        release_gradescope(target, [r.id for r in records], unsandboxed)
    except ReleaseError as error:
        raise click.ClickException(str(error)) from None
    click.echo(
        _(
            "{path}: upload it as the autograder of a Gradescope programming assignment",
            path=target,
        )
    )


@release.command("actions")
@exercises_option
@click.option(
    "--out",
    "out_file",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="Write the workflow here (e.g. .github/workflows/classroom.yml) [default: print it].",
)
def release_actions_command(exercise_ids, out_file):
    """A GitHub Actions workflow grading a student repository, one test per part."""
    from grader.instructor.outputs.actions import actions_workflow

    text = actions_workflow(records_of(exercise_ids, False))
    if out_file is None:
        click.echo(text, nl=False)
        return
    out_file.parent.mkdir(parents=True, exist_ok=True)
    out_file.write_text(text, encoding="utf-8")
    click.echo(_("{path}: commit it to the assignment's template repository", path=out_file))


COMMANDS = [batch, gather_command, merge_command, export_command, release]
