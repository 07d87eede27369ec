"""Lab kv-cache graded end to end: what the reference is checked on, a correct alternative, and
planted mistakes (those of the loop also break the property that stepping equals the full
causal pass). Full marks and the stub: tests/grader/test_records.py."""

import pytest

from grader.grading import grade
from tests.grader.test_records import HIDDEN_SEEDS
from tests.support.grading import assert_full_marks, reference_result, submit
from tests.support.planting import from_table, patched_solution

pytestmark = pytest.mark.labs

LAB = "kv-cache"
FULL_PASS = "did not give the full causal pass"


def test_the_reference_is_checked_on_the_full_causal_pass_and_the_first_and_last_position():
    result = reference_result(LAB, HIDDEN_SEEDS[LAB])
    names = [check.name for part in result.parts for check in part.checks]
    assert any(name.startswith("stepping equals the full causal pass") for name in names)
    for index in (0, 5):  # the first position, and the last of a cache of 6
        assert any(name.endswith(f"cache_update_index={index}") for name in names)


# The cache written with a mask instead of a slice update, the step with an additive mask of
# -1e9 in NumPy-style broadcasting, and the loop over Python lists.
ALTERNATIVE = """
import numpy as np
from keras import ops


def update_cache(cache, key, value, cache_update_index):
    length = cache.shape[2]
    here = (np.arange(length) == cache_update_index)[None, None, :, None, None]
    new = ops.concatenate([key[:, None], value[:, None]], axis=1)
    return ops.where(here, ops.cast(new, cache.dtype), cache)


def attend_cached(query, cache, cache_update_index):
    d = query.shape[-1]
    scores = ops.sum(query * cache[:, 0], axis=-1) / d**0.5  # (B, L, H)
    length = cache.shape[2]
    hidden = np.arange(length) > cache_update_index
    scores = scores + ops.cast(hidden[None, :, None], scores.dtype) * -1e9
    weights = ops.softmax(scores, axis=1)
    return ops.sum(weights[..., None] * cache[:, 1], axis=1, keepdims=True)


def incremental_attention(query, key, value, max_length):
    b, t, h, d = query.shape
    cache = np.zeros((b, 2, max_length, h, d), dtype=query.dtype)
    steps = []
    for i in range(t):
        cache = update_cache(cache, key[:, i : i + 1], value[:, i : i + 1], i)
        steps.append(attend_cached(query[:, i : i + 1], cache, i))
    return ops.concatenate(steps, axis=1)
"""


def test_correct_alternative_scores_full_marks(tmp_path):
    assert_full_marks(grade(LAB, submit(tmp_path, LAB, ALTERNATIVE, header="")))


LOOP = (
    "cache = update_cache(cache, key[:, t : t + 1], value[:, t : t + 1], t)\n"
    "        outputs.append(attend_cached(query[:, t : t + 1], cache, t))"
)
UNMASKED_FULL_PASS = (
    'scores = ops.einsum("bqhd,bkhd->bhqk", query, key) / math.sqrt(depth)\n'
    '    return ops.einsum("bhqk,bkhd->bqhd", ops.softmax(scores, axis=-1), value)'
)

# (part, mistake, the phrases of the feedback, an (old, new) patch of the solution)
PATCHES = [
    (
        "update_cache",
        "key and value swapped",
        "keys are slot 0",
        ("ops.stack([key, value], axis=1)", "ops.stack([value, key], axis=1)"),
    ),
    (
        "update_cache",
        "written one position late",
        "is written at index",
        (
            "start = [0, 0, cache_update_index, 0, 0]",
            "start = [0, 0, cache_update_index + 1, 0, 0]",
        ),
    ),
    (
        "update_cache",
        "every position overwritten",
        "write at position index only",
        (
            "return ops.slice_update(ops.convert_to_tensor(cache), start, ops.cast(update, "
            "cache.dtype))",
            "return ops.repeat(ops.cast(update, cache.dtype), cache.shape[2], axis=2)",
        ),
    ),
    (
        "attend_cached",
        "later positions not masked",
        "give them zero weight",
        ('ops.where(visible, scores, float("-inf"))', "scores"),
    ),
    (
        "attend_cached",
        "own position masked",
        "its own position included",
        ("ops.arange(length) <= cache_update_index", "ops.arange(length) < cache_update_index"),
    ),
    (
        "attend_cached",
        "scores not scaled",
        "divide them by √d",
        (
            'ops.einsum("bqhd,bkhd->bhqk", query, keys) / math.sqrt(depth)',
            'ops.einsum("bqhd,bkhd->bhqk", query, keys)',
        ),
    ),
    (
        "attend_cached",
        "keys used as values",
        "they must average the values",
        (
            'return ops.einsum("bhqk,bkhd->bqhd", weights, values)',
            'return ops.einsum("bhqk,bkhd->bqhd", weights, keys)',
        ),
    ),
    (
        "incremental_attention",
        "cache not kept between steps",
        ("keep the cache that update_cache returns", FULL_PASS),
        (LOOP, LOOP.replace("(cache, key", "(ops.zeros_like(cache), key")),
    ),
    (
        "incremental_attention",
        "index not advanced",
        ("token t is written, and attends, at position t", FULL_PASS),
        (LOOP, LOOP.replace("], t)", "], 0)").replace("cache, t)", "cache, 0)")),
    ),
    (
        "incremental_attention",
        "attended before written",
        ("write the cache first (update_cache), then attend", FULL_PASS),
        (
            LOOP,
            "outputs.append(attend_cached(query[:, t : t + 1], cache, t))\n"
            "        cache = update_cache(cache, key[:, t : t + 1], value[:, t : t + 1], t)",
        ),
    ),
    (
        "incremental_attention",
        "no causal mask",
        ("token t sees the positions 0..t only", FULL_PASS),
        ("return ops.concatenate(outputs, axis=1)", UNMASKED_FULL_PASS),
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
