"""Mistake search (grader.engine.search): a wrong computation, written here by hand in NumPy
and not taken from any catalogue, is named when a mutant of the part's reference reproduces it
on every case, and nothing is said when none does."""

import dataclasses

import numpy as np
import pytest

from grader.engine import search
from grader.records import get_exercise

pytestmark = pytest.mark.labs


def _softmax(x, axis=-1):
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def _sigmoid(x):
    return 1 / (1 + np.exp(-x))


def additive(case, squash=np.tanh):
    """vᵀ squash(W_q q_i + W_k k_j), by einsum."""
    q = case.inputs["query"] @ case.weights["query_kernel"]
    k = case.inputs["key"] @ case.weights["key_kernel"]
    return np.einsum(
        "bijU,U->bij", squash(q[:, :, None] + k[:, None, :]), case.weights["score_vector"]
    )


def gaussian(case, half=0.5):
    """softmax_j(−half (x_i − x_j)² / h²)."""
    x, xj = np.asarray(case.inputs["queries"]), np.asarray(case.inputs["keys"])
    h = case.params.get("bandwidth", 1.0)
    return _softmax(-half * (x[..., :, None] - xj[..., None, :]) ** 2 / h**2)


def masked(case, axis=-1):
    """The softmax of the scores over `axis` where the mask keeps them, zero elsewhere."""
    scores = np.asarray(case.inputs["scores"], np.float64)
    keep = np.broadcast_to(np.asarray(case.inputs["mask"], bool), scores.shape)
    filled = np.where(keep, scores, -np.inf)
    top = np.max(np.where(keep, scores, -np.inf), axis=axis, keepdims=True)
    e = np.where(keep, np.exp(filled - np.where(np.isfinite(top), top, 0)), 0.0)
    total = e.sum(axis=axis, keepdims=True)
    return np.where(total > 0, e / np.where(total > 0, total, 1), 0.0)


def explained(exercise, part_name, right, wrong, only=lambda case: True):
    record = get_exercise(exercise)
    part = record.part(part_name)
    cases = [c for c in part.make_cases(np.random.default_rng(3)) if not c.raises and only(c)]
    expected = [right(c) for c in cases]
    received = [wrong(c) for c in cases]
    return search.explain(part, cases, expected, received, deadline=None), cases, expected, received


def test_an_elementwise_function_of_the_family_is_named():
    found, cases, expected, received = explained(
        "additive", "AdditiveScore", additive, lambda c: additive(c, _sigmoid)
    )
    failing = [
        i for i, (e, r) in enumerate(zip(expected, received, strict=True)) if not np.allclose(e, r)
    ]
    assert failing and set(found) == set(failing)
    words = found[failing[0]].explanation
    assert "sigmoid" in words and "tanh" in words


def test_a_normalisation_over_another_axis_names_both_axes_by_their_sizes():
    found, cases, *_ = explained(
        "masked-softmax",
        "masked_softmax_from_mask",
        masked,
        lambda c: masked(c, axis=-2),
        only=lambda c: np.ndim(c.inputs.get("scores")) == 3,
    )
    assert found
    index, hit = max(found.items())
    assert hit.kind == "axis"
    shape = np.shape(cases[index].inputs["scores"])
    assert f"axis -2 (Tq = {shape[-2]})" in hit.explanation or "axis -2 (of size" in hit.explanation
    assert "axis -1" in hit.explanation


def test_a_constant_of_the_formula_off_by_two_is_named_as_such():
    found, *_ = explained("nw", "gaussian_weights", gaussian, lambda c: gaussian(c, half=1.0))
    assert found
    hit = next(iter(found.values()))
    assert hit.kind == "constant" and "½" in hit.explanation


def test_nothing_is_said_without_evidence():
    """Outputs no mutant reproduces (the right values plus noise; right on some cases and wrong
    elsewhere in a way no single change explains) get no diagnosis."""
    rng = np.random.default_rng(0)
    found, *_ = explained(
        "additive", "AdditiveScore", additive, lambda c: additive(c) + rng.normal(size=1)
    )
    assert found == {}
    calls = iter(range(100))
    found, *_ = explained(
        "additive",
        "AdditiveScore",
        additive,
        lambda c: additive(c, _sigmoid) if next(calls) % 2 else additive(c, np.abs),
    )
    assert found == {}


def test_a_reference_that_does_not_give_the_expected_output_is_never_used():
    """Expected outputs no reference function computes (the grader cannot recompute the part):
    the search finds no reference and says nothing, whatever the student returned."""
    found, *_ = explained(
        "additive",
        "AdditiveScore",
        lambda c: additive(c) * 3.0,
        lambda c: additive(c, _sigmoid),
    )
    assert found == {}


def test_what_alone_separates_failing_from_passing_cases_is_said():
    from grader.vocabulary.spec import Case

    def case(label, dtype="float64"):
        return Case("f", "function", label, dtype=dtype)

    cases = [
        case("B=1 Tq=3 Tk=5"),
        case("B=2 Tq=3 Tk=3"),
        case("B=3 Tq=4 Tk=4"),
        case("B=1 Tq=2 Tk=2"),
    ]
    said = search.separating(cases, failing=[1, 2], passing=[0, 3])
    assert said is not None and "B > 1" in said
    # Two features split them (B > 1 and Tq ≠ Tk both): no evidence for either, nothing said.
    both = [case("B=2 Tq=3 Tk=5"), case("B=3 Tq=4 Tk=2"), case("B=1 Tq=2 Tk=2")]
    assert search.separating(both, failing=[0, 1], passing=[2]) is None
    assert search.separating(cases, failing=[0, 1, 2, 3], passing=[]) is None


def test_right_on_the_first_example_only_is_said_only_when_so_on_every_failing_case():
    from grader.vocabulary.spec import Case

    rng = np.random.default_rng(1)
    cases = [Case("f", "function", "B=3 T=4"), Case("f", "function", "B=2 T=4")]
    expected = [rng.normal(size=(3, 4)), rng.normal(size=(2, 4))]
    first_only = [np.repeat(e[:1], len(e), axis=0) for e in expected]
    assert "first example" in search.first_example_only(expected, first_only, cases, [0, 1])
    wrong_first = [f.copy() for f in first_only]
    wrong_first[1][0] += 1.0
    assert search.first_example_only(expected, wrong_first, cases, [0, 1]) is None


def test_a_student_reads_the_search_first_in_english_and_chinese(tmp_path):
    """End to end: `grader check`'s rendering of a file whose mistake no record names."""
    from grader.grading import grade
    from grader.i18n import speaking
    from grader.kit import KIT
    from grader.records import get_exercise
    from grader.report import render
    from tests.support.grading import submit

    text = (KIT / "solutions" / "lab_additive.py").read_text(encoding="utf-8")
    assert "features = ops.tanh(" in text
    text = text.replace("features = ops.tanh(", "features = ops.sigmoid(")
    record = get_exercise("additive")
    for language, words in (("en", ("sigmoid", "tanh")), ("zh", ("sigmoid", "tanh", "公式"))):
        folder = tmp_path / language
        folder.mkdir()
        with speaking(language):
            result = grade(
                "additive",
                submit(folder, "additive", text, ""),
                parts=["AdditiveScore"],
            )
            shown = render(record, result, color=False)
        lines = shown.splitlines()
        start = next(i for i, line in enumerate(lines) if "AdditiveScore" in line)
        first = lines[start + 1]
        assert all(word in first for word in words), shown


def test_a_mutant_that_writes_into_its_argument_leaves_the_case_as_it_was():
    """The grader keeps its cases (memoised with the reference's outputs) for the next
    submission: a mutant run on them must not change them."""
    from grader.vocabulary.spec import FUNCTION, Case

    def writes_into(x, scale=2.0):
        x *= scale  # an edited reference that scales its argument in place
        return x

    case = Case("f", FUNCTION, "x", {"x": np.arange(3.0)})
    value = search._output(writes_into, None, case)
    np.testing.assert_array_equal(value, [0.0, 2.0, 4.0])
    np.testing.assert_array_equal(case.inputs["x"], [0.0, 1.0, 2.0])


def test_a_composition_asked_for_again_is_the_same_edit_compiled_once():
    """Mutants and their compositions are made once per process: a composition asked for
    again (the next student, the next case) reuses the compiled edit and computes the same."""
    from grader.engine import mutants
    from grader.reference.attention import bilinear_scores

    singles = [m for m in mutants.mutants(bilinear_scores) if m.recipe is not None]
    same_function = [
        (a, b) for a in singles for b in singles if a.recipe[1] is b.recipe[1] and a is not b
    ]
    rng = np.random.default_rng(0)
    query, key = rng.standard_normal((2, 3, 4)), rng.standard_normal((2, 5, 4))
    kernel = rng.standard_normal((4, 4))
    made = 0
    for first, second in same_function[:40] + [(singles[0], singles[-1])]:
        once, again = mutants.composed(first, second), mutants.composed(first, second)
        assert (once is None) == (again is None)
        if once is None:
            continue
        made += 1
        assert once.function.__code__ is again.function.__code__
        with np.errstate(all="ignore"):
            try:
                left = np.asarray(once.function(query, key, kernel), dtype=float)
            except Exception:  # noqa: BLE001 - a mutant may not run on these shapes
                continue
            right = np.asarray(again.function(query, key, kernel), dtype=float)
        np.testing.assert_array_equal(left, right)
    assert made > 0


def test_cases_alike_but_for_their_arrays_some_right_some_wrong_are_searched():
    """All zeros for bilinear_asymmetry: right where W is symmetric, wrong elsewhere. Two cases
    with the same target and label differ only in their arrays; telling the passing ones from
    the failing ones once compared them by value, and NumPy's ValueError left the whole
    exercise ungraded (r8 red team)."""
    record = get_exercise("8-2")
    part = record.part("bilinear_asymmetry")
    base = next(c for c in part.make_cases(np.random.default_rng(3)) if not c.raises)
    rng = np.random.default_rng(0)
    square = rng.normal(size=(4, 4))
    cases = [
        dataclasses.replace(base, inputs={"W": square + square.T}),  # symmetric: zeros are right
        dataclasses.replace(base, inputs={"W": square}),
        dataclasses.replace(base, inputs={"W": rng.normal(size=(4, 4))}),
    ]
    expected = [c.inputs["W"] - c.inputs["W"].T for c in cases]
    received = [np.zeros((4, 4)) for _ in cases]
    found = search.explain(part, cases, expected, received, deadline=None)
    assert 0 not in found  # the right case is not explained as a mistake
