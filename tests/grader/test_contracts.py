"""Contract checks (grader.engine.contracts): a documented error must be raised, and arguments
must come back unchanged. The judging is tested in the grader's process on hand-made reports;
one grading run per exercise shows the whole path on a planted submission (the solution with
the promise broken)."""

import numpy as np
import pytest

from grader.engine import contracts
from grader.engine.results import FAILED, PASSED
from grader.engine.sampling import raising_function_case
from grader.grading import grade
from grader.vocabulary.protocol import CaseOutput
from grader.vocabulary.spec import FUNCTION, LAYER, Case
from grader.vocabulary.status import CaseStatus
from tests.support.grading import failures
from tests.support.planting import plant

PROMISE = "the docstring asks for a ValueError when `kind` is unknown"


def test_a_case_that_must_raise_passes_only_on_that_exception():
    case = raising_function_case("f", PROMISE, kind="transformer")
    assert case.label == "kind='transformer'" and case.raises == "ValueError"
    right = contracts.judge_raises(
        case, CaseOutput(CaseStatus.ERROR, exception="ValueError"), "raises"
    )
    assert right.passed
    returned = contracts.judge_raises(case, CaseOutput(CaseStatus.OK, np.zeros(3)), "raises")
    assert not returned.passed
    assert returned.message == f"no ValueError was raised, a value was returned: {PROMISE}"
    other = CaseOutput(CaseStatus.ERROR, exception="KeyError", message="'transformer'")
    wrong = contracts.judge_raises(case, other, "raises")
    assert not wrong.passed and wrong.message.startswith("raised KeyError: 'transformer', not")
    stub = contracts.judge_raises(case, CaseOutput(CaseStatus.NOT_IMPLEMENTED), "raises")
    assert (stub.passed, stub.cause) == (False, CaseStatus.NOT_IMPLEMENTED)


def test_a_raised_error_counts_as_an_answer_only_where_one_is_expected():
    raising = raising_function_case("f", PROMISE, kind="x")
    plain = Case("f", FUNCTION, "plain")
    error = CaseOutput(CaseStatus.ERROR, exception="ValueError")
    assert contracts.expected_statuses(raising, error) == CaseStatus.OK
    assert contracts.expected_statuses(plain, error) == CaseStatus.ERROR


def test_an_argument_changed_in_place_is_named_with_where_it_changed():
    state = np.array([[1.0, -1.0, 1.0], [1.0, 1.0, -1.0]])
    case = Case("f", FUNCTION, "B=2", inputs={"state": state, "order": np.arange(3)})
    same = CaseOutput(CaseStatus.OK, after={"state": state.copy(), "order": np.arange(3)})
    assert contracts.changed_inputs(case, same, "unchanged") == []
    written = state.copy()
    written[1, 2] = 1.0
    changed = CaseOutput(CaseStatus.OK, after={"state": written, "order": np.arange(3)})
    (check,) = contracts.changed_inputs(case, changed, "unchanged")
    assert not check.passed and check.mistake == "argument changed in place"
    assert (
        "`state` was changed by the call (1 of 6 entries differ; at index [1, 2]" in check.message
    )
    assert "it was -1, it is now 1" in check.message and "write into a copy" in check.message
    missing = CaseOutput(CaseStatus.OK, after={"state": state})
    (check,) = contracts.changed_inputs(case, missing, "unchanged")
    assert "`order` was changed by the call (was not reported back" in check.message


def test_a_layer_input_is_compared_in_the_layer_dtype_and_nan_equals_nan():
    inputs = np.array([0.1, np.nan, 1 / 3])
    case = Case("L", LAYER, "float32", inputs={"x": inputs}, dtype="float32")
    left = CaseOutput(CaseStatus.OK, after={"x": inputs.astype("float32")})
    assert contracts.changed_inputs(case, left, "unchanged") == []
    reshaped = CaseOutput(CaseStatus.OK, after={"x": inputs.astype("float32")[None]})
    (check,) = contracts.changed_inputs(case, reshaped, "unchanged")
    assert "its shape went from (3,) to (1, 3)" in check.message


ACCEPTS_ANY_KIND_81 = [
    (
        'if kind not in KINDS:\n        raise ValueError(f"kind must be one of {KINDS}, received '
        '{kind!r}")\n    blocks = {"lstm": 4, "gru": 3, "simple_rnn": 1}[kind]',
        'blocks = {"lstm": 4, "gru": 3, "simple_rnn": 1}.get(kind, 1)',
    ),
    (
        '    if kind not in counters:\n        raise ValueError(f"kind must be one of {KINDS}, '
        'received {kind!r}")\n    count = counters[kind]',
        "    count = counters.get(kind, simple_rnn_param_count)",
    ),
]


def _only_contract_failures(part, phrase):
    """The part failed, and every failing check is a contract check saying `phrase`."""
    assert part.status == FAILED and part.score == 0.0, part
    assert failures(part) and all(phrase in c.message for c in failures(part)), failures(part)


def test_8_1_a_kind_accepted_silently_fails_both_parts_that_promise_an_error(tmp_path):
    folder = plant(tmp_path, "8-1", *ACCEPTS_ANY_KIND_81)
    parts = ["param_count_coefficients", "doubling_ratio"]
    result = grade("8-1", folder, parts=parts)
    for name in parts:
        part = result.part(name)
        _only_contract_failures(part, "no ValueError was raised, a value was returned: ")
        assert len(failures(part)) == 3
        assert all(c.name.startswith("raises ValueError, kind=") for c in failures(part))


def test_8_3_a_path_length_for_any_kind_and_8_6_updates_in_place_fail(tmp_path):
    folder = plant(
        tmp_path / "8-3",
        "8-3",
        (
            '    raise ValueError(f"kind must be one of {PATH_KINDS}, received {kind!r}")',
            "    return 0",
        ),
    )
    part = grade("8-3", folder, parts=["maximum_path_length"]).part("maximum_path_length")
    _only_contract_failures(part, "no ValueError was raised, a value was returned: the docstring")
    assert len(failures(part)) == 3

    in_place = ("current = np.array(state, dtype=np.float64)", "current = state")
    folder = plant(tmp_path / "8-6", "8-6", in_place)
    result = grade("8-6", folder, parts=["async_update", "recall"])
    _only_contract_failures(result.part("async_update"), "`state` was changed by the call")
    # recall copies the probe before calling the in-place update: its argument is kept.
    assert result.part("recall").status == PASSED


@pytest.mark.parametrize("exercise_id", ["8-1", "8-3", "nw"])
def test_every_promised_error_is_asked_in_public_checks_only(exercise_id):
    from grader.engine.cases import make_cases
    from grader.records import get_exercise

    cases = make_cases(get_exercise(exercise_id), 0, 3)
    raising = [case for part in cases.values() for case in part if case.raises]
    assert raising and not any(case.hidden for case in raising)
    assert all(case.promise.startswith("the docstring asks for a ValueError") for case in raising)


def test_a_fixture_keeps_the_cases_that_must_raise(tmp_path):
    """A student kit grades from a fixture file: the reference's raised errors are kept there,
    and the contract checks run the same."""
    from grader.engine.references import FixtureReference, LiveReference, write_fixture
    from grader.instructor.course.stubs import package_dir
    from grader.records import get_exercise

    fixture = tmp_path / "8-1.npz"
    write_fixture(get_exercise("8-1"), 0, fixture, LiveReference(package_dir("solutions")))
    folder = plant(tmp_path / "planted", "8-1", *ACCEPTS_ANY_KIND_81)
    result = grade("8-1", folder, parts=["doubling_ratio"], reference=FixtureReference(fixture))
    _only_contract_failures(result.part("doubling_ratio"), "no ValueError was raised")
    graded = grade("8-1", package_dir("solutions"), reference=FixtureReference(fixture))
    assert graded.score == graded.max_score


def test_boundaries_and_variations_catch_what_the_old_cases_let_through(tmp_path):
    """A float32 Jacobian for float64 scores (8-2), a raw exp plus 1e-9 in masked attention
    pooling (masked-softmax: large scores), an update that drops repeated units (8-6: orders
    with repeats)."""
    float32 = (
        "ops.convert_to_tensor(scores), axis=-1)",
        "ops.convert_to_tensor(scores, 'float32'), -1)",
    )
    part = grade("8-2", plant(tmp_path / "a", "8-2", float32), parts=["softmax_jacobian"]).part(
        "softmax_jacobian"
    )
    assert part.status == FAILED and "precision lost" in part.mistakes
    dtype_checks = [c for c in failures(part) if c.name.startswith("dtype, ")]
    cases = [c for c in part.checks if c.name.startswith("output, ")]
    assert len(dtype_checks) == len(cases) > 1  # every case (the values lose digits too)
    assert all("returned float32 for float64 inputs" in c.message for c in dtype_checks)

    raw_exp = (
        "        weights = masked_softmax(scores, valid_lens)\n",
        "        keep = ops.cast(sequence_mask(valid_lens if len(valid_lens.shape) > 1 else "
        "valid_lens[:, None], ops.shape(scores)[-1]), scores.dtype)\n"
        "        e = ops.exp(scores) * keep\n"
        "        weights = e / (ops.sum(e, axis=-1, keepdims=True) + 1e-9)\n",
    )
    folder = plant(tmp_path / "b", "masked-softmax", raw_exp)
    part = grade("masked-softmax", folder, parts=["MaskedAttentionPooling"]).part(
        "MaskedAttentionPooling"
    )
    assert part.status == FAILED
    assert all("large scores" in c.name for c in failures(part)), failures(part)
    assert any("NaN or infinite" in c.message for c in failures(part))

    deduplicated = (
        "for unit in np.asarray(order, dtype=int).reshape(-1):\n        field",
        "for unit in dict.fromkeys(np.asarray(order, dtype=int).reshape(-1).tolist()):\n"
        "        field",
    )
    part = grade(
        "8-6", plant(tmp_path / "c", "8-6", deduplicated), parts=["async_update"], hidden_seed=3
    ).part("async_update")
    assert part.status == FAILED
    hidden = [c for c in failures(part) if c.hidden]
    assert hidden and all("repeated" in c.name for c in failures(part)), failures(part)
