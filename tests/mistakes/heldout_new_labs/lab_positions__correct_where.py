"""Lab: positions (student submission)."""

import keras
from keras import ops


def sinusoidal_encoding(positions, depth, max_wavelength=10000.0):
    positions = ops.convert_to_tensor(positions)
    dtype = positions.dtype
    j = ops.arange(depth, dtype=dtype)
    i = ops.floor(j / 2.0)
    inv_freq = ops.power(ops.cast(max_wavelength, dtype), -(2.0 * i) / depth)
    angles = ops.expand_dims(positions, -1) * inv_freq
    even = ops.equal(ops.mod(ops.arange(depth), 2), 0)
    return ops.where(even, ops.sin(angles), ops.cos(angles))


def apply_rotary(x, positions, max_wavelength=10000.0):
    x = ops.convert_to_tensor(x)
    d = x.shape[-1]
    half = d // 2
    positions = ops.cast(positions, x.dtype)
    if len(positions.shape) == 1:
        positions = ops.expand_dims(positions, 0)  # (1, T)
    i = ops.arange(half, dtype=x.dtype)
    inv_freq = ops.power(ops.cast(max_wavelength, x.dtype), -(2.0 * i) / d)
    theta = ops.expand_dims(positions, -1) * inv_freq  # (B or 1, T, d/2)
    if len(x.shape) == 4:
        theta = ops.expand_dims(theta, -2)  # (B or 1, T, 1, d/2)
    cos = ops.cos(theta)
    sin = ops.sin(theta)
    x1 = x[..., :half]
    x2 = x[..., half:]
    out1 = x1 * cos - x2 * sin
    out2 = x2 * cos + x1 * sin
    return ops.concatenate([out1, out2], axis=-1)


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
