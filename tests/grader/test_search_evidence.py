"""A diagnosis is said only when it is earned (issue #29, points 2 and 4), for the misleading
lines of the held-out sets: a record's named mistake that another failing case contradicts, the
zeros of a wrong output's gradient, a separator seen on one case, a NaN blamed on an exp() where
nothing is large enough to overflow, a subtracted term left out told as missing."""

from __future__ import annotations

import numpy as np
import pytest

from grader.engine import compare, search
from grader.engine.judging import judge_part
from grader.vocabulary.protocol import CaseOutput, Outcome, answered
from grader.vocabulary.spec import FUNCTION, LAYER, Case, Mistake, Part
from grader.vocabulary.status import CaseStatus, RunState, Status
from tests.support.grading import failures


def judged(part, cases, want, got, grads=None, want_grads=None):
    arrays: dict = {}
    grads = grads or [{} for _ in got]
    want_grads = want_grads or [{} for _ in want]
    reports = [
        answered(i, np.asarray(output), grads[i], arrays, cases[i].inputs)
        for i, output in enumerate(got)
    ]
    outcome = Outcome(RunState.FINISHED, 0.1, 0, {"import_error": None, "cases": reports}, arrays)
    expected = [
        CaseOutput(CaseStatus.OK, output=np.asarray(o, np.float64), grads=g)
        for o, g in zip(want, want_grads, strict=True)
    ]
    return judge_part(part, cases, expected, outcome, 5.0)


# ---- a record's named mistake needs every failing case of its target ------------------------

ALWAYS_TWO = Mistake("always 2", "2 is the ratio of the linear term alone", lambda case: 2.0)


def ratio_part() -> Part:
    return Part("ratio", 1, lambda rng, hidden=False: [], mistakes=(ALWAYS_TWO,))


def ratio_cases(count: int) -> list[Case]:
    return [Case("ratio", FUNCTION, f"units={2**index}") for index in range(count)]


def named(result) -> list[str | None]:
    return [check.mistake for check in failures(result)]


def test_a_named_mistake_that_another_failing_case_contradicts_is_withdrawn():
    """A ratio truncated by // is 2 where the true one is 2.5 (as "always 2" says), and 3 where
    it is 3.3 or 3.9 (which "always 2" does not): contradicted on as many failing cases as it
    explains, the student's computation is not that mistake. Contradicted on fewer, it stands:
    a mistake the student made may miss an extreme case where their code differs from it in
    another, harmless way."""
    want = [2.5, 3.3, 3.9]
    result = judged(ratio_part(), ratio_cases(3), want, [2.0, 3.0, 3.0])
    assert result.status == Status.FAILED
    assert "always 2" not in named(result), named(result)
    kept = judged(ratio_part(), ratio_cases(3), [2.5, 2.2, 3.9], [2.0, 2.0, 3.0])
    assert named(kept).count("always 2") == 2, named(kept)


def test_a_named_mistake_on_every_failing_case_is_kept_and_a_passing_case_contradicts_nothing():
    want = [2.5, 2.2, 3.9]
    every = judged(ratio_part(), ratio_cases(3), want, [2.0, 2.0, 2.0])
    assert named(every) == ["always 2"] * 3
    # The third case passes: the mistake may be a slip in a branch that case does not take.
    branch = judged(ratio_part(), ratio_cases(3), want, [2.0, 2.0, 3.9])
    assert named(branch) == ["always 2"] * 2


# ---- the gradient of a wrong output earns no diagnosis of its own ----------------------------


def test_the_zero_gradient_of_a_wrong_output_is_not_said_to_be_all_zeros():
    """A mask built from the first example's length leaves one key per row: the weights are
    one-hot and the gradients truly zero for the wrong computation. "every value is zero: is
    something not computed yet?" would point elsewhere; the output's own difference is read."""
    part = Part("L", 1, lambda rng, hidden=False: [])
    case = Case("L", LAYER, "B=2 T=3")
    grad = {"input:x": np.array([[0.5, -1.0, 2.0], [0.25, 3.0, -2.0]])}
    result = judged(
        part,
        [case],
        [np.array([[1.0, 2.0, 4.0], [0.5, 1.5, 2.5]])],
        [np.array([[1.0, 2.0, 4.0], [3.0, 3.0, 3.0]])],
        grads=[{"input:x": np.zeros((2, 3))}],
        want_grads=[grad],
    )
    gradient = [c for c in failures(result) if "gradient" in c.name]
    assert gradient and all(c.mistake is None for c in gradient), [c.mistake for c in gradient]
    assert not any("every value is zero" in c.message for c in failures(result))
    # With the output right, the same zeros are a cut gradient, and said so.
    right = judged(
        part,
        [case],
        [np.array([[1.0, 2.0, 4.0], [0.5, 1.5, 2.5]])],
        [np.array([[1.0, 2.0, 4.0], [0.5, 1.5, 2.5]])],
        grads=[{"input:x": np.zeros((2, 3))}],
        want_grads=[grad],
    )
    assert "gradient cut" in named(right)


# ---- a separator needs two failing and two passing cases --------------------------------------


def test_a_separator_seen_on_one_failing_case_is_not_said():
    cases = [Case("f", FUNCTION, label) for label in ("B=1 Tq=3 Tk=5", "B=1 Tq=3 Tk=3")]
    cases += [Case("f", FUNCTION, label) for label in ("B=2 Tq=4 Tk=4", "B=1 Tq=2 Tk=2")]
    # One failing case where Tq ≠ Tk: a sign flipped on every case may show on one case only.
    assert search.separating(cases, failing=[0], passing=[1, 2, 3]) is None
    cases.append(Case("f", FUNCTION, "B=1 Tq=2 Tk=6"))
    said = search.separating(cases, failing=[0, 4], passing=[1, 2, 3])
    assert said is not None and "queries and keys" in said
    # Two failing, one passing: no more evidence than one of each.
    assert search.separating(cases, failing=[0, 4], passing=[1]) is None


def test_no_separator_is_named_for_outputs_that_overflow():
    """A sign error that makes 0·e^(+inf) = NaN fails on the batches of several examples only
    (more values, more chance of a large one): the batch is not what fails, and the NaN is told
    without "the examples of a batch mix"."""
    labels = ["B=1 T=3 #0", "B=1 T=4 #1", "B=3 T=3 #2", "B=2 T=4 #3"]
    cases = [Case("f", FUNCTION, label) for label in labels]
    want = [np.ones((int(label[2]), 3)) for label in labels]
    mixed = [w.copy() for w in want]
    for i in (2, 3):
        mixed[i][1] += 0.5  # the batch mixes: wrong values, all finite
    overflow = [w.copy() for w in want]
    for i in (2, 3):
        overflow[i][1, 0] = np.nan
    part = Part("f", 1, lambda rng, hidden=False: [])
    told_mixed = " ".join(c.message for c in failures(judged(part, cases, want, mixed)))
    told_overflow = " ".join(c.message for c in failures(judged(part, cases, want, overflow)))
    assert "more than one example" in told_mixed
    assert "more than one example" not in told_overflow and "NaN" in told_overflow


# ---- a NaN is blamed on an overflowing exp() only where something is large enough ------------


def test_a_nan_on_small_inputs_is_not_blamed_on_an_overflowing_exp():
    small = Case("f", FUNCTION, "B=2 M=5 N=5", inputs={"scores": np.ones((2, 5))})
    found = compare.difference(np.ones(2), np.array([np.nan, 1.0]), small)
    assert found.mistake == "NaN" and "overflows" not in found.message
    assert "-inf" in found.message and "0/0" in found.message
    for large in (
        Case("f", FUNCTION, "B=2, scores near 1000 (numerical stability)"),
        Case("f", FUNCTION, "B=2", inputs={"scores": np.full((2, 5), 1000.0)}),
    ):
        found = compare.difference(np.ones(2), np.array([np.nan, 1.0]), large)
        assert "exp() that overflows" in found.message, large.label


# ---- a subtracted term left out is told as counted once more, both readings said -------------


def test_a_subtracted_term_left_out_reads_as_counted_once_too_often():
    """The cap 1 − Σ_{j≥i} s_j for 1 − Σ_{j>i} s_j: the reference's Σ_{j>i} is a cumulative
    sum minus s_i; its mutant without "− s_i" is the student's, who counted s_i once too
    often, never "left a term out"."""
    from grader.records import get_exercise
    from grader.reference import memory

    part = get_exercise("8-4").part("stack_operations")
    cases = [c for c in part.make_cases(np.random.default_rng(3)) if c.target == "stack_read"]

    def read(case, own=False):
        s, values = case.inputs["strengths"], case.inputs["values"]
        above = memory.strength_above(s) + (s if own else 0.0)
        return np.einsum("bt,btm->bm", np.minimum(s, np.maximum(0.0, 1.0 - above)), values)

    expected = [read(c) for c in cases]
    received = [read(c, own=True) for c in cases]
    found = search.explain(part, cases, expected, received, deadline=None)
    assert found, "the mutant is not found"
    words = next(iter(found.values())).explanation
    assert "once more than the formula" in words and "missing" not in words, words


# ---- two mistakes at once; each reference mutated once per process ----------------------------


def test_two_mistakes_together_are_found_and_both_told():
    """softmax over the queries of −(x_i − x_j)²/h² (the ½ left out too): neither mutant alone
    reproduces it; the two nearest the student's output, made together, do."""
    from grader.records import get_exercise
    from grader.reference import kernel_regression as ref

    part = get_exercise("nw").part("gaussian_weights")
    cases = [c for c in part.make_cases(np.random.default_rng(3)) if c.inputs["queries"].size > 1]
    cases = [c for c in cases if "far" not in c.label]

    def weights(case, **changed):
        h = case.params.get("bandwidth", 1.0)
        return ref.gaussian_weights(case.inputs["queries"], case.inputs["keys"], h, **changed)

    expected = [weights(c) for c in cases]
    received = [weights(c, half=1.0, axis=-2) for c in cases]
    found = search.explain(part, cases, expected, received, deadline=None)
    assert found and {f.kind for f in found.values()} == {"composed"}
    words = next(iter(found.values())).explanation
    assert "runs over axis -2" in words and "constant factor" in words, words


def test_a_reference_is_mutated_once_per_process():
    from grader.engine import mutants
    from grader.reference import kernel_regression as ref

    first = list(mutants.mutants(ref.gaussian_weights))
    again = list(mutants.mutants(ref.gaussian_weights))
    assert first and len(first) == len(again)
    assert all(a is b for a, b in zip(first, again, strict=True))


# ---- whatever a student returns is the student's failure, on every kind of part ---------------


@pytest.mark.parametrize("exercise_id", ["8-5", "pointer", "kv-cache"])
def test_misshapen_outputs_of_functions_and_layers_are_the_students_failure(
    exercise_id, monkeypatch
):
    """Layers and functions whose record names mistakes and whose search composes mutants
    (8-5), indices and one number per example (pointer), a cache of several arrays
    (kv-cache): a 0-d, bool, int, string, extra-axis, empty or NaN output is judged as the
    student's, never the grader's, and a named mistake, the search and the NaN words never
    trip on it."""
    from tests.grader.test_evidence import judged_answers, misshapen, reference_answers

    # The search runs on whatever it can read as numbers; a short budget keeps the test short
    # (its answer is not what is tested here).
    monkeypatch.setattr(search, "BUDGET", 0.05)
    record, cases, expected = reference_answers(exercise_id)
    for part in record.parts:
        if part.name not in cases:
            continue
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
            assert all(c.message for c in failures(result)), (part.name, kind)
            if kind in ("strings", "NaN", "empty"):
                assert result.status == Status.FAILED, (part.name, kind, result.status)


def _partly_right(right: list, kind: str) -> list:
    """Every other case answered right, the rest wrong in `kind`'s way."""
    wrong = {
        "zeros": np.zeros_like,
        "negated": np.negative,
        "NaN": lambda r: np.full(r.shape, np.nan),
        "an axis more": lambda r: r[..., None],
    }[kind]
    return [
        np.zeros(1) if r is None else (np.asarray(r) if i % 2 else wrong(np.asarray(r, float)))
        for i, r in enumerate(right)
    ]


def _layer_exercises() -> list[str]:
    from grader.records import EXERCISES

    return [e for e in EXERCISES if not e.startswith("train-")]


@pytest.mark.parametrize("exercise_id", _layer_exercises())
def test_answers_right_on_some_cases_and_wrong_on_others_are_the_students(exercise_id, monkeypatch):
    """A wrong answer that is right on some cases (zeros where the answer is zero, say) goes
    through the named mistakes, the ratios and the search together with the right ones; on
    every part of every exercise, none of them may trip on it (the search once compared cases
    by value and left a whole exercise ungraded: r8 red team)."""
    from tests.grader.test_evidence import judged_answers, reference_answers

    monkeypatch.setattr(search, "BUDGET", 0.05)
    record, cases, expected = reference_answers(exercise_id, seed=(0, 1))  # the hidden cases too
    for part in record.parts:
        if part.name not in cases:
            continue
        right = [want.output for want in expected[part.name]]
        for kind in ("zeros", "negated", "NaN", "an axis more"):
            outputs = _partly_right(right, kind)
            grads = [dict(want.grads) for want in expected[part.name]]
            result = judged_answers(part, cases[part.name], expected[part.name], outputs, grads)
            assert not result.grader_error, (part.name, kind)
