"""Every training lab's file of the held-out sets (tests/mistakes/*/lab_train_*), graded by
`grader check` as a student would run it: a correct one must keep full marks, a wrong one must
lose the parts its author says it breaks. Prints one line per file and the counts.

    python benchmarks/heldout_training_files.py [--set tests/mistakes/heldout_r6 ...]

Each file trains a model (10-30 s of one core): the whole run takes several minutes.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

KIT = Path(__file__).resolve().parent.parent


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--set", action="append", type=Path, help="a held-out set's folder")
    options = parser.parse_args()
    sets = options.set or sorted(
        p.parent for p in (KIT / "tests" / "mistakes").glob("*/manifest.json")
    )
    kept = lost = wrong = 0
    for folder in sets:
        for entry in json.loads((folder / "manifest.json").read_text(encoding="utf-8")):
            if not entry["file"].startswith("lab_train_"):
                continue
            stem = entry["file"].split("__")[0]
            with tempfile.TemporaryDirectory(prefix="attnkit-heldout-") as scratch:
                shutil.copyfile(folder / entry["file"], Path(scratch) / f"{stem}.py")
                done = subprocess.run(
                    [
                        sys.executable,
                        "-m",
                        "grader.cli",
                        "--lang",
                        "en",
                        "check",
                        entry["exercise"],
                        "--submission",
                        scratch,
                        "--format",
                        "json",
                    ],
                    capture_output=True,
                    text=True,
                    cwd=KIT,
                )
            lines = [line for line in done.stdout.splitlines() if line.startswith("{")]
            result = json.loads(lines[-1]) if lines else {"parts": [], "score": 0, "max_score": 0}
            failed = {p["name"] for p in result["parts"] if p["status"] != "passed"}
            if entry["correct"]:
                good = not failed and result["score"] == result["max_score"] > 0
                kept += good
            else:
                good = set(entry["parts"]) <= failed
                lost += good
            wrong += not good
            first = next(
                (c["message"] for p in result["parts"] for c in p["checks"] if not c["passed"]), ""
            )
            print(
                f"{folder.name}/{entry['file']}: {'correct' if entry['correct'] else 'wrong'}"
                f" {result['score']}/{result['max_score']} {'ok' if good else 'WRONG'} "
                f"| {first[:160]}",
                flush=True,
            )
    print(
        f"correct kept full marks: {kept}; wrong lost their parts: {lost}; not as expected: {wrong}"
    )
    return 1 if wrong else 0


if __name__ == "__main__":
    raise SystemExit(main())
