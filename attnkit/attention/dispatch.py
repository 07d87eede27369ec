"""Which implementation of scaled dot-product attention one call takes, and the backend facts
that decide it: the one place where attnkit looks at the backend.

The implementations give the same result (up to rounding):

- `"plain"` forms the `(B, H, Tq, Tk)` weights (the only one that can return them or apply
  dropout to them);
- `"blockwise"` walks over blocks of keys (`attnkit.attention.blockwise`) and never holds the
  Tq × Tk scores, nor the Tq × Tk mask;
- `"fused"` calls `keras.ops.dot_product_attention` (a fused kernel on JAX and PyTorch GPUs);
- `"auto"` picks one of them per call (`choose_implementation`).
"""

import keras

from attnkit.attention.blockwise import SMALLEST_DEFAULT_BLOCK
from attnkit.checks import check_choice
from attnkit.precision import is_float64

__all__ = [
    "IMPLEMENTATIONS",
    "check_implementation",
    "choose_implementation",
    "gpu_visible",
    "is_float64",
    "traced",
]

IMPLEMENTATIONS = ("auto", "plain", "blockwise", "fused")

#: "auto" takes the blockwise path in a compiled call from this many keys on: two blocks of
#: the smallest default size (with one block, blocks cost more than they save).
AUTO_BLOCKWISE_KEYS = 2 * SMALLEST_DEFAULT_BLOCK


def check_implementation(implementation, allowed, dropout):
    """Raises a ValueError unless `implementation` is one of `allowed` and can apply `dropout`."""
    check_choice("implementation", implementation, allowed)
    if implementation in ("blockwise", "fused") and dropout > 0:
        raise ValueError(
            f"implementation={implementation!r} never forms the attention weights, so it cannot "
            f"apply dropout to them: use implementation='plain' or dropout=0. Received: "
            f"dropout={dropout}"
        )
    return implementation


def gpu_visible() -> bool:
    """Whether the backend has a GPU on which `keras.ops.dot_product_attention` is fused (JAX
    and PyTorch; TensorFlow has no fused kernel)."""
    backend = keras.backend.backend()
    if backend == "jax":
        import jax

        return any(device.platform == "gpu" for device in jax.devices())
    if backend == "torch":
        import torch

        return torch.cuda.is_available()
    return False


def traced(tensor) -> bool:
    """Whether `tensor` belongs to a computation being compiled (tf.function, XLA, jax.jit)
    rather than one running op by op."""
    backend = keras.backend.backend()
    if backend == "tensorflow":
        import tensorflow as tf

        return not tf.executing_eagerly()
    if backend == "jax":
        import jax

        return isinstance(tensor, jax.core.Tracer)
    return False


def choose_implementation(implementation, return_attention_scores, dropout_active, key=None):
    """The path one call takes: `"plain"`, `"blockwise"` or `"fused"`.

    An explicit choice is kept, except that `"fused"` on float64 inputs (`key`) takes the plain
    path: the backends' fused kernels compute in float32 (JAX's and PyTorch's return float32),
    and attnkit keeps float64 float64.

    `"auto"` is, when neither the weights nor dropout are asked for: the backend's fused kernel
    where it has one (JAX and PyTorch on a GPU, not in float64); else, in a compiled
    computation with at least `AUTO_BLOCKWISE_KEYS` keys, the blockwise path (faster than the
    plain path there, and it holds no Tq × Tk tensor: see the README's benchmarks); else the
    plain path (op by op, small blocks cost more than they save).

    Args:
        implementation: one of `IMPLEMENTATIONS`.
        return_attention_scores: bool, whether the call returns the weights (plain only).
        dropout_active: bool, whether dropout applies to the weights in this call.
        key: optional tensor `(B, Tk, ...)`, the keys (their number, dtype and whether they
            are traced decide "auto").
    """
    if implementation in ("blockwise", "fused") and return_attention_scores:
        raise ValueError(
            f"implementation={implementation!r} never forms the attention weights; ask for them "
            "with implementation='plain'. Received: return_attention_scores=True"
        )
    float64 = key is not None and is_float64(key)
    if implementation == "fused" and float64:
        return "plain"
    if implementation != "auto":
        return implementation
    if return_attention_scores or dropout_active:
        return "plain"
    if gpu_visible() and not float64:
        return "fused"
    num_keys = None if key is None else key.shape[1]
    if num_keys is not None and num_keys >= AUTO_BLOCKWISE_KEYS and traced(key):
        return "blockwise"
    return "plain"
