"""Attention with linear biases (ALiBi): Press et al. 2022, "Train Short, Test Long".

Instead of adding position information to the inputs, ALiBi adds to every attention score a
penalty proportional to the distance between the query and the key, with a different slope per
head; it has no weights and extrapolates to sequences longer than those seen in training.
"""

import math

import keras
from keras import ops

from attnkit.checks import check_bool, check_positive_int, check_positive_number

__all__ = ["AlibiBias", "alibi_slopes"]


def alibi_slopes(num_heads, max_bias=8.0):
    """The slopes m_1 … m_H of the ALiBi heads, as Python floats.

    For H a power of two, m_h = 2^(−max_bias · h / H), h = 1 … H (with max_bias = 8: 1/2,
    1/4, …, 1/256 for 8 heads). For other H, the slopes of the nearest smaller power of two P,
    followed by every other slope of 2P heads (the odd-numbered ones), H − P of them: the
    paper's recipe, which keeps the slopes spread geometrically.

    Args:
        num_heads: positive int H.
        max_bias: positive float, the exponent of the smallest slope (8 in the paper).

    Returns:
        A list of H floats.
    """
    check_positive_int("num_heads", num_heads)
    check_positive_number("max_bias", max_bias)

    def geometric(n):
        return [2.0 ** (-max_bias * h / n) for h in range(1, n + 1)]

    power = 2 ** int(math.floor(math.log2(num_heads)))
    if power == num_heads:
        return geometric(num_heads)
    return geometric(power) + geometric(2 * power)[0::2][: num_heads - power]


@keras.saving.register_keras_serializable(package="attnkit")
class AlibiBias(keras.layers.Layer):
    """Adds ALiBi's distance penalty to attention scores, one slope per head.

    s'[b, h, i, j] = s[b, h, i, j] − m_h · (p_i − j)            (causal, the paper's form)
    s'[b, h, i, j] = s[b, h, i, j] − m_h · |p_i − j|            (`bidirectional=True`)

    where p_i = `query_start` + i is the position of query i and j that of key j. In the
    causal form the bias of a key later than the query is positive: such keys are meant to be
    masked by a causal mask (within a row the bias is the paper's −m_h · (i − j) up to a
    constant, which the softmax ignores; keras-hub's `AlibiBias` adds m_h · (j − Tk + 1), the
    same up to a per-row constant). The slopes are `alibi_slopes(H, max_bias)`; the layer
    has no weights.

    Args:
        max_bias: positive float, the exponent of the smallest slope (8 in the paper).
        bidirectional: bool, whether the penalty is symmetric in the distance (for encoders).
            Defaults to `False`.
        **kwargs: base layer keyword arguments, such as `name` and `dtype`.

    Call arguments:
        scores: tensor of shape `(batch_size, num_heads, Tq, Tk)`, the attention scores.
        query_start: int or scalar integer tensor, the position of the first query (the
            decoding step when the keys are a cache). Defaults to 0.

    Returns:
        The biased scores, of the shape and dtype of `scores`.

    Source: Press, Smith and Lewis 2022, "Train Short, Test Long: Attention with Linear Biases
    Enables Input Length Extrapolation", section 3; the position information of NNDL 8.3.
    """

    def __init__(self, max_bias=8.0, bidirectional=False, **kwargs):
        super().__init__(**kwargs)
        self.max_bias = check_positive_number("max_bias", max_bias)
        self.bidirectional = check_bool("bidirectional", bidirectional)

    def _check_shape(self, scores_shape):
        scores_shape = tuple(scores_shape)
        if len(scores_shape) != 4 or scores_shape[1] is None:
            raise ValueError(
                "AlibiBias expects scores of shape (batch_size, num_heads, Tq, Tk) with a known "
                f"number of heads. Received: scores_shape={scores_shape}"
            )
        return scores_shape

    def build(self, scores_shape):
        self._check_shape(scores_shape)

    def bias(self, num_heads, query_length, key_length, query_start=0, dtype="float32"):
        """The bias of shape `(num_heads, Tq, Tk)` in `dtype`."""
        slopes = ops.convert_to_tensor(alibi_slopes(num_heads, self.max_bias), dtype=dtype)
        queries = ops.arange(query_length, dtype="int32") + ops.cast(query_start, "int32")
        distance = ops.cast(queries[:, None] - ops.arange(key_length, dtype="int32")[None], dtype)
        if self.bidirectional:
            distance = ops.abs(distance)
        return -slopes[:, None, None] * distance[None]

    def call(self, scores, query_start=0):
        self._check_shape(scores.shape)
        shape = ops.shape(scores)
        bias = self.bias(scores.shape[1], shape[2], shape[3], query_start, scores.dtype)
        return scores + bias[None]

    def compute_output_shape(self, scores_shape):
        return self._check_shape(scores_shape)

    def get_config(self):
        config = super().get_config()
        config.update({"max_bias": self.max_bias, "bidirectional": self.bidirectional})
        return config
