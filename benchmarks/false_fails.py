"""False fails: a correct submission graded on many hidden seeds must never lose a point.

Every exercise's reference solution (and any other folder of correct submissions given with
--folder) is graded on its public cases plus the hidden cases of `--seeds` hidden seeds at once:
one child run per exercise and folder, whose cases are those of every seed (labelled by seed),
so that 200 seeds cost two child runs per exercise, not 400. A seed false-fails when any check of
its cases fails. Prints one line per exercise and folder, then the total; exits 1 on any false
fail.

    python benchmarks/false_fails.py --seeds 200
    python benchmarks/false_fails.py --seeds 20 --exercise 8-3 --exercise mha
"""

from __future__ import annotations

import argparse
import re
import sys
import time
from pathlib import Path

from grader.engine.cases import make_cases
from grader.engine.references import LiveReference
from grader.grading import grade
from grader.instructor.course.stubs import package_dir
from grader.records import EXERCISES

SEED_LABEL = re.compile(r"hidden seed (\d+), ")


class ManySeeds(LiveReference):
    """The solutions as reference, with the hidden cases of seeds 0 .. `count` - 1 at once."""

    def __init__(self, directory, count: int):
        super().__init__(directory)
        self.count = count

    def _key(self, record, seed):
        return (*super()._key(record, seed), "many seeds", self.count)

    def job(self, record, seed, workdir, cases, key="reference", parts=None):
        job = super().job(record, seed, workdir, cases, key, parts)
        if job is not None:  # every seed's cases in one run: more time than one seed's
            job.timeout *= 1 + self.count
        return job

    def cases(self, record, seed):
        key = self._key(record, seed)
        if key in self._memo:
            return self._memo[key][0]
        everything = make_cases(record, 0)
        for hidden_seed in range(self.count):
            for name, cases in make_cases(record, 0, hidden_seed).items():
                moved = {}  # a hidden case's index in its seed's list -> in everything's
                for index, case in enumerate(cases):
                    if case.hidden:
                        case.label = f"hidden seed {hidden_seed}, {case.label}"
                        moved[index] = len(everything[name])
                        everything[name].append(case)
                for case in cases:  # a variant names its case by index: follow the move
                    if case.hidden and case.variant_of >= 0:
                        case.variant_of = moved[case.variant_of]
        return everything


def false_fails(exercise_id: str, folder: str, count: int) -> tuple[set, list[str]]:
    """The hidden seeds (and "public") on which a correct submission failed, and examples."""
    reference = ManySeeds(package_dir("solutions"), count)
    # Each part runs every seed's cases in one child: its time limit grows with them.
    timeout = EXERCISES[exercise_id].timeout * (1 + count)
    result = grade(exercise_id, folder, reference=reference, hidden_seed=0, timeout=timeout)
    seeds, examples = set(), []
    for part in result.parts:
        for check in part.checks:
            if not check.passed:
                found = SEED_LABEL.search(check.name)
                seeds.add(found.group(1) if found else "public")
                examples.append(f"{part.name}: {check.name}: {check.message[:300]}")
    return seeds, examples


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seeds", type=int, default=200)
    parser.add_argument("--exercise", action="append", help="(repeatable) default: all")
    parser.add_argument(
        "--folder", action="append", default=[], help="(repeatable) more correct submissions"
    )
    options = parser.parse_args()
    folders = [package_dir("solutions"), *options.folder]
    total = 0
    for exercise_id in options.exercise or list(EXERCISES):
        for folder in folders:
            if not (Path(folder) / EXERCISES[exercise_id].file).is_file():
                continue
            start = time.perf_counter()
            seeds, examples = false_fails(exercise_id, str(folder), options.seeds)
            total += len(seeds)
            took = time.perf_counter() - start
            print(
                f"{exercise_id:16} {Path(folder).name:12} {len(seeds):3} false fails ({took:.0f} s)"
            )
            for line in examples[:5]:
                print("    " + line)
            sys.stdout.flush()
    print(f"total: {total} false-failing seeds, {options.seeds} hidden seeds per exercise")
    return 1 if total else 0


if __name__ == "__main__":
    sys.exit(main())
