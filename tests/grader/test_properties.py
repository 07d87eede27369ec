"""Properties between two runs (grader.engine.properties), checked in the grader's process: each
relation is tested on outputs computed here in float64 NumPy, by a correct attention (it passes)
and by a planted mistake (it trips the relation, with the chapter's words). End to end, each
property is tripped by a planted submission of the exercise's table (`planted()` of its test
file, graded by tests/grader/test_records.py)."""

from pathlib import Path

import numpy as np

from grader.engine import properties as relations
from grader.vocabulary.spec import LAYER, Case

RNG = np.random.default_rng(0)


def softmax(scores, axis=-1):
    shifted = np.exp(scores - scores.max(axis=axis, keepdims=True))
    return shifted / shifted.sum(axis=axis, keepdims=True)


def pooling(query, key, value, keep=None, batch_axis=False):
    scores = query @ np.swapaxes(key, -1, -2)
    if keep is not None:
        scores = np.where(keep, scores, -1e9)
    return softmax(scores, axis=0 if batch_axis else -1) @ value


def _case(**inputs):
    return Case("L", LAYER, "B=3", inputs=inputs)


def _holds(relation, case, function):
    variant = relation.vary(case, np.random.default_rng(1))
    assert variant is not None
    return relation.check(case, function(**case.inputs), variant, function(**variant.inputs))


def test_batch_independence_catches_a_softmax_across_the_batch():
    case = _case(query=RNG.normal(size=(3, 2, 4)), key=RNG.normal(size=(3, 5, 4)))
    case.inputs["value"] = RNG.normal(size=(3, 5, 2))
    relation = relations.batch_alone()
    assert _holds(relation, case, pooling) is None
    broken = _holds(relation, case, lambda **a: pooling(**a, batch_axis=True))
    assert broken.startswith("example 0 alone gives another output than it did in a batch of 3")
    assert "softmax across the batch axis" in broken
    single = _case(query=RNG.normal(size=(1, 2, 4)))
    assert relation.vary(single, RNG) is None  # nothing to separate


def test_keys_in_any_order_catches_values_paired_with_the_wrong_keys():
    case = _case(query=RNG.normal(size=(2, 3, 4)), key=RNG.normal(size=(2, 5, 4)))
    case.inputs["value"] = RNG.normal(size=(2, 5, 3))
    relation = relations.keys_permuted(("key", "value"))
    assert _holds(relation, case, pooling) is None
    flipped = lambda query, key, value: pooling(query, key, value[:, ::-1])  # noqa: E731
    assert "a key is being matched with another key's value" in _holds(relation, case, flipped)


def test_self_attention_is_permutation_equivariant_without_positions_only():
    case = _case(inputs=RNG.normal(size=(2, 6, 3)))
    relation = relations.queries_permuted(("inputs",))
    assert _holds(relation, case, lambda inputs: pooling(inputs, inputs, inputs)) is None

    def with_positions(inputs):
        placed = inputs + 0.3 * np.arange(inputs.shape[1])[None, :, None]
        return pooling(placed, placed, placed)

    broken = _holds(relation, case, with_positions)
    assert "self-attention without positional encodings is permutation-equivariant" in broken


def test_a_leaking_padding_mask_is_named_with_the_query_and_the_key():
    lengths = np.array([3, 5])
    keep = (np.arange(5)[None, :] < lengths[:, None])[:, None, :]
    case = _case(query=RNG.normal(size=(2, 2, 4)), key=RNG.normal(size=(2, 5, 4)))
    case.inputs["value"] = RNG.normal(size=(2, 5, 3))
    relation = relations.masked_keys_changed(("key", "value"), lambda c: ~keep[:, 0, :])
    assert _holds(relation, case, lambda **a: pooling(**a, keep=keep)) is None
    broken = _holds(relation, case, pooling)  # the mask forgotten
    assert (
        broken.startswith("output at query ") and "of example 0 changed when masked key 3" in broken
    )
    assert "your mask leaks" in broken
    nothing_masked = relations.masked_keys_changed(("key",), lambda c: np.zeros((2, 5), bool))
    assert nothing_masked.vary(case, RNG) is None


def test_a_causal_mask_that_leaks_is_named_at_the_first_query_that_saw_the_future():
    case = _case(inputs=RNG.normal(size=(2, 4, 3)))
    causal = np.tril(np.ones((4, 4), bool))
    relation = relations.future_changed("inputs")
    masked = lambda inputs: pooling(inputs, inputs, inputs, keep=causal)  # noqa: E731
    assert _holds(relation, case, masked) is None
    broken = _holds(relation, case, lambda inputs: pooling(inputs, inputs, inputs))
    assert broken.startswith("output at query ") and "when the future key 3 changed" in broken


def _pooling_gradients(scores, values, keep, after=False):
    """d(sum(out))/d(scores, values) of masked pooling, by hand in NumPy, as the lab's solution
    computes it (masked scores filled with -1e9 before the softmax, masked weights zeroed after
    it), or (`after`) with the zeroing after the softmax only."""
    probs = softmax(scores if after else np.where(keep, scores, -1e9))
    weights = np.where(keep, probs, 0.0)
    upstream = np.ones((*scores.shape[:2], values.shape[-1]))
    d_weights = np.where(keep, upstream @ np.swapaxes(values, -1, -2), 0.0)
    d_scores = probs * (d_weights - (d_weights * probs).sum(-1, keepdims=True))
    if not after:  # the fill's `where` passes nothing back to the masked scores
        d_scores = np.where(keep, d_scores, 0.0)
    return {"input:scores": d_scores, "input:values": np.swapaxes(weights, -1, -2) @ upstream}


def test_gradients_are_finite_and_exactly_zero_at_masked_keys():
    lengths = np.array([2, 4])
    padded = np.arange(4)[None, :] >= lengths[:, None]  # (B, Tk)
    keep = ~padded[:, None, :]
    case = _case(scores=RNG.normal(size=(2, 3, 4)), values=RNG.normal(size=(2, 4, 2)))
    prop = relations.gradients_sane(lambda c: padded, {"scores": 2, "values": 1})
    assert prop.gradients and prop.name == "gradients finite, zero at masked keys"
    right = _pooling_gradients(case.inputs["scores"], case.inputs["values"], keep)
    assert prop.check(case, right) is None
    after = _pooling_gradients(case.inputs["scores"], case.inputs["values"], keep, after=True)
    broken = prop.check(case, after)  # the mask applied after the softmax: scores leak
    assert broken.startswith("the gradient with respect to scores at masked key 2 of example 0")
    assert "not 0: a masked key must get exactly zero weight" in broken
    nan = {**right, "weight:kernel": np.array([[0.0, np.nan]])}
    assert (
        relations.gradients_sane()
        .check(case, nan)
        .startswith("the gradient with respect to kernel has 1 entries that are nan or inf")
    )
    assert relations.gradients_sane().check(case, after) is None  # no mask: finite is enough


def test_merged_hidden_seeds_keep_each_variant_with_its_own_case():
    """benchmarks/false_fails.py grades many hidden seeds in one run: each seed's variants must
    still point at their own case in the merged list (they pointed at another seed's, and the
    permutation relation crashed on 8-3)."""
    import importlib.util

    from grader.instructor.course.stubs import package_dir
    from grader.records import get_exercise

    path = Path(__file__).resolve().parents[2] / "benchmarks" / "false_fails.py"
    spec = importlib.util.spec_from_file_location("false_fails", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    record = get_exercise("bahdanau")
    merged = module.ManySeeds(package_dir("solutions"), 3).cases(record, 0)
    variants = [(case, cases) for cases in merged.values() for case in cases if case.relation]
    assert sum(case.label.startswith("hidden seed 2, ") for case, _ in variants) >= 3
    for variant, cases in variants:
        assert variant.label == f"{cases[variant.variant_of].label}, {variant.relation}"
