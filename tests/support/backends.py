"""The environment of a child process that runs Keras on another backend than this one's."""

import os

# XLA compiles at LLVM's -O0 in the JAX children of tests: they check values, dtypes and that
# things run, not speed, and compiling is most of their time. Measured on this 2-core machine,
# `tests/support/jax_backend_checks.py` alone: 92 s of CPU at the default level, 57 s at this.
FAST_XLA_COMPILES = "--xla_backend_optimization_level=0 --xla_llvm_disable_expensive_passes=true"


def jax_on_cpu(**extra: str) -> dict[str, str]:
    """This environment with Keras on JAX, on the CPU, compiling fast, and `extra`."""
    return os.environ | {
        "KERAS_BACKEND": "jax",
        "JAX_PLATFORMS": "cpu",
        "XLA_FLAGS": FAST_XLA_COMPILES,
        **extra,
    }
