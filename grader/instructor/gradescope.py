"""Grade one Gradescope submission and write results.json in Gradescope's schema.

Run by the `run_autograder` of `grader release gradescope`. The schema (Gradescope's
"Autograder Specifications") allows only `passed` or `failed` as a test's status, so a part's
own status (not implemented, timed out, error) is the first line of its output. Each part is
one test with its real points, hidden checks included; the details of failed hidden checks
are a second row, marked failed, that students see once grades are published.

The hidden-check seed is derived from the assignment and the submission with a key drawn when
the autograder was made (reproducible regrades, unknown to students); it goes to the
instructor's `extra_data` and log, never to the student's text. Whatever happens, a results
file is written: a crash of the grading itself gives score 0 and says so.

The submission's files are never graded where they lie: they are copied (grader.engine.
safe_files: no link followed, links and special files left out and named to the student) into
a fresh folder of the grader's, and the file to grade (a notebook's code, UTF-8 of UTF-16, a
near name's copy) is written there. Gradescope runs this as root; as root the copying and
converting is done by a forked helper that has dropped to the unprivileged user `nobody`
before it opens anything of the submission, so that even a flaw in that code could write only
where `nobody` may (never a `.pth`, never /autograder); where `nobody` cannot enter the folders
on the way to the Python installation (a Python under /root), it gets a mount namespace that
lets it through (grader.sandbox.world.reach_installation), for what it imports late. What
holds only as root: the drop itself (the helper of a non-root run keeps its user, whose rights
the files could be written with anyway).
"""

from __future__ import annotations

import argparse
import hashlib
import hmac
import json
import os
import pwd
import select
import shutil
import signal
import sys
import time
import traceback
from pathlib import Path

from grader import i18n
from grader.engine import safe_files
from grader.engine.judging import grader_failure
from grader.engine.results import ExerciseResult
from grader.grading import grade
from grader.i18n import N_, _, n_, tr
from grader.instructor.batch import BatchError, BatchOptions, require_sandbox
from grader.instructor.course.submissions import (
    FORBIDDEN_PACKAGES,
    ExerciseFile,
    UnsafeSubmission,
    copy_folder,
    find_exercise_file,
    scan,
)
from grader.instructor.files import atomic_write
from grader.records import get_exercise
from grader.vocabulary.status import Status
from grader.vocabulary.untrusted import clean, json_text

# A part's status in words, for the first line of its output (Gradescope knows only two).
STATUS_WORDS = {
    Status.PASSED: N_("passed"),
    Status.FAILED: N_("failed"),
    Status.NOT_IMPLEMENTED: N_("not implemented yet"),
    Status.ERROR: N_("error: the code raised an exception or could not be loaded"),
    Status.TIMEOUT: N_("timed out"),
}
SHOWN_CHECKS = 5
# The user the file helper becomes when the autograder runs as root, and how long it may take.
UNPRIVILEGED_USER = "nobody"
UNPRIVILEGED_FALLBACK_ID = 65534
HELPER_SECONDS = 120


def hidden_seed(key: str, root: Path) -> int:
    """The seed of the hidden checks for the submission under `root` (Gradescope's /autograder).

    From Gradescope's submission_metadata.json (the assignment id and the submission id), so a
    regrade of a submission draws the same hidden cases; where there is no metadata (a local
    run), from the submitted files' contents. Keyed with the autograder's own secret, so the
    seed cannot be computed from what a student knows.
    """
    try:
        metadata = json.loads((root / "submission_metadata.json").read_text("utf-8"))
        identity = f"gradescope:{metadata['assignment']['id']}:{metadata['id']}"
    except (OSError, ValueError, KeyError, TypeError):
        digest = hashlib.sha256()
        submission = root / "submission"
        for entry in safe_files.entries(submission) if submission.is_dir() else []:
            if entry.is_dir:
                continue
            digest.update(entry.path.as_posix().encode() + b"\0")
            try:  # never through a link, never a FIFO: such a file counts by its reason
                digest.update(safe_files.read_under(submission, entry.path) + b"\0")
            except safe_files.RefusedFile as error:
                digest.update(f"refused: {error}".encode() + b"\0")
        identity = f"files:{digest.hexdigest()}"
    mac = hmac.new(key.encode(), identity.encode(), hashlib.sha256).digest()
    return int.from_bytes(mac[:8], "big") % 2**31


# A test's output is shown up to this many characters.
OUTPUT_CHARS = 20_000


def _test(name: str, score: float, max_score: float, output: str, visibility: str) -> dict:
    """One row of `tests`, its status computed from its points (the schema's two words). Its
    texts hold a child's messages: cleaned, and shown by Gradescope as plain text."""
    return {
        "name": clean(name, 500, newlines=False),
        "score": float(score),
        "max_score": float(max_score),
        "status": "passed" if max_score > 0 and score >= max_score else "failed",
        "output": clean(output, OUTPUT_CHARS),
        "output_format": "text",
        "visibility": visibility,
    }


def _listed(checks) -> str:
    lines = [_("{check}: {detail}", check=c.name, detail=c.message) for c in checks[:SHOWN_CHECKS]]
    if len(checks) > SHOWN_CHECKS:
        lines.append(_("... {count} more", count=len(checks) - SHOWN_CHECKS))
    return "\n".join(lines)


def results_for(
    submission: Path, exercises: list[str], seed: int, root: Path, unsandboxed: bool = False
) -> dict:
    """Grade `submission`; everything under `root` (Gradescope's /autograder: the kit with its
    solutions, the results folder) is out of the submitted code's reach."""
    limits = BatchOptions(exercises).limits()
    state = require_sandbox(unsandboxed, "--unsandboxed to `grader release gradescope`")
    policy = {"protected": [str(root.resolve())]} if state["complete"] else None
    tests, lines = [], []
    scratch = safe_files.private_folder("attnkit-gradescope-")
    try:
        files = prepare_files(submission, [get_exercise(e).file for e in exercises], scratch)
        _grade_all(exercises, files, seed, limits, policy, tests, lines)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    return {
        "score": float(sum(t["score"] for t in tests)),
        "output": clean("\n".join(lines), OUTPUT_CHARS) or _("Graded."),
        "output_format": "text",
        "extra_data": {"hidden_seed": seed},
        "tests": tests,
    }


def _grade_all(exercises, files, seed, limits, policy, tests: list, lines: list) -> None:
    for exercise_id in exercises:
        record = get_exercise(exercise_id)
        found = files[record.file]
        path, problem = found.path, found.problem
        flags = scan(path) if path else []
        if found.renamed_from:
            lines.append(
                _(
                    "{found} was graded as {file}: name it exactly {file}",
                    found=found.renamed_from,
                    file=record.file,
                )
            )
        if flags:
            lines.append(
                _(
                    "{file}: flagged for the instructor: {flags}",
                    file=record.file,
                    flags=", ".join(flags),
                )
            )
        if problem:
            for part in record.parts:
                tests.append(
                    _test(
                        f"{record.id} {part.name}",
                        0.0,
                        part.points,
                        _("missing: {problem}", problem=problem)
                        if found.missing
                        else _("not graded: {problem}", problem=problem),
                        "visible",
                    )
                )
            continue
        try:
            result = grade(
                record.id,
                path,
                hidden_seed=seed,
                limits=limits,
                blocked_imports=FORBIDDEN_PACKAGES,
                sandbox=policy,
            )
        except Exception:  # noqa: BLE001 - a bug of ours costs this exercise, not the others
            traceback.print_exc()  # Gradescope's log: the instructor's eyes only
            result = ExerciseResult(
                record.id,
                [grader_failure(part, "see the log") for part in record.parts],
                submission=str(path),
            )
        if result.refused:
            refused = ", ".join(f"{k} x{n}" for k, n in sorted(result.refused.items()))
            tests.append(
                _test(
                    f"{record.id}: attempts the sandbox refused (instructor only)",
                    0.0,
                    0.0,
                    refused,
                    "hidden",
                )
            )
        for part in result.parts:
            name = f"{record.id} {part.name}"
            if part.grader_error:  # Gradescope's log: the instructor's eyes only
                print(f"{name}: the grader failed: {part.grader_error}", file=sys.stderr)
            public = [c for c in part.checks if not c.hidden and not c.passed]
            hidden = [c for c in part.checks if c.hidden and not c.passed]
            output = [tr(STATUS_WORDS[part.status])]
            if part.summary:
                output.append(part.summary)
            if public:
                output.append(_listed(public))
            if hidden:
                output.append(
                    n_(
                        "{count} hidden check failed (details once grades are published)",
                        "{count} hidden checks failed (details once grades are published)",
                        len(hidden),
                        count=len(hidden),
                    )
                )
            tests.append(_test(name, part.score, part.max_score, "\n".join(output), "visible"))
            if hidden:
                # The points are in the row above; this row only carries the details, and is
                # marked failed so that it can never read as a pass.
                row = _test(
                    _("{name} (hidden checks)", name=name),
                    0.0,
                    0.0,
                    _("counted in '{name}' above", name=name) + f"\n{_listed(hidden)}",
                    "after_published",
                )
                tests.append(row)


def prepare_files(submission: Path, filenames: list[str], scratch: Path) -> dict[str, ExerciseFile]:
    """Each exercise file's ExerciseFile, from a copy of `submission` made in `scratch` (a
    fresh folder of the grader's). As root, done by a forked helper that first becomes the
    unprivileged user (see the module's docstring); the copy is root's again afterwards, and
    `scratch` enterable (0711) by the user ids that run the submission."""
    if not hasattr(os, "geteuid") or os.geteuid() != 0:
        return _copy_and_find(submission, filenames, scratch)
    import grader.notebook.extract  # noqa: F401 - imported before the fork, not in the helper
    from grader.sandbox import world

    uid, gid = unprivileged_ids()
    world.available()  # tried here, once: the helper only reads the answer
    top = safe_files.open_folder(submission, follow=True)  # Gradescope's folder, not the student's
    try:
        os.chown(scratch, uid, gid)
        answer = _as_user(
            uid,
            gid,
            lambda: _copy_and_find(top, filenames, scratch, wire=True),
            reach=world.reach_installation,
        )
    finally:
        os.close(top)
    for folder, folders, names in os.walk(scratch):  # root's again, links never followed
        for name in [*folders, *names]:
            os.chown(os.path.join(folder, name), 0, 0, follow_symlinks=False)
    os.chown(scratch, 0, 0)
    scratch.chmod(0o700)  # a child reads its submission before it becomes a user of its own
    if answer is None:
        problem = "the submission's files could not be copied (a grader problem, not yours)"
        return {name: ExerciseFile(None, problem) for name in filenames}
    return {
        name: ExerciseFile(
            Path(item["path"]) if item["path"] else None,
            item["problem"],
            item["missing"],
            item["renamed_from"],
        )
        for name, item in answer.items()
    }


def _copy_and_find(source, filenames: list[str], scratch: Path, wire: bool = False):
    """Copy the submission (a folder or a directory fd) to `scratch`/submission and find each
    exercise's file there; as plain data (`wire`) for the helper's pipe."""
    copy = scratch / "submission"
    try:
        refused = copy_folder(source, copy)
        found = {name: find_exercise_file(copy, name, refused) for name in filenames}
    except UnsafeSubmission as error:
        found = {name: ExerciseFile(None, str(error)) for name in filenames}
    if not wire:
        return found
    return {
        name: {
            "path": str(item.path) if item.path else "",
            "problem": item.problem,
            "missing": item.missing,
            "renamed_from": item.renamed_from,
        }
        for name, item in found.items()
    }


def unprivileged_ids() -> tuple[int, int]:
    """The uid and gid of UNPRIVILEGED_USER (65534, nobody's usual ids, where it is unknown)."""
    try:
        entry = pwd.getpwnam(UNPRIVILEGED_USER)
    except KeyError:
        return UNPRIVILEGED_FALLBACK_ID, UNPRIVILEGED_FALLBACK_ID
    return entry.pw_uid, entry.pw_gid


def _as_user(uid: int, gid: int, work, reach=None):
    """`work()` in a forked child that has become `uid`:`gid` (no supplementary groups)
    first, after `reach(uid)` (a way to the installation: grader.sandbox.world); its JSON
    answer, or None if it failed or took longer than HELPER_SECONDS."""
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:  # the helper: nothing of the submission is touched before the drop
        status = 1
        try:
            os.close(read_end)
            if reach is not None:
                reach(uid)  # the installation, where `uid` could not enter on the way to it
            os.setgroups([])
            os.setgid(gid)
            os.setuid(uid)
            if os.getuid() != uid or os.geteuid() != uid:
                raise PermissionError("the helper is still root")
            data = json.dumps(work()).encode("utf-8")
            while data:
                data = data[os.write(write_end, data) :]
            status = 0
        except BaseException:  # noqa: BLE001 - said in the parent's log, never raised there
            traceback.print_exc()
        finally:
            os._exit(status)
    os.close(write_end)
    chunks, deadline = [], time.monotonic() + HELPER_SECONDS
    try:
        while (left := deadline - time.monotonic()) > 0:
            if not select.select([read_end], [], [], left)[0]:
                break
            chunk = os.read(read_end, 2**16)
            if not chunk:
                break
            chunks.append(chunk)
    finally:
        os.close(read_end)
    if time.monotonic() >= deadline:
        os.kill(pid, signal.SIGKILL)
    _, status = os.waitpid(pid, 0)
    if status != 0:
        return None
    try:
        return json.loads(b"".join(chunks))
    except ValueError:
        return None


def write_results(path: Path, results: dict) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write(path, json_text(results, indent=1))


def main(argv=None) -> int:
    from grader import quiet

    quiet.install()
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--root", type=Path, default=Path("/autograder"))
    args = parser.parse_args(argv)
    results_path = args.root / "results" / "results.json"
    try:
        config = json.loads((args.root / "source" / "gradescope.json").read_text())
        seed = hidden_seed(config["seed_key"], args.root)
        print(f"Hidden-check seed: {seed}")  # Gradescope's log: the instructor's eyes only
        # The language of the release (`grader --lang zh release gradescope`).
        i18n.use(config.get("lang") or i18n.DEFAULT)
        results = results_for(
            args.root / "submission",
            config["exercises"],
            seed,
            args.root,
            unsandboxed=bool(config.get("unsandboxed")),
        )
    except BatchError as error:  # no sandbox here: nothing of the submission ran
        results = {"score": 0.0, "tests": [], "output": _("Not graded: {error}", error=error)}
    except Exception:  # noqa: BLE001 - the student must get a result, whatever broke
        # The traceback is the instructor's (Gradescope's log), never the student's page.
        traceback.print_exc()
        results = {
            "score": 0.0,
            "tests": [],
            "output": _("The autograder failed (not your code); please tell your instructor."),
        }
    write_results(results_path, results)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
