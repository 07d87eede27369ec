"""Cosine-similarity score with a sharpness β (NTM content-based addressing)."""

import keras
from keras import ops

from attnkit import precision
from attnkit.checks import check_positive_number
from attnkit.scoring.base import BaseScore, check_rank, work_dtype

#: Added to the squared norm before the square root: q / sqrt(Σ q² + EPSILON). It keeps the
#: score (and its gradient) of a zero vector at 0 instead of NaN. It does not depend on any
#: constructor argument.
EPSILON = 1e-12


def _normalize(x):
    return x * ops.rsqrt(ops.sum(ops.square(x), axis=-1, keepdims=True) + EPSILON)


@keras.saving.register_keras_serializable(package="attnkit")
class CosineScore(BaseScore):
    """Cosine-similarity attention score with a sharpness β (the NTM "key strength").

    s(q, k) = β · qᵀk / (‖q‖ ‖k‖), computed as β · q̂ᵀk̂ with
    x̂ = x / sqrt(Σ x² + ε), ε = `EPSILON` = 1e-12

    so that a zero query or key gives a score of 0 and a finite gradient instead of NaN.
    The norms are computed in float32 when the compute dtype is float16 or bfloat16 (a sum
    of squares overflows float16 quickly), and the scores are returned in the compute dtype.
    Cosine scores lie in [-β, β]: β controls how peaked the softmax over keys can be.

    Args:
        sharpness: how β is chosen. `None` (default): β = 1. A positive float: a fixed β.
            The string `"learned"`: β is a trainable scalar weight named `sharpness`,
            initialised to 1.
        **kwargs: base layer keyword arguments, such as `name` and `dtype`.

    Call arguments:
        query: tensor of shape `(batch_size, Tq, d)`.
        key: tensor of shape `(batch_size, Tk, d)`.
        sharpness: optional tensor of shape `(batch_size, Tq)` or `(batch_size, Tq, 1)`, a β
            per query (as the NTM controller emits one key strength per head and step). It
            replaces the layer's own β.

    Returns:
        Scores of shape `(batch_size, Tq, Tk)`.

    Source: Graves et al. 2014 (Neural Turing Machines), content-based addressing (§3.3.1).
    """

    def __init__(self, sharpness=None, **kwargs):
        super().__init__(**kwargs)
        if not (sharpness is None or (isinstance(sharpness, str) and sharpness == "learned")):
            sharpness = check_positive_number(
                "sharpness",
                sharpness,
                finite=False,
                what='None, a positive float or the string "learned"',
            )
        self.sharpness = sharpness

    def build(self, query_shape, key_shape):
        query_shape, key_shape = check_rank(query_shape, key_shape)
        d_q, d_k = query_shape[-1], key_shape[-1]
        if d_q is not None and d_k is not None and d_q != d_k:
            raise ValueError(
                "CosineScore needs queries and keys of the same size (d_q == d_k). "
                f"Received: query_shape={query_shape}, key_shape={key_shape}"
            )
        if self.sharpness == "learned":
            self.sharpness_weight = self.add_weight(name="sharpness", shape=(), initializer="ones")

    def call(self, query, key, sharpness=None):
        dtype = query.dtype
        compute = work_dtype(dtype)
        q = _normalize(ops.cast(query, compute))
        k = _normalize(ops.cast(key, compute))
        scores = precision.matmul(q, ops.swapaxes(k, -1, -2))
        if sharpness is not None:
            beta = ops.cast(sharpness, compute)
            rank = len(beta.shape)
            if rank == len(scores.shape) - 1:
                beta = ops.expand_dims(beta, -1)
            elif rank != len(scores.shape):
                raise ValueError(
                    "The `sharpness` call argument must have shape (batch_size, Tq) or "
                    f"(batch_size, Tq, 1). Received: sharpness with shape {tuple(beta.shape)}"
                )
            scores = scores * beta
        elif self.sharpness == "learned":
            scores = scores * ops.cast(self.sharpness_weight, compute)
        elif self.sharpness is not None:
            scores = scores * precision.constant(self.sharpness, compute)
        return ops.cast(scores, dtype)

    def get_config(self):
        config = super().get_config()
        config["sharpness"] = self.sharpness
        return config
