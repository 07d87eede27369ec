"""`grader`: a thin Click layer over grader.engine (grading) and grader.instructor (batch,
reports, releases, stubs).

Exit codes: 0 every part passed, 1 some part did not, 2 a usage error.
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
from pathlib import Path

import click

from grader.i18n import N_, _, lang_option, localized_group_class, stubs_folder, tr
from grader.records import EXERCISES, UnknownExercise, get_exercise


def _records(ids: tuple[str, ...], everything: bool):
    if everything:
        return list(EXERCISES.values())
    if not ids:
        raise click.UsageError(_("Name an exercise to check (`grader list` shows them), or --all."))
    try:
        return [get_exercise(exercise_id) for exercise_id in ids]
    except UnknownExercise as error:
        raise click.UsageError(str(error)) from None


def _submission(value: str) -> Path:
    """A folder (or file) as given; the kit's own `exercises` / `solutions` from anywhere."""
    from grader.instructor.course.stubs import package_dir

    path = Path(value)
    if value.rstrip("/") == "exercises":  # the stubs of the language in use (exercises/zh)
        path = stubs_folder(path if path.exists() else package_dir("exercises"))
    if path.exists():
        return path
    if value.rstrip("/") in ("exercises", "solutions"):
        return package_dir(value.rstrip("/"))
    raise click.BadParameter(
        _("{value!r} does not exist: give the folder that holds your exercise files", value=value),
        param_hint="--submission",
    )


def warm_up() -> None:
    """Start the grading helper early; a GRADER_START_METHOD it cannot follow is a usage error."""
    from grader.sandbox.platforms import StartMethodError
    from grader.sandbox.processes import warm_up as start_helper

    try:
        start_helper()
    except StartMethodError as error:
        raise click.UsageError(str(error)) from None


exercises_option = click.option(
    "--exercise",
    "-e",
    "exercise_ids",
    multiple=True,
    required=True,
    help="Exercise to grade (repeat for several).",
)
timeout_option = click.option(
    "--timeout",
    type=click.FloatRange(min=0, min_open=True),
    default=None,
    help="Seconds each part may run (default: the exercise's own limit).",
)


@click.group(cls=localized_group_class(), context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="attnkit")
@lang_option
def main():
    """Grade the attention chapter's exercises: outputs and gradients, with feedback."""
    from grader import quiet

    quiet.install()


@main.command("list")
def list_exercises():
    """List the exercises with their points."""
    width = max(len(record.id) for record in EXERCISES.values())
    for record in EXERCISES.values():
        click.echo(
            _(
                "{id}  {points:>4g} pts  {title}  [{section}]",
                id=record.id.ljust(width),
                points=record.max_score,
                title=tr(record.title),
                section=tr(record.section),
            )
        )


@main.command()
@click.argument("exercise_id")
def show(exercise_id):
    """Explain one exercise: the task, the file to edit, the parts and points."""
    from grader.report import render_show

    click.echo(render_show(_records((exercise_id,), False)[0]))


@main.command()
@click.argument("exercise_ids", nargs=-1)
@click.option("--all", "everything", is_flag=True, help="Check every exercise.")
@click.option(
    "--submission",
    default=None,
    help="Folder with your exercise files [default: the current folder when it holds the "
    "exercise's file, else the kit's exercises/].",
)
@click.option(
    "--format",
    "output_format",
    type=click.Choice(["text", "json"]),
    default="text",
    show_default=True,
    help="json: one result object per exercise, one per line.",
)
@click.option("--verbose", "-v", is_flag=True, help="List every check, passed or not.")
@click.option(
    "--seed",
    type=click.IntRange(min=0),
    default=0,
    show_default=True,
    help="Seed of the check cases.",
)
@timeout_option
@click.option("--part", "parts", multiple=True, help="Grade only this part (repeatable).")
@click.option(
    "--html",
    "html_path",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="Also write one self-contained HTML page of the results, with pictures.",
)
@click.option(
    "--results",
    "results_path",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="Keep the results in this file: a later check of the same files (same exercise, seed "
    "and limit) reports from it instead of grading again. The first grades every part, even "
    "with --part (a workflow's steps, one per part, then grade once).",
)
def check(
    exercise_ids,
    everything,
    submission,
    output_format,
    verbose,
    seed,
    timeout,
    parts,
    html_path,
    results_path,
):
    """Grade your exercise files against the reference: outputs and gradients."""
    records = _records(exercise_ids, everything)
    given = _submission(submission) if submission is not None else None
    named = [Path(value) for value in exercise_ids if Path(value).is_file()]
    if given is None and len(named) == 1 and len(records) == 1:  # `grader check exercises/ex8_2.py`
        # That very file, whatever it is called (`ex8_2 (1).py` beside an `ex8_2.py`), or
        # the notebook named.
        own = named[0].name == records[0].file
        given = named[0] if named[0].suffix == ".ipynb" or not own else named[0].parent
    for name in parts:
        if len(records) != 1 or name not in [p.name for p in records[0].parts]:
            known = ", ".join(p.name for r in records for p in r.parts)
            raise click.BadParameter(
                _("no part {name!r}; parts: {known}", name=name, known=known), param_hint="--part"
            )
    if results_path is None:
        warm_up()  # with --results the work may be graded already: the helper starts if not

    from grader import sandbox, saved
    from grader.engine.references import GraderError
    from grader.grading import grade
    from grader.report import render

    color = None if sys.stdout.isatty() and not os.environ.get("NO_COLOR") else False
    protections = sandbox.status()
    policy = {} if protections["complete"] else None
    if policy is None:
        click.echo(
            _(
                "note: {protections}; your code runs with your own rights.",
                protections=sandbox.describe(protections),
            ),
            err=True,
        )
    from grader.instructor.course.submissions import FORBIDDEN_PACKAGES, scan

    all_passed, page = True, None
    if html_path is not None:
        from grader.notebook.html import HtmlPage

        page = HtmlPage(html_path)
    for record in records:
        chosen = given
        if chosen is None:
            form = _exercise_file(record)
            chosen = form.path
            if form.other_edited is not None:
                click.echo(_other_edited(record, form), err=True)
        try:
            with _module_folder(record, chosen) as folder:
                key = saved.work_key(record.id, folder, seed, timeout) if results_path else ""
                kept = saved.read(results_path, record.id, key) if results_path else None
                if kept is not None:
                    result, flags = kept
                else:
                    # Imports of the kit's own answers are blocked as `grader batch` blocks
                    # them, so that the score here is the score there.
                    result = grade(
                        record.id,
                        folder,
                        seed=seed,
                        timeout=timeout,
                        parts=None if results_path else parts or None,
                        sandbox=policy,
                        blocked_imports=FORBIDDEN_PACKAGES,
                        observe=page.observer() if page else None,
                    )
                    path = Path(result.submission)
                    flags = scan(path) if path.is_file() else []
                    if results_path:
                        _keep(results_path, result, key, flags)
        except GraderError as error:
            raise click.ClickException(str(error)) from None
        if results_path and parts:
            result.parts = [p for p in result.parts if p.name in parts]
        if chosen.suffix == ".ipynb":
            result.submission = str(chosen)
        all_passed &= result.passed
        if output_format == "json":
            click.echo(json.dumps(result.to_dict() | _flagged(flags), ensure_ascii=False))
        else:
            again = _again_command(record.id, submission, parts, seed, timeout)
            click.echo(
                render(record, result, verbose=verbose, color=color, again=again), color=color
            )
            for flag in flags:
                words = tr(FLAG_WORDS.get(flag.split("-")[0], ""))
                click.echo(_("batch flag: {flag}: {words}", flag=flag, words=words), err=True)
        if page:
            page.add(record, result)
    if page:
        page.write()
        click.echo(_("{path}: the results with pictures", path=html_path), err=True)
    sys.exit(0 if all_passed else 1)


def _keep(path: Path, result, key: str, flags: list[str]) -> None:
    from grader import saved

    try:
        saved.write(path, result, key, flags)
    except OSError as error:
        click.echo(
            _(
                "could not keep the results in {path} ({error}): the next check grades again",
                path=path,
                error=error.strerror or error,
            ),
            err=True,
        )


# What `grader batch` flags, as `grader check` tells the student.
FLAG_WORDS = {
    "imports": N_(
        "your instructor's grading blocks this import, so those parts score 0 there "
        "(and here): write the code yourself"
    ),
    "opens": N_("your file names the solutions folder; your instructor sees this flag"),
}


def _flagged(flags: list[str]) -> dict:
    return {"flags": flags} if flags else {}


def _exercise_file(record):
    """The file `grader check` and `grader watch` grade when none is named, whatever the
    language and however the files were written (a grader.notebook.edited.Chosen): in the
    current folder, its `.py` file or notebook, the one edited where both lie there (a student
    in the kit's exercises/, where Jupyter runs); else, of the kit's exercise files
    (`exercises/` and `exercises/zh/`, each as a `.py` file and as a notebook), the one edited.

    The untouched stubs share one code (in other words), so the edited file is the one whose
    code differs from the code most of them share, found without file times: a fresh clone
    (GitHub Actions' checkout) writes every file at once, in no telling order. None edited:
    the language's own `.py` file, which grades the same. Several edited: the last edited."""
    from grader.instructor.course.stubs import package_dir
    from grader.notebook.edited import Chosen, edited_form, kit_forms, stub_shape

    notebook = Path(record.file).with_suffix(".ipynb").name
    here, here_notebook = Path.cwd() / record.file, Path.cwd() / notebook
    kit = package_dir("exercises")
    own = stubs_folder(kit) / record.file
    if (
        here.is_file()
        and here_notebook.is_file()
        and Path.cwd().resolve()
        not in (
            kit.resolve(),
            (kit / "zh").resolve(),
        )
    ):
        return edited_form(here, here_notebook, record.file, kit)
    if here.is_file() != here_notebook.is_file():
        return Chosen(here if here.is_file() else here_notebook)
    found = kit_forms(record.file, kit)
    if not found:
        return Chosen(own)
    from grader.notebook.edited import code_shape

    stub = stub_shape(record.file, kit)
    if stub is not None:
        edited = [path for path in found if code_shape(path) != stub]
    else:  # no code most files share (two files that differ): times must say
        shapes = {code_shape(path) for path in found}
        edited = found if len(found) > 1 and len(shapes) > 1 else []
    if not edited:
        return Chosen(own if own.is_file() else found[0])
    edited.sort(key=lambda path: path.stat().st_mtime_ns, reverse=True)
    return Chosen(edited[0], edited[1] if len(edited) > 1 else None)


@contextlib.contextmanager
def _module_folder(record, chosen: Path):
    """The folder to grade `chosen` in (a folder, or an exercise file or notebook): for a
    notebook, a scratch folder holding its code cells as the exercise's module, read as the
    batch reads it, with the written answers beside it."""
    if chosen.suffix != ".ipynb":
        # A file under another name than the exercise's is graded as itself (grade takes one).
        yield chosen.parent if chosen.is_file() and chosen.name == record.file else chosen
        return
    import tempfile

    from grader.engine import safe_files
    from grader.notebook.extract import NotebookError, notebook_code

    with tempfile.TemporaryDirectory(prefix="attnkit-check-") as scratch:
        try:
            code = notebook_code(safe_files.read_plain_path(chosen), chosen.name)
        except (NotebookError, safe_files.RefusedFile) as error:
            raise click.ClickException(str(error)) from None
        safe_files.write_new(Path(scratch), record.file, code.encode("utf-8"))
        answers = chosen.parent / "answers"
        if answers.is_dir() and not answers.is_symlink():
            safe_files.copy_tree(answers, Path(scratch) / "answers")
        yield Path(scratch)


def _other_edited(record, form) -> str:
    return _(
        "note: {graded} and {other} are both edited; {graded} was graded, the newer. To grade "
        "the other: grader check {id} {other}",
        graded=form.path.name,
        other=form.other_edited,
        id=record.id,
    )


def _again_command(exercise_id, submission, parts, seed, timeout) -> str:
    """`grader check` with the student's own options, to run after editing."""
    words = ["grader check", exercise_id]
    if submission is not None:
        words.append(f"--submission {submission}")
    words += [f"--part {name!r}" if " " in name else f"--part {name}" for name in parts]
    if seed:
        words.append(f"--seed {seed}")
    if timeout is not None:
        words.append(f"--timeout {timeout:g}")
    return " ".join(words)


@main.command()
@click.argument("exercise_id")
@click.argument("path", required=False, type=click.Path(dir_okay=False, path_type=Path))
@click.option(
    "--interval",
    type=click.FloatRange(min=0.01),
    default=0.1,
    show_default=True,
    help="Seconds between looks at the file.",
)
def watch(exercise_id, path, interval):
    """Re-grade each time you save the exercise file or notebook (PATH, default
    exercises/<file>); print only what changed."""
    from grader.watch import watch as watch_file

    record = _records((exercise_id,), False)[0]
    if path is None:
        form = _exercise_file(record)
        path = form.path
        if form.other_edited is not None:
            click.echo(_other_edited(record, form), err=True)
    if not path.is_file():
        raise click.BadParameter(_("{path} does not exist", path=path), param_hint="PATH")
    try:
        watch_file(record, path, click.echo, interval)
    except KeyboardInterrupt:
        click.echo(_("stopped"))


# Options that `grader batch` and `grader gather` share.
_written_option = click.option(
    "--written",
    is_flag=True,
    help="Also write the written answers' review sheet (OUT/written/review.csv and .html).",
)
_course_option = click.option(
    "--course",
    type=click.Path(dir_okay=False, exists=True, path_type=Path),
    default=None,
    help="Course file (TOML) with a [late] policy: due date, penalty per day, cap.",
)


@main.command()
@click.argument("submissions", type=click.Path(exists=True, file_okay=False, path_type=Path))
@exercises_option
@click.option(
    "--out",
    "out_dir",
    type=click.Path(file_okay=False, path_type=Path),
    default=Path("grading-results"),
    show_default=True,
)
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
@_written_option
@_course_option
@click.option(
    "--pictures/--no-pictures",
    default=True,
    show_default=True,
    help="Also write each student's feedback as a page with pictures (feedback/<id>.html).",
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
    shard,
):
    """(Instructors) Grade a whole class: one folder or .zip per student in SUBMISSIONS, or a
    Canvas or Moodle download as it comes."""
    from grader.instructor.batch import BatchError, BatchOptions, run_batch
    from grader.instructor.course.late import PolicyError, read_policy

    records = _records(exercise_ids, False)
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
    try:
        late = read_policy(course) if course else None
    except PolicyError as error:
        raise click.ClickException(str(error)) from None
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
        late=late,
        pictures=pictures,
        shard=shard,
        command=_again_words(click.get_current_context()) if shard else None,
    )
    warm_up()
    progress = _BatchProgress(enabled=output_format == "text")
    try:
        with progress:
            summary = run_batch(submissions, options, progress.student, progress.start)
    except BatchError as error:
        raise click.ClickException(str(error)) from None
    except KeyboardInterrupt:
        _interrupted(progress, out_dir)
    if shard is not None:
        _shard_done(summary, shard)
        return
    if output_format == "junit":
        click.echo((summary.out / "junit.xml").read_text(encoding="utf-8"), nl=False)
        return
    click.echo(
        _(
            "{students} students: {graded} graded, {skipped} already graded (unchanged). "
            "Hidden-check seed {seed}.",
            students=len(summary.students),
            graded=len(summary.graded),
            skipped=len(summary.skipped),
            seed=summary.seed,
        )
    )
    if summary.not_final:
        names = ", ".join(_shown(s) for s in summary.not_final[:5])
        names += ", …" if len(summary.not_final) > 5 else ""
        click.echo(
            _(
                "The grader itself failed on some part of {count} students ({names}): not "
                "graded, not their fault; run the same command again to grade them.",
                count=len(summary.not_final),
                names=names,
            ),
            err=True,
        )
    for note in summary.notes:
        click.echo(note, err=True)
    if summary.removed:
        click.echo(
            _(
                "No longer in {submissions}, so moved to {removed}: {names}",
                submissions=submissions,
                removed=summary.out / "removed",
                names=", ".join(_shown(s) for s in summary.removed),
            ),
            err=True,
        )
    names = ["grades.csv", "report.html", "results/", "feedback/", "junit.xml"]
    names += (["similarity.csv"] if similarity else []) + (
        ["written/review.csv"] if written else []
    )
    for name in names:
        click.echo(f"  {summary.out / name}")


def _shard(value: str | None) -> tuple[int, int] | None:
    from grader.instructor.course.shards import parse_shard

    if value is None:
        return None
    try:
        return parse_shard(value)
    except ValueError as error:
        raise click.BadParameter(str(error), param_hint="--shard") from None


def _shard_done(summary, shard: tuple[int, int]) -> None:
    """A shard's summary: its students only; the class's outputs come from `grader gather`."""
    from grader.instructor.batch import SHARD_FILE

    click.echo(
        _(
            "Shard {index}/{count}: {students} students: {graded} graded, {skipped} already "
            "graded (unchanged). Hidden-check seed {seed}.",
            index=shard[0],
            count=shard[1],
            students=len(summary.students),
            graded=len(summary.graded),
            skipped=len(summary.skipped),
            seed=summary.seed,
        )
    )
    if summary.not_final:
        click.echo(
            _(
                "The grader itself failed on some part of {count} students: run the same "
                "command again to grade them.",
                count=len(summary.not_final),
            ),
            err=True,
        )
    for name in (SHARD_FILE, "results/", "feedback/"):
        click.echo(f"  {summary.out / name}")
    click.echo(_("When every shard is done: grader gather OUT-0 … OUT-(N-1) --out OUT SUBMISSIONS"))


def _shown(student: str) -> str:
    """A student id (a folder's name: anything) on one terminal line, without escapes."""
    from grader.vocabulary.untrusted import clean

    return clean(student, 120, newlines=False)


def _interrupted(progress: _BatchProgress, out_dir: Path) -> None:
    """Ctrl-C: what is saved, and the command that goes on from there (every result is
    written as it comes, so the same command resumes; the seed is spelled out so that it
    does not depend on batch.json)."""
    import shlex

    words = _again_words(click.get_current_context(), out_dir)
    click.echo("", err=True)
    click.echo(
        _(
            "Interrupted: {saved} of {total} students' results are saved in {out}. "
            "To go on from there, run:",
            saved=progress.saved,
            total=progress.total if progress.total is not None else "?",
            out=out_dir,
        ),
        err=True,
    )
    click.echo(f"  {shlex.join(words)}", err=True)
    raise click.exceptions.Exit(130)


def _again_words(context: click.Context, out_dir: Path | None = None) -> list[str]:
    """The command line that runs this command again, as the instructor gave it, with the seed
    spelled out (read from OUT's batch.json when there is one) so that it does not depend on
    batch.json."""
    from grader.instructor.batch import STATE_FILE

    words = ["grader", context.info_name]
    for param in context.command.params:
        source = context.get_parameter_source(param.name)
        if param.name not in context.params or param.name == "seed":
            continue  # --lang (not passed on: see below), --seed (added below)
        value = context.params[param.name]
        if source is not click.core.ParameterSource.COMMANDLINE:
            continue
        if isinstance(param, click.Argument):
            words.append(str(value))
        elif param.name == "shard":
            words += [param.opts[0], "{}/{}".format(*value)]
        elif param.is_flag and param.secondary_opts:
            words.append(param.opts[0] if value else param.secondary_opts[0])
        elif param.is_flag:
            words.append(param.opts[0])
        elif param.multiple:
            for item in value:
                words += [param.opts[0], str(item)]
        else:
            words += [param.opts[0], str(value)]
    try:
        seed = json.loads((Path(out_dir) / STATE_FILE).read_text(encoding="utf-8"))["seed"]
    except (OSError, ValueError, KeyError, TypeError):  # TypeError: no out_dir
        seed = context.params.get("seed")
    if seed is not None:
        words += ["--seed", str(seed)]
    if any(
        c.get_parameter_source("lang") is click.core.ParameterSource.COMMANDLINE
        for c in (context, context.parent)
        if c
    ):
        from grader.i18n import language

        words += ["--lang", language()]
    return words


class _BatchProgress:
    """A progress bar with the time left on a terminal; in a log (stderr not a terminal), one
    line per student with the count and the time left, so a long batch is never silent."""

    def __init__(self, enabled: bool):
        self.enabled = enabled
        self.bar = None
        self.task = None
        self.total = None
        self.already = 0
        self.done = 0
        self.began = None

    @property
    def saved(self) -> int:
        return self.already + self.done

    def __enter__(self):
        if self.enabled and sys.stderr.isatty():
            from rich.progress import Progress

            self.bar = Progress(*Progress.get_default_columns(), transient=False)
            self.bar.__enter__()
        return self

    def __exit__(self, *exc):
        if self.bar:
            self.bar.__exit__(*exc)

    def start(self, total, already):
        import time

        self.total, self.already, self.began = total, already, time.monotonic()
        if self.bar:
            self.task = self.bar.add_task(_("grading"), total=total, completed=already)
        elif self.enabled and already:
            click.echo(
                _("{already} of {total} already graded (unchanged)", already=already, total=total),
                err=True,
            )

    def student(self, student, document):
        import time

        self.done += 1
        if self.bar:
            self.bar.advance(self.task)
        elif self.enabled:
            total = f"{document['total']:g}/{document['max_total']:g}"
            left = self.total - self.saved
            if left <= 0:
                when = _("done")
            else:
                seconds = (time.monotonic() - self.began) / self.done * left
                when = _("about {time} left", time=_duration(seconds))
            click.echo(
                f"  [{self.saved}/{self.total}] {_shown(student)}: {total} · {when}", err=True
            )


def _duration(seconds: float) -> str:
    if seconds < 90:
        return _("{seconds} s", seconds=max(1, round(seconds)))
    if seconds < 90 * 60:
        return _("{minutes} min", minutes=round(seconds / 60))
    return _("{hours:.1f} h", hours=seconds / 3600)


@main.command("gather")
@click.argument("folders", nargs=-1, required=True, type=click.Path(path_type=Path))
@click.option(
    "--out",
    "out_dir",
    type=click.Path(file_okay=False, path_type=Path),
    default=Path("grading-results"),
    show_default=True,
)
@click.option(
    "--similarity/--no-similarity",
    default=None,
    help="Report pairs of unusually alike submissions (report.html, similarity.csv).",
)
@_written_option
@_course_option
def gather_command(folders, out_dir, similarity, written, course):
    """(Instructors) Join the folders of a class graded in shards (`grader batch --shard K/N`)
    into one: FOLDERS are the shards' OUT-0 … OUT-(N-1), then optionally the class's
    SUBMISSIONS. Writes what `grader batch --out OUT` would."""
    from grader.instructor.batch import BatchOptions
    from grader.instructor.course.late import PolicyError, read_policy
    from grader.instructor.gather import GatherError, gather, split_arguments

    try:
        late = read_policy(course) if course else None
        shards, submissions = split_arguments(list(folders))
        if similarity is None:
            similarity = submissions is not None
        options = BatchOptions([], similarity=similarity, written=written, late=late)
        summary = gather(shards, out_dir, submissions, options)
    except (GatherError, PolicyError) as error:
        raise click.ClickException(str(error)) from None
    click.echo(
        _(
            "{students} students gathered from {shards} shards. Hidden-check seed {seed}.",
            students=len(summary.students),
            shards=len(shards),
            seed=summary.seed,
        )
    )
    if summary.not_final:
        click.echo(
            _(
                "The grader itself failed on some part of {count} students ({names}): not "
                "graded, not their fault; run their shards again, then gather again.",
                count=len(summary.not_final),
                names=", ".join(_shown(s) for s in summary.not_final[:5]),
            ),
            err=True,
        )
    for note in summary.notes:
        click.echo(note, err=True)
    names = ["grades.csv", "report.html", "results/", "feedback/", "junit.xml"]
    names += (["similarity.csv"] if similarity else []) + (
        ["written/review.csv"] if written else []
    )
    for name in names:
        click.echo(f"  {summary.out / name}")


def _cluster_options(command):
    """What `grader slurm`, `grader kubernetes` and `grader actions-matrix` share: the batch's
    own options, passed on to every shard, and the number of shards."""
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
    """The cluster commands' shared plan (grader.instructor.cluster.plan_shards)."""
    from grader.instructor.batch import BatchOptions
    from grader.instructor.cluster import ClusterError, plan_shards

    records = _records(params["exercise_ids"], False)
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
        [r.id for r in records],
        jobs=params["jobs"],
        timeout=params["timeout"],
        memory_mb=params["memory_mb"],
        seed=params["seed"],
    )
    try:
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
    except ClusterError as error:
        raise click.ClickException(str(error)) from None


def _relative(path: Path, what: str) -> str:
    if path.is_absolute():
        raise click.BadParameter(
            _("give {what} relative to {root}. Received: {path}", what=what, root="/", path=path)
        )
    return path.as_posix()


@main.command("slurm")
@_cluster_options
@click.option("--submit", is_flag=True, help="Also submit both jobs with sbatch.")
def slurm_command(**params):
    """(Instructors) A Slurm array of `grader batch --shard K/N`, one task per shard, and a
    gather job that waits for it (afterok); written in OUT/slurm/, submitted with --submit."""
    import shlex

    from grader.instructor.cluster import ClusterError, submit_slurm, write_slurm

    out = params["out_dir"]
    plan = _plan(
        params,
        str(params["submissions"].resolve()),
        str(out.resolve()),
        [sys.executable, "-m", "grader"],
    )
    array, gather = write_slurm(plan, out, Path.cwd())
    click.echo(
        _(
            "{array}: {shards} array tasks of {cores} cores, {memory} MB and {minutes} min "
            "each; {gather}: the gather. Hidden-check seed {seed}.",
            array=array,
            shards=plan.shards,
            cores=plan.jobs,
            memory=plan.task_memory_mb,
            minutes=plan.minutes,
            gather=gather,
            seed=plan.seed,
        )
    )
    array_id = "ARRAY_JOB_ID"
    if params["submit"]:
        try:
            array_id, gather_id = submit_slurm(array, gather)
        except ClusterError as error:
            raise click.ClickException(str(error)) from None
        click.echo(
            _("submitted: shards {array}, gather {gather}", array=array_id, gather=gather_id)
        )
    else:
        click.echo(_("Submit both:"))
        click.echo(f"  jobid=$(sbatch --parsable {shlex.quote(str(array))})")
        click.echo(f"  sbatch --dependency=afterok:$jobid {shlex.quote(str(gather))}")
    click.echo(
        _(
            "If a task fails, the gather is cancelled. `sacct -j {job}` or `{gather_command}` "
            "names the failed shards; submit just those (each resumes), then the gather again:",
            job=array_id,
            gather_command=shlex.join(plan.gather_words()),
        )
    )
    click.echo(f"  jobid=$(sbatch --parsable --array=K,L {shlex.quote(str(array))})")
    click.echo(f"  sbatch --dependency=afterok:$jobid {shlex.quote(str(gather))}")


@main.command("kubernetes")
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


@main.command("actions-matrix")
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


def _write_or_print(text: str, path: Path | None, seed: int) -> None:
    if path is None:
        click.echo(text, nl=False)
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    click.echo(_("{path}: written. Hidden-check seed {seed}.", path=path, seed=seed))


@main.command("merge")
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


@main.command("export")
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
    from grader.instructor.workbench_cli import refresh_if_reviewed

    for note in refresh_if_reviewed(out_dir):  # issue 46: the review page's scores first
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


@main.group()
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

    records = _records(exercise_ids, not exercise_ids)
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

    text = actions_workflow(_records(exercise_ids, False))
    if out_file is None:
        click.echo(text, nl=False)
        return
    out_file.parent.mkdir(parents=True, exist_ok=True)
    out_file.write_text(text, encoding="utf-8")
    click.echo(_("{path}: commit it to the assignment's template repository", path=out_file))


@main.command()
@click.option(
    "--check",
    "check_only",
    is_flag=True,
    help="Only report stubs and notebooks that differ from their solutions; exit 1 if any.",
)
@click.argument("exercise_ids", nargs=-1)
def stubs(check_only, exercise_ids):
    """(Maintainers) Make exercises/ (stubs and notebooks) and exercises/zh/ from solutions/ (all,
    or the exercises named)."""
    from grader.instructor.course.stubs import MarkerError, sync_stubs, sync_translated_stubs

    try:
        _records(exercise_ids, not exercise_ids)
        changed = sync_stubs(write=not check_only, ids=list(exercise_ids) or None)
        changed += sync_translated_stubs(write=not check_only, ids=list(exercise_ids) or None)
    except MarkerError as error:
        raise click.ClickException(str(error)) from None
    for path in changed:
        click.echo(
            _("{path}: differs from its solution", path=path)
            if check_only
            else _("{path}: written", path=path)
        )
    if not changed:
        click.echo(_("every stub matches its solution"))
    sys.exit(1 if check_only and changed else 0)


@main.command()
@click.argument("exercise_ids", nargs=-1)
@click.option(
    "--out",
    "out_dir",
    type=click.Path(file_okay=False, path_type=Path),
    default=Path("fixtures"),
    show_default=True,
)
@click.option("--seed", type=click.IntRange(min=0), default=0, show_default=True)
def fixtures(exercise_ids, out_dir, seed):
    """(Maintainers) Save check cases and expected results, for a kit without solutions/."""
    from grader.engine.references import GraderError, LiveReference, write_fixture
    from grader.instructor.course.stubs import package_dir

    out_dir.mkdir(parents=True, exist_ok=True)
    for record in _records(exercise_ids, not exercise_ids):
        try:
            write_fixture(
                record, seed, out_dir / f"{record.id}.npz", LiveReference(package_dir("solutions"))
            )
        except GraderError as error:
            raise click.ClickException(str(error)) from None
        click.echo(f"{out_dir / (record.id + '.npz')}: seed {seed}")


# `grader review` (issue 46): its own module, which parses and delegates.
from grader.instructor.workbench_cli import review as _review  # noqa: E402

main.add_command(_review)


if __name__ == "__main__":
    main()
