"""What grading a course costs: core-seconds per student-exercise of a class drawn from the
held-out sets, for this checkout and for an earlier revision, in one run (issue 48).

    python benchmarks/course_bench.py                                  # 20 students x 15
    python benchmarks/course_bench.py --students 100 --against 5b066c3
    python benchmarks/course_bench.py --students 1000 --shards 8     # a course on 8 machines

With --shards N the class is graded by this checkout alone as N shards one after another (each
as one machine of a cluster would run it: `grader batch --shard K/N`), then gathered; the wall
time N machines would take is estimated as the slowest shard's plus the gather's.

The class: for each student and exercise, a file drawn (seeded) from what students hand in:
right work (the reference, or a correct file of a held-out set), wrong work (every wrong file of
every held-out set in tests/mistakes/ for that exercise), work that crashes when imported (an
exception, os._exit, a syntax error) and the untouched stub; in the proportions of `MIX`. The
exercises: the first --exercises (15) of those both revisions know, none that trains a model
(at 5b066c3: the chapter's six and nine labs).

Four runs of `grader batch --jobs J --no-similarity --no-pictures` on the same class and seed:
the revision given with --against (a git worktree of it), this checkout, this checkout with
GRADER_SEARCH_MEMORY=off (every search from scratch), and this checkout with GRADER_ONE_CHILD=on
(`--one-child`: one child per student, not per exercise). Core-seconds are the user and
system CPU of each batch and all its children (RUSAGE_CHILDREN); the machine's load moves them,
so the runs take turns (--rounds) and the median is printed. The gradebooks of the last three
must be the same, byte for byte.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import random
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

KIT = Path(__file__).resolve().parent.parent
SEED = 2026
# Shares of right, wrong, crashing and not-started work.
MIX = {"right": 0.40, "wrong": 0.45, "crash": 0.10, "stub": 0.05}
CRASHES = [
    'raise RuntimeError("not finished")\n',
    "import os\nos._exit(3)\n",
    "def attention(q, k, v:\n    return q\n",
]


def course_exercises(count: int, known_by: Path | None) -> list[str]:
    """The first `count` exercises that train no model, of those this checkout knows and (when
    given) the kit at `known_by` lists too."""
    sys.path.insert(0, str(KIT))
    from grader.records import EXERCISES

    known = set(EXERCISES)
    if known_by is not None:
        listed = subprocess.run(
            [sys.executable, "-m", "grader.cli", "list"],
            cwd=known_by,
            env=dict(os.environ, PYTHONPATH=str(known_by)),
            capture_output=True,
            text=True,
            check=True,
        ).stdout
        known &= {line.split()[0] for line in listed.splitlines() if line.strip()}
    return [e for e in EXERCISES if e in known and not e.startswith("train-")][:count]


def pools(exercise: str) -> dict[str, list[Path]]:
    from grader.records import get_exercise

    stem = Path(get_exercise(exercise).file).stem
    found = sorted((KIT / "tests" / "mistakes").glob(f"*/{stem}__*.py"))
    right = [KIT / "solutions" / f"{stem}.py"] + [p for p in found if "__correct" in p.name]
    wrong = [p for p in found if "__correct" not in p.name]
    return {"right": right, "wrong": wrong or right, "stub": [KIT / "exercises" / f"{stem}.py"]}


def make_class(folder: Path, students: int, exercises: list[str]) -> dict[str, int]:
    """The class in `folder`; how many files of each kind it holds."""
    from grader.records import get_exercise

    rng = random.Random(SEED)
    counts = dict.fromkeys(MIX, 0)
    drawn = {exercise: pools(exercise) for exercise in exercises}
    for index in range(students):
        home = folder / f"student{index:03d}"
        home.mkdir(parents=True)
        for exercise in exercises:
            kind = rng.choices(list(MIX), weights=list(MIX.values()))[0]
            counts[kind] += 1
            target = home / get_exercise(exercise).file
            if kind == "crash":
                target.write_text(rng.choice(CRASHES))
            else:
                shutil.copy(rng.choice(drawn[exercise][kind]), target)
    return counts


def measured(command: list[str], cwd: Path, env: dict) -> tuple[float, float]:
    """(core-seconds, wall seconds) of `command` and everything it started."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    done = subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode not in (0, 1):
        sys.exit(f"{' '.join(map(str, command))} failed:\n{done.stderr[-3000:]}")
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime), wall


@contextlib.contextmanager
def worktree(revision: str, folder: Path):
    """A git worktree of `revision` at `folder`, removed afterwards."""
    subprocess.run(
        ["git", "worktree", "add", "--detach", str(folder), revision],
        cwd=KIT,
        check=True,
        capture_output=True,
    )
    try:
        yield folder
    finally:
        subprocess.run(
            ["git", "worktree", "remove", "--force", str(folder)], cwd=KIT, capture_output=True
        )


def gradebook(out: Path) -> bytes:
    """grades.csv and every student's feedback, as one text."""
    parts = [(out / "grades.csv").read_bytes()]
    parts += [path.read_bytes() for path in sorted((out / "feedback").glob("*.md"))]
    return b"\n".join(parts)


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--students", type=int, default=20)
    parser.add_argument("--exercises", type=int, default=15)
    parser.add_argument("--against", default="5b066c3", help="a git revision ('' for none)")
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--timeout", type=float, default=10.0)
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--shards", type=int, default=0, help="grade in N shards, then gather")
    args = parser.parse_args(argv)
    if args.shards:
        sharded(args)
        return
    with (
        tempfile.TemporaryDirectory(prefix="course-bench-") as scratch,
        contextlib.ExitStack() as stack,
    ):
        root = Path(scratch)
        runs = {
            "this checkout": (KIT, {}),
            "  search memory off": (KIT, {"GRADER_SEARCH_MEMORY": "off"}),
            "  --one-child": (KIT, {"GRADER_ONE_CHILD": "on"}),
        }
        tree = None
        if args.against:
            tree = stack.enter_context(worktree(args.against, root / "against"))
            runs = {f"{args.against} (--against)": (tree, {})} | runs
        exercises = course_exercises(args.exercises, tree)
        units = args.students * len(exercises)
        counts = make_class(root / "class", args.students, exercises)
        results: dict[str, list[tuple[float, float]]] = {name: [] for name in runs}
        for round_ in range(args.rounds):
            for number, (name, (code, flags)) in enumerate(runs.items()):
                env = dict(os.environ, PYTHONPATH=str(code), **flags)
                out = root / f"out{number}-{round_}"
                command = [sys.executable, "-m", "grader.cli", "batch", root / "class"]
                command += [word for e in exercises for word in ("-e", e)]
                command += ["--seed", SEED, "--jobs", args.jobs, "--timeout", args.timeout]
                command += ["--no-similarity", "--no-pictures", "--out", out]
                results[name].append(measured([str(w) for w in command], code, env))
        names = list(runs)
        mine = gradebook(root / f"out{names.index('this checkout')}-0")
        same = {
            name: gradebook(root / f"out{names.index(name)}-0") == mine
            for name in ("  search memory off", "  --one-child")
        }
    print(
        f"{args.students} students x {len(exercises)} exercises = {units} student-exercises "
        f"({', '.join(f'{k} {v}' for k, v in counts.items())}); --jobs {args.jobs}, "
        f"--timeout {args.timeout:g}, {args.rounds} round(s), median shown"
    )
    print(f"{'run':28} {'core-s':>8} {'wall s':>8} {'core-s/st-ex':>13} {'ratio':>7}")
    base = statistics.median(c for c, _w in results[next(iter(results))])
    for name, measures in results.items():
        cpu = statistics.median(c for c, _w in measures)
        wall = statistics.median(w for _c, w in measures)
        print(f"{name:28} {cpu:8.1f} {wall:8.1f} {cpu / units:13.3f} {cpu / base:6.2f}x")
    for name, equal in same.items():
        print(f"the same gradebook and feedback as with {name.strip()}: {equal}")


def sharded(args) -> None:
    """The class graded as `args.shards` shards one after another, then gathered; each shard's
    core-seconds and wall time as it ends (a long run can be read before it is over)."""
    with tempfile.TemporaryDirectory(prefix="course-shards-") as scratch:
        root = Path(scratch)
        exercises = course_exercises(args.exercises, None)
        units = args.students * len(exercises)
        counts = make_class(root / "class", args.students, exercises)
        print(
            f"{args.students} students x {len(exercises)} exercises = {units} student-exercises "
            f"({', '.join(f'{k} {v}' for k, v in counts.items())}); {args.shards} shards, "
            f"--jobs {args.jobs}, --timeout {args.timeout:g}",
            flush=True,
        )
        env = dict(os.environ, PYTHONPATH=str(KIT))
        options = ["--seed", SEED, "--jobs", args.jobs, "--timeout", args.timeout]
        options += ["--no-similarity", "--no-pictures"]
        chosen = [word for e in exercises for word in ("-e", e)]
        folders, total_cpu, slowest = [], 0.0, 0.0
        print(f"{'run':16} {'core-s':>8} {'wall s':>8} {'students':>9}", flush=True)
        for index in range(args.shards):
            folders.append(root / f"shard-{index}")
            command = [sys.executable, "-m", "grader.cli", "batch", root / "class", *chosen]
            command += [*options, "--shard", f"{index}/{args.shards}", "--out", folders[-1]]
            cpu, wall = measured([str(w) for w in command], KIT, env)
            graded = len(list((folders[-1] / "results").glob("*.json")))
            total_cpu, slowest = total_cpu + cpu, max(slowest, wall)
            print(f"shard {index}/{args.shards:<8} {cpu:8.1f} {wall:8.1f} {graded:9}", flush=True)
        command = [sys.executable, "-m", "grader.cli", "gather", *folders, "--out", root / "all"]
        cpu, wall = measured([str(w) for w in [*command, "--no-similarity"]], KIT, env)
        total_cpu += cpu
        rows = (root / "all" / "grades.csv").read_text(encoding="utf-8").count("\n") - 1
        print(f"{'gather':16} {cpu:8.1f} {wall:8.1f} {rows:9}")
    print(
        f"all shards and the gather: {total_cpu:.1f} core-s, "
        f"{total_cpu / units:.3f} per student-exercise"
    )
    print(
        f"on {args.shards} machines at once: about {slowest + wall:.0f} s "
        f"(the slowest shard {slowest:.0f} s, then the gather {wall:.0f} s)"
    )


if __name__ == "__main__":
    main()
