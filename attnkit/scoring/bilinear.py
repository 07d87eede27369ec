"""Bilinear ("general") score: NNDL (8.5)."""

import keras
from keras import ops

from attnkit import precision
from attnkit.checks import get_initializer
from attnkit.scoring.base import BaseScore, check_rank


@keras.saving.register_keras_serializable(package="attnkit")
class BilinearScore(BaseScore):
    """Bilinear attention score (Luong's "general").

    s(q, k) = qᵀ W k, with a learned `kernel` W of shape `(d_q, d_k)`.

    Queries and keys may differ in size. The book writes the same family as
    s(x, q) = xᵀ W q (input first, query second), which is this score with W transposed.
    Writing W = UᵀV gives s = (U q)ᵀ (V k): a dot product after two different projections.
    The score is asymmetric, s(a, b) ≠ s(b, a), unless W is symmetric.

    Args:
        kernel_initializer: initializer of `kernel`. Defaults to `"glorot_uniform"`.
        **kwargs: base layer keyword arguments, such as `name` and `dtype`.

    Call arguments:
        query: tensor of shape `(batch_size, Tq, d_q)`.
        key: tensor of shape `(batch_size, Tk, d_k)`.

    Returns:
        Scores of shape `(batch_size, Tq, Tk)`.

    Source: NNDL (8.5); Luong et al. 2015, "general".
    """

    def __init__(self, kernel_initializer="glorot_uniform", **kwargs):
        super().__init__(**kwargs)
        self.kernel_initializer = get_initializer("kernel_initializer", kernel_initializer)

    def build(self, query_shape, key_shape):
        query_shape, key_shape = check_rank(query_shape, key_shape)
        self.kernel = self.add_weight(
            name="kernel",
            shape=(query_shape[-1], key_shape[-1]),
            initializer=self.kernel_initializer,
        )

    def call(self, query, key):
        projected = precision.matmul(query, ops.cast(self.kernel, query.dtype))
        return precision.matmul(projected, ops.swapaxes(key, -1, -2))

    def get_config(self):
        config = super().get_config()
        config["kernel_initializer"] = keras.initializers.serialize(self.kernel_initializer)
        return config
