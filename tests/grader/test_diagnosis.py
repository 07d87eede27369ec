"""The generic diagnosis engine (grader.engine.diagnosis), through grader.engine.compare: each
slip planted in a float64 NumPy computation independent of the engine, on a case labelled as
the records label theirs (grader.engine.sampling.dims_label)."""

import numpy as np
import pytest

from grader.engine import compare
from grader.engine.sampling import dims_label
from grader.reference.attention import softmax
from grader.vocabulary.spec import LAYER, Case

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


# Slips found by recomputing the reference (a part's `recompute` declaration), each planted as
# the solution with a one-line patch and graded (one part, in the grader's own process).


def planted_messages(tmp_path, exercise_id, part, old, new) -> tuple[list[str], list[str]]:
    """The messages of the failed checks of `part` for the solution with `old` -> `new`, and
    the lines `grader check` shows under the part."""
    from grader.engine import feedback
    from grader.grading import grade
    from tests.support.planting import plant

    result = grade(exercise_id, plant(tmp_path, exercise_id, (old, new)), parts=[part])
    graded = result.part(part)
    failed = [check.message for check in graded.checks if not check.passed]
    assert failed, f"{exercise_id} {part}: the planted slip passed"
    return failed, [line.strip() for line in feedback.part_lines(graded, width=1000)]


def test_multi_head_attention_scaled_by_value_dim_is_named_with_both_sizes(tmp_path):
    failed, shown = planted_messages(
        tmp_path,
        "mha",
        "MultiHeadAttention",
        "ops.cast(self.key_dim, scores.dtype)",
        "ops.cast(self.value_dim, scores.dtype)",
    )
    # The case with key_dim=2 and value_dim=3 (and Tk=3): named by its setting first.
    assert any("you scaled by √value_dim or Tk = √3; scale by √key_dim = √2" in m for m in failed)
    assert shown[0].startswith("you scaled by √value_dim")


def test_a_square_kernel_used_transposed_is_named(tmp_path):
    failed, shown = planted_messages(
        tmp_path,
        "mha",
        "MultiHeadAttention",
        "ops.matmul(query, self.query_kernel)",
        "ops.matmul(query, ops.transpose(self.query_kernel))",
    )
    # Square only where d_q = h·key_dim (8 = 4·2); elsewhere the product does not fit.
    assert any("query_kernel used transposed" in m for m in failed)
    assert not any("values differ" in line for line in shown[:1])


def test_valid_lengths_off_by_one_are_a_mask_off_by_one(tmp_path):
    failed, shown = planted_messages(
        tmp_path,
        "masked-softmax",
        "MaskedAttentionPooling",
        "weights = masked_softmax(scores, valid_lens)",
        "weights = masked_softmax(scores, valid_lens - 1)",
    )
    assert shown[0].startswith("each row keeps one position too few: a mask off by one")
    assert "j < valid_lens" in shown[0]


def test_a_recomputed_slip_is_never_named_for_a_correct_answer_or_an_untrusted_recomputation():
    from grader.engine.cases import make_cases
    from grader.records import get_exercise
    from grader.vocabulary.spec import Recompute, call_with_case

    record = get_exercise("mha")
    part = record.part("MultiHeadAttention")
    for case in make_cases(record, 0)[part.name]:
        expected = call_with_case(part.recompute.function, case)
        # A correct answer (in the case's dtype) is no difference at all.
        received = expected.astype(case.dtype)
        assert compare.difference(expected, received, case, (), part.recompute) is None
        # A recomputation that does not give the expected output is not trusted: the same
        # slip against another "expected" names nothing.
        slipped = call_with_case(part.recompute.function, case, {"scale_dim": 1})
        tripled = lambda scale_dim=None, times=expected * 3.0: times  # noqa: E731
        wrong = Recompute(tripled, scale=("scale_dim", "key_dim"))
        found = compare.difference(expected * 2.0, slipped, case, (), wrong)
        assert found is None or "scaled by" not in (found.mistake or "")
