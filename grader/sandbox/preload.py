"""Imported once by the fork server, so every child starts with Keras already imported.

No TensorFlow op may run here: thread pools made by running ops do not survive a fork.
"""

import os
import sys


def import_keras_without_tflites_jax():
    """Import Keras; on TensorFlow, with JAX hidden while TensorFlow imports.

    TensorFlow's TFLite converter imports JAX whenever it is installed (Colab has it, and so
    do the dev extras), for converting JAX models, which grading never does: 0.5-0.9 s of CPU
    at every start of the helper here (`python -X importtime -c "import keras"`). JAX is
    hidden only during that import and only on TensorFlow; `import jax` works as before after.
    """
    hide = os.environ.get("KERAS_BACKEND") == "tensorflow" and "jax" not in sys.modules
    if hide:
        sys.modules["jax"] = None  # an ImportError for `from jax import jit`, which TFLite catches
    try:
        import keras  # noqa: F401
    finally:
        if hide and sys.modules.get("jax", False) is None:
            del sys.modules["jax"]


import_keras_without_tflites_jax()

import keras  # noqa: E402
import numpy  # noqa: E402, F401

import grader.sandbox.child  # noqa: E402, F401

if keras.backend.backend() == "tensorflow":
    import tensorflow  # noqa: F401
elif keras.backend.backend() == "jax":
    import jax

    # Without it JAX makes every float64 array float32, and the float64 cases (the references'
    # and the submission's alike) are graded in float32: wrong dtypes, "changed" arguments.
    jax.config.update("jax_enable_x64", True)
