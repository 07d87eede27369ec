"""A diagnosis is said only when it is earned (issue #29, point 4): each heuristic is silent
without its evidence, and whatever a student returns is the student's failure, never the
grader's. Judged through grader.engine.judging on reports a child would write
(grader.vocabulary.protocol), or graded end to end where the child's own refusal is at stake."""

from __future__ import annotations

import textwrap

import numpy as np
import pytest

from grader.engine import compare, properties
from grader.engine.judging import GRADER_FAILED_WORDS, judge_part
from grader.grading import grade
from grader.vocabulary.protocol import CaseOutput, Outcome, answered
from grader.vocabulary.spec import FUNCTION, LAYER, Case, Part, Property
from grader.vocabulary.status import CaseStatus, RunState, Status
from tests.support.grading import failures


def reported(outputs, grads=None, cases=None) -> Outcome:
    """A child's bundle, read: one answered case per output (and its gradients, by name, and
    the inputs of `cases` left as they were given)."""
    arrays: dict = {}
    grads = grads or [{} for _ in outputs]
    left = [case.inputs for case in cases] if cases else [{} for _ in outputs]
    cases = [
        answered(index, np.asarray(output), grads[index], arrays, left[index])
        for index, output in enumerate(outputs)
    ]
    return Outcome(RunState.FINISHED, 0.1, 0, {"import_error": None, "cases": cases}, arrays)


def expected_of(outputs, grads=None) -> list[CaseOutput]:
    grads = grads or [{} for _ in outputs]
    return [
        CaseOutput(CaseStatus.OK, output=np.asarray(o, np.float64), grads=g)
        for o, g in zip(outputs, grads, strict=True)
    ]


def function_cases(count: int, label="x of shape (3,)") -> list[Case]:
    return [Case("f", FUNCTION, f"{label} #{index}") for index in range(count)]


def judged(part, cases, want, got, grads=None, want_grads=None):
    outcome = reported(got, grads, cases)
    return judge_part(part, cases, expected_of(want, want_grads), outcome, 5.0)


def messages(result) -> list[str]:
    return [check.message for check in failures(result)]


# ---- a ratio needs several values that share it, across the failing cases ---------------------


def test_a_one_value_output_never_reads_as_a_scale_factor():
    """1.33 for 1.0 is a ratio like any wrong number: nothing says a scale is off."""
    found = compare.difference(np.array(3.0), np.array(4.0), Case("f", FUNCTION, "n=3"))
    assert found.mistake is None and "times" not in found.message
    two = compare.difference(np.array([3.0, 6.0]), np.array([4.0, 8.0]), Case("f", FUNCTION, ""))
    assert two.mistake is None, two.message  # two values: still too few to share a ratio


def test_three_distinct_values_that_share_a_ratio_earn_it():
    expected = np.array([1.0, 2.0, 5.0])
    found = compare.difference(expected, expected * 4 / 3, Case("f", FUNCTION, ""))
    assert found.mistake == "constant factor" and "1.33333 times" in found.message
    # The same value three times is one value: no evidence.
    same = compare.difference(np.full(3, 2.0), np.full(3, 2.5), Case("f", FUNCTION, ""))
    assert same.mistake is None


def test_a_ratio_seen_on_one_failing_case_of_several_is_withdrawn():
    part = Part("f", 1, lambda rng, hidden=False: [])
    want = [np.array([1.0, 2.0, 5.0]), np.array([2.0, 3.0, 7.0])]
    # Case 0 is 1.5 times the expected; case 1 is wrong in another way.
    got = [want[0] * 1.5, want[1] + np.array([0.0, 1.0, -4.0])]
    result = judged(part, function_cases(2), want, got)
    assert result.status == Status.FAILED
    assert not any("times the expected" in m for m in messages(result)), messages(result)
    assert all(check.mistake is None for check in failures(result))


def test_different_ratios_on_different_cases_are_no_scale_factor():
    part = Part("f", 1, lambda rng, hidden=False: [])
    want = [np.array([1.0, 2.0, 5.0]), np.array([2.0, 3.0, 7.0])]
    result = judged(part, function_cases(2), want, [want[0] * 1.5, want[1] * 0.5])
    assert not any("times the expected" in m for m in messages(result)), messages(result)


def test_one_ratio_shared_by_every_failing_case_is_named():
    part = Part("f", 1, lambda rng, hidden=False: [])
    want = [np.array([1.0, 2.0, 5.0]), np.array([2.0, 3.0, 7.0]), np.array(4.0)]
    # The one-value case cannot show a ratio, and it does not withdraw the others'.
    result = judged(part, function_cases(3), want, [w * 1.5 for w in want])
    named = [c for c in failures(result) if c.mistake == "constant factor"]
    assert len(named) == 2 and "1.5 times the expected" in named[0].message


# ---- "something cuts the gradient" needs a gradient that could be cut --------------------------


def layer_part(**extra) -> Part:
    return Part("L", 1, lambda rng, hidden=False: [], **extra)


def layer_cases(count: int) -> list[Case]:
    return [Case("L", LAYER, f"B=1 T=3 #{index}") for index in range(count)]


def test_a_zero_gradient_of_a_wrong_output_is_not_called_cut():
    """The output is wrong already: its zero gradient may be its own (an output that no
    longer depends on the input), so nothing says a gradient was cut."""
    want = [np.array([[1.0, 2.0, 4.0]])]
    grad = {"input:x": np.array([[0.5, -1.0, 2.0]])}
    result = judged(
        layer_part(),
        layer_cases(1),
        want,
        [np.array([[3.0, 3.0, 3.0]])],
        grads=[{"input:x": np.zeros((1, 3))}],
        want_grads=[grad],
    )
    assert result.status == Status.FAILED
    assert "gradient cut" not in {c.mistake for c in failures(result)}, messages(result)
    assert not any("cuts the gradient" in m for m in messages(result))


def test_a_zero_gradient_of_a_right_output_is_called_cut_only_where_the_true_one_is_not_zero():
    want = [np.array([[1.0, 2.0, 4.0]])]
    zero = [{"input:x": np.zeros((1, 3))}]
    cut = judged(
        layer_part(),
        layer_cases(1),
        want,
        want,
        grads=zero,
        want_grads=[{"input:x": np.array([[0.5, -1.0, 2.0]])}],
    )
    assert [c.mistake for c in failures(cut)] == ["gradient cut"]
    # The reference's gradient is itself zero (up to rounding): nothing was cut, nothing said.
    truly_zero = judged(
        layer_part(),
        layer_cases(1),
        want,
        want,
        grads=zero,
        want_grads=[{"input:x": np.array([[8e-17, 0.0, -3e-17]])}],
    )
    assert truly_zero.status == Status.PASSED, messages(truly_zero)


# ---- properties and relations are judged on finite outputs, after the NaN ----------------------


def test_a_relation_on_nan_outputs_is_silent_and_the_nan_is_read_first():
    relation = properties.keys_permuted(("keys",), axis=0)
    part = Part("f", 1, lambda rng, hidden=False: [], relations=(relation,))
    base = Case("f", FUNCTION, "Tk=3", inputs={"keys": np.array([1.0, 2.0, 3.0])})
    cases = [base]
    properties.add_variants(part, cases, np.random.default_rng(0))
    assert len(cases) == 2
    # Pooling over the keys: the reference's output is the same for the shuffled keys.
    want = [np.array([0.1, 0.2, 0.7])] * 2
    result = judged(part, cases, want, [np.array([np.nan, 0.2, 0.7]), want[1]])
    assert [c.mistake for c in failures(result)] == ["NaN"], messages(result)
    # Finite and wrong, the relation is judged (and broken).
    result = judged(part, cases, want, [np.array([0.9, 0.2, 0.7]), want[1]])
    broken = [c.mistake for c in failures(result)]
    assert "property: keys in any order" in broken, broken


def test_a_property_on_a_nan_or_misshapen_output_is_silent():
    def rows_sum_to_one(case, output):
        return None if np.isclose(np.sum(output), 1.0) else "the weights do not sum to one"

    part = Part("f", 1, lambda r, hidden=False: [], properties=(Property("sum", rows_sum_to_one),))
    want = [np.array([0.1, 0.2, 0.7])]
    for got, mistake in ((np.array([np.inf, 0.2, 0.7]), "NaN"), (np.array(0.5), None)):
        result = judged(part, function_cases(1), want, [got])
        assert [c.mistake for c in failures(result)] == [mistake], messages(result)
        assert not any("sum to one" in m for m in messages(result))


# ---- whatever a student returns is the student's failure, never the grader's -------------------

# Each case of softmax_jacobian returns the next of these (a counter in the module): every kind
# of output a student has returned by mistake, from a squeeze's 0-d array to a ragged tuple.
ODD_OUTPUTS = """
ODD = [
    lambda s: np.squeeze(np.sum(s)),
    lambda s: float(np.sum(s)),
    lambda s: [1.0, 2.0],
    lambda s: np.array([None, 1.0], dtype=object),
    lambda s: np.ones(np.shape(s) + (np.shape(s)[-1],), bool),
    lambda s: np.ones(np.shape(s) + (np.shape(s)[-1],), np.int64),
    lambda s: np.ones(np.shape(s) + (np.shape(s)[-1],), complex),
    lambda s: "jacobian",
    lambda s: None,
    lambda s: ((1.0, 2.0), (3.0,)),
    lambda s: ((1.0, 2.0), (3.0, 4.0)),
    lambda s: ops.sum(ops.convert_to_tensor(s)),
    lambda s: np.ones((1,) * 3),
    lambda s: (np.ones(2), 3.0),
    lambda s: np.float16(np.sum(s)),
]
calls = []


def softmax_jacobian(scores):
    calls.append(1)
    return ODD[(len(calls) - 1 + OFFSET) % len(ODD)](scores)


class ScaledDotScore(keras.layers.Layer):
    def call(self, query, key):
        return ODD[OFFSET % len(ODD)](query)
"""
# What a student must read of each: what came back, and what was expected.
NAMED = (
    "received (",
    "expected numbers",
    "expected one array of numbers",
    "returned None",
    "values differ",
    "value differs",
    "inputs the output is",
    "returned",
)


@pytest.mark.parametrize("offset", [0, 5, 10])
def test_any_output_of_any_shape_rank_or_dtype_is_the_students_failure(tmp_path, offset):
    from tests.support.grading import submit

    body = f"OFFSET = {offset}\n" + textwrap.dedent(ODD_OUTPUTS)
    result = grade(
        "8-2", submit(tmp_path, "8-2", body), parts=["softmax_jacobian", "ScaledDotScore"]
    )
    for part in result.parts:
        assert part.status in (Status.FAILED, Status.ERROR), (part.name, part.status)
        assert not part.grader_error, part.grader_error
        for check in failures(part):
            assert str(GRADER_FAILED_WORDS) not in check.message
            assert any(words in check.message for words in NAMED), check.message
    shapes = [c.message for c in failures(result.part("softmax_jacobian"))]
    assert any("expected shape" in m and "received (" in m for m in shapes) or offset == 5, shapes


def reference_answers(exercise_id: str, seed=0):
    """The record, its cases and the reference's answers, as grading makes them; `seed` the
    public seed, or (public, hidden) for a batch's hidden cases too."""
    import tempfile
    from pathlib import Path

    from grader.engine.references import default_reference
    from grader.records import get_exercise
    from grader.sandbox.processes import run_jobs

    record = get_exercise(exercise_id)
    reference = default_reference(record)
    cases = reference.cases(record, seed)
    with tempfile.TemporaryDirectory() as folder:
        job = reference.job(record, seed, Path(folder), cases)
        outcomes = run_jobs([job]) if job else {}
        expected = reference.expected(record, seed, cases, outcomes.get("reference"))
    return record, cases, expected


def judged_answers(part, cases, expected, outputs, grads):
    """The part judged as if a child had answered `outputs` (and `grads`) on `cases`."""
    return judge_part(part, cases, expected, reported(outputs, grads, cases), 5.0)


def misshapen(right: np.ndarray) -> dict[str, np.ndarray]:
    """Wrong outputs made from a right one, as a child would write them."""
    return {
        "0-d": np.array(float(np.ravel(right)[0]) if right.size else 1.0),
        "bool": right.astype(bool),
        "int": np.round(right).astype(np.int64),
        "negative int": np.full(right.shape, -1),
        "float16": right.astype(np.float16),
        "an axis more": right[..., None],
        "flattened": right.ravel(),
        "empty": np.zeros((0,)),
        "NaN": np.full(right.shape, np.nan),
        "huge": np.full(right.shape, 1e308),
        "strings": np.full(right.shape, "a"),
    }


@pytest.mark.parametrize("exercise_id", ["8-3", "hard", "nw", "masked-softmax"])
def test_misshapen_outputs_of_parts_with_properties_are_judged_as_the_students(exercise_id):
    """Parts whose properties and relations read the output (an index per query, a first
    position, a future that changes nothing): none of them may trip on a wrong output."""
    record, cases, expected = reference_answers(exercise_id)
    for part in record.parts:
        right = [want.output for want in expected[part.name]]
        for kind in misshapen(np.zeros(1)):
            outputs = [
                misshapen(np.asarray(r))[kind] if r is not None else np.zeros(1) for r in right
            ]
            grads = [
                {name: misshapen(np.asarray(g))[kind] for name, g in want.grads.items()}
                for want in expected[part.name]
            ]
            result = judged_answers(part, cases[part.name], expected[part.name], outputs, grads)
            assert not result.grader_error, (part.name, kind)
            arrays_expected = all(r is None or np.size(r) > 1 for r in right)
            if arrays_expected and kind in ("0-d", "an axis more", "empty", "NaN", "strings"):
                assert result.status == Status.FAILED, (part.name, kind, result.status)
