"""Grade one Gradescope submission and write results.json in Gradescope's schema.

Run by the `run_autograder` of `grader release gradescope`. Public checks are visible at once;
hidden checks (fresh seed, recorded in the output) are shown after the grades are published.
Whatever happens, a results file is written: a crash of the grading itself gives score 0 and
says so.
"""

from __future__ import annotations

import argparse
import json
import secrets
import traceback
from pathlib import Path

from grader import i18n
from grader.engine.grading import grade
from grader.i18n import _
from grader.instructor.batch import BatchError, BatchOptions, require_sandbox
from grader.instructor.gradebook import atomic_write
from grader.instructor.submissions import FORBIDDEN_PACKAGES, find_exercise_file, scan
from grader.records import get_exercise


def results_for(
    submission: Path, exercises: list[str], seed: int, root: Path, unsandboxed: bool = False
) -> dict:
    """Grade `submission`; everything under `root` (Gradescope's /autograder: the kit with its
    solutions, the results folder) is out of the submitted code's reach."""
    limits = BatchOptions(exercises).limits()
    state = require_sandbox(unsandboxed, "--unsandboxed to `grader release gradescope`")
    policy = {"protected": [str(root.resolve())]} if state["complete"] else None
    tests, lines = [], [_("Hidden-check seed: {seed}", seed=seed)]
    for exercise_id in exercises:
        record = get_exercise(exercise_id)
        found = find_exercise_file(submission, record.file)
        path, problem = found.path, found.problem
        flags = scan(path) if path else []
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
                    {
                        "name": f"{record.id} {part.name}",
                        "score": 0.0,
                        "max_score": float(part.points),
                        "output": problem,
                        "visibility": "visible",
                    }
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
            tests.append(
                {
                    "name": f"{record.id}: attempts the sandbox refused (instructor only)",
                    "score": 0.0,
                    "max_score": 0.0,
                    "output": ", ".join(f"{k} x{n}" for k, n in sorted(result.refused.items())),
                    "visibility": "hidden",
                }
            )
        for part in result.parts:
            public = [c for c in part.checks if not c.hidden and not c.passed]
            hidden = [c for c in part.checks if c.hidden and not c.passed]
            output = "\n".join(f"{c.name}: {c.message}" for c in public[:5])
            if hidden and not public:
                output = _(
                    "{count} hidden checks failed (details after grades are published)",
                    count=len(hidden),
                )
            tests.append(
                {
                    "name": f"{record.id} {part.name}",
                    "score": part.score,
                    "max_score": part.max_score,
                    "status": part.status,
                    "output": output or _("passed"),
                    "visibility": "visible",
                }
            )
            if hidden:
                tests.append(
                    {
                        "name": _("{id} {part} (hidden checks)", id=record.id, part=part.name),
                        "score": 0.0,
                        "max_score": 0.0,
                        "output": "\n".join(f"{c.name}: {c.message}" for c in hidden[:5]),
                        "visibility": "after_published",
                    }
                )
    return {
        "score": float(sum(t["score"] for t in tests)),
        "output": "\n".join(lines),
        "tests": tests,
    }


def write_results(path: Path, results: dict) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write(path, json.dumps(results, indent=1, ensure_ascii=False))


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--root", type=Path, default=Path("/autograder"))
    args = parser.parse_args(argv)
    results_path = args.root / "results" / "results.json"
    try:
        config = json.loads((args.root / "source" / "gradescope.json").read_text())
        # The language of the release (`grader --lang zh release gradescope`).
        i18n.use(config.get("lang") or i18n.DEFAULT)
        results = results_for(
            args.root / "submission",
            config["exercises"],
            secrets.randbelow(2**31),
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
