"""Imported once by the fork server, so every child starts with Keras already imported.

No TensorFlow op may run here: thread pools made by running ops do not survive a fork.
"""

import keras  # noqa: F401
import numpy  # noqa: F401

import grader.sandbox.child  # noqa: F401

if keras.backend.backend() == "tensorflow":
    import tensorflow  # noqa: F401
elif keras.backend.backend() == "jax":
    import jax

    # Without it JAX makes every float64 array float32, and the float64 cases (the references'
    # and the submission's alike) are graded in float32: wrong dtypes, "changed" arguments.
    jax.config.update("jax_enable_x64", True)
