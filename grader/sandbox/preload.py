"""Imported once by the fork server, so every child starts with Keras already imported.

No TensorFlow op may run here: thread pools made by running ops do not survive a fork.
"""

import os
import sys

# Imported by Keras and TensorFlow, where installed, only for what grading never does, each
# wrapped in `try: import ... except ImportError`: TFLite's converter imports JAX (the dev
# extras and Colab have it), Keras's image-gallery plots import matplotlib, and its file editor
# IPython (for a notebook's display). Together 1.3-1.8 s of CPU at every start of the helper,
# out of 5-6.5 s (`python -X importtime -c "import keras"`; `/usr/bin/time python -c "import
# grader.sandbox.preload"`, this 2-core machine; IPython and matplotlib about 0.3 s of it).
_UNNEEDED_BY_KERAS = ("matplotlib", "IPython")
NOT_NEEDED_FOR_GRADING = {
    "tensorflow": ("jax", *_UNNEEDED_BY_KERAS),
    "jax": _UNNEEDED_BY_KERAS,
}


def import_keras_without_unneeded_modules() -> None:
    """Import Keras with NOT_NEEDED_FOR_GRADING hidden during that import only: a submission
    that imports one of them later (a plot left in a notebook) gets it as before."""
    hidden = [
        name
        for name in NOT_NEEDED_FOR_GRADING.get(os.environ.get("KERAS_BACKEND"), ())
        if name not in sys.modules
    ]
    for name in hidden:
        sys.modules[name] = None  # `import name` raises ImportError
    try:
        import keras  # noqa: F401
    finally:
        for name in hidden:
            if name in sys.modules and sys.modules[name] is None:
                del sys.modules[name]


import_keras_without_unneeded_modules()

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
