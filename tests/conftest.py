"""Shared fixtures of the attnkit core tests."""

import collections
import importlib.util
import os
import re

os.environ.setdefault("KERAS_BACKEND", "tensorflow")
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

# The session's own temporary folder (issue 45): the controller makes it, the workers and every
# process a test starts inherit it as TMPDIR, and it is removed at the end, so that nothing a
# test or a grader it killed leaves (an `attnkit-batch-*` scratch) stays in the machine's /tmp.
# What is left in it under an `attnkit-` name fails the run, named, for the test that left it
# to be found. The session's pid and start time are written in it, so that the folder of a
# session that was killed (a `timeout`, kill -9) is removed by the next session, and named.
SESSION_PREFIX = "attnkit-tests-"
ABANDONED_SESSIONS: list[str] = []
if "PYTEST_XDIST_WORKER" not in os.environ and "ATTNKIT_TEST_TMPDIR" not in os.environ:
    import tempfile
    from pathlib import Path

    from grader.instructor.files import remove_abandoned_scratch, write_owner

    ABANDONED_SESSIONS = remove_abandoned_scratch(SESSION_PREFIX)
    os.environ["ATTNKIT_TEST_TMPDIR"] = os.environ["TMPDIR"] = tempfile.mkdtemp(
        prefix=SESSION_PREFIX
    )
    os.chmod(os.environ["TMPDIR"], 0o1777)  # as /tmp: the ordinary user's tests write here too
    write_owner(Path(os.environ["TMPDIR"]))
    tempfile.tempdir = None

# Keras is imported by the fixtures that use it, not here: pytest-xdist's controller loads this
# file too, and runs no test; importing TensorFlow there cost 5 s of CPU at every start.
import numpy as np  # noqa: E402
import pytest  # noqa: E402


@pytest.fixture
def rng():
    """A NumPy generator with a fixed seed, so that every test is reproducible."""
    return np.random.default_rng(1234)


@pytest.fixture(params=["mixed_float16", "mixed_bfloat16"])
def mixed_policy(request):
    """Runs the test under a mixed-precision global policy, always restored to float32."""
    import keras

    keras.config.set_dtype_policy(request.param)
    try:
        yield request.param
    finally:
        keras.config.set_dtype_policy("float32")


@pytest.fixture
def mixed_float16():
    """Runs the test under the mixed_float16 global policy, always restored to float32."""
    import keras

    keras.config.set_dtype_policy("mixed_float16")
    try:
        yield "mixed_float16"
    finally:
        keras.config.set_dtype_policy("float32")


# The order in which pytest-xdist's workers take the files (`--dist loadfile`, in collection
# order with `--no-loadscope-reorder`, pyproject.toml): the files with most tests first, as xdist
# orders them by itself, except STARTED_FIRST. Its default put the JAX file (2 tests, one child
# of 60-85 s on one core) last, where it ran alone while the other worker idled. All the long
# end-to-end files first (by duration) measured slower, 788 s against 751 s (`pytest -n 2
# --durations=0`): side by side, each grading children on both cores, they slowed each other.
# Started first too, the other files of few, long tests, which came last in that order and ran
# alone: the Gradescope layout (2 tests, 50-60 s), the JAX and fresh-interpreter gradings (20 s),
# and the Slurm test (20 s, mostly waiting for Slurm: beside a busy worker it costs nothing);
# then the ordinary user's kit (1 test, 6 s), which ran last. The benchmarks' quick runs (4
# tests, 30 s) ran last too, but started first they took 39-45 s (clean-clone CI, twice)
# against 31 s: their timings and JAX compiles beside the other long files slow each other.
STARTED_FIRST = [
    "tests/library/test_jax_backend.py",
    "tests/grader/test_gradescope_autograder.py",
    "tests/grader/test_sandbox_calls.py",
    "tests/grader/test_slurm.py",
    "tests/grader/test_unprivileged_kit.py",
]


def pytest_collection_modifyitems(config, items):
    root = config.rootpath
    files = [item.path.relative_to(root).as_posix() for item in items]
    tests_in = collections.Counter(files)

    def order(pair):
        name = pair[0]
        first = STARTED_FIRST.index(name) if name in STARTED_FIRST else len(STARTED_FIRST)
        return first, -tests_in[name]

    # Stable, as xdist's own sort is: within a file, and among files with as many tests, the
    # collection order is kept.
    items[:] = [item for _, item in sorted(zip(files, items, strict=True), key=order)]


# Test files that share what costs most to make, made once per process, run on one worker, as one
# unit of work, so that the later files find it made: the student kit of `grader release
# student` (tests/support/released.py, 25 s of CPU), and each record's reference graded with its
# hidden seed and its outputs on the public cases (tests/support/grading.reference_result and
# grader.engine.references, memoised), which test_records.py, each record's own file and the
# jargon checks all use.
SAME_WORKER_AS = {"tests/grader/test_actions_runner.py": "tests/grader/test_release.py"}
GRADE_THE_REFERENCES = re.compile(r"tests/grader/test_(ex8_\d|lab_\w+|jargon)\.py")

if importlib.util.find_spec("xdist") is not None:

    def pytest_xdist_make_scheduler(config, log):
        if config.getoption("dist") != "loadfile":
            return None
        from xdist.scheduler import LoadFileScheduling

        class FilesThatShare(LoadFileScheduling):
            def _split_scope(self, nodeid):
                scope = super()._split_scope(nodeid)
                if GRADE_THE_REFERENCES.fullmatch(scope):
                    return "tests/grader/test_records.py"
                return SAME_WORKER_AS.get(scope, scope)

        return FilesThatShare(config, log)


def _untracked(root) -> set[str] | None:
    """The working tree's untracked files, ignored ones included (a `~/.keras/` a test made
    matches `*.keras`), less the caches every run makes; None without git."""
    import subprocess

    try:
        done = subprocess.run(
            ["git", "-C", str(root), "status", "--porcelain", "-z", "--ignored", "-uall"],
            capture_output=True,
            timeout=60,
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    if done.returncode != 0:
        return None
    caches = ("__pycache__/", ".pytest_cache/", ".ruff_cache/", ".egg-info/", ".hypothesis/")
    entries = done.stdout.decode("utf-8", "replace").split("\0")
    return {
        entry[3:]
        for entry in entries
        if entry[:2] in ("??", "!!") and not any(cache in entry for cache in caches)
    }


def _controller(config) -> bool:
    return not hasattr(config, "workerinput")


def pytest_sessionstart(session):
    if _controller(session.config):
        session.config._untracked_before = _untracked(session.config.rootpath)
        reporter = session.config.pluginmanager.get_plugin("terminalreporter")
        for folder in ABANDONED_SESSIONS:
            if reporter:
                reporter.write_line(f"removed the temporary folder of a killed session: {folder}")


def pytest_sessionfinish(session, exitstatus):
    """No test writes into the working tree (issue 49): a file that appeared there fails the
    run, named. Nor does any leave an `attnkit-` folder or file in the temporary directory
    (issue 45): what is left in the session's temporary folder fails the run, named; the
    folder is then removed."""
    if not _controller(session.config):
        return
    import shutil

    reporter = session.config.pluginmanager.get_plugin("terminalreporter")
    before = getattr(session.config, "_untracked_before", None)
    after = _untracked(session.config.rootpath) if before is not None else None
    written = sorted(after - before) if after is not None else []
    if written:
        if reporter:
            reporter.write_line(f"tests wrote into the working tree: {', '.join(written[:20])}")
        session.exitstatus = 1
    folder = os.environ.get("ATTNKIT_TEST_TMPDIR", "")
    if folder and os.path.basename(folder).startswith("attnkit-tests-"):
        left = (
            sorted(name for name in os.listdir(folder) if name.startswith("attnkit-"))
            if os.path.isdir(folder)
            else []
        )
        if left:
            if reporter:
                reporter.write_line(
                    f"tests left in the temporary folder (removed now): {', '.join(left)}"
                )
            session.exitstatus = 1
        shutil.rmtree(folder, ignore_errors=True)
