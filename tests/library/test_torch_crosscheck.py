"""attnkit's Transformer blocks and grouped-query attention against PyTorch's with copied
weights (tests/support/torch_checks.py), in a process of its own, where PyTorch is installed.

CI's machine cannot install PyTorch (its CPU index is unreachable and PyPI's wheel pulls GBs of
CUDA), so there this skips; the script's run on the GPU machine, where PyTorch is, is recorded
in benchmarks/results/."""

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import pytest

SCRIPT = Path(__file__).parents[1] / "support" / "torch_checks.py"


@pytest.mark.skipif(importlib.util.find_spec("torch") is None, reason="PyTorch is not installed")
def test_blocks_and_grouped_query_attention_match_pytorch():
    done = subprocess.run(
        [sys.executable, str(SCRIPT)],
        capture_output=True,
        text=True,
        env=os.environ | {"KERAS_BACKEND": "tensorflow"},
        timeout=600,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert "torch cross-checks: ok" in done.stdout
