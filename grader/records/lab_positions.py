"""Lab positions: the sinusoidal encoding as the book writes it, and rotary embeddings graded
also by the property that the score of two positions depends only on their offset."""

from __future__ import annotations

import numpy as np

from grader.engine import properties as relations
from grader.engine import selectors as on
from grader.reference import positions as ref
from grader.vocabulary.spec import FUNCTION, LAYER, Case, Exercise, Mistake, Part

# (positions: "first" 0..T−1 or "drawn" whole numbers in [0, 60) in any order, their shape,
# depth d, max_wavelength (None: the default 10000)). The book's table; any positions; a (B, T)
# batch of them; an odd depth with another base; one position, one feature.
SINUSOIDAL = (
    ("first", (6,), 8, None),
    ("drawn", (4,), 6, None),
    ("drawn", (2, 3), 4, None),
    ("drawn", (5,), 5, 100.0),
    ("drawn", (1,), 1, None),
)
SINUSOIDAL_FLOAT32 = ("drawn", (4,), 8, None)
# (target, positions, x's shape (B, T, [H,] d), positions' shape, max_wavelength): heads and
# none, positions (T,) and (B, T), 0..T−1 and drawn, one pair, another base; the layer (given)
# for the gradients with respect to x.
ROTARY = (
    ("apply_rotary", "drawn", (2, 5, 2, 4), (5,), None),
    ("apply_rotary", "first", (1, 4, 6), (4,), None),
    ("apply_rotary", "drawn", (2, 3, 1, 8), (2, 3), 100.0),
    ("apply_rotary", "drawn", (1, 1, 1, 2), (1,), None),
    ("RotaryEmbedding", "drawn", (2, 3, 2, 4), (3,), None),
    ("RotaryEmbedding", "drawn", (2, 4, 6), (2, 4), 500.0),
)
ROTARY_FLOAT32 = (
    ("apply_rotary", "drawn", (2, 4, 2, 6), (4,), None),
    ("RotaryEmbedding", "drawn", (1, 3, 2, 4), (3,), None),
)
BASES = (None, None, 100.0, 1000.0)


def positions_drawn(rng, kind, shape):
    if kind == "first":
        return np.broadcast_to(np.arange(shape[-1]), shape).astype(np.int64)
    return rng.integers(0, 60, size=shape).astype(np.int64)


def labelled(label, max_wavelength):
    return label if max_wavelength is None else f"{label}, max_wavelength={max_wavelength}"


def sinusoidal_case(rng, kind, shape, depth, max_wavelength, dtype="float64"):
    positions = positions_drawn(rng, kind, shape).astype(dtype)
    params = {"depth": depth} | (
        {} if max_wavelength is None else {"max_wavelength": max_wavelength}
    )
    label = labelled(f"positions of shape {shape}, d={depth}", max_wavelength)
    return Case("sinusoidal_encoding", FUNCTION, label, {"positions": positions}, params)


def sinusoidal_cases(rng, hidden=False):
    rows = SINUSOIDAL
    if hidden:
        rows = []
        for _ in range(3):
            steps, batch, depth = (int(v) for v in rng.integers(1, (8, 3, 10)))
            shape = (steps,) if batch == 1 else (batch, steps)
            rows.append(("drawn", shape, depth, BASES[int(rng.integers(len(BASES)))]))
    cases = [sinusoidal_case(rng, *row) for row in rows]
    cases.append(sinusoidal_case(rng, *SINUSOIDAL_FLOAT32, dtype="float32"))
    cases[-1].dtype, cases[-1].label = "float32", cases[-1].label + " float32"
    return cases


def rotary_case(rng, target, kind, shape, positions_shape, max_wavelength, dtype="float64"):
    x = rng.standard_normal(shape).astype(dtype)
    positions = positions_drawn(rng, kind, positions_shape)
    base = {} if max_wavelength is None else {"max_wavelength": max_wavelength}
    label = labelled(f"x of shape {shape}, positions of shape {positions_shape}", max_wavelength)
    if target == "apply_rotary":
        return Case(target, FUNCTION, label, {"x": x, "positions": positions}, base, dtype=dtype)
    upstream = rng.standard_normal(shape)
    params = {"positions": positions.tolist()} | base
    return Case(target, LAYER, label, {"x": x}, params, upstream=upstream, dtype=dtype)


def rotary_row(rng, target):
    batch, steps, heads, pairs = (int(v) for v in rng.integers((1, 1, 0, 1), (4, 7, 4, 5)))
    shape = (batch, steps, 2 * pairs) if heads == 0 else (batch, steps, heads, 2 * pairs)
    positions_shape = (steps,) if rng.random() < 0.5 else (batch, steps)
    return (target, "drawn", shape, positions_shape, BASES[int(rng.integers(len(BASES)))])


def rotary_cases(rng, hidden=False):
    rows = ROTARY
    if hidden:
        targets = ("apply_rotary", "apply_rotary", "apply_rotary", "RotaryEmbedding")
        rows = [rotary_row(rng, target) for target in targets]
    cases = [rotary_case(rng, *row) for row in rows]
    for row in ROTARY_FLOAT32:
        cases.append(rotary_case(rng, *row, dtype="float32"))
        cases[-1].label += " float32"
    return cases


POSITIONS_GIVEN = on.given(ref.positions_given)
DEFAULT_POSITIONS = on.computed(ref.first_positions)
SEVERAL_PAIRS = on.given(ref.several_pairs)
DEFAULT_BASE = on.param_is("max_wavelength", 10000.0, default=10000.0)
OTHER_BASE = on.param_is_not("max_wavelength", 10000.0, default=10000.0)

RECORD = Exercise(
    id="positions",
    title="Lab: Positions: the sinusoidal encoding and rotary embeddings",
    file="lab_positions.py",
    section="NNDL 8.3 (positions in self-attention); Vaswani 2017; RoFormer (Su 2021)",
    timeout=15.0,
    summary=(
        "Self-attention does not see where a token is. Write the book's sinusoidal position "
        "encoding for any positions, then the rotary embedding that rotates each pair of a "
        "query's or key's features by an angle proportional to its position, so that the "
        "score of two tokens depends only on their offset."
    ),
    parts=(
        Part(
            name="sinusoidal_encoding",
            points=4,
            make_cases=sinusoidal_cases,
            description="sinusoidal_encoding: PE(p, 2i) = sin(p / 10000^(2i/d)), PE(p, 2i+1) "
            "= cos(p / 10000^(2i/d)) for any positions, interleaved.",
            mistakes=(
                Mistake.of(
                    "sin and cos swapped",
                    "The even features hold cosines and the odd ones sines: PE(p, 2i) is the "
                    "sine, PE(p, 2i+1) the cosine of the same angle.",
                    ref.sinusoidal_encoding,
                    swapped=True,
                ),
                Mistake.of(
                    "exponent i/d",
                    "Pair i got the frequency 1/10000^(i/d): the exponent is 2i/d, where 2i is "
                    "the index of the pair's first feature (i = 0 .. d/2 − 1).",
                    ref.sinusoidal_encoding,
                    when=on.given(ref.two_pairs),
                    exponent="i/d",
                ),
                Mistake.of(
                    "each feature its own frequency",
                    "Feature j got the frequency 1/10000^(j/d), so the cosine of pair i uses "
                    "(2i+1)/d: both features of pair i use the same angle p/10000^(2i/d).",
                    ref.sinusoidal_encoding,
                    when=on.given(ref.two_features),
                    exponent="j/d",
                ),
                Mistake.of(
                    "exponent 2j/d",
                    "Feature j got the frequency 1/10000^(2j/d): in the formula 2i is the index "
                    "of the pair's first feature, so features 2i and 2i+1 both use "
                    "p/10000^(2i/d).",
                    ref.sinusoidal_encoding,
                    when=on.given(ref.two_features),
                    exponent="2j/d",
                ),
                Mistake.of(
                    "sin and cos concatenated",
                    "The d/2 sines come first and the d/2 cosines after them; the book "
                    "interleaves them: sine at feature 2i, cosine of the same angle at 2i+1.",
                    ref.sinusoidal_encoding,
                    when=on.given(ref.concatenation_differs),
                    layout="concatenated",
                ),
                Mistake.of(
                    "base 1000",
                    "These are the angles p/1000^(2i/d): the base is max_wavelength, 10000 "
                    "unless it is given.",
                    ref.sinusoidal_encoding,
                    when=DEFAULT_BASE,
                    max_wavelength=1000.0,
                ),
                Mistake.of(
                    "positions not used",
                    "This is the table of the positions 0, 1, ..., T−1: encode the positions "
                    "you are given (tokens after a cache start later, and may come in any "
                    "order).",
                    ref.sinusoidal_encoding,
                    when=POSITIONS_GIVEN,
                    positions=DEFAULT_POSITIONS,
                ),
            ),
        ),
        Part(
            name="apply_rotary",
            targets=("apply_rotary", "RotaryEmbedding"),
            points=6,
            make_cases=rotary_cases,
            relations=(relations.positions_shifted("positions"),),
            description="apply_rotary: each pair (x[i], x[i + d/2]) rotated by p/10000^(2i/d); "
            "gradients through RotaryEmbedding; scores depend only on the offset.",
            mistakes=(
                Mistake.of(
                    "adjacent pairs rotated",
                    "Features 2i and 2i+1 were rotated together (RoFormer's adjacent pairs); "
                    "this lab pairs the halves: feature i with feature i + d/2.",
                    ref.rotary,
                    when=SEVERAL_PAIRS,
                    pairing="adjacent",
                ),
                Mistake.of(
                    "rotated the wrong way",
                    "Each pair is turned by −θ: out[i] = x[i] cos θ − x[i + d/2] sin θ and "
                    "out[i + d/2] = x[i + d/2] cos θ + x[i] sin θ (the minus goes on the "
                    "first half).",
                    ref.rotary,
                    sign=-1.0,
                ),
                Mistake.of(
                    "sin and cos swapped",
                    "cos θ and sin θ trade places: out[i] = x[i] cos θ − x[i + d/2] sin θ. "
                    "Swapped, they turn each pair by 90° − θ: position 0 turns x by 90° where "
                    "it must leave it as it is.",
                    ref.rotary,
                    swapped=True,
                ),
                Mistake.of(
                    "exponent i/d",
                    "Pair i turns by p/10000^(i/d): the exponent is 2i/d (i = 0 .. d/2 − 1), "
                    "so that the frequencies go from 1 down to about 1/10000 over the pairs.",
                    ref.rotary,
                    when=SEVERAL_PAIRS,
                    exponent="i/d",
                ),
                Mistake.of(
                    "positions not used",
                    "Token t was rotated as if it stood at position t: rotate by the positions "
                    "you are given (tokens after a cache start later, and may come in any "
                    "order).",
                    ref.rotary,
                    when=POSITIONS_GIVEN,
                    positions=DEFAULT_POSITIONS,
                ),
                Mistake.of(
                    "max_wavelength ignored",
                    "The angles use the base 10000 where another max_wavelength was given: "
                    "θ_i = p / max_wavelength^(2i/d).",
                    ref.rotary,
                    when=OTHER_BASE,
                    max_wavelength=10000.0,
                ),
            ),
        ),
    ),
)
