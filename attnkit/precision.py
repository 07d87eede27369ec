"""Keras ops that keep float64 float64 on every backend.

Keras 3.15's type promotion (`keras.backend.result_type`) turns float64 into float32 on the JAX
(without x64) and PyTorch backends, and the PyTorch backend applies it even when both inputs
are float64 in the ops that promote their inputs, `matmul` and `maximum` among them (`einsum` and
`where` do not). TensorFlow's `ops.cast` of a Python float rounds it to float32 first. attnkit
goes through these instead wherever float64 can reach; for every other dtype they are the plain
Keras ops.
"""

import keras
from keras import ops

__all__ = ["constant", "is_float64", "matmul", "maximum"]


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
