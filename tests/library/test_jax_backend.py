"""attnkit's layers on the JAX backend (installed with the dev extras) and, for float64
fidelity, on PyTorch when it is installed; each in a child process: Keras fixes its backend
when first imported, and this process runs TensorFlow."""

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import pytest

SCRIPT = Path(__file__).parents[1] / "support" / "jax_backend_checks.py"


def run_checks(backend):
    environment = os.environ | {"KERAS_BACKEND": backend, "JAX_PLATFORMS": "cpu"}
    done = subprocess.run(
        [sys.executable, str(SCRIPT)], capture_output=True, text=True, env=environment, timeout=600
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert f"{backend} backend: ok" in done.stdout


@pytest.mark.skipif(importlib.util.find_spec("jax") is None, reason="JAX is not installed")
def test_multi_head_attention_on_jax_eager_and_jitted_and_float64_on_every_path():
    run_checks("jax")


@pytest.mark.skipif(importlib.util.find_spec("torch") is None, reason="PyTorch is not installed")
def test_float64_on_every_path_on_torch():
    run_checks("torch")
