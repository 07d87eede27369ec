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


def _symbolic(value):
    """An array as a Keras symbolic tensor of its shape and dtype; anything else as it is."""
    if hasattr(value, "shape") and hasattr(value, "dtype"):
        return keras.KerasTensor(tuple(value.shape), keras.backend.standardize_dtype(value.dtype))
    return value


def outputs(names=ON_KERAS_LAYERS, seed=7, compiled=False) -> dict[str, np.ndarray]:
    """The float64 output of each layer named, by name (None: every layer); the same seed draws
    the same inputs, and each layer's weights from a generator of its own. Each layer is built
    on symbolic inputs (its weights made, nothing computed) and called once; with `compiled`
    (JAX), that call is one jax.jit: JAX compiles a whole layer in a third less time than op by
    op (11 s against 15 s of CPU here, the five layers)."""
    found = {}
    cases = gpu_check.layer_cases(np.random.default_rng(seed))
    for index, (name, make, args, kwargs, _) in enumerate(cases):
        if names is not None and name not in names:
            continue
        with keras.device("cpu:0"):
            layer = make("float64")
            layer(*map(_symbolic, args), **{key: _symbolic(v) for key, v in kwargs.items()})
            gpu_check.randomise(layer, np.random.default_rng([seed, index]))
            if compiled:
                import jax

                call = jax.jit(lambda *arrays, layer=layer, kwargs=kwargs: layer(*arrays, **kwargs))
                out = gpu_check.first_tensor(call(*args))
            else:
                out = gpu_check.first_tensor(layer(*args, **kwargs))
        assert keras.backend.standardize_dtype(out.dtype) == "float64", (name, out.dtype)
        found[name] = np.asarray(keras.ops.convert_to_numpy(out), "float64")
    return found
