"""The declarative vocabulary of an exercise record.

An exercise is data: which file the student edits, its parts and points, how check cases are
made (pure NumPy, from a seeded generator) and which known mistakes to recognise. One generic
engine (`grader.engine`) grades every record; nothing here imports TensorFlow, so listing and
showing exercises stays fast.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

import numpy as np

LAYER = "layer"
FUNCTION = "function"


@dataclass
class Case:
    """One check case: what to call, with what, and what to pass back through it.

    `target` names a class (kind "layer") or a function (kind "function") of the submission.
    A layer is built with `dtype`, given `weights` by weight name, called with `inputs` in
    order, and its vector–Jacobian products with `upstream` are taken w.r.t. every input and
    weight. A function is called with `inputs` in order and `params` as keyword arguments.
    """

    target: str
    kind: str
    label: str
    inputs: dict[str, np.ndarray] = field(default_factory=dict)
    params: dict[str, float | int | str | bool] = field(default_factory=dict)
    weights: dict[str, np.ndarray] = field(default_factory=dict)
    upstream: np.ndarray | None = None
    dtype: str = "float64"
    # Tolerances are relative to max(1, max |expected|); see grader.compare.
    rtol: float | None = None
    atol: float | None = None
    hidden: bool = False


@dataclass(frozen=True)
class Mistake:
    """A known wrong answer, recognised by recomputing it in NumPy from the case.

    `compute(case)` returns what the mistaken code would output for that case, or None where
    the mistake cannot be told apart on that case (for example a transposed square kernel on a
    non-square one, which would crash instead).
    """

    name: str
    explanation: str
    compute: Callable[[Case], np.ndarray | None]


@dataclass(frozen=True)
class Property:
    """A property the submission's output must have, checked in the grader's process.

    `check(case, output)` returns None when it holds, else what is wrong, in plain words (for
    example: the energy rose between steps 3 and 4). Runs on every case of its part whose target
    is in `targets` (all targets when empty).
    """

    name: str
    check: Callable[[Case, np.ndarray], str | None]
    targets: tuple[str, ...] = ()


@dataclass(frozen=True)
class Part:
    """A graded part. `make_cases(rng, hidden=False)` makes its cases; with `hidden=True` it
    draws fresh shapes as well as values (batch grading's hidden checks)."""

    name: str
    points: float
    targets: tuple[str, ...]
    make_cases: Callable[..., list[Case]]
    mistakes: tuple[Mistake, ...] = ()
    description: str = ""
    properties: tuple[Property, ...] = ()


@dataclass(frozen=True)
class WrittenPart:
    """An explanation the student writes in `exercises/answers/<exercise id>.md`.

    It is never graded automatically: the grader reports whether it was written, "for the
    instructor", with its points kept apart from the automatic score.
    """

    name: str
    points: float
    prompt: str


@dataclass(frozen=True)
class Exercise:
    id: str
    title: str
    file: str
    section: str
    summary: str
    parts: tuple[Part, ...]
    # Per-part wall-clock limit in seconds when grading a submission.
    timeout: float = 60.0
    written: tuple[WrittenPart, ...] = ()
    extra: Mapping[str, str] = field(default_factory=dict)

    @property
    def max_score(self) -> float:
        return float(sum(part.points for part in self.parts))

    def part(self, name: str) -> Part:
        for part in self.parts:
            if part.name == name:
                return part
        known = ", ".join(p.name for p in self.parts)
        raise KeyError(f"Exercise {self.id} has no part {name!r}. Parts: {known}.")
