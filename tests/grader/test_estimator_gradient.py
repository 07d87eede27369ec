"""A zero gradient is told by what the forward pass is (issue 47): where the right output stays
the same when the input moves a little (a hard choice), the gradient asked for is an
estimator's and its absence is said so; where the output moves with the input, a zero gradient
is something that cuts it. Both on real files graded as students' are."""

from __future__ import annotations

import pytest

from grader.grading import grade
from grader.kit import KIT

pytestmark = pytest.mark.labs


def graded(tmp_path, exercise, filename, old, new, part):
    source = (KIT / "solutions" / filename).read_text(encoding="utf-8")
    assert old in source
    (tmp_path / filename).write_text(source.replace(old, new), encoding="utf-8")
    result = grade(exercise, tmp_path, seed=0, parts=[part])
    (found,) = result.parts
    return [check for check in found.checks if not check.passed]


def test_a_missing_straight_through_estimator_is_named(tmp_path):
    failing = graded(
        tmp_path,
        "hard",
        "lab_hard.py",
        "weights = hard + soft - ops.stop_gradient(soft)",
        "weights = hard",
        "straight_through",
    )
    assert failing and all(check.name.startswith("gradient") for check in failing)
    assert {check.mistake for check in failing} == {"estimator missing"}
    assert "straight-through" in failing[0].message
    assert "cuts the gradient" not in failing[0].message


def test_a_stopped_gradient_of_a_smooth_layer_is_told_cut(tmp_path):
    """A scaled dot product whose scores' gradient is stopped: the output is right and moves
    with its inputs, so the zero gradient is a cut, not a missing estimator."""
    failing = graded(
        tmp_path,
        "8-2",
        "ex8_2.py",
        "return scores / ops.sqrt(ops.cast(depth, scores.dtype))",
        "return ops.stop_gradient(scores) / ops.sqrt(ops.cast(depth, scores.dtype))",
        "ScaledDotScore",
    )
    assert failing and {check.mistake for check in failing} == {"gradient cut"}
    assert "cuts the gradient" in failing[0].message
