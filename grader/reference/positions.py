"""Independent float64 NumPy references for position encodings (lab positions): the sinusoidal
table of NNDL §8.3 / Vaswani et al. (2017) and the rotary embedding of Su et al. (RoFormer,
2021), one entry at a time from the formulas. Their parameters are named like the grader's case
arrays; the arguments after the maths' own are what a known mistake changes (see
grader.vocabulary.spec.Mistake.of)."""

import math

import numpy as np

from grader.reference.attention import as64

# The exponent of the frequency of pair i (features 2i and 2i+1 of d) in 1 / base^exponent:
# the formula's 2i/d, and the known wrong ones: i/d (the pair's index without its 2), j/d (each
# feature j its own frequency, so the cosine of pair i gets (2i+1)/d), 2j/d (the formula's 2i
# read as twice the feature's index j).
EXPONENTS = {
    "2i/d": lambda i, j, d: 2 * i / d,
    "i/d": lambda i, j, d: i / d,
    "j/d": lambda i, j, d: j / d,
    "2j/d": lambda i, j, d: 2 * j / d,
}


def sinusoidal_encoding(
    positions,
    depth,
    max_wavelength=10000.0,
    exponent="2i/d",
    swapped=False,
    layout="interleaved",
):
    """PE[..., 2i] = sin(p / base^(2i/d)), PE[..., 2i+1] = cos(p / base^(2i/d)) for each
    position p of `positions` (any shape), base = max_wavelength, d = depth; an odd depth ends
    with a sine. Known mistakes: another `exponent` (see EXPONENTS), sine and cosine `swapped`,
    `layout="concatenated"` (the d/2 sines first, then the d/2 cosines)."""
    positions = as64(positions)
    table = np.zeros((*positions.shape, depth))
    for index in np.ndindex(positions.shape):
        for j in range(depth):
            i = j // 2
            angle = positions[index] / max_wavelength ** EXPONENTS[exponent](i, j, depth)
            sine = j % 2 == 0
            if layout == "concatenated":  # feature j < d/2: sine of pair j, else cosine
                i, sine = (j, True) if j < depth // 2 else (j - depth // 2, False)
                angle = positions[index] / max_wavelength ** EXPONENTS[exponent](i, 2 * i, depth)
            table[(*index, j)] = math.sin(angle) if sine != swapped else math.cos(angle)
    return table


def rotary(
    x,
    positions,
    max_wavelength=10000.0,
    pairing="halves",
    sign=1.0,
    exponent="2i/d",
    swapped=False,
):
    """Rotary embedding, halves pairing (GPT-NeoX, keras-hub): for x (B, T, d) or (B, T, H, d)
    and positions (T,) or (B, T), pair i of token t (features i and i + d/2) is rotated by the
    angle θ = p_t / base^(2i/d):

        out[i] = x[i] cos θ − x[i + d/2] sin θ,   out[i + d/2] = x[i + d/2] cos θ + x[i] sin θ.

    Known mistakes: `pairing="adjacent"` (features 2i and 2i+1, RoFormer's layout, where the
    halves are asked for), `sign=-1` (rotated by −θ), another `exponent` (EXPONENTS, j = 2i),
    cos and sin `swapped`."""
    x = as64(x)
    batch, steps, depth = x.shape[0], x.shape[1], x.shape[-1]
    where = np.broadcast_to(as64(positions), (batch, steps))
    half = depth // 2
    out = np.zeros_like(x)
    for b in range(batch):
        for t in range(steps):
            for i in range(half):
                theta = sign * where[b, t] / max_wavelength ** EXPONENTS[exponent](i, 2 * i, depth)
                cos, sin = math.cos(theta), math.sin(theta)
                if swapped:
                    cos, sin = sin, cos
                first, second = (i, i + half) if pairing == "halves" else (2 * i, 2 * i + 1)
                a, c = x[b, t, ..., first], x[b, t, ..., second]
                out[b, t, ..., first] = a * cos - c * sin
                out[b, t, ..., second] = c * cos + a * sin
    return out


def first_positions(positions):
    """0, 1, ..., T−1 in the shape of `positions` (T,) or (B, T): what code that ignores the
    positions it is given uses."""
    positions = np.asarray(positions)
    steps = positions.shape[-1] if positions.ndim else 1
    return np.broadcast_to(np.arange(steps, dtype=np.float64), positions.shape).copy()


def positions_given(positions):
    """Whether `positions` are other than 0, 1, ..., T−1 (else ignoring them changes nothing)."""
    return not np.array_equal(as64(positions), first_positions(positions))


def several_pairs(x):
    """Whether x has two feature pairs or more (d >= 4): with one pair, the halves are the
    adjacent features and every pair has the frequency 1."""
    return np.shape(x)[-1] >= 4


def concatenation_differs(depth):
    """Whether the d/2 sines followed by the d/2 cosines differ from the interleaved table as
    a layout (d even, at least two pairs)."""
    return depth % 2 == 0 and depth >= 4


def two_features(depth):
    """Whether the table has a cosine (d >= 2)."""
    return depth >= 2


def two_pairs(depth):
    """Whether the table has a second pair (d >= 3), whose frequency is not 1."""
    return depth >= 3
