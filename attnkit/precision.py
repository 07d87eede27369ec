"""Keras ops that keep float64 float64 on every backend.

Keras 3.15's type promotion (`keras.backend.result_type`) turns float64 into float32 on the JAX
(without x64) and PyTorch backends, and the PyTorch backend applies it even when both inputs
are float64 in the ops that promote their inputs, `matmul` and `maximum` among them (`einsum` and
`where` do not). TensorFlow's `ops.cast` of a Python float rounds it to float32 first. attnkit
goes through these instead wherever float64 can reach; for every other dtype they are the plain
Keras ops.

On JAX, importing attnkit turns on `jax_enable_x64` (unless JAX_ENABLE_X64 says otherwise):
without it JAX stores a float64 layer's weights and inputs as float32 and computes in float32,
silently. TensorFlow and PyTorch keep float64 anyway; float32 layers stay float32 (Keras gives
their weights and inputs the layer's dtype).
"""

import os

import keras
from keras import ops

__all__ = [
    "Dense",
    "constant",
    "cos",
    "is_float64",
    "matmul",
    "maximum",
    "mean",
    "recurrent_tanh",
    "sin",
    "tanh",
]

if keras.backend.backend() == "jax" and "JAX_ENABLE_X64" not in os.environ:
    import jax

    jax.config.update("jax_enable_x64", True)


def is_float64(x) -> bool:
    """Whether the tensor `x` holds float64."""
    return keras.backend.standardize_dtype(x.dtype) == "float64"


def constant(value, dtype):
    """The Python number `value` as a scalar tensor of `dtype`, without a float32 detour."""
    return ops.convert_to_tensor(value, dtype=dtype)


def matmul(a, b):
    """`a @ b` over the last two axes (both at least 2-D), in the dtype of `a` and `b`."""
    if keras.backend.backend() == "tensorflow":
        return ops.matmul(a, b)  # keeps float64, and is faster than einsum op by op
    a, b = ops.convert_to_tensor(a), ops.convert_to_tensor(b)
    if is_float64(a) or is_float64(b):
        return ops.einsum("...ij,...jk->...ik", a, b)
    return ops.matmul(a, b)


def maximum(a, b):
    """Elementwise max(a, b), in the dtype of the tensor `a` (`b` may be a Python number)."""
    a = ops.convert_to_tensor(a)
    if is_float64(a):
        b = ops.convert_to_tensor(b, dtype="float64")
        return ops.where(a >= b, a, b)
    return ops.maximum(a, b)


def _unary(name, x):
    """`keras.ops.<name>(x)`, or the backend's own function where Keras would make float64
    float32 (JAX and PyTorch)."""
    x = ops.convert_to_tensor(x)
    if not is_float64(x) or keras.backend.backend() == "tensorflow":
        return getattr(ops, name)(x)
    if keras.backend.backend() == "jax":
        import jax.numpy as jnp

        return getattr(jnp, name)(x)
    import torch

    return getattr(torch, name)(x)


# Registered (as attnkit.precision>tanh, apart from the layers attnkit exports): a Keras layer
# given it as its activation (a float64 GRU, see recurrent_tanh) must get it back from its
# config, as `Bidirectional` makes its backward layer.
@keras.saving.register_keras_serializable(package="attnkit.precision", name="tanh")
def tanh(x):
    """Elementwise tanh, in the dtype of `x`: Keras's `ops.tanh` returns float32 for float64 on
    JAX and PyTorch (its promotion of float64 with a Python float)."""
    return _unary("tanh", x)


def cos(x):
    """Elementwise cos, in the dtype of `x` (Keras's `ops.cos`: float32 on JAX and PyTorch)."""
    return _unary("cos", x)


def sin(x):
    """Elementwise sin, in the dtype of `x` (Keras's `ops.sin`: float32 on JAX and PyTorch)."""
    return _unary("sin", x)


def mean(x, axis=-1, keepdims=False):
    """The mean over `axis`, in the dtype of `x`: Keras's `ops.mean` on JAX sums float64 in
    float32 (its promotion of the dtype with float32)."""
    x = ops.convert_to_tensor(x)
    if not is_float64(x) or keras.backend.backend() == "tensorflow":
        return ops.mean(x, axis=axis, keepdims=keepdims)
    count = ops.cast(ops.shape(x)[axis], x.dtype)
    return ops.sum(x, axis=axis, keepdims=keepdims) / count


def recurrent_tanh(dtype_policy):
    """The `activation` to give a Keras GRU or LSTM (cell) of `dtype_policy`: attnkit's `tanh`
    for a float64 layer, whose Keras tanh computes in float32 on JAX; Keras's own `"tanh"`
    otherwise, which TensorFlow's cuDNN kernels ask for."""
    policy = keras.dtype_policies.get(dtype_policy)
    return tanh if policy.compute_dtype == "float64" else "tanh"


@keras.saving.register_keras_serializable(package="attnkit.precision")
class Dense(keras.layers.Dense):
    """`keras.layers.Dense` that keeps a float64 layer float64 on JAX and PyTorch.

    There Keras's `Dense` multiplies through `ops.matmul` (float32 on PyTorch: errors near 1e-7,
    measured against PyTorch's own float64 layers on CPU and GPU) and its `"tanh"` activation
    returns float32 (on both). TensorFlow, every other dtype and a quantized layer take Keras's
    own path; the weights are Keras's."""

    def call(self, inputs, training=None):
        inputs = ops.convert_to_tensor(inputs)
        if (
            keras.backend.backend() == "tensorflow"
            or self.quantization_mode is not None
            or not is_float64(inputs)
        ):
            return super().call(inputs, training=training)
        x = matmul(inputs, ops.cast(self.kernel, inputs.dtype))
        if self.bias is not None:
            x = x + ops.cast(self.bias, x.dtype)
        if self.activation is keras.activations.tanh:
            return tanh(x)  # Keras's tanh: float32 for float64 on JAX and PyTorch
        if self.activation is not None:
            x = self.activation(x)
        return x
