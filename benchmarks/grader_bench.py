"""How fast the grader is, as ratios against baselines measured in the same run.

    python benchmarks/grader_bench.py            # the full table (a few minutes)
    python benchmarks/grader_bench.py --quick    # every row once, one student (CI)

Rows:
- `grader check 8-2 --submission solutions` against `python -c "import tensorflow, keras"`
  (goal: at most 1.0x, with the sandbox);
- `grader watch 8-2 FILE`: from saving the file to the new score on screen, the helper warm
  (goal: under 1 s), next to the same cold `grader check` and import;
- `grader list` (goal: under 0.5 s, and it must not import TensorFlow);
- `grader batch` of N synthetic 8-2 submissions with `--jobs 2` against N sequential
  `grader check` runs (goal: at least 10x faster);
- with `--against REV`: `grader check 8-2` of this checkout against the same command of the
  kit at git revision REV (a worktree made for the run), taking turns (the sandbox's goal of
  issue 27: at most 1.05x what it cost before).
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

KIT = Path(__file__).resolve().parent.parent
DEMO = KIT / "examples" / "submissions"
PYTHON = sys.executable


def warm_ups(repeats: int) -> int:
    """One warm-up run before the measured ones, except for a single repeat (`--quick`, which
    checks that every row still runs, not how fast)."""
    return 1 if repeats > 1 else 0


def timed(command: list[str], repeats: int, cwd: Path = KIT) -> float:
    """Median wall time of `command` over `repeats` runs (after a warm-up run, see warm_ups)."""
    samples = []
    for index in range(repeats + warm_ups(repeats)):
        start = time.perf_counter()
        subprocess.run(command, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        if index >= warm_ups(repeats):
            samples.append(time.perf_counter() - start)
    return statistics.median(samples)


def timed_in_turns(commands: list[list[str]], repeats: int) -> list[float]:
    """Median wall time of each command, the commands run in turn `repeats` times."""
    samples = [[] for _ in commands]
    for index in range(repeats + warm_ups(repeats)):
        for command, times in zip(commands, samples, strict=True):
            start = time.perf_counter()
            subprocess.run(command, cwd=KIT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            if index >= warm_ups(repeats):
                times.append(time.perf_counter() - start)
    return [statistics.median(times) for times in samples]


def warm_recheck(repeats: int) -> float:
    """Median seconds from saving an exercise file to `grader watch` printing its new score."""
    sources = [(DEMO / name / "ex8_2.py").read_bytes() for name in ("bob", "alice")]
    with tempfile.TemporaryDirectory(prefix="attnkit-watch-") as scratch:
        path = Path(scratch) / "ex8_2.py"
        path.write_bytes(sources[0])
        watcher = subprocess.Popen(
            grader("watch", "8-2", str(path), "--interval", "0.05"),
            cwd=KIT,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
            bufsize=1,
        )
        try:
            _read_until_score(watcher)  # the first, cold result
            samples = []
            for index in range(repeats if repeats == 1 else max(3, repeats)):
                path.write_bytes(sources[(index + 1) % 2])
                start = time.perf_counter()
                _read_until_score(watcher)
                samples.append(time.perf_counter() - start)
        finally:
            watcher.terminate()
            watcher.wait(timeout=30)
    return statistics.median(samples)


def _read_until_score(process: subprocess.Popen) -> None:
    for line in process.stdout:
        if line.startswith("Score:"):
            return
    raise RuntimeError("grader watch stopped before printing a score")


def against(revision: str, repeats: int) -> tuple[float, float]:
    """Median seconds of `grader check 8-2 --submission solutions` here and at `revision`."""
    import os

    from course_bench import worktree

    with (
        tempfile.TemporaryDirectory(prefix="attnkit-before-") as scratch,
        worktree(revision, Path(scratch) / "kit") as other,
    ):
        samples: dict[Path, list[float]] = {KIT: [], other: []}
        for index in range(repeats + 1):
            for root, times in samples.items():
                start = time.perf_counter()
                subprocess.run(
                    grader("check", "8-2", "--submission", "solutions"),
                    cwd=root,
                    env=dict(os.environ, PYTHONPATH=str(root)),
                    stdout=subprocess.DEVNULL,
                    stderr=subprocess.DEVNULL,
                )
                if index:
                    times.append(time.perf_counter() - start)
    return statistics.median(samples[KIT]), statistics.median(samples[other])


def grader(*args: str) -> list[str]:
    return [PYTHON, "-m", "grader.cli", *args]


def synthetic_class(folder: Path, students: int) -> Path:
    """`students` copies of the demo class's correct and partly wrong submissions."""
    sources = [DEMO / "alice" / "ex8_2.py", DEMO / "bob" / "ex8_2.py"]
    for index in range(students):
        target = folder / f"student{index:03d}"
        target.mkdir(parents=True)
        shutil.copy(sources[index % 2], target / "ex8_2.py")
    return folder


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="one repeat, 1 student")
    parser.add_argument("--students", type=int, default=None)
    parser.add_argument("--against", metavar="REV", help="also time grader check at REV")
    args = parser.parse_args(argv)
    repeats = 1 if args.quick else 5
    # --quick checks that every row still runs, not how fast: each student is one more cold
    # `grader check` (a TensorFlow start-up, 5-8 s here) in the sequential row.
    students = args.students or (1 if args.quick else 40)

    rows = []
    # Taking turns, so that a slow spell of the machine hits both alike.
    baseline, check = timed_in_turns(
        [
            [PYTHON, "-c", "import tensorflow, keras"],
            grader("check", "8-2", "--submission", "solutions"),
        ],
        repeats,
    )
    rows.append(("import tensorflow, keras", baseline, 1.0, ""))
    rows.append(
        (
            "grader check 8-2 --submission solutions",
            check,
            check / baseline,
            "goal <= 1.0x the import",
        )
    )
    if args.against:
        now, before = against(args.against, max(repeats, 5))
        rows.append((f"grader check 8-2 at {args.against}", before, 1.0, ""))
        rows.append(
            ("grader check 8-2 here", now, now / before, "goal <= 1.05x the revision before")
        )
    warm = warm_recheck(repeats)
    rows.append(
        (
            "grader watch 8-2: save -> new score (warm)",
            warm,
            warm / baseline,
            f"goal < 1 s; {check / warm:.0f}x faster than a cold check",
        )
    )
    listing = timed(grader("list"), repeats)
    imported = subprocess.run(
        [
            PYTHON,
            "-c",
            "import sys, grader.cli as c; from click.testing import CliRunner; "
            "CliRunner().invoke(c.main, ['list']); print('tensorflow' in sys.modules)",
        ],
        capture_output=True,
        text=True,
        cwd=KIT,
    ).stdout.strip()
    rows.append(
        (
            "grader list",
            listing,
            listing / baseline,
            f"goal < 0.5 s; imports TensorFlow: {imported}",
        )
    )

    with tempfile.TemporaryDirectory(prefix="attnkit-bench-") as scratch:
        root = synthetic_class(Path(scratch) / "class", students)
        start = time.perf_counter()
        # --quick (one student): the sequential baseline is the check row's own cold `grader
        # check` of a correct 8-2; another would time the same start-up again (5-8 s here).
        for student in [] if args.quick else sorted(root.iterdir()):
            subprocess.run(
                grader("check", "8-2", "--submission", str(student)),
                cwd=KIT,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
            )
        sequential = check * students if args.quick else time.perf_counter() - start
        start = time.perf_counter()
        subprocess.run(
            grader(
                "batch",
                str(root),
                "--exercise",
                "8-2",
                "--jobs",
                "2",
                "--out",
                str(Path(scratch) / "out"),
                "--seed",
                "1",
            ),
            cwd=KIT,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            check=True,
        )
        batch = time.perf_counter() - start
    rows.append(
        (
            f"{students} x grader check, one after another",
            sequential,
            1.0,
            "the check row's time (--quick)" if args.quick else "",
        )
    )
    rows.append(
        (
            f"grader batch of {students}, --jobs 2",
            batch,
            batch / sequential,
            f"{sequential / batch:.1f}x faster; goal >= 10x",
        )
    )

    width = max(len(r[0]) for r in rows)
    print(f"{'what':<{width}}  {'seconds':>8}  {'ratio':>6}  note")
    for name, seconds, ratio, note in rows:
        print(f"{name:<{width}}  {seconds:8.2f}  {ratio:6.2f}  {note}")


if __name__ == "__main__":
    main()
