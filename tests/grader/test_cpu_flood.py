"""A part that keeps every CPU busy itself is stopped by its own limit on a loaded machine too
(issue 45: a probe graded with `--timeout 2` ran more than 8 s, four times its limit).

The scheduler gives a part back the time it waited for a CPU that others kept busy (a
classmate's flood must not time out an honest child), but never more than the wall time it did
not run itself: what it is charged is at least its own CPU time (grader.sandbox.scheduler,
`_Running.overran`). So a part that spins on all threads is stopped once its own CPU time
passes its limit, however loaded the machine.

The bound asserted, and why: with the machine loaded by one busy process per core (started
here) and the part spinning on one thread per core, the part gets about half the machine, at
least one core's worth on two cores or more: its CPU passes its limit after about `limit`
seconds of wall time (twice that on one core). Other work on a shared machine (another test
run) takes some of its share, hence a bound of 3 x `limit` plus a second for the scheduler's
watch and the kill, still under the 4 x `limit` (STARVED_LIMIT) every part is held to whatever
it did: a part stopped only by that cap fails here.
"""

import os
import subprocess
import sys
import time

import pytest

from grader.engine.results import TIMEOUT
from grader.grading import grade
from grader.sandbox.scheduler import STARVED_LIMIT
from grader.vocabulary.status import RunState
from tests.support.grading import SANDBOX

pytestmark = [
    pytest.mark.ex8_2,
    pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads CPU time from /proc"),
]

LIMIT = 2.0
# ScaledDotScore's call spins on one thread per core: NumPy's sort lets go of the GIL, so that
# every thread keeps a core busy, the main thread too.
SPINNER = """
import os
import threading

import keras
import numpy as np


def _spin():
    values = np.random.default_rng(0).random(200_000)
    while True:
        np.sort(values)


class ScaledDotScore(keras.layers.Layer):
    def call(self, query, keys):
        for _ in range(max(1, (os.cpu_count() or 1) - 1)):
            threading.Thread(target=_spin, daemon=True).start()
        _spin()
"""


def cores() -> int:
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()


def test_a_part_that_floods_the_cpus_on_a_loaded_machine_stops_near_its_limit(tmp_path):
    (tmp_path / "ex8_2.py").write_text(SPINNER, encoding="utf-8")
    seen = {}

    def observe(part, cases, expected, outcome, part_result):
        seen[part.name] = (outcome, part_result)

    # The machine's load: one busy process per core, for as long as the part runs (and no
    # longer than this test's process, were it killed).
    busy = "import os\nparent = os.getppid()\nwhile os.getppid() == parent:\n    pass\n"
    load = [subprocess.Popen([sys.executable, "-c", busy]) for _ in range(cores())]
    try:
        started = time.monotonic()
        result = grade(
            "8-2",
            tmp_path,
            parts=["ScaledDotScore"],
            timeout=LIMIT,
            sandbox=SANDBOX,
            observe=observe,
        )
        wall = time.monotonic() - started
    finally:
        for process in load:
            process.kill()
        for process in load:
            process.wait()
    outcome, part = seen["ScaledDotScore"]
    assert outcome.state == RunState.TIMED_OUT, (outcome.state, outcome.log_tail)
    assert part.status == TIMEOUT and part.score == 0 and result.score == 0
    message = " ".join(check.message for check in part.checks)
    assert f"stopped after {LIMIT:g} s without finishing" in message, message
    bound = 3 * LIMIT + 1.0
    assert bound < STARVED_LIMIT * LIMIT
    assert outcome.seconds <= bound, (outcome.seconds, wall)
