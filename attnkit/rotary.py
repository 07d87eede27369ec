"""Rotary position embedding (RoPE): Su et al. 2021, "RoFormer", section 3.4.

Sinusoidal and learned encodings add a vector to the input; the rotary embedding instead turns
every pair of features of a query or key by an angle proportional to its position. The score of
a query at position m and a key at position n then depends on the positions only through the
offset m − n: (R_m q)ᵀ (R_n k) = qᵀ R_(n−m) k.
"""

import keras
from keras import ops

from attnkit import precision
from attnkit.checks import check_choice, check_positive_number

__all__ = ["RotaryEmbedding", "rotary_angles"]

PAIRINGS = ("halves", "adjacent")


def _angle_dtype(dtype):
    # Positions times frequencies lose their low digits in float16; float64 keeps float64.
    return "float64" if keras.backend.standardize_dtype(dtype) == "float64" else "float32"


def rotary_angles(positions, depth, max_wavelength=10000.0, scaling_factor=1.0, dtype="float32"):
    """The rotation angles θ[..., i] = (p / s) · b^(−2i/d), i = 0 … d/2 − 1.

    Args:
        positions: tensor of token positions, any shape (e.g. `(T,)` or `(batch_size, T)`),
            integer or float.
        depth: even int, the number of features d that are rotated.
        max_wavelength: positive float, the base b (θ of RoFormer, 10000).
        scaling_factor: positive float s; positions are divided by it (linear position
            interpolation, to stretch a model to longer sequences).
        dtype: the float dtype of the angles.

    Returns:
        Tensor of shape `positions.shape + (d/2,)`.
    """
    exponents = ops.arange(0, depth, 2, dtype=dtype) / ops.cast(depth, dtype)
    frequencies = ops.power(ops.convert_to_tensor(max_wavelength, dtype=dtype), -exponents)
    positions = ops.cast(positions, dtype) / ops.convert_to_tensor(scaling_factor, dtype=dtype)
    return ops.expand_dims(positions, -1) * frequencies


@keras.saving.register_keras_serializable(package="attnkit")
class RotaryEmbedding(keras.layers.Layer):
    """Rotates pairs of features by angles proportional to the token's position.

    θ_i(p) = (p / s) · b^(−2i/d),  i = 0 … d/2 − 1
    (x'_a, x'_b) = (x_a cos θ_i − x_b sin θ_i,  x_b cos θ_i + x_a sin θ_i)

    for each pair (a, b) of features of a vector at position p. Two pairings are in use and
    give different (equally good) models, so weights trained with one do not work with the
    other:

    - `"halves"` (GPT-NeoX, LLaMA in Hugging Face's layout, keras-hub): pair i is the features
      (i, i + d/2);
    - `"adjacent"` (the RoFormer paper, GPT-J, Meta's LLaMA code; "interleaved" in some
      libraries): pair i is the features (2i, 2i + 1).

    Because R_m is a rotation, (R_m q)·(R_n k) = q · R_(n−m) k: a score depends on the two
    positions only through their offset. The angles are computed in float32 (float64 for a
    float64 layer) and the rotation in the compute dtype. The input's Keras mask passes through.

    Args:
        max_wavelength: positive float, the base b (RoFormer's 10000; LLaMA 3 uses 500000).
        scaling_factor: positive float s ≥ 1 divides the positions (linear position
            interpolation). Defaults to 1.
        pairing: `"halves"` (the default) or `"adjacent"`, see above.
        **kwargs: base layer keyword arguments, such as `name` and `dtype`.

    Call arguments:
        inputs: tensor of shape `(batch_size, T, ..., d)`, d even: the sequence on axis 1 and
            the features last (e.g. `(batch_size, T, num_heads, head_dim)`).
        positions: optional tensor of the token positions, shape `(T,)` or `(batch_size, T)`,
            integer or float; any values (e.g. offsets of packed sequences or of a decoding
            step). Defaults to `start_index + [0, 1, …, T − 1]`.
        start_index: int or scalar integer tensor, the position of the first token when
            `positions` is not given (a decoding step). Defaults to 0.

    Returns:
        The rotated tensor, of the shape of `inputs`.

    Source: Su et al. 2021, "RoFormer: Enhanced Transformer with Rotary Position Embedding",
    section 3.4; the position encodings of NNDL 8.3.
    """

    def __init__(self, max_wavelength=10000.0, scaling_factor=1.0, pairing="halves", **kwargs):
        super().__init__(**kwargs)
        self.max_wavelength = check_positive_number("max_wavelength", max_wavelength)
        self.scaling_factor = check_positive_number("scaling_factor", scaling_factor)
        self.pairing = check_choice("pairing", pairing, PAIRINGS)
        self.supports_masking = True

    def build(self, input_shape):
        self._check_shape(input_shape)

    def _check_shape(self, input_shape):
        input_shape = tuple(input_shape)
        if len(input_shape) < 3:
            raise ValueError(
                "RotaryEmbedding expects inputs of shape (batch_size, T, ..., d). "
                f"Received: input_shape={input_shape}"
            )
        depth = input_shape[-1]
        if depth is None or depth % 2:
            raise ValueError(
                "The rotated features come in pairs: the last dimension must be known and even. "
                f"Received: input_shape={input_shape}"
            )
        return input_shape

    def call(self, inputs, positions=None, start_index=0):
        self._check_shape(inputs.shape)
        depth = inputs.shape[-1]
        if positions is None:
            positions = ops.arange(ops.shape(inputs)[1], dtype="int32") + ops.cast(
                start_index, "int32"
            )
        positions = ops.convert_to_tensor(positions)
        if len(positions.shape) == 1:
            positions = ops.expand_dims(positions, 0)  # the same positions for every example
        if len(positions.shape) != 2:
            raise ValueError(
                "`positions` must have shape (T,) or (batch_size, T). "
                f"Received: positions with shape {tuple(positions.shape)}"
            )
        angles = rotary_angles(
            positions,
            depth,
            self.max_wavelength,
            self.scaling_factor,
            dtype=_angle_dtype(self.compute_dtype),
        )  # (B or 1, T, d/2)
        for _ in range(len(inputs.shape) - 3):
            angles = ops.expand_dims(angles, -2)  # over the axes between T and d
        cos = ops.cast(precision.cos(angles), inputs.dtype)
        sin = ops.cast(precision.sin(angles), inputs.dtype)
        if self.pairing == "halves":
            first, second = inputs[..., : depth // 2], inputs[..., depth // 2 :]
            return ops.concatenate(
                [first * cos - second * sin, second * cos + first * sin], axis=-1
            )
        pairs = ops.reshape(inputs, (*ops.shape(inputs)[:-1], depth // 2, 2))
        even, odd = pairs[..., 0], pairs[..., 1]
        rotated = ops.stack([even * cos - odd * sin, odd * cos + even * sin], axis=-1)
        return ops.reshape(rotated, ops.shape(inputs))

    def compute_output_shape(self, input_shape):
        return self._check_shape(input_shape)

    def get_config(self):
        config = super().get_config()
        config.update(
            {
                "max_wavelength": self.max_wavelength,
                "scaling_factor": self.scaling_factor,
                "pairing": self.pairing,
            }
        )
        return config
