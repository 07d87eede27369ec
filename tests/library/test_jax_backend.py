"""attnkit's layers on the JAX backend (installed with the dev extras) and, for float64
fidelity, on PyTorch when it is installed; each in a child process: Keras fixes its backend
when first imported, and this process runs TensorFlow."""

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from tests.support.backends import jax_on_cpu

SCRIPT = Path(__file__).parents[1] / "support" / "jax_backend_checks.py"


def run_checks(backend, **extra):
    if backend == "jax":
        environment = jax_on_cpu(**extra)
    else:
        environment = os.environ | {"KERAS_BACKEND": backend} | extra
    done = subprocess.run(
        [sys.executable, str(SCRIPT)], capture_output=True, text=True, env=environment, timeout=600
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert f"{backend} backend: ok" in done.stdout


@pytest.mark.long
@pytest.mark.skipif(importlib.util.find_spec("jax") is None, reason="JAX is not installed")
def test_multi_head_attention_on_jax_eager_and_jitted_and_float64_on_every_path(tmp_path):
    """And the float64 output on JAX of the layers built on Keras's own equal to TensorFlow's,
    computed here (Keras's Dense, its tanh and its Bidirectional's copy of a GRU lost float64
    there)."""
    saved = tmp_path / "jax.npz"
    run_checks("jax", ATTNKIT_FLOAT64_OUTPUTS=str(saved))
    from tests.support import float64_outputs

    on_jax = np.load(saved, allow_pickle=False)
    on_tensorflow = float64_outputs.outputs()
    assert sorted(on_jax.files) == sorted(on_tensorflow)
    for name, expected in on_tensorflow.items():
        error = np.abs(on_jax[name] - expected).max() / max(np.abs(expected).max(), 1e-30)
        tolerance = float64_outputs.TOLERANCE_OF.get(name, float64_outputs.TOLERANCE)
        assert error <= tolerance, f"{name}: JAX and TensorFlow differ by {error:.1e} in float64"


@pytest.mark.skipif(importlib.util.find_spec("torch") is None, reason="PyTorch is not installed")
def test_float64_on_every_path_on_torch():
    run_checks("torch")
