"""Shared fixtures of the attnkit core tests."""

import os

os.environ.setdefault("KERAS_BACKEND", "tensorflow")
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

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


# The longest files first. Under `--dist loadfile` pytest-xdist hands files to its workers in
# collection order, so a long file collected last runs alone while the other worker idles:
# started first, the long files overlap with everything else. Measured with
# `pytest -n 2 --durations=80`; a file missing from the list only runs later, nothing breaks.
LONGEST_FIRST = [
    "tests/grader/test_benchmarks.py",
    "tests/grader/test_gradescope_autograder.py",
    "tests/grader/test_actions_runner.py",
    "tests/grader/test_release.py",
    "tests/grader/test_lms_downloads.py",
    "tests/library/test_demos.py",
    "tests/grader/test_sandbox_calls.py",
    "tests/grader/test_hostile_class.py",
    "tests/library/test_memory_demos.py",
    "tests/library/test_jax_backend.py",
    "tests/grader/test_batch.py",
    "tests/grader/test_quiet.py",
    "tests/grader/test_records.py",
    "tests/grader/test_evidence.py",
]


def pytest_collection_modifyitems(config, items):
    rank = {path: index for index, path in enumerate(LONGEST_FIRST)}
    root = config.rootpath

    def order(item):
        relative = item.path.relative_to(root).as_posix()
        return rank.get(relative, len(rank))

    items.sort(key=order)  # stable: within a file, and among the rest, the order is kept
