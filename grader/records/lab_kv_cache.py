"""Lab kv-cache: one decoding step of causal self-attention with a key/value cache, graded on the
step's output, the updated cache, and that decoding step by step equals the full causal pass."""

from __future__ import annotations

import numpy as np

from grader.engine import selectors as on
from grader.i18n import N_
from grader.reference import kv_cache as ref
from grader.vocabulary.spec import FUNCTION, Case, Exercise, Mistake, Part, Property

# (B, L, H, d, cache_update_index): the first position, a middle one, the last one, all ones.
STEPS = ((2, 5, 2, 3, 2), (1, 4, 1, 2, 0), (2, 6, 3, 2, 5), (1, 1, 1, 1, 0))
STEP_FLOAT32 = (2, 5, 2, 4, 3)
# (B, T, H, d, max_length): a cache longer than the sequence, one token, a full cache.
SEQUENCES = ((2, 4, 2, 3, 6), (1, 1, 1, 2, 1), (2, 5, 1, 4, 5))
SEQUENCE_FLOAT32 = (1, 3, 2, 2, 4)


def filled_cache(rng, batch, length, heads, depth, index):
    """A cache whose positions ≤ index hold keys and values N(0, 1) and whose later positions
    hold stale entries 3 + 5 N(0, 1) (of an earlier, longer sequence), which a step that does
    not mask them cannot hide."""
    cache = rng.standard_normal((batch, 2, length, heads, depth))
    stale = 3.0 + 5.0 * rng.standard_normal(cache[:, :, index + 1 :].shape)
    cache[:, :, index + 1 :] = stale
    return cache


def step_label(batch, length, heads, depth, index):
    return f"B={batch} L={length} H={heads} d={depth}, cache_update_index={index}"


def step_row(rng):
    batch, length, heads, depth = (int(v) for v in rng.integers(1, (4, 8, 4, 6)))
    return (batch, length, heads, depth, int(rng.integers(length)))


def step_cases(target):
    def make(rng, row, dtype):
        batch, length, heads, depth, index = row
        cache = filled_cache(rng, *row).astype(dtype)
        new = rng.standard_normal((3, batch, 1, heads, depth)).astype(dtype)
        if target == "update_cache":
            inputs = {"cache": cache, "key": new[0], "value": new[1]}
        else:
            inputs = {"query": new[2], "cache": cache}
        params = {"cache_update_index": index}
        return Case(target, FUNCTION, step_label(*row), inputs, params, dtype=dtype)

    def make_cases(rng, hidden=False):
        rows = [step_row(rng) for _ in range(3)] if hidden else STEPS
        cases = [make(rng, row, "float64") for row in rows]
        cases.append(make(rng, STEP_FLOAT32, "float32"))
        cases[-1].label += " float32"
        return cases

    return make_cases


def sequence_cases(rng, hidden=False):
    rows = SEQUENCES
    if hidden:
        rows = []
        for _ in range(3):
            batch, steps, heads, depth = (int(v) for v in rng.integers(1, (4, 7, 4, 6)))
            rows.append((batch, steps, heads, depth, steps + int(rng.integers(3))))
    cases = []
    for row, dtype in [(row, "float64") for row in rows] + [(SEQUENCE_FLOAT32, "float32")]:
        batch, steps, heads, depth, length = row
        arrays = rng.standard_normal((3, batch, steps, heads, depth)).astype(dtype)
        inputs = dict(zip(("query", "key", "value"), arrays, strict=True))
        label = f"B={batch} T={steps} H={heads} d={depth}, max_length={length}"
        label += " float32" * (dtype == "float32")
        params = {"max_length": length}
        cases.append(Case("incremental_attention", FUNCTION, label, inputs, params, dtype=dtype))
    return cases


LATER_POSITIONS = on.given(ref.later_positions)
STEPS_EQUAL_THE_FULL_PASS = Property(
    N_("stepping equals the full causal pass"),
    on.agrees_at(
        np.s_[...],
        ref.causal_attention,
        N_(
            "decoding the sequence one token at a time did not give the full causal pass: "
            "output t must attend to the positions 0..t, each step with the keys and values "
            "of all earlier steps kept in one cache"
        ),
    ),
)

RECORD = Exercise(
    id="kv-cache",
    title="Lab: KV cache: one decoding step of causal self-attention",
    file="lab_kv_cache.py",
    section="NNDL 8.3 (self-attention); Vaswani 2017 (masked decoder self-attention)",
    timeout=15.0,
    summary=(
        "Decoding one token at a time, a Transformer keeps the keys and values of earlier "
        "tokens in a cache. Write the cache's update at a position, the step that attends over "
        "the positions up to it, and the loop that decodes a whole sequence, which must equal "
        "the full causal pass."
    ),
    parts=(
        Part(
            name="update_cache",
            points=3,
            make_cases=step_cases("update_cache"),
            description="update_cache: the new key at cache[:, 0, index], the value at "
            "cache[:, 1, index], the rest unchanged.",
            mistakes=(
                Mistake.of(
                    "key and value swapped",
                    "The key went to cache[:, 1] and the value to cache[:, 0]: keys are slot 0, "
                    "values slot 1.",
                    ref.update_cache,
                    swapped=True,
                ),
                Mistake.of(
                    "written one position late",
                    "The new entries went to position index + 1: the token at position index "
                    "is written at index (positions start at 0).",
                    ref.update_cache,
                    when=LATER_POSITIONS,
                    offset=1,
                ),
                Mistake.of(
                    "every position overwritten",
                    "The new key and value were written at every position: the earlier tokens' "
                    "keys and values must stay as they were; write at position index only.",
                    ref.update_cache,
                    everywhere=True,
                ),
            ),
        ),
        Part(
            name="attend_cached",
            points=4,
            make_cases=step_cases("attend_cached"),
            description="attend_cached: softmax over the positions j ≤ index of q·k_j/√d, "
            "times v_j.",
            mistakes=(
                Mistake.of(
                    "later positions not masked",
                    "The query attended to every position of the cache: positions after index "
                    "hold no token of this sequence yet (zeros or stale entries); give them "
                    "zero weight before the softmax.",
                    ref.attend_cached,
                    when=LATER_POSITIONS,
                    visible="all",
                ),
                Mistake.of(
                    "own position masked",
                    "The token did not attend to itself: the causal mask keeps the positions "
                    "j ≤ index, its own position included.",
                    ref.attend_cached,
                    when=on.given(ref.earlier_positions),
                    visible="<",
                ),
                Mistake.of(
                    "scores not scaled",
                    "The scores are q·k_j: divide them by √d (d the size of one head) before "
                    "the softmax.",
                    ref.attend_cached,
                    when=on.given(ref.several_features),
                    scaled=False,
                ),
                Mistake.of(
                    "keys used as values",
                    "The weights average the keys, cache[:, 0]; they must average the values, "
                    "cache[:, 1].",
                    ref.attend_cached,
                    values=0,
                ),
            ),
        ),
        Part(
            name="incremental_attention",
            points=3,
            make_cases=sequence_cases,
            properties=(STEPS_EQUAL_THE_FULL_PASS,),
            description="incremental_attention: a sequence decoded step by step with one "
            "cache; equal to the full causal pass.",
            mistakes=(
                Mistake.of(
                    "cache not kept between steps",
                    "Each step started from an empty cache, so token t saw only itself (and "
                    "zeros): keep the cache that update_cache returns for the next step.",
                    ref.incremental_attention,
                    when=on.given(ref.several_steps),
                    kept=False,
                ),
                Mistake.of(
                    "index not advanced",
                    "Every step wrote at position 0, so each token attended to itself alone: "
                    "token t is written, and attends, at position t.",
                    ref.incremental_attention,
                    when=on.given(ref.several_steps),
                    advanced=False,
                ),
                Mistake.of(
                    "attended before written",
                    "Each step attended with token t's query before writing its key and value "
                    "into the cache, so position t still held zeros (a score of 0, a zero "
                    "value) instead of the token itself: write the cache first (update_cache), "
                    "then attend.",
                    ref.incremental_attention,
                    written_first=False,
                ),
                Mistake.of(
                    "no causal mask",
                    "Output t attended to the whole sequence, later tokens included: in "
                    "decoding, token t sees the positions 0..t only.",
                    ref.causal_attention,
                    when=on.given(ref.several_steps),
                    causal=False,
                ),
            ),
        ),
    ),
)
