"""The position-wise feed-forward network of the Transformer block: Vaswani et al. 2017,
section 3.3, and the gated SwiGLU variant of Shazeer 2020."""

import math

import keras
from keras import ops

from attnkit import precision
from attnkit.checks import (
    check_bool,
    check_choice,
    check_positive_int,
    check_rate,
    check_seed,
    get_initializer,
)

__all__ = ["ACTIVATIONS", "FeedForward", "gelu"]

ACTIVATIONS = ("relu", "gelu", "swiglu")


def gelu(x):
    """GELU(x) = x Φ(x) = ½ x (1 + erf(x / √2)), the exact form, in the dtype of `x`.

    TensorFlow's `gelu` casts its constant 1/√2 to float32 before float64, which costs a float64
    layer seven digits."""
    half = precision.constant(0.5, x.dtype)
    return half * x * (1 + ops.erf(x * precision.constant(math.sqrt(0.5), x.dtype)))


@keras.saving.register_keras_serializable(package="attnkit")
class FeedForward(keras.layers.Layer):
    """Two linear maps with a nonlinearity between them, applied at every position alike.

    FFN(x) = f(x W_1 + b_1) W_2 + b_2                      (`"relu"`, `"gelu"`)
    FFN(x) = (SiLU(x W_gate) ⊙ (x W_1)) W_2                (`"swiglu"`, biases if `use_bias`)

    SiLU(z) = z · σ(z). The original Transformer uses ReLU with d_ff = 4d; GELU (the exact,
    erf form) is BERT's and GPT's; the gated SwiGLU is that of PaLM and LLaMA (which take
    d_ff ≈ 8d/3 to keep the parameter count of the ReLU network).

    Sub-layers: `inner` (W_1, b_1), `gate` (W_gate; SwiGLU only), `outer` (W_2, b_2), all
    `keras.layers.Dense` (`attnkit.precision.Dense`, which keeps float64 on JAX and PyTorch).

    Args:
        intermediate_dim: positive int, d_ff.
        activation: `"relu"` (the default), `"gelu"` or `"swiglu"`.
        dropout: float in [0, 1), dropout on the hidden activations during training.
        use_bias: bool, whether the linear maps have biases. Defaults to `True`.
        kernel_initializer: initializer of the kernels. Defaults to `"glorot_uniform"`.
        bias_initializer: initializer of the biases. Defaults to `"zeros"`.
        seed: optional int, the seed of the dropout.
        **kwargs: base layer keyword arguments, such as `name` and `dtype`.

    Call arguments:
        inputs: tensor `(batch_size, T, d)`.
        training: bool, whether dropout is applied.

    Returns:
        Tensor `(batch_size, T, d)`.

    Source: Vaswani et al. 2017, section 3.3; Shazeer 2020, "GLU Variants Improve
    Transformer"; Hendrycks and Gimpel 2016 (GELU).
    """

    def __init__(
        self,
        intermediate_dim,
        activation="relu",
        dropout=0.0,
        use_bias=True,
        kernel_initializer="glorot_uniform",
        bias_initializer="zeros",
        seed=None,
        **kwargs,
    ):
        super().__init__(**kwargs)
        self.intermediate_dim = check_positive_int("intermediate_dim", intermediate_dim)
        self.activation = check_choice("activation", activation, ACTIVATIONS)
        self.dropout = check_rate("dropout", dropout)
        self.use_bias = check_bool("use_bias", use_bias)
        self.kernel_initializer = get_initializer("kernel_initializer", kernel_initializer)
        self.bias_initializer = get_initializer("bias_initializer", bias_initializer)
        self.seed = check_seed(seed)
        self.supports_masking = True

    def _dense(self, units, name):
        return precision.Dense(
            units,
            use_bias=self.use_bias,
            kernel_initializer=self.kernel_initializer.__class__.from_config(
                self.kernel_initializer.get_config()
            ),
            bias_initializer=self.bias_initializer,
            name=name,
            dtype=self.dtype_policy,
        )

    def build(self, input_shape):
        input_shape = tuple(input_shape)
        if input_shape[-1] is None:
            raise ValueError(
                "The last dimension of the inputs must be known. "
                f"Received: input_shape={input_shape}"
            )
        self.inner = self._dense(self.intermediate_dim, "inner")
        self.inner.build(input_shape)
        self.gate = None
        if self.activation == "swiglu":
            self.gate = self._dense(self.intermediate_dim, "gate")
            self.gate.build(input_shape)
        self.outer = self._dense(input_shape[-1], "outer")
        self.outer.build((*input_shape[:-1], self.intermediate_dim))
        self.hidden_dropout = keras.layers.Dropout(
            self.dropout, seed=self.seed, dtype=self.dtype_policy
        )

    def call(self, inputs, training=None):
        hidden = self.inner(inputs)
        if self.activation == "relu":
            hidden = ops.relu(hidden)
        elif self.activation == "gelu":
            hidden = gelu(hidden)
        else:
            hidden = ops.silu(self.gate(inputs)) * hidden
        return self.outer(self.hidden_dropout(hidden, training=training))

    def compute_output_shape(self, input_shape):
        return tuple(input_shape)

    def get_config(self):
        config = super().get_config()
        config.update(
            {
                "intermediate_dim": self.intermediate_dim,
                "activation": self.activation,
                "dropout": self.dropout,
                "use_bias": self.use_bias,
                "kernel_initializer": keras.initializers.serialize(self.kernel_initializer),
                "bias_initializer": keras.initializers.serialize(self.bias_initializer),
                "seed": self.seed,
            }
        )
        return config
