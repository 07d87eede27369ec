"""Shared fixtures of the attnkit core tests."""

import os

os.environ.setdefault("KERAS_BACKEND", "tensorflow")
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import keras  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402


@pytest.fixture
def rng():
    """A NumPy generator with a fixed seed, so that every test is reproducible."""
    return np.random.default_rng(1234)


@pytest.fixture(params=["mixed_float16", "mixed_bfloat16"])
def mixed_policy(request):
    """Runs the test under a mixed-precision global policy, always restored to float32."""
    keras.config.set_dtype_policy(request.param)
    try:
        yield request.param
    finally:
        keras.config.set_dtype_policy("float32")


@pytest.fixture
def mixed_float16():
    """Runs the test under the mixed_float16 global policy, always restored to float32."""
    keras.config.set_dtype_policy("mixed_float16")
    try:
        yield "mixed_float16"
    finally:
        keras.config.set_dtype_policy("float32")
