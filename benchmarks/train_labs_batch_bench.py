"""What a lab that trains a model costs per student in a class batch: the reference solution
handed in by 1 and by 3 students, `grader batch --jobs 1`, core-seconds of the batch and all its
children; the marginal cost per student is (3 students - 1 student) / 2. With --against REV the
same for a git worktree of REV first, in the same run (issue 48).

    python benchmarks/train_labs_batch_bench.py train-transformer train-seq2seq train-memn2n
    python benchmarks/train_labs_batch_bench.py --against be3a843 train-transformer
"""

import argparse
import contextlib
import os
import shutil
import sys
import tempfile
from pathlib import Path

from course_bench import KIT, measured, worktree

sys.path.insert(0, str(KIT))

from grader.records import get_exercise  # noqa: E402


def run(tree, lab, n):
    with tempfile.TemporaryDirectory() as d:
        root = Path(d)
        for i in range(n):
            (root / "class" / f"s{i}").mkdir(parents=True)
            shutil.copy(KIT / "solutions" / get_exercise(lab).file, root / "class" / f"s{i}")
        command = [
            sys.executable,
            "-m",
            "grader.cli",
            "batch",
            str(root / "class"),
            "-e",
            lab,
            "--seed",
            "2026",
            "--jobs",
            "1",
            "--no-similarity",
            "--no-pictures",
            "--out",
            str(root / "out"),
        ]
        cpu, _wall = measured(command, tree, dict(os.environ, PYTHONPATH=str(tree)))
        rows = (root / "out" / "grades.csv").read_text().splitlines()[1:]
        return cpu, [r.split(",")[1] for r in rows]


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("labs", nargs="+")
    parser.add_argument("--against", default="", help="a git revision to measure first")
    args = parser.parse_args()
    trees = {"this checkout": KIT}
    with (
        tempfile.TemporaryDirectory(prefix="labs-batch-bench-") as scratch,
        contextlib.ExitStack() as stack,
    ):
        if args.against:
            old = stack.enter_context(worktree(args.against, Path(scratch) / "against"))
            trees = {args.against: old} | trees
        table(args.labs, trees)


def table(labs, trees):
    print("| lab | tree | 1 student core-s | 3 students core-s | per student (marginal) | scores |")
    print("|---|---|---|---|---|---|")
    for lab in labs:
        res = {}
        for n in (1, 3):  # the trees take turns, so that the machine's load falls on both
            for name, tree in trees.items():
                res[(name, n)] = run(tree, lab, n)
        for name in trees:
            c1, _s1 = res[(name, 1)]
            c3, s3 = res[(name, 3)]
            print(
                f"| {lab} | {name} | {c1:.1f} | {c3:.1f} | {(c3 - c1) / 2:.1f} | {'/'.join(s3)} |",
                flush=True,
            )


if __name__ == "__main__":
    main()
