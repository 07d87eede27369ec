"""The process layer under every check: the parts of one exercise share a child, each part keeps
its own time limit, and giving up half-way leaves nothing running."""

import importlib.util
import os
import subprocess
import sys
import time
import types
from pathlib import Path

import pytest

from grader.engine.cases import save_cases
from grader.sandbox import processes, scheduler, world
from grader.sandbox.processes import Job, run_jobs
from grader.vocabulary.spec import FUNCTION, Case
from grader.vocabulary.status import RunState
from tests.support.grading import descendants, running

SOURCE = """
import os
import time

import numpy as np

open(os.path.join(os.path.dirname(__file__), "pids", str(os.getpid())), "w").close()


def pid():
    return np.array(os.getpid())


def hang():
    time.sleep(120)


def die():
    os._exit(7)
"""


@pytest.fixture
def folder(tmp_path) -> Path:
    (tmp_path / "work.py").write_text(SOURCE)
    (tmp_path / "pids").mkdir()
    for target in ("pid", "hang", "die"):
        save_cases(tmp_path / f"{target}.npz", [Case(target, FUNCTION, "no inputs")])
    return tmp_path


def job(folder: Path, key: str, target: str, group: str | None, timeout: float = 30.0) -> Job:
    return Job(key, folder / "work.py", folder / f"{target}.npz", folder, timeout, group=group)


def pid_of(outcome) -> int:
    assert outcome.state == RunState.FINISHED, outcome
    return int(outcome.arrays["case0/output"])


def test_the_parts_of_a_group_run_in_one_child_and_other_groups_in_their_own(folder):
    jobs = [job(folder, f"a{i}", "pid", "a") for i in range(3)]
    jobs += [job(folder, f"b{i}", "pid", "b") for i in range(2)]
    outcomes = run_jobs(jobs, parallel=2)
    pids = {key: pid_of(outcome) for key, outcome in outcomes.items()}
    assert pids["a0"] == pids["a1"] == pids["a2"]
    assert pids["b0"] == pids["b1"] != pids["a0"]


def test_a_part_past_its_limit_times_out_and_the_parts_after_it_get_a_fresh_child(folder):
    jobs = [
        job(folder, "first", "pid", "g"),
        job(folder, "stuck", "hang", "g", timeout=1.5),
        job(folder, "then", "pid", "g"),
        job(folder, "last", "pid", "g"),
    ]
    started = time.monotonic()
    outcomes = run_jobs(jobs)
    assert time.monotonic() - started < 60  # not the two minutes the stuck part wanted
    assert outcomes["stuck"].state == RunState.TIMED_OUT and outcomes["stuck"].exitcode == -9
    assert pid_of(outcomes["then"]) == pid_of(outcomes["last"]) != pid_of(outcomes["first"])


def test_a_part_that_kills_its_child_is_a_crash_and_the_rest_still_run(folder):
    jobs = [job(folder, "dies", "die", "g"), job(folder, "after", "pid", "g")]
    outcomes = run_jobs(jobs)
    assert outcomes["dies"].state == RunState.CRASHED
    assert "exited with status 7" in outcomes["dies"].problem
    assert pid_of(outcomes["after"]) > 0


@pytest.mark.skipif(not Path("/proc").is_dir() or not hasattr(os, "fork"), reason="Linux only")
def test_giving_up_half_way_stops_the_helper_and_every_child_at_once(folder):
    jobs = [job(folder, "quick", "pid", None)]
    jobs += [job(folder, f"stuck{i}", "hang", None, timeout=120) for i in range(3)]
    helper = processes.zygote()
    seen = {}

    class GiveUp(Exception):
        pass

    def on_done(done, outcome):
        seen["children"] = descendants(helper.process.pid)  # the stuck part beside "quick"
        seen["when"] = time.monotonic()
        raise GiveUp  # just as the helper starts the next child

    with pytest.raises(GiveUp):
        run_jobs(jobs, parallel=2, on_done=on_done)
    assert time.monotonic() - seen["when"] < 4  # killed, not waited for
    assert not helper.alive()
    time.sleep(1.0)  # a child that escaped would be importing the module by now
    started = [int(path.name) for path in (folder / "pids").iterdir()]
    assert started  # "quick" at least; the stuck part beside it may not have got that far
    assert seen["children"]
    assert not [pid for pid in started + seen["children"] if running(pid)]
    # The next run gets a fresh helper, not the answers still owed by the old one.
    assert pid_of(run_jobs([job(folder, "again", "pid", None)])["again"]) > 0


class _Idle:
    """A child that is never done: only the clock and its waiting time decide."""

    pid = 12345
    started = True

    def __init__(self, job):
        pass

    def fds(self):
        return []


def test_time_kept_from_a_cpu_by_others_does_not_count_against_a_part(tmp_path, monkeypatch):
    unit = {"key": "u", "workdir": str(tmp_path), "parts": [{"key": "p", "timeout": 1.0}]}
    clock = [100.0]
    waited = {12345: 0.0}
    monkeypatch.setattr(scheduler.time, "monotonic", lambda: clock[0])
    monkeypatch.setattr(scheduler, "_waiting_seconds", lambda pid: waited[pid])
    run = scheduler._Running(unit, 0, 0, _Idle)
    clock[0] += 3.0  # three seconds of wall time, of which it waited 2.5 s for a CPU
    waited[12345] = 2.5
    assert not run.overran()
    waited[12345] = 1.5  # only 1.5 s: 1.5 s of its own, past its 1 s
    assert run.overran()
    waited[12345] = 1e6  # starved for ever: still stopped at STARVED_LIMIT times its limit
    clock[0] = 100.0 + scheduler.STARVED_LIMIT * 1.0 + 0.1
    assert run.overran()


def test_a_child_that_keeps_the_cores_busy_itself_is_never_credited_its_waiting(
    tmp_path, monkeypatch
):
    """Its main thread waits for the CPUs its own threads hold: that is its own time."""
    unit = {"key": "u", "workdir": str(tmp_path), "parts": [{"key": "p", "timeout": 1.0}]}
    clock, waited, busy = [100.0], {12345: 0.0}, {12345: 0.0}
    monkeypatch.setattr(scheduler.time, "monotonic", lambda: clock[0])
    monkeypatch.setattr(scheduler, "_waiting_seconds", lambda pid: waited[pid])
    monkeypatch.setattr(scheduler, "_cpu_seconds", lambda pid: busy[pid])
    run = scheduler._Running(unit, 0, 0, _Idle)
    clock[0] += 3.0
    waited[12345] = 2.5
    busy[12345] = 0.5  # starved by others: it ran half a second in three
    assert not run.overran()
    busy[12345] = 5.9  # two cores' worth of its own threads in three seconds
    assert run.overran()


def test_a_flood_of_threads_under_load_is_charged_the_cpu_it_used(tmp_path, monkeypatch):
    """Two busy threads on a loaded machine (issue 45): they use about one core between them,
    and each waits for a CPU half the time, so their waits add up to the wall time. Credited
    in full, that ran a part with a 2 s limit past 8 s; what it used itself is its own."""
    unit = {"key": "u", "workdir": str(tmp_path), "parts": [{"key": "p", "timeout": 1.0}]}
    clock, waited, busy = [100.0], {12345: 0.0}, {12345: 0.0}
    monkeypatch.setattr(scheduler.time, "monotonic", lambda: clock[0])
    monkeypatch.setattr(scheduler, "_waiting_seconds", lambda pid: waited[pid])
    monkeypatch.setattr(scheduler, "_cpu_seconds", lambda pid: busy[pid])
    run = scheduler._Running(unit, 0, 0, _Idle)
    clock[0] += 1.5
    waited[12345], busy[12345] = 1.5, 1.4  # 1.4 s of CPU in 1.5 s: past its 1 s
    assert run.overran()
    busy[12345] = 0.9  # under its second: only what it waited beyond its own running counts
    assert not run.overran()


@pytest.mark.skipif(
    not hasattr(os, "geteuid") or os.geteuid() != 0, reason="slot user ids are given as root"
)
def test_a_rerun_child_runs_as_its_new_slots_user_not_its_first_childs(tmp_path):
    """A unit given back for the parts after a crash holds the user id of the slot its first
    child ran in. Started in another slot, beside a classmate's child that now runs as that id,
    the first of the two to end would kill the other (the sweep kills every process of its id):
    under load a correct part was reported killed by signal 9."""
    first_slot_uid = world.child_uid(0)
    unit = {
        "key": "alice-8-2",
        "workdir": str(tmp_path),
        "parts": [{"key": "alice-8-2-rest", "out": str(tmp_path / "rest.npz"), "timeout": 5}],
        "sandbox": {},
        "uid": first_slot_uid,  # what settle() hands back with the rest of the parts
    }
    started = []

    def start(job):
        started.append(job)
        return types.SimpleNamespace(started=False)

    scheduler._Running(unit, attempt=1, slot=1, start=start)
    assert world.slot_uid(dict(unit, slot=0)) == first_slot_uid
    assert started[0]["uid"] == world.child_uid(1) != first_slot_uid


@pytest.mark.skipif(importlib.util.find_spec("jax") is None, reason="JAX is not installed")
def test_the_helper_imports_no_jax_matplotlib_nor_ipython_and_a_submission_still_can():
    """Keras and TensorFlow import them where installed, for what grading never does (1.3-1.8 s
    of every helper's start); grader.sandbox.preload hides them for that import only."""
    code = (
        "import sys, grader.sandbox.preload; "
        "tflite = sys.modules['tensorflow.lite.python.util']; "
        "print(*(name in sys.modules for name in ('jax', 'matplotlib', 'IPython')), tflite._jit); "
        "import jax, matplotlib.pyplot as plt; print(jax.numpy.add(2, 2), plt.figure().number); "
        # IPython where installed (Jupyter brings it; a bare venv has none).
        "import importlib.util; ipython = importlib.util.find_spec('IPython') is not None; "
        "print(not ipython or callable(__import__('IPython').get_ipython))"
    )
    done = subprocess.run(
        [sys.executable, "-c", code],
        env=os.environ | {"KERAS_BACKEND": "tensorflow", "MPLBACKEND": "Agg"},
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.split() == ["False", "False", "False", "None", "4", "1", "True"], done.stdout


def test_children_use_eigens_kernels_unless_the_user_chose_onednn(monkeypatch):
    """TensorFlow's oneDNN ops cost a grading child more than Eigen's on its small tensors
    (docs/maintainers.md); a user's own TF_ENABLE_ONEDNN_OPTS is kept, and the grader's own
    environment (a notebook's kernel, where `check()` runs) is left as it was."""
    monkeypatch.delenv("TF_ENABLE_ONEDNN_OPTS", raising=False)
    assert processes.child_environment()["TF_ENABLE_ONEDNN_OPTS"] == "0"
    assert "TF_ENABLE_ONEDNN_OPTS" not in os.environ
    monkeypatch.setenv("TF_ENABLE_ONEDNN_OPTS", "1")
    assert processes.child_environment()["TF_ENABLE_ONEDNN_OPTS"] == "1"


def test_a_forked_child_starts_in_the_childrens_environment(tmp_path):
    (tmp_path / "work.py").write_text(
        "import os\n\nimport numpy as np\n\n\ndef onednn():\n"
        "    return np.array(int(os.environ.get('TF_ENABLE_ONEDNN_OPTS', '-1')))\n"
    )
    save_cases(tmp_path / "onednn.npz", [Case("onednn", FUNCTION, "no inputs")])
    job = Job("onednn", tmp_path / "work.py", tmp_path / "onednn.npz", tmp_path, 30.0)
    outcome = run_jobs([job], parallel=1)["onednn"]
    assert outcome.state == RunState.FINISHED, outcome
    expected = processes.child_environment()["TF_ENABLE_ONEDNN_OPTS"]
    assert int(outcome.arrays["case0/output"]) == int(expected)
