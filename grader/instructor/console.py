"""What an instructor's terminal shows of a batch, a shard, a gather and a cluster plan: the
progress while it runs and the summary after, as lines (text, to stderr or not) that the
command prints. Student ids are anything a folder may be called: shown on one line, escaped."""

from __future__ import annotations

import sys
import time
from collections.abc import Callable

from grader.i18n import _

Line = tuple[str, bool]  # (text, to stderr)


def shown(student: str) -> str:
    """A student id (a folder's name: anything) on one terminal line, without escapes."""
    from grader.vocabulary.untrusted import clean

    return clean(student, 120, newlines=False)


def duration(seconds: float) -> str:
    if seconds < 90:
        return _("{seconds} s", seconds=max(1, round(seconds)))
    if seconds < 90 * 60:
        return _("{minutes} min", minutes=round(seconds / 60))
    return _("{hours:.1f} h", hours=seconds / 3600)


def _outputs(out, similarity: bool, written: bool) -> list[Line]:
    names = ["grades.csv", "report.html", "results/", "feedback/", "junit.xml"]
    names += (["similarity.csv"] if similarity else []) + (
        ["written/review.csv"] if written else []
    )
    return [(f"  {out / name}", False) for name in names]


def batch_lines(summary, submissions, similarity: bool, written: bool) -> list[Line]:
    """`grader batch`'s summary: counts, seed, who the grader failed, notes, what was moved
    away, and the files written."""
    lines = [
        (
            _(
                "{students} students: {graded} graded, {skipped} already graded (unchanged). "
                "Hidden-check seed {seed}.",
                students=len(summary.students),
                graded=len(summary.graded),
                skipped=len(summary.skipped),
                seed=summary.seed,
            ),
            False,
        )
    ]
    if summary.not_final:
        names = ", ".join(shown(s) for s in summary.not_final[:5])
        names += ", …" if len(summary.not_final) > 5 else ""
        text = _(
            "The grader itself failed on some part of {count} students ({names}): not "
            "graded, not their fault; run the same command again to grade them.",
            count=len(summary.not_final),
            names=names,
        )
        lines.append((text, True))
    lines += [(note, True) for note in summary.notes]
    if summary.removed:
        text = _(
            "No longer in {submissions}, so moved to {removed}: {names}",
            submissions=submissions,
            removed=summary.out / "removed",
            names=", ".join(shown(s) for s in summary.removed),
        )
        lines.append((text, True))
    return lines + _outputs(summary.out, similarity, written)


def shard_lines(summary, shard: tuple[int, int]) -> list[Line]:
    """A shard's summary: its students only; the class's outputs come from `grader gather`."""
    from grader.instructor.batch import SHARD_FILE

    lines = [
        (
            _(
                "Shard {index}/{count}: {students} students: {graded} graded, {skipped} already "
                "graded (unchanged). Hidden-check seed {seed}.",
                index=shard[0],
                count=shard[1],
                students=len(summary.students),
                graded=len(summary.graded),
                skipped=len(summary.skipped),
                seed=summary.seed,
            ),
            False,
        )
    ]
    if summary.not_final:
        text = _(
            "The grader itself failed on some part of {count} students: run the same "
            "command again to grade them.",
            count=len(summary.not_final),
        )
        lines.append((text, True))
    lines += [(f"  {summary.out / name}", False) for name in (SHARD_FILE, "results/", "feedback/")]
    text = _("When every shard is done: grader gather OUT-0 … OUT-(N-1) --out OUT SUBMISSIONS")
    return lines + [(text, False)]


def gather_lines(summary, shards: int, similarity: bool, written: bool) -> list[Line]:
    lines = [
        (
            _(
                "{students} students gathered from {shards} shards. Hidden-check seed {seed}.",
                students=len(summary.students),
                shards=shards,
                seed=summary.seed,
            ),
            False,
        )
    ]
    if summary.not_final:
        text = _(
            "The grader itself failed on some part of {count} students ({names}): not "
            "graded, not their fault; run their shards again, then gather again.",
            count=len(summary.not_final),
            names=", ".join(shown(s) for s in summary.not_final[:5]),
        )
        lines.append((text, True))
    lines += [(note, True) for note in summary.notes]
    return lines + _outputs(summary.out, similarity, written)


def slurm_lines(plan, array, gather, submitted: tuple[str, str] | None) -> list[Line]:
    """What `grader slurm` wrote, how to submit it (or what was submitted), and how to go on
    when a task fails."""
    import shlex

    lines = [
        (
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
            ),
            False,
        )
    ]
    array_id = "ARRAY_JOB_ID"
    if submitted is not None:
        array_id, gather_id = submitted
        text = _("submitted: shards {array}, gather {gather}", array=array_id, gather=gather_id)
        lines.append((text, False))
    else:
        lines.append((_("Submit both:"), False))
        lines.append((f"  jobid=$(sbatch --parsable {shlex.quote(str(array))})", False))
        lines.append((f"  sbatch --dependency=afterok:$jobid {shlex.quote(str(gather))}", False))
    text = _(
        "If a task fails, the gather is cancelled. `sacct -j {job}` or `{gather_command}` "
        "names the failed shards; submit just those (each resumes), then the gather again:",
        job=array_id,
        gather_command=shlex.join(plan.gather_words()),
    )
    return lines + [
        (text, False),
        (f"  jobid=$(sbatch --parsable --array=K,L {shlex.quote(str(array))})", False),
        (f"  sbatch --dependency=afterok:$jobid {shlex.quote(str(gather))}", False),
    ]


class BatchProgress:
    """A progress bar with the time left on a terminal; in a log (stderr not a terminal), one
    line per student with the count and the time left, so a long batch is never silent.
    `echo(text)` writes a line to stderr."""

    def __init__(self, enabled: bool, echo: Callable[[str], None]):
        self.enabled = enabled
        self.echo = echo
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
        self.total, self.already, self.began = total, already, time.monotonic()
        if self.bar:
            self.task = self.bar.add_task(_("grading"), total=total, completed=already)
        elif self.enabled and already:
            self.echo(
                _("{already} of {total} already graded (unchanged)", already=already, total=total)
            )

    def student(self, student, document):
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
                when = _("about {time} left", time=duration(seconds))
            self.echo(f"  [{self.saved}/{self.total}] {shown(student)}: {total} · {when}")

    def interrupted(self, out_dir) -> str:
        """Ctrl-C: what is saved (every result is written as it comes)."""
        return _(
            "Interrupted: {saved} of {total} students' results are saved in {out}. "
            "To go on from there, run:",
            saved=self.saved,
            total=self.total if self.total is not None else "?",
            out=out_dir,
        )
