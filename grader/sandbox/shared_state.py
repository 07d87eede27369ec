"""What one exercise's code may leave behind in a child for the next exercise it runs.

`grader batch --one-child` runs a student's exercises one after another in one child
(grader.sandbox.scheduler): TensorFlow's kernels, warm after the first, serve the rest, and a
student pays one start of a child instead of one per exercise. Each exercise must still be
graded as in a child of its own as far as one process allows,
so the process-wide settings that honest code changes, and that outputs, logs and messages
depend on, are taken when the child starts and put back before each later exercise is imported:
Keras's global state (the counters that name layers, the dtype policy) and configuration, the
random states of NumPy and Python, NumPy's error and print settings, which warnings were shown
(each is printed again, as in a fresh process), `sys.path`, the environment, the working folder,
signal handlers, and the student's own modules (imported again, fresh). Nothing here makes a
call the sandbox refuses (timers are refused to submissions anyway): it would be counted as the
student's attempt.

A library that a submission patches (`numpy.matmul = ...`), a thread or a hook it leaves, stays
for the student's later exercises (a stub can then be graded on an earlier file's code: the r9
red team, hence not the default); nothing a submission does reaches a classmate, whose files
run in other children.
"""

from __future__ import annotations

import copy
import os
import random
import signal
import sys
import warnings

import numpy as np

SIGNALS = tuple(
    getattr(signal, name)
    for name in ("SIGALRM", "SIGVTALRM", "SIGPROF", "SIGUSR1", "SIGUSR2", "SIGINT", "SIGTERM")
    if hasattr(signal, name)
)


class Snapshot:
    """The child's state as it started, to be put back (`restore`) between exercises."""

    def __init__(self):
        self.path = list(sys.path)
        self.environ = dict(os.environ)
        self.filters = list(warnings.filters)
        self.numpy_errors = np.geterr()
        self.numpy_printing = np.get_printoptions()
        self.numpy_random = np.random.get_state()
        self.random = random.getstate()
        self.recursion = sys.getrecursionlimit()
        self.handlers = {number: signal.getsignal(number) for number in SIGNALS}
        self.modules = set(sys.modules)
        self.keras = _keras_state()

    def restore(self, workdir: str) -> None:
        """Put the state back; drop the modules imported from `workdir` (the student's)."""
        for number, handler in self.handlers.items():
            try:
                signal.signal(number, handler if handler is not None else signal.SIG_DFL)
            except (OSError, ValueError, TypeError):
                pass
        sys.path[:] = self.path
        os.environ.clear()
        os.environ.update(self.environ)
        if workdir:
            os.chdir(workdir)
        warnings.filters[:] = self.filters
        # What was shown: every module's registry of it starts afresh at its next warning once
        # the filters' version moves (Python's warnings module), and "once" has its own.
        warnings._filters_mutated()
        warnings.onceregistry.clear()
        np.seterr(**self.numpy_errors)
        np.set_printoptions(**self.numpy_printing)
        np.random.set_state(self.numpy_random)
        random.setstate(self.random)
        sys.setrecursionlimit(self.recursion)
        root = os.path.realpath(workdir) + os.sep if workdir else None
        for name, module in list(sys.modules.items()):
            if name in self.modules:
                continue
            where = (_namespace(module) or {}).get("__file__")
            if root is None or not isinstance(where, str):
                continue
            if os.path.realpath(where).startswith(root):
                del sys.modules[name]
        _restore_keras(self.keras)


def _namespace(module) -> dict | None:
    try:
        namespace = object.__getattribute__(module, "__dict__")
    except (AttributeError, TypeError):
        return None
    return namespace if isinstance(namespace, dict) else None


def _keras_state():
    if "keras" not in sys.modules:
        return None
    import keras
    from keras.src.backend.common import global_state

    config = keras.config
    tracker = vars(global_state.GLOBAL_STATE_TRACKER)
    return {
        "tracker": {key: copy.copy(value) for key, value in tracker.items()},
        "floatx": config.floatx(),
        "epsilon": config.epsilon(),
        "image_data_format": config.image_data_format(),
        "eager": _functions_run_eagerly(),
    }


def _restore_keras(state) -> None:
    if state is None:
        return
    import keras
    from keras.src.backend.common import global_state

    tracker = vars(global_state.GLOBAL_STATE_TRACKER)
    tracker.clear()
    tracker.update({key: copy.copy(value) for key, value in state["tracker"].items()})
    keras.config.set_floatx(state["floatx"])
    keras.config.set_epsilon(state["epsilon"])
    keras.config.set_image_data_format(state["image_data_format"])
    if state["eager"] is not None:
        import tensorflow as tf

        tf.config.run_functions_eagerly(state["eager"])


def _functions_run_eagerly() -> bool | None:
    if (
        os.environ.get("KERAS_BACKEND", "tensorflow") != "tensorflow"
        or "tensorflow" not in sys.modules
    ):
        return None
    import tensorflow as tf

    return bool(tf.config.functions_run_eagerly())
