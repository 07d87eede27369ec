"""How long `grader watch` takes to grade a fix saved while the run before it hangs.

    python benchmarks/watch_cancel_bench.py

Exercise 8-2 (parts time out after 15 s): a file whose ScaledDotScore loops forever is saved,
graded until its part hangs (6 s), then the correct file (the demo's alice) is saved; the time
from that save to its score is measured (median of 3, the helper warm). Without giving up the
hanging run, the fix would wait for the part's limit.
"""

from __future__ import annotations

import statistics
import sys
import tempfile
import time
from pathlib import Path

KIT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(KIT))


def main() -> int:
    from grader.records import get_exercise
    from grader.sandbox.processes import warm_up
    from grader.watch import Watcher

    correct = (KIT / "examples" / "submissions" / "alice" / "ex8_2.py").read_text("utf-8")
    hanging = correct.replace(
        'return ops.einsum("bqd,bkd->bqk"',
        'while True:\n            pass\n        return ops.einsum("bqd,bkd->bqk"',
        1,
    )
    warm_up()
    samples = []
    with tempfile.TemporaryDirectory(prefix="attnkit-watch-") as folder:
        path = Path(folder) / "ex8_2.py"
        for _round in range(3):
            path.write_text(hanging, encoding="utf-8")
            watcher = Watcher(get_exercise("8-2"), path)
            watcher.poll()
            time.sleep(6)
            path.write_text(correct, encoding="utf-8")
            start = time.perf_counter()
            watcher.poll()
            while (lines := watcher.poll()) is None:
                time.sleep(0.02)
            samples.append(time.perf_counter() - start)
            if not any("Score: 10/10" in line for line in lines):
                print("\n".join(lines))
                return 1
    shown = ", ".join(f"{s:.2f}" for s in samples)
    print(f"fix saved during a hang -> its score: {statistics.median(samples):.2f} s ({shown})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
