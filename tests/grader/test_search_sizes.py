"""Diagnoses that name what a wrong output shows, for the lines the third held-out set
(tests/mistakes/heldout_r3) found vague or misleading: a size taken from another input or axis,
a factor of -1, outputs that are -inf, an axis one entry short, a separator that another size
explains as well."""

from __future__ import annotations

import math

import numpy as np

from grader.engine import compare, search
from grader.records import get_exercise
from grader.vocabulary.spec import FUNCTION, Case


def plain_case(label="B=2 Tq=3 Tk=5") -> Case:
    return Case("f", FUNCTION, label)


def test_an_axis_one_entry_short_reads_as_a_count_rounded_down():
    found = compare.difference(np.ones((3, 2, 4)), np.ones((2, 2, 4)), plain_case())
    assert "expected shape (3, 2, 4), received (2, 2, 4)" in found.message
    assert "axis 0 has one entry too few" in found.message and found.mistake == "off by one"
    more = compare.difference(np.ones((2, 3)), np.ones((2, 4)), plain_case())
    assert "axis 1 has one entry too many" in more.message
    # Two axes apart, or one apart by more than one: only the shapes are told.
    assert "entry" not in compare.difference(np.ones((3, 3)), np.ones((2, 2)), plain_case()).message
    assert "entry" not in compare.difference(np.ones((5, 2)), np.ones((2, 2)), plain_case()).message


def test_a_factor_of_minus_one_is_a_sign_the_other_way_not_a_scale():
    expected = np.linspace(-1.5, 2.0, 12).reshape(3, 4)
    found = compare.difference(expected, -expected, plain_case())
    assert "sign opposite" in found.message and "scale factor" not in found.message
    doubled = compare.difference(expected, 2 * expected, plain_case())
    assert "sign" not in doubled.message


def test_outputs_that_are_minus_inf_and_nothing_else_are_a_log_of_zero_or_a_masked_value():
    found = compare.difference(np.array([-1.2, -0.4]), np.array([-np.inf, -np.inf]), plain_case())
    assert "are -inf" in found.message and "masked with -inf" in found.message
    assert "overflow" not in found.message
    nan = compare.difference(np.array([-1.2, -0.4]), np.array([np.nan, -np.inf]), plain_case())
    assert "are -inf" not in nan.message


def test_a_scale_by_the_models_width_is_told_as_the_size_it_used():
    """attend_cached scaled by √(H·d) where the formula has √d: the search recomputes the
    reference with the product of two sizes and names both."""
    from grader.reference import kv_cache

    part = get_exercise("kv-cache").part("attend_cached")
    cases = [c for c in part.make_cases(np.random.default_rng(0)) if c.target == "attend_cached"]
    cases = [c for c in cases if "float32" not in c.label]

    def attend(case, width):
        query, cache = case.inputs["query"], case.inputs["cache"]
        depth = query.shape[-1]
        # q·k/√width as (q·√depth/√width)·k/√depth: the reference, fed a rescaled query.
        scaled = query * math.sqrt(depth) / math.sqrt(width)
        return kv_cache.attend_cached(scaled, cache, case.params["cache_update_index"])

    expected = [attend(c, c.inputs["query"].shape[-1]) for c in cases]
    received = [attend(c, c.inputs["query"].shape[-1] * c.inputs["query"].shape[-2]) for c in cases]
    found = search.explain(part, cases, expected, received, deadline=None)
    assert found, "no explanation found"
    words = next(iter(found.values())).explanation
    assert "a size is taken from the wrong input or axis" in words, words
    assert "where the formula needs d = " in words, words


def test_a_separator_that_another_size_explains_as_well_is_not_said():
    failing = [plain_case("B=2 H=2 d=3"), plain_case("B=3 H=2 d=4")]
    passing = [plain_case("B=1 H=1 d=3"), plain_case("B=1 H=1 d=2")]
    cases = failing + passing
    assert search.separating(cases, failing=[0, 1], passing=[2, 3]) is None
    failing = [plain_case("B=2 H=1 d=3"), plain_case("B=3 H=1 d=4")]
    cases = failing + passing
    said = search.separating(cases, failing=[0, 1], passing=[2, 3])
    assert said is not None and "B > 1" in said
