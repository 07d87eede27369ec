"""The mistake search once per process (issue 48): a second student with the same outputs pays
a lookup, another mistake on the same cases reuses the mutants' outputs, and what is found is
the same with the memory as without it, whatever the clock says."""

import numpy as np
import pytest

from grader.engine import search
from grader.records import get_exercise

pytestmark = pytest.mark.labs


def _softmax(x, axis=-1):
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def additive(case, squash=np.tanh, key_scale=1.0):
    """vᵀ squash(W_q q_i + key_scale · W_k k_j), by einsum (written here, not the reference)."""
    q = case.inputs["query"] @ case.weights["query_kernel"]
    k = key_scale * case.inputs["key"] @ case.weights["key_kernel"]
    return np.einsum(
        "bijU,U->bij", squash(q[:, :, None] + k[:, None, :]), case.weights["score_vector"]
    )


def _sigmoid(x):
    return 1 / (1 + np.exp(-x))


WRONG = {
    "sigmoid": lambda c: additive(c, _sigmoid),
    "relu": lambda c: additive(c, lambda x: np.maximum(x, 0)),
    "no key": lambda c: additive(c, key_scale=0.0),
    "unexplained": lambda c: additive(c) + 0.123,
}


@pytest.fixture
def setting():
    part = get_exercise("additive").part("AdditiveScore")
    cases = [c for c in part.make_cases(np.random.default_rng(5)) if not c.raises]
    return part, cases, [additive(c) for c in cases]


@pytest.fixture
def counted(monkeypatch):
    """The mutant outputs actually computed (not read back), counted."""
    calls = []
    original = search._output

    def counting(*arguments):
        calls.append(1)
        return original(*arguments)

    monkeypatch.setattr(search, "_output", counting)
    return calls


def fresh():
    search._FOUND.clear()
    search._OUTPUTS.clear()


def test_the_same_outputs_are_searched_once(setting, counted):
    part, cases, expected = setting
    fresh()
    received = [WRONG["sigmoid"](c) for c in cases]
    first = search.explain(part, cases, expected, received)
    computed = len(counted)
    assert first and computed > 0
    again = search.explain(part, cases, expected, [r.copy() for r in received])
    assert again == first and len(counted) == computed  # a lookup: nothing computed


def test_another_mistake_on_the_same_cases_reuses_the_mutants_outputs(setting, counted):
    part, cases, expected = setting
    fresh()
    search.explain(part, cases, expected, [WRONG["unexplained"](c) for c in cases])
    cold = len(counted)  # every mutant tried, none explains it
    counted.clear()
    found = search.explain(part, cases, expected, [WRONG["relu"](c) for c in cases])
    assert found
    assert len(counted) < cold / 4, (len(counted), cold)


def test_what_is_found_does_not_depend_on_the_memory_or_the_order(setting):
    part, cases, expected = setting
    answers = {}
    for order in (list(WRONG), list(reversed(WRONG))):
        fresh()
        for name in order:
            received = [WRONG[name](c) for c in cases]
            found = search.explain(part, cases, expected, received)
            words = {i: (f.kind, f.explanation) for i, f in found.items()}
            answers.setdefault(name, []).append(words)
    for name, (forward, backward) in answers.items():
        assert forward == backward, name
    assert answers["sigmoid"][0] and not answers["unexplained"][0]


def test_the_budget_is_counted_not_timed(setting, monkeypatch):
    """A search that runs out of evaluations says the same on a fast and a slow machine: a
    clock on which each look takes 10 ms more (within the guard) changes nothing."""
    part, cases, expected = setting
    received = [WRONG["no key"](c) for c in cases]
    monkeypatch.setattr(search, "EVALUATIONS", 40)
    fresh()
    quick = search.explain(part, cases, expected, received)
    looks = []

    def slow_clock():
        looks.append(1)
        return 1000.0 + 0.01 * len(looks)

    monkeypatch.setattr(search.time, "monotonic", slow_clock)
    fresh()
    assert search.explain(part, cases, expected, received) == quick
    assert len(looks) > 40  # the slow clock was read at every evaluation
    monkeypatch.undo()
    fresh()
    generous = search.explain(part, cases, expected, received)
    assert generous and not quick  # the small budget did stop it
