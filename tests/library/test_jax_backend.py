"""attnkit's layers on the JAX backend (installed with the dev extras), in a child process:
Keras fixes its backend when first imported, and this process runs TensorFlow."""

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import pytest


@pytest.mark.skipif(importlib.util.find_spec("jax") is None, reason="JAX is not installed")
def test_multi_head_attention_on_jax_eager_and_jitted():
    script = Path(__file__).parents[1] / "support" / "jax_backend_checks.py"
    environment = os.environ | {"KERAS_BACKEND": "jax", "JAX_PLATFORMS": "cpu"}
    done = subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, env=environment, timeout=300
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert "jax backend: ok" in done.stdout
