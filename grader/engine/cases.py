"""Check cases of a record, made in the grader's process from a seed, and saved for a child."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from grader.engine.bundle import cases_to_bundle, save_bundle
from grader.engine.spec import Case, Exercise


def make_cases(record: Exercise, seed: int, hidden_seed: int | None = None):
    """Each part's public cases from `seed`, then hidden ones from `hidden_seed` if given.

    Hidden cases come from the same maker asked for fresh shapes; their labels say "hidden"
    and their feedback never shows expected values.
    """
    cases = {}
    for index, part in enumerate(record.parts):
        cases[part.name] = part.make_cases(np.random.default_rng([seed, index]))
        if hidden_seed is not None:
            extra = part.make_cases(np.random.default_rng([hidden_seed, index, 1]), hidden=True)
            for case in extra:
                case.hidden = True
                case.label = f"hidden, {case.label}"
            cases[part.name] += extra
    return cases


def save_cases(path: Path, cases: list[Case]) -> None:
    described, arrays = cases_to_bundle(cases)
    save_bundle(path, {"cases": described}, arrays)


# ---- vocabulary of the records' case makers ------------------------------------------------


def random_shapes(rng, count: int, size: int, low: int = 1, high: int = 7) -> list[tuple]:
    """`count` shapes of `size` dimensions, each in [low, high): one draw per shape, so a
    record that asks for the same shapes draws the same numbers."""
    return [tuple(int(v) for v in rng.integers(low, high, size=size)) for _ in range(count)]


def shapes_for(rng, hidden: bool, public, count: int, size: int, low: int = 1, high: int = 7):
    """The public shapes, or (hidden checks) `count` fresh ones of `size` dimensions."""
    return random_shapes(rng, count, size, low, high) if hidden else list(public)


def dims_label(**dims) -> str:
    """ "B=2 Tq=3 Tk=5": the dimensions of a case, as its label shows them."""
    return " ".join(f"{name}={value}" for name, value in dims.items())
