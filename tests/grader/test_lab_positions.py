"""Lab positions graded end to end: what the reference is checked on (the offset property and the
gradients), a correct alternative, a non-rotation caught by the property, and planted mistakes.
Full marks and the stub: tests/grader/test_records.py."""

import pytest

from grader.grading import grade
from tests.grader.test_records import HIDDEN_SEEDS
from tests.support.grading import assert_full_marks, failures, reference_result, submit
from tests.support.planting import from_table, patched_solution

pytestmark = pytest.mark.labs

LAB = "positions"


def test_the_reference_is_checked_on_the_offset_property_and_the_gradient():
    result = reference_result(LAB, HIDDEN_SEEDS[LAB])
    names = [check.name for part in result.parts for check in part.checks]
    assert any("scores depend only on the offset" in name for name in names)
    assert any(name.startswith("RotaryEmbedding: gradient wrt x,") for name in names)


# The rotary embedding as keras-hub and many course notes write it: cos and sin of the angles
# repeated over both halves, and x "rotated by half" (−x2, x1); the table by stacking pairs.
ALTERNATIVE = """
import keras
from keras import ops


def sinusoidal_encoding(positions, depth, max_wavelength=10000.0):
    positions = ops.convert_to_tensor(positions)
    pairs = (depth + 1) // 2
    i = ops.cast(ops.arange(pairs), positions.dtype)
    angles = positions[..., None] / max_wavelength ** (2.0 * i / depth)
    table = ops.stack([ops.sin(angles), ops.cos(angles)], axis=-1)
    table = ops.reshape(table, (*positions.shape, 2 * pairs))
    return table[..., :depth]


def apply_rotary(x, positions, max_wavelength=10000.0):
    x = ops.convert_to_tensor(x)
    d = x.shape[-1]
    angles = ops.cast(positions, x.dtype)[..., None] / ops.cast(
        max_wavelength, x.dtype
    ) ** (ops.cast(ops.arange(0, d, 2), x.dtype) / d)
    angles = ops.concatenate([angles, angles], axis=-1)
    if ops.ndim(angles) == 2:
        angles = angles[None]
    if ops.ndim(x) == 4:
        angles = angles[:, :, None, :]
    rotated_half = ops.concatenate([-x[..., d // 2 :], x[..., : d // 2]], axis=-1)
    return x * ops.cos(angles) + rotated_half * ops.sin(angles)


class RotaryEmbedding(keras.layers.Layer):
    def __init__(self, positions, max_wavelength=10000.0, **kwargs):
        super().__init__(**kwargs)
        self.positions = positions
        self.max_wavelength = max_wavelength

    def call(self, x):
        positions = ops.convert_to_tensor(self.positions, dtype=self.compute_dtype)
        return apply_rotary(x, positions, self.max_wavelength)
"""


def test_correct_alternative_scores_full_marks(tmp_path):
    assert_full_marks(grade(LAB, submit(tmp_path, LAB, ALTERNATIVE, header="")))


SOLUTION_ROTATION = "[first * cos - second * sin, second * cos + first * sin]"


def test_a_map_that_is_no_rotation_breaks_the_offset_property(tmp_path):
    """Both minus signs dropped: each pair is mapped by [[cos, sin], [sin, cos]], no rotation, so
    the scores of two tokens change when every position is shifted."""
    source = patched_solution(
        LAB, (SOLUTION_ROTATION, "[first * cos + second * sin, second * cos + first * sin]")
    )
    folder = tmp_path / "no-rotation"
    folder.mkdir()
    (folder / "lab_positions.py").write_text(source, encoding="utf-8")
    part = grade(LAB, str(folder), parts=["apply_rotary"]).part("apply_rotary")
    assert part.score == 0.0
    broken = [c for c in failures(part) if "depends only on their offset" in c.message]
    assert broken, [c.message for c in failures(part)]
    assert all(": scores depend only on the offset, " in c.name for c in broken)


SINUSOIDAL_RETURN = "return ops.where(features % 2 == 0, ops.sin(angles), ops.cos(angles))"
CONCATENATED = """half = depth // 2
    slow = ops.power(
        ops.cast(max_wavelength, positions.dtype),
        -2.0 * ops.cast(ops.arange(half), positions.dtype) / depth,
    )
    angles = ops.expand_dims(positions, -1) * slow
    return ops.concatenate([ops.sin(angles), ops.cos(angles)], axis=-1)"""
ADJACENT = """first, second = x[..., 0::2], x[..., 1::2]
    pairs = ops.stack([first * cos - second * sin, second * cos + first * sin], axis=-1)
    return ops.reshape(pairs, ops.shape(x))"""
SOLUTION_HALVES = (
    "first, second = x[..., :half], x[..., half:]\n"
    f"    return ops.concatenate({SOLUTION_ROTATION}, axis=-1)"
)
FIRST_POSITIONS = (
    "positions = ops.convert_to_tensor(positions)\n"
    "    positions = ops.zeros_like(positions) + ops.cast(\n"
    "        ops.arange(positions.shape[-1]), positions.dtype\n"
    "    )\n"
)

# (part, mistake, a phrase of the feedback, an (old, new) patch of the solution)
PATCHES = [
    (
        "apply_rotary",
        "found: exponent",
        "twice the formula's exponent",
        ("* (2.0 / depth)", "* (2.0 / (depth // 2))"),
    ),
    (
        "sinusoidal_encoding",
        "sin and cos swapped",
        "PE(p, 2i) is the sine",
        (
            SINUSOIDAL_RETURN,
            SINUSOIDAL_RETURN.replace("sin(angles), ops.cos", "cos(angles), ops.sin"),
        ),
    ),
    (
        "sinusoidal_encoding",
        "exponent i/d",
        "the exponent is 2i/d",
        ("-2.0 * pair / depth", "-1.0 * pair / depth"),
    ),
    (
        "sinusoidal_encoding",
        "each feature its own frequency",
        "both features of pair i use the same angle",
        ("-2.0 * pair / depth", "-1.0 * ops.cast(features, positions.dtype) / depth"),
    ),
    (
        "sinusoidal_encoding",
        "exponent 2j/d",
        "features 2i and 2i+1 both use",
        ("-2.0 * pair / depth", "-2.0 * ops.cast(features, positions.dtype) / depth"),
    ),
    (
        "sinusoidal_encoding",
        "sin and cos concatenated",
        "the book interleaves them",
        (SINUSOIDAL_RETURN, CONCATENATED),
    ),
    (
        "sinusoidal_encoding",
        "base 1000",
        "the base is max_wavelength",
        ("ops.cast(max_wavelength, positions.dtype)", "ops.cast(1000.0, positions.dtype)"),
    ),
    (
        "sinusoidal_encoding",
        "positions not used",
        "encode the positions you are given",
        ("positions = ops.convert_to_tensor(positions)\n", FIRST_POSITIONS),
    ),
    (
        "apply_rotary",
        "adjacent pairs rotated",
        "this lab pairs the halves",
        (SOLUTION_HALVES, ADJACENT),
    ),
    (
        "apply_rotary",
        "rotated the wrong way",
        "the minus goes on the first half",
        (SOLUTION_ROTATION, "[first * cos + second * sin, second * cos - first * sin]"),
    ),
    (
        "apply_rotary",
        "sin and cos swapped",
        "cos θ and sin θ trade places",
        (
            "cos, sin = ops.cos(angles), ops.sin(angles)",
            "cos, sin = ops.sin(angles), ops.cos(angles)",
        ),
    ),
    (
        "apply_rotary",
        "exponent i/d",
        "the exponent is 2i/d",
        ("* (2.0 / depth)", "* (1.0 / depth)"),
    ),
    (
        "apply_rotary",
        "positions not used",
        "rotate by the positions you are given",
        (
            "where = ops.cast(positions, x.dtype)",
            "where = ops.cast(ops.arange(x.shape[1]), x.dtype)",
        ),
    ),
    (
        "apply_rotary",
        "max_wavelength ignored",
        "another max_wavelength was given",
        ("ops.cast(max_wavelength, x.dtype)", "ops.cast(10000.0, x.dtype)"),
    ),
]

# (part, the submitted source, the named mistake, the phrases of its feedback)
PLANTED = [
    (part, patched_solution(LAB, patch), mistake, phrase)
    for part, mistake, phrase, patch in PATCHES
]


def planted():
    """Every planted mistake of this exercise (graded by tests/grader/test_records.py)."""
    return from_table(PLANTED)
