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
"""

from __future__ import annotations

import argparse
import hashlib
import hmac
import json
import traceback
from pathlib import Path

from grader import i18n
from grader.engine.grading import grade
from grader.engine.status import Status
from grader.engine.untrusted import clean, json_text
from grader.i18n import N_, _, n_, tr
from grader.instructor.batch import BatchError, BatchOptions, require_sandbox
from grader.instructor.gradebook import atomic_write
from grader.instructor.submissions import FORBIDDEN_PACKAGES, find_exercise_file, scan
from grader.records import get_exercise

# A part's status in words, for the first line of its output (Gradescope knows only two).
STATUS_WORDS = {
    Status.PASSED: N_("passed"),
    Status.FAILED: N_("failed"),
    Status.NOT_IMPLEMENTED: N_("not implemented yet"),
    Status.ERROR: N_("error: the code raised an exception or could not be loaded"),
    Status.TIMEOUT: N_("timed out"),
}
SHOWN_CHECKS = 5


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
        for path in sorted(p for p in submission.rglob("*") if p.is_file()):
            digest.update(path.relative_to(submission).as_posix().encode() + b"\0")
            digest.update(path.read_bytes() + b"\0")
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
    for exercise_id in exercises:
        record = get_exercise(exercise_id)
        found = find_exercise_file(submission, record.file)
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
        result = grade(
            record.id,
            path,
            hidden_seed=seed,
            limits=limits,
            blocked_imports=FORBIDDEN_PACKAGES,
            sandbox=policy,
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
    return {
        "score": float(sum(t["score"] for t in tests)),
        "output": clean("\n".join(lines), OUTPUT_CHARS) or _("Graded."),
        "output_format": "text",
        "extra_data": {"hidden_seed": seed},
        "tests": tests,
    }


def write_results(path: Path, results: dict) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write(path, json_text(results, indent=1))


def main(argv=None) -> int:
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
