"""Layers of benchmarks/gpu_check.py's table built in float64 on the CPU, with weights and
inputs drawn from one seed, and their outputs: the same numbers on every backend, since float64
stays float64 on every path. tests/support/jax_backend_checks.py saves them on JAX;
tests/library/test_jax_backend.py compares them with TensorFlow's."""

import importlib.util
from pathlib import Path

import keras
import numpy as np

_GPU_CHECK = Path(__file__).resolve().parents[2] / "benchmarks" / "gpu_check.py"
_spec = importlib.util.spec_from_file_location("attnkit_gpu_check", _GPU_CHECK)
gpu_check = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(gpu_check)

# The position table is float32 by design (its docstring says so).
TOLERANCE, TOLERANCE_OF = 1e-12, {"SinusoidalPositionEncoding": 1e-6}
# The layers built on Keras's own (Dense, GRU, LSTM, Bidirectional), whose float64 Keras does
# not keep on JAX: the rest are checked against NumPy by jax_backend_checks.py, and all of them
# here cost JAX 30 s of compiling op by op.
ON_KERAS_LAYERS = (
    "LuongAttention",
    "HierarchicalAttention",
    "BahdanauDecoder",
    "PointerNetwork",
    "NeuralTuringMachine",
)


def outputs(names=ON_KERAS_LAYERS, seed=7) -> dict[str, np.ndarray]:
    """The float64 output of each layer named, by name (None: every layer); the same seed draws
    the same inputs, and each layer's weights from a generator of its own."""
    found = {}
    cases = gpu_check.layer_cases(np.random.default_rng(seed))
    for index, (name, make, args, kwargs, _) in enumerate(cases):
        if names is not None and name not in names:
            continue
        with keras.device("cpu:0"):
            layer = make("float64")
            layer(*args, **kwargs)
            gpu_check.randomise(layer, np.random.default_rng([seed, index]))
            out = gpu_check.first_tensor(layer(*args, **kwargs))
        assert keras.backend.standardize_dtype(out.dtype) == "float64", (name, out.dtype)
        found[name] = np.asarray(keras.ops.convert_to_numpy(out), "float64")
    return found
