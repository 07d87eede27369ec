"""Lab: positions — the sinusoidal encoding as the book writes it, and rotary embeddings.

NNDL §8.3 (self-attention needs positions: without them it is permutation-equivariant);
Vaswani et al. 2017 (sinusoidal encoding); Su et al. 2021, RoFormer (rotary embedding). The
book's sinusoidal encoding gives position p and feature pair i (features 2i and 2i+1 of d):

    PE(p, 2i) = sin(p / 10000^(2i/d)),   PE(p, 2i+1) = cos(p / 10000^(2i/d))

A rotary embedding does not add anything: it rotates each pair of features of a query or key
by the angle θ_i = p / 10000^(2i/d) of its position p. A rotation keeps dot products between
vectors turned alike, so the score of a query at position m and a key at position n,
⟨rot(q, m), rot(k, n)⟩ = ⟨q, rot(k, n − m)⟩, depends only on the offset n − m.

Grade your work with `grader check positions`. Positions are any numbers (not only 0..T−1:
tokens decoded after a cache, say), in any order. Outputs are compared with the reference in
float64 (and once in float32), and apply_rotary's gradients with respect to x are taken through
`RotaryEmbedding` (given). apply_rotary is also graded by a property: shifting every position
by one constant must leave the score of every two tokens unchanged. Keep the names and the
signatures below.

Parts: sinusoidal_encoding 4, apply_rotary 6 — 10 points.
"""

import keras
from keras import ops


def sinusoidal_encoding(positions, depth, max_wavelength=10000.0):
    """The sinusoidal position encoding of NNDL §8.3 (Vaswani et al. 2017), interleaved.

    Args:
        positions: (T,) or (B, T) float tensor of positions p (whole numbers, any order).
        depth: d, the number of features (may be odd: the last feature is then a sine).
        max_wavelength: the base, 10000 in the book.

    Returns:
        (*positions.shape, depth) tensor in the dtype of `positions`, with
        PE[..., 2i] = sin(p / base^(2i/d)) and PE[..., 2i+1] = cos(p / base^(2i/d)):
        sine and cosine of the same angle side by side, pair i at features 2i and 2i+1.
    """
    positions = ops.convert_to_tensor(positions)
    features = ops.arange(depth)
    pair = ops.cast(features // 2, positions.dtype)
    inverse_frequency = ops.power(
        ops.cast(max_wavelength, positions.dtype), -2.0 * pair / depth
    )  # (d,)
    angles = ops.expand_dims(positions, -1) * inverse_frequency  # (..., d)
    return ops.where(features % 2 == 0, ops.sin(angles), ops.cos(angles))


def apply_rotary(x, positions, max_wavelength=10000.0):
    """Rotary position embedding (RoFormer), halves pairing (as GPT-NeoX and keras-hub).

    Pair i of a token's d features is (x[i], x[i + d/2]) — the first half with the second
    half, NOT adjacent features (2i, 2i+1). Each pair of the token at position p is rotated by
    the angle θ_i = p / base^(2i/d), i = 0 .. d/2 − 1 (base = max_wavelength):

        out[i]       = x[i] cos θ_i − x[i + d/2] sin θ_i
        out[i + d/2] = x[i + d/2] cos θ_i + x[i] sin θ_i

    Args:
        x: (B, T, d) or (B, T, H, d) float tensor (H heads), d even.
        positions: (T,) or (B, T) positions of the T tokens (integers, in an integer or a
            float dtype; any numbers, not only 0..T−1).
        max_wavelength: the base, 10000 as in the sinusoidal encoding.

    Returns:
        A tensor of the shape and dtype of x: every head of token t rotated by the angles of
        positions[..., t].
    """
    x = ops.convert_to_tensor(x)
    depth = x.shape[-1]
    half = depth // 2
    exponent = ops.cast(ops.arange(half), x.dtype) * (2.0 / depth)
    inverse_frequency = ops.power(ops.cast(max_wavelength, x.dtype), -exponent)  # (d/2,)
    where = ops.cast(positions, x.dtype)
    if len(where.shape) == 1:
        where = ops.expand_dims(where, 0)  # (1, T)
    angles = ops.expand_dims(where, -1) * inverse_frequency  # (B or 1, T, d/2)
    if len(x.shape) == 4:
        angles = ops.expand_dims(angles, 2)  # one angle for every head of a token
    cos, sin = ops.cos(angles), ops.sin(angles)
    first, second = x[..., 0::2], x[..., 1::2]
    rotated_first = first * cos - second * sin
    rotated_second = second * cos + first * sin
    return ops.reshape(ops.stack([rotated_first, rotated_second], axis=-1), ops.shape(x))


class RotaryEmbedding(keras.layers.Layer):
    """Given: not part of the exercise. `apply_rotary` at fixed positions, as a layer, so that
    the grader can take gradients with respect to x.

    Args:
        positions: the positions, a (nested) list of numbers, (T,) or (B, T).
        max_wavelength: the base.

    Call arguments:
        x: (B, T, d) or (B, T, H, d).

    Returns:
        `apply_rotary(x, positions, max_wavelength)`.
    """

    def __init__(self, positions, max_wavelength=10000.0, **kwargs):
        super().__init__(**kwargs)
        self.positions = positions
        self.max_wavelength = max_wavelength

    def call(self, x):
        positions = ops.convert_to_tensor(self.positions, dtype=self.compute_dtype)
        return apply_rotary(x, positions, self.max_wavelength)
