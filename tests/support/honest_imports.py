"""A correct file that imports what an honest student might and the grader's helper had not
loaded (issue 45): a part of NumPy, SciPy, matplotlib (whose import lists the fonts, running
`fc-list` where it can), Keras's ops and two modules of the standard library. Graded on every
path (`grader batch`, `grader check` as GitHub Actions runs it, Gradescope's layout) it must
score full marks with nothing flagged: tests/grader/test_honest_imports.py,
test_gradescope_autograder.py, test_actions_runner.py."""

from __future__ import annotations

import importlib.util

from grader.kit import KIT

# Each import guarded: Gradescope's venv holds only the kit's run-time dependencies, and a
# module that is not installed is looked for on every folder of sys.path all the same.
MODULES = (
    "numpy.testing",
    "numpy.polynomial",
    "scipy",
    "scipy.special",
    "scipy.linalg",
    "matplotlib",
    "matplotlib.pyplot",
    "keras.ops",
    "json",
    "email.utils",
)
HEADER = 'import os\nos.environ.setdefault("MPLBACKEND", "Agg")\n' + "".join(
    f"try:\n    import {name}\nexcept ImportError:\n    pass\n" for name in MODULES
)


def installed() -> list[str]:
    """The MODULES this interpreter has (the dev extras install SciPy and matplotlib)."""
    return [name for name in MODULES if importlib.util.find_spec(name.split(".")[0]) is not None]


def honest_file() -> str:
    """alice's correct 8-2 (examples/submissions) with the imports above first."""
    alice = (KIT / "examples" / "submissions" / "alice" / "ex8_2.py").read_text(encoding="utf-8")
    return HEADER + alice
