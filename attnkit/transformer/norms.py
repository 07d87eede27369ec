"""Normalization layers of the Transformer block: layer normalization (Ba et al. 2016) and root
mean square normalization (Zhang and Sennrich 2019), and the choice between them by name.

Both normalize the last axis in float32 under mixed precision (a mean of squares of float16
values overflows easily) and in float64 for a float64 layer on every backend (Keras's own
`LayerNormalization` loses float64 on JAX, where `ops.mean` sums in float32)."""

import keras
from keras import ops

from attnkit import precision
from attnkit.checks import check_positive_number, get_initializer

__all__ = ["NORMALIZATIONS", "LayerNorm", "RMSNorm", "make_normalization"]

NORMALIZATIONS = ("layer", "rms")

_LOW_PRECISION = ("float16", "bfloat16")


def _compute_input(inputs):
    dtype = keras.backend.standardize_dtype(inputs.dtype)
    return ops.cast(inputs, "float32") if dtype in _LOW_PRECISION else inputs


def _check_features(input_shape):
    if input_shape[-1] is None:
        raise ValueError(
            "The last dimension of the inputs must be known. "
            f"Received: input_shape={tuple(input_shape)}"
        )


@keras.saving.register_keras_serializable(package="attnkit")
class LayerNorm(keras.layers.Layer):
    """Layer normalization of the last axis, with a learned scale and shift.

    LayerNorm(x) = (x − μ) / √(σ² + ε) ⊙ γ + β,   μ = mean_i(x_i),  σ² = mean_i((x_i − μ)²)

    The normalization of the Transformer's residual connections. The weights are named as
    `keras.layers.LayerNormalization`'s, `gamma` then `beta`, so that its `get_weights()` can be
    loaded with `set_weights`.

    Args:
        epsilon: positive float ε added to the variance. Defaults to 1e-5.
        gamma_initializer: initializer of `gamma`. Defaults to `"ones"`.
        beta_initializer: initializer of `beta`. Defaults to `"zeros"`.
        **kwargs: base layer keyword arguments, such as `name` and `dtype`.

    Call arguments:
        inputs: tensor `(..., d)`.

    Returns:
        The normalized tensor, of the shape of `inputs`, in the compute dtype.

    Source: Ba, Kiros and Hinton 2016, "Layer Normalization", section 3; Vaswani et al. 2017,
    section 3.1.
    """

    def __init__(self, epsilon=1e-5, gamma_initializer="ones", beta_initializer="zeros", **kwargs):
        super().__init__(**kwargs)
        self.epsilon = check_positive_number("epsilon", epsilon)
        self.gamma_initializer = get_initializer("gamma_initializer", gamma_initializer)
        self.beta_initializer = get_initializer("beta_initializer", beta_initializer)
        self.supports_masking = True

    def build(self, input_shape):
        _check_features(input_shape)
        shape = (input_shape[-1],)
        self.gamma = self.add_weight(name="gamma", shape=shape, initializer=self.gamma_initializer)
        self.beta = self.add_weight(name="beta", shape=shape, initializer=self.beta_initializer)

    def call(self, inputs):
        x = _compute_input(inputs)
        centered = x - precision.mean(x, axis=-1, keepdims=True)
        variance = precision.mean(ops.square(centered), axis=-1, keepdims=True)
        normalized = centered * ops.rsqrt(variance + precision.constant(self.epsilon, x.dtype))
        output = normalized * ops.cast(self.gamma, x.dtype) + ops.cast(self.beta, x.dtype)
        return ops.cast(output, inputs.dtype)

    def compute_output_shape(self, input_shape):
        return tuple(input_shape)

    def get_config(self):
        config = super().get_config()
        config.update(
            {
                "epsilon": self.epsilon,
                "gamma_initializer": keras.initializers.serialize(self.gamma_initializer),
                "beta_initializer": keras.initializers.serialize(self.beta_initializer),
            }
        )
        return config


@keras.saving.register_keras_serializable(package="attnkit")
class RMSNorm(keras.layers.Layer):
    """Root mean square normalization of the last axis, with a learned scale.

    RMSNorm(x) = x / √(mean_i(x_i²) + ε) ⊙ γ

    Layer normalization without the mean subtraction and the shift: cheaper, and as good in
    the pre-norm blocks of today's language models (LLaMA, Gemma). Computed in float32 under
    mixed precision, in float64 for a float64 layer.

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
        _check_features(input_shape)
        self.scale = self.add_weight(
            name="scale", shape=(input_shape[-1],), initializer=self.scale_initializer
        )

    def call(self, inputs):
        x = _compute_input(inputs)
        mean_square = precision.mean(ops.square(x), axis=-1, keepdims=True)
        normalized = x * ops.rsqrt(mean_square + precision.constant(self.epsilon, x.dtype))
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
    """A `LayerNorm` (`"layer"`) or an `RMSNorm` (`"rms"`)."""
    if kind == "layer":
        return LayerNorm(epsilon=epsilon, name=name, dtype=dtype)
    return RMSNorm(epsilon=epsilon, name=name, dtype=dtype)
