"""The generic diagnosis engine (grader.engine.diagnosis), through grader.engine.compare: each
slip planted in a float64 NumPy computation independent of the engine, on a case labelled as
the records label theirs (grader.engine.sampling.dims_label)."""

import numpy as np
import pytest

from grader.engine import compare
from grader.engine.sampling import dims_label
from grader.engine.spec import LAYER, Case
from grader.reference.attention import softmax

RNG = np.random.default_rng(7)
Q, K = RNG.standard_normal((2, 3, 4)), RNG.standard_normal((2, 5, 4))
SCORES = Q @ np.swapaxes(K, -1, -2)
CASE = Case("ScaledDotScore", LAYER, dims_label(B=2, Tq=3, Tk=5, d=4), {"query": Q, "key": K})


def diagnosed(expected, received, case=CASE):
    found = compare.difference(expected, received, case)
    assert found is not None
    return found


def test_a_scale_by_another_size_names_both_sizes():
    found = diagnosed(SCORES / np.sqrt(4), SCORES / np.sqrt(5))
    assert found.message.endswith("you divided by √Tk = √5; divide by √d = √4")
    assert found.mistake.startswith(compare.DIAGNOSED)
    found = diagnosed(SCORES / 4, SCORES / 5)
    assert "you divided by Tk = 5; divide by d = 4" in found.message


def test_a_missing_scale_and_a_scale_applied_twice():
    assert "a division by √d is missing" in diagnosed(SCORES / 2, SCORES).message
    assert "you divided by √d = √4 once too often" in diagnosed(SCORES / 2, SCORES / 4).message


def test_a_factor_no_size_explains_stays_a_constant_factor():
    found = diagnosed(SCORES, SCORES * 1.7)
    assert found.mistake == "constant factor" and "1.7 times" in found.message


def test_a_softmax_over_another_axis():
    found = diagnosed(softmax(SCORES, axis=-1), softmax(SCORES, axis=-2))
    assert "sums to one over axis -2 (of size 3) but must over axis -1 (of size 5)" in (
        found.message
    )


def test_batch_and_time_swapped_in_values_and_in_shape():
    x = RNG.standard_normal((3, 3, 4))
    case = Case("f", "function", dims_label(B=3, T=3, d=4), {"x": x})
    found = diagnosed(x, np.swapaxes(x, 0, 1), case)
    assert "axes -3 (of size 3) and -2 (of size 3) of the output are swapped" in found.message
    found = diagnosed(np.zeros((2, 5, 4)), np.zeros((5, 2, 4)), case)
    assert "axes 0 and 1 are swapped" in found.message


def test_a_missing_bias_and_a_missing_residual():
    x, bias = RNG.standard_normal((2, 3, 4)), RNG.standard_normal(4)
    case = Case("Dense", LAYER, dims_label(B=2, T=3, d=4), {"x": x}, weights={"bias": bias})
    assert "the bias bias is missing" in diagnosed(x * 2 + bias, x * 2, case).message
    assert "the residual x is missing" in diagnosed(np.tanh(x) + x, np.tanh(x), case).message


def test_heads_merged_in_the_wrong_order_are_the_right_values_elsewhere():
    heads = RNG.standard_normal((2, 3, 5, 2))  # (B, h, T, d)
    right = np.transpose(heads, (0, 2, 1, 3)).reshape(2, 5, 6)
    wrong = heads.reshape(2, 5, 6)  # no transpose: heads and time steps mixed
    case = Case("merge_heads", "function", "x of shape (2, 3, 5, 2)", {"x": heads})
    assert "right but in the wrong places" in diagnosed(right, wrong, case).message


@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_a_correct_answer_is_never_diagnosed(dtype):
    case = Case("ScaledDotScore", LAYER, CASE.label, CASE.inputs, dtype=dtype)
    received = (SCORES / 2).astype(dtype)
    assert compare.difference(SCORES / 2, received, case) is None
