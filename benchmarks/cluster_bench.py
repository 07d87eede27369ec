"""What grading in shards costs: core-seconds per student-exercise of one class graded whole
and in N shards (one after another on this machine, as N machines would run them) and
gathered, in one invocation, and where the time goes.

    python benchmarks/cluster_bench.py                          # 20 students, 8-1 and 8-2, 2 shards
    python benchmarks/cluster_bench.py --students 100 --shards 4 --exercises all

The class is a mix: for each exercise, of every five students two hand in the reference
solution, one the untouched stub (not started), one code that crashes when imported, one code
that hangs when imported (it runs to --timeout). Core-seconds are the user and system CPU time
of each command and all its children (RUSAGE_CHILDREN); "start-up" is the CPU of `grader
batch` grading a class of one missing submission (Python, TensorFlow, the helper and the
references, no student's code), paid once per shard.
"""

from __future__ import annotations

import argparse
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

KIT = Path(__file__).resolve().parent.parent
PYTHON = sys.executable
SEED = 2026


def grader(*words: str) -> list[str]:
    return [PYTHON, "-m", "grader", *map(str, words)]


def measured(command: list[str]) -> tuple[float, float]:
    """(core-seconds, wall seconds) of `command` and everything it started."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    done = subprocess.run(command, cwd=KIT, capture_output=True, text=True)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        sys.exit(f"{' '.join(command)} failed:\n{done.stdout[-2000:]}\n{done.stderr[-2000:]}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return cpu, wall


def make_class(folder: Path, students: int, exercises: list[str]) -> Path:
    from grader.instructor.course.stubs import package_dir
    from grader.records import get_exercise

    for index in range(students):
        target = folder / f"student{index:03d}"
        target.mkdir(parents=True)
        for exercise in exercises:
            name = get_exercise(exercise).file
            kind = ("right", "right", "stub", "crash", "hang")[index % 5]
            if kind in ("right", "stub"):
                source = package_dir("solutions" if kind == "right" else "exercises") / name
                shutil.copy(source, target / name)
            else:
                body = "import os\nos._exit(3)\n" if kind == "crash" else "while True:\n    pass\n"
                (target / name).write_text(body)
    return folder


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--students", type=int, default=20)
    parser.add_argument("--shards", type=int, default=2)
    parser.add_argument(
        "--exercises", default="8-1,8-2", help="comma-separated ids, or all (but training labs)"
    )
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--timeout", type=float, default=5.0)
    args = parser.parse_args(argv)
    sys.path.insert(0, str(KIT))
    from grader.records import EXERCISES

    # "all": every exercise but the labs that train a model, whose training a short --timeout
    # would cut (benchmarks/train_labs_batch_bench.py measures them).
    every = [e for e, record in EXERCISES.items() if not record.trains]
    exercises = every if args.exercises == "all" else args.exercises.split(",")
    options = ["--seed", SEED, "--jobs", args.jobs, "--timeout", args.timeout]
    options += ["--no-pictures", "--no-similarity"]
    chosen = [word for e in exercises for word in ("-e", e)]
    with tempfile.TemporaryDirectory(prefix="cluster-bench-") as scratch:
        root = Path(scratch)
        students = make_class(root / "class", args.students, exercises)
        (root / "one" / "nobody").mkdir(parents=True)
        rows = []
        start_cpu, start_wall = measured(
            grader("batch", root / "one", *chosen, *options, "--out", root / "start")
        )
        import_cpu, _ = measured([PYTHON, "-c", "import tensorflow, keras"])
        whole_cpu, whole_wall = measured(
            grader("batch", students, *chosen, *options, "--out", root / "whole")
        )
        rows.append(("unsharded grader batch", whole_cpu, whole_wall))
        shard_cpu, shard_wall = 0.0, 0.0
        folders = []
        for index in range(args.shards):
            folders.append(root / "shards" / f"shard-{index}")
            shard = f"{index}/{args.shards}"
            cpu, wall = measured(
                grader("batch", students, *chosen, *options, "--shard", shard, "--out", folders[-1])
            )
            rows.append((f"  shard {shard}", cpu, wall))
            shard_cpu, shard_wall = shard_cpu + cpu, max(shard_wall, wall)
        gather_cpu, gather_wall = measured(
            grader("gather", *folders, "--out", root / "gathered", "--no-similarity")
        )
        rows.append(("  grader gather", gather_cpu, gather_wall))
        same = (root / "whole" / "grades.csv").read_bytes() == (
            root / "gathered" / "grades.csv"
        ).read_bytes()

    units = args.students * len(exercises)
    sharded = shard_cpu + gather_cpu
    print(
        f"{args.students} students x {len(exercises)} exercises ({units} student-exercises), "
        f"{args.shards} shards, --jobs {args.jobs}, --timeout {args.timeout:g}"
    )
    print(f"{'run':32} {'core-s':>8} {'wall s':>8} {'core-s per st-ex':>17}")
    for name, cpu, wall in rows:
        print(f"{name:32} {cpu:8.1f} {wall:8.1f} {cpu / units:17.3f}")
    print(
        f"{'sharded total':32} {sharded:8.1f} {shard_wall + gather_wall:8.1f} "
        f"{sharded / units:17.3f}   (wall: the slowest shard, then the gather)"
    )
    print(f"sharded / unsharded core-seconds: {sharded / whole_cpu:.2f}x")
    print("where the time goes:")
    print(f"  import tensorflow, keras            {import_cpu:8.1f} core-s per process")
    print(f"  start-up (batch of no submissions)  {start_cpu:8.1f} core-s per run")
    print(
        f"  start-ups of the shards             {start_cpu * args.shards:8.1f} core-s "
        f"({start_cpu * args.shards / sharded:.0%} of the sharded total)"
    )
    print(f"  grading the students (unsharded)    {whole_cpu - start_cpu:8.1f} core-s")
    print(f"  gather (gradebook and report)       {gather_cpu:8.1f} core-s")
    print(f"gathered grades.csv equals the unsharded one: {same}")


if __name__ == "__main__":
    main()
