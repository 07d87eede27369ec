"""Normalization layers of the Transformer block: layer normalization (Ba et al. 2016) and root
mean square normalization (Zhang and Sennrich 2019), and the choice between them by name."""

import keras
from keras import ops

from attnkit.checks import check_positive_number, get_initializer

__all__ = ["NORMALIZATIONS", "RMSNorm", "make_normalization"]

NORMALIZATIONS = ("layer", "rms")

_LOW_PRECISION = ("float16", "bfloat16")


@keras.saving.register_keras_serializable(package="attnkit")
class RMSNorm(keras.layers.Layer):
    """Root mean square normalization of the last axis, with a learned scale.

    RMSNorm(x) = x / √(mean_i(x_i²) + ε) ⊙ γ

    Layer normalization without the mean subtraction and the shift: cheaper, and as good in
    the pre-norm blocks of today's language models (LLaMA, Gemma). Computed in float32 under
    mixed precision (the mean of squares of float16 values overflows easily), in float64 for
    a float64 layer.

    Args:
        epsilon: positive float ε added to the mean square. Defaults to 1e-6.
        scale_initializer: initializer of `scale` (γ). Defaults to `"ones"`.
        **kwargs: base layer keyword arguments, such as `name` and `dtype`.

    Call arguments:
        inputs: tensor `(..., d)`.

    Returns:
        The normalized tensor, of the shape of `inputs`, in the compute dtype.

    Source: Zhang and Sennrich 2019, "Root Mean Square Layer Normalization", section 4.
    """

    def __init__(self, epsilon=1e-6, scale_initializer="ones", **kwargs):
        super().__init__(**kwargs)
        self.epsilon = check_positive_number("epsilon", epsilon)
        self.scale_initializer = get_initializer("scale_initializer", scale_initializer)
        self.supports_masking = True

    def build(self, input_shape):
        if input_shape[-1] is None:
            raise ValueError(
                "The last dimension of the inputs must be known. "
                f"Received: input_shape={tuple(input_shape)}"
            )
        self.scale = self.add_weight(
            name="scale", shape=(input_shape[-1],), initializer=self.scale_initializer
        )

    def call(self, inputs):
        dtype = keras.backend.standardize_dtype(inputs.dtype)
        x = ops.cast(inputs, "float32") if dtype in _LOW_PRECISION else inputs
        mean_square = ops.mean(ops.square(x), axis=-1, keepdims=True)
        normalized = x * ops.rsqrt(mean_square + ops.convert_to_tensor(self.epsilon, x.dtype))
        return ops.cast(normalized * ops.cast(self.scale, x.dtype), inputs.dtype)

    def compute_output_shape(self, input_shape):
        return tuple(input_shape)

    def get_config(self):
        config = super().get_config()
        config.update(
            {
                "epsilon": self.epsilon,
                "scale_initializer": keras.initializers.serialize(self.scale_initializer),
            }
        )
        return config


def make_normalization(kind, epsilon, name, dtype):
    """A `keras.layers.LayerNormalization` (`"layer"`) or an `RMSNorm` (`"rms"`)."""
    if kind == "layer":
        return keras.layers.LayerNormalization(epsilon=epsilon, name=name, dtype=dtype)
    return RMSNorm(epsilon=epsilon, name=name, dtype=dtype)
