"""Lab: positions (student submission, stack/reshape style)."""

import math

import keras
from keras import ops


def sinusoidal_encoding(positions, depth, max_wavelength=10000.0):
    positions = ops.convert_to_tensor(positions)
    dtype = positions.dtype
    n_pairs = (depth + 1) // 2
    two_i = ops.arange(0, 2 * n_pairs, 2, dtype=dtype)
    freqs = ops.exp(-two_i * (math.log(max_wavelength) / depth))
    angles = positions[..., None] * freqs  # (..., n_pairs)
    pe = ops.stack([ops.sin(angles), ops.cos(angles)], axis=-1)  # (..., n_pairs, 2)
    pe = ops.reshape(pe, tuple(angles.shape[:-1]) + (2 * n_pairs,))
    return pe[..., :depth]


def _rotate_half(x):
    half = x.shape[-1] // 2
    return ops.concatenate([-x[..., half:], x[..., :half]], axis=-1)


def apply_rotary(x, positions, max_wavelength=10000.0):
    x = ops.convert_to_tensor(x)
    d = x.shape[-1]
    pos = ops.cast(ops.convert_to_tensor(positions), x.dtype)
    inv_freq = 1.0 / (max_wavelength ** (ops.arange(0, d, 2, dtype=x.dtype) / d))
    theta = ops.einsum("...t,f->...tf", pos, inv_freq)
    theta = ops.concatenate([theta, theta], axis=-1)  # (.., T, d)
    while len(theta.shape) < 3:
        theta = theta[None]
    if len(x.shape) == 4:
        theta = theta[:, :, None, :]
    return x * ops.cos(theta) + _rotate_half(x) * ops.sin(theta)


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
