"""Location-based score (Luong et al. 2015): depends on the query only."""

import keras
from keras import ops

from attnkit import precision
from attnkit.checks import check_positive_int, get_initializer
from attnkit.scoring.base import BaseScore, check_rank


@keras.saving.register_keras_serializable(package="attnkit")
class LocationScore(BaseScore):
    """Location-based attention score (Luong's "location").

    s(q, ·) = W_aᵀ q, i.e. `scores = query @ kernel`, keeping the first Tk of `max_keys`.

    The score of key position j depends on the query and on j only, not on the key's content:
    `key` only tells how many positions there are. The `kernel` W_a has shape
    `(d_q, max_keys)`; the scores of the first Tk ≤ `max_keys` positions are kept, and padded
    positions must be masked by the attention layer (e.g. with `key_lengths`).

    Args:
        max_keys: positive int, the largest number of keys (source positions) supported.
        kernel_initializer: initializer of `kernel`. Defaults to `"glorot_uniform"`.
        **kwargs: base layer keyword arguments, such as `name` and `dtype`.

    Call arguments:
        query: tensor of shape `(batch_size, Tq, d_q)`.
        key: tensor of shape `(batch_size, Tk, d_k)` with Tk ≤ `max_keys`; only its length
            is used.

    Returns:
        Scores of shape `(batch_size, Tq, Tk)`.

    Source: Luong et al. 2015, "location" (a_t = softmax(W_a h_t)), §3.1.
    """

    def __init__(self, max_keys, kernel_initializer="glorot_uniform", **kwargs):
        super().__init__(**kwargs)
        check_positive_int("max_keys", max_keys)
        self.max_keys = max_keys
        self.kernel_initializer = get_initializer("kernel_initializer", kernel_initializer)

    def _check_length(self, key_shape):
        key_length = key_shape[-2]
        if key_length is not None and key_length > self.max_keys:
            raise ValueError(
                f"LocationScore got more keys than `max_keys`={self.max_keys}. "
                f"Received: key_shape={tuple(key_shape)}"
            )

    def build(self, query_shape, key_shape):
        query_shape, key_shape = check_rank(query_shape, key_shape)
        self._check_length(key_shape)
        self.kernel = self.add_weight(
            name="kernel",
            shape=(query_shape[-1], self.max_keys),
            initializer=self.kernel_initializer,
        )

    def compute_output_shape(self, query_shape, key_shape):
        self._check_length(tuple(key_shape))
        return super().compute_output_shape(query_shape, key_shape)

    def call(self, query, key):
        self._check_length(key.shape)
        scores = precision.matmul(query, ops.cast(self.kernel, query.dtype))
        return scores[..., : ops.shape(key)[-2]]

    def get_config(self):
        config = super().get_config()
        config.update(
            {
                "max_keys": self.max_keys,
                "kernel_initializer": keras.initializers.serialize(self.kernel_initializer),
            }
        )
        return config
