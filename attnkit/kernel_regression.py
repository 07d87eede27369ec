"""Nadaraya-Watson kernel regression as attention pooling: the slides' first attention model.

The test inputs are the queries, the training inputs x_i are the keys and the training
outputs y_i are the values: f(x) = Σ_i α(x, x_i) y_i with α a normalised kernel.

Source: slides "注意力池化" (Nadaraya 1964, Watson 1964); d2l "attention pooling".
"""

import keras
from keras import ops

from attnkit import precision
from attnkit.attention import masking
from attnkit.checks import check_choice, check_positive_number, get_initializer
from attnkit.scoring.base import work_dtype

__all__ = ["KERNELS", "NadarayaWatson", "ParametricNadarayaWatson"]

#: The kernels `NadarayaWatson` accepts.
KERNELS = ("gaussian", "boxcar", "epanechnikov")


def _shape_tuple(shape, name):
    if shape is None:
        raise ValueError(f"`{name}` must be a shape tuple. Received: {name}={shape}")
    return tuple(shape)


def _check_inputs(query_shape, key_shape, value_shape):
    """Validates the three input shapes; returns them as tuples."""
    query_shape = _shape_tuple(query_shape, "query_shape")
    key_shape = _shape_tuple(key_shape, "key_shape")
    value_shape = _shape_tuple(value_shape, "value_shape")
    for name, shape in (("query", query_shape), ("key", key_shape)):
        if len(shape) not in (2, 3) or (len(shape) == 3 and shape[-1] not in (1, None)):
            raise ValueError(
                f"`{name}` must hold scalars, with shape (batch_size, T) or (batch_size, T, 1). "
                f"Received: {name}_shape={shape}"
            )
    if len(value_shape) not in (2, 3):
        raise ValueError(
            "`value` must have shape (batch_size, Tk) or (batch_size, Tk, d). "
            f"Received: value_shape={value_shape}"
        )
    t_k, t_v = key_shape[1], value_shape[1]
    if t_k is not None and t_v is not None and t_k != t_v:
        raise ValueError(
            "`key` and `value` must have the same number of positions Tk. "
            f"Received: key_shape={key_shape}, value_shape={value_shape}"
        )
    return query_shape, key_shape, value_shape


def _scalars(x, dtype):
    """(B, T) or (B, T, 1) -> (B, T) in `dtype`."""
    x = ops.cast(x, dtype)
    if len(x.shape) == 3:
        x = ops.squeeze(x, -1)
    return x


class _KernelRegression(keras.layers.Layer):
    """Shared call plumbing of the two Nadaraya-Watson layers (not registered, not exported).

    Subclasses implement `_scores(diff)`, returning `(scores, support)`: the log-kernel
    log K(x - x_i) up to a constant, and an optional boolean mask of the kernel's support.
    """

    def build(self, query_shape, key_shape, value_shape):
        _check_inputs(query_shape, key_shape, value_shape)

    def _scores(self, diff):
        raise NotImplementedError

    def call(
        self,
        query,
        key,
        value,
        query_mask=None,
        key_mask=None,
        key_lengths=None,
        attention_mask=None,
        return_attention_scores=False,
    ):
        dtype = work_dtype(self.compute_dtype)
        x = _scalars(query, dtype)  # (B, Tq)
        x_i = _scalars(key, dtype)  # (B, Tk)
        diff = ops.expand_dims(x, -1) - ops.expand_dims(x_i, -2)  # (B, Tq, Tk)
        scores, support = self._scores(diff)
        masks = masking.Masks(query_mask, key_mask, key_lengths, attention_mask)
        mask = masks.keep(ops.expand_dims(x, -1), ops.expand_dims(x_i, -1))
        # The kernel's support (compact kernels) is one more mask on the same path.
        mask = masking.combine_masks(mask, support)
        weights = ops.cast(masking.masked_softmax(scores, mask), self.compute_dtype)
        value = ops.cast(value, self.compute_dtype)
        if len(value.shape) == 2:
            output = ops.squeeze(precision.matmul(weights, ops.expand_dims(value, -1)), -1)
        else:
            output = precision.matmul(weights, value)
        if return_attention_scores:
            return output, weights
        return output

    def compute_mask(self, query, *args, **kwargs):
        return None

    def compute_output_shape(self, query_shape, key_shape, value_shape):
        query_shape, key_shape, value_shape = _check_inputs(query_shape, key_shape, value_shape)
        return (*query_shape[:2], *value_shape[2:])

    def compute_output_spec(
        self,
        query,
        key,
        value,
        query_mask=None,
        key_mask=None,
        key_lengths=None,
        attention_mask=None,
        return_attention_scores=False,
    ):
        output = keras.KerasTensor(
            self.compute_output_shape(query.shape, key.shape, value.shape),
            dtype=self.compute_dtype,
        )
        if return_attention_scores:
            weights = keras.KerasTensor(
                (*tuple(query.shape)[:2], tuple(key.shape)[1]), dtype=self.compute_dtype
            )
            return output, weights
        return output


@keras.saving.register_keras_serializable(package="attnkit")
class NadarayaWatson(_KernelRegression):
    """Nadaraya-Watson kernel regression: non-parametric attention pooling.

    f(x) = Σ_i K((x - x_i)/h) y_i / Σ_j K((x - x_j)/h) = Σ_i α(x, x_i) y_i

    The kernels (their normalising constants cancel in the ratio), with u = (x - x_i)/h:

    - `"gaussian"`: K(u) ∝ exp(-u²/2), so α = softmax_i(-(x - x_i)²/2h²);
    - `"boxcar"`: K(u) ∝ 1 for |u| ≤ 1, else 0: the mean of the y_i within distance h;
    - `"epanechnikov"`: K(u) ∝ 1 - u² for |u| < 1, else 0, computed as
      softmax_i(log(1 - u²)) over the points inside the support.

    Boxcar and Epanechnikov kernels have compact support: training points farther than h
    from the query get exactly zero weight, and a query with no training point within h gets
    all-zero weights and the prediction 0 (not NaN; the true estimator is undefined there).
    The layer has no weights. Scores and the softmax are computed in float32 under mixed
    precision, through `attnkit.attention.masking.masked_softmax`.

    Args:
        kernel: one of `"gaussian"` (default), `"boxcar"`, `"epanechnikov"`.
        bandwidth: positive float h, the kernel width. Defaults to 1.0.
        **kwargs: base layer keyword arguments, such as `name` and `dtype`.

    Call arguments:
        query: the query inputs x, a tensor of shape `(batch_size, Tq)` or
            `(batch_size, Tq, 1)` (scalar inputs only).
        key: the training inputs x_i, a tensor of shape `(batch_size, Tk)` or
            `(batch_size, Tk, 1)`.
        value: the training outputs y_i, a tensor of shape `(batch_size, Tk)` (scalar
            outputs) or `(batch_size, Tk, d)` (vector outputs).
        query_mask: optional boolean tensor `(batch_size, Tq)`; `False` rows get zero weights.
        key_mask: optional boolean tensor `(batch_size, Tk)`, `False` for training points to
            ignore. Filled in from a Keras mask carried by `key`.
        key_lengths: optional integer tensor `(batch_size,)`, the number of valid training
            points of each example.
        attention_mask: optional boolean tensor `(batch_size, Tq, Tk)` or `(Tq, Tk)`, e.g.
            `~eye` to leave each training point out of its own prediction.
        return_attention_scores: bool, whether to also return the weights α.

    Returns:
        The predictions f(x): shape `(batch_size, Tq)` for values `(batch_size, Tk)`, or
        `(batch_size, Tq, d)` for values `(batch_size, Tk, d)`. When
        `return_attention_scores=True`, also the weights α of shape `(batch_size, Tq, Tk)`.
        A query with no training point left (all masked, or none inside a compact kernel's
        support) gets all-zero weights and the prediction 0, never NaN.

    Source: slides "Nadaraya-Watson 核回归" (Nadaraya 1964; Watson 1964), the Gaussian kernel
    and its softmax form; d2l "attention pooling: Nadaraya-Watson kernel regression".
    """

    def __init__(self, kernel="gaussian", bandwidth=1.0, **kwargs):
        super().__init__(**kwargs)
        self.kernel = check_choice("kernel", kernel, KERNELS)
        self.bandwidth = check_positive_number("bandwidth", bandwidth)

    def _scores(self, diff):
        u = diff / precision.constant(self.bandwidth, diff.dtype)
        u2 = ops.square(u)
        if self.kernel == "gaussian":
            return -0.5 * u2, None
        if self.kernel == "boxcar":
            return ops.zeros_like(u2), ops.less_equal(u2, 1.0)
        support = ops.less(u2, 1.0)
        one_minus = ops.where(support, 1.0 - u2, ops.ones_like(u2))
        return ops.log(one_minus), support

    def get_config(self):
        config = super().get_config()
        config.update({"kernel": self.kernel, "bandwidth": self.bandwidth})
        return config


@keras.saving.register_keras_serializable(package="attnkit")
class ParametricNadarayaWatson(_KernelRegression):
    """Nadaraya-Watson regression with a learnable width: parametric attention pooling.

    f(x) = Σ_i softmax_i(-½((x - x_i) w)²) y_i

    A Gaussian kernel whose inverse bandwidth w = 1/h is a trainable scalar weight named `w`.
    Trained on the training set itself, each training point must be left out of its own
    prediction (pass `attention_mask=~eye`), or w grows without bound and f interpolates
    the noise. Scores and the softmax are computed in float32 under mixed precision.

    Args:
        w_initializer: initializer of the scalar `w`. Defaults to `"ones"` (the Gaussian
            `NadarayaWatson` with bandwidth 1).
        **kwargs: base layer keyword arguments, such as `name` and `dtype`.

    Call arguments:
        query: the query inputs x, a tensor of shape `(batch_size, Tq)` or
            `(batch_size, Tq, 1)` (scalar inputs only).
        key: the training inputs x_i, a tensor of shape `(batch_size, Tk)` or
            `(batch_size, Tk, 1)`.
        value: the training outputs y_i, a tensor of shape `(batch_size, Tk)` (scalar
            outputs) or `(batch_size, Tk, d)` (vector outputs).
        query_mask: optional boolean tensor `(batch_size, Tq)`; `False` rows get zero weights.
        key_mask: optional boolean tensor `(batch_size, Tk)`, `False` for training points to
            ignore. Filled in from a Keras mask carried by `key`.
        key_lengths: optional integer tensor `(batch_size,)`, the number of valid training
            points of each example.
        attention_mask: optional boolean tensor `(batch_size, Tq, Tk)` or `(Tq, Tk)`, e.g.
            `~eye` to leave each training point out of its own prediction.
        return_attention_scores: bool, whether to also return the weights α.

    Returns:
        The predictions f(x): shape `(batch_size, Tq)` for values `(batch_size, Tk)`, or
        `(batch_size, Tq, d)` for values `(batch_size, Tk, d)`. When
        `return_attention_scores=True`, also the weights α of shape `(batch_size, Tq, Tk)`.
        A query with no training point left (all masked, or none inside a compact kernel's
        support) gets all-zero weights and the prediction 0, never NaN.

    Source: slides "带参数注意力池化" (parametric attention pooling); d2l "parametric attention
    pooling".
    """

    def __init__(self, w_initializer="ones", **kwargs):
        super().__init__(**kwargs)
        self.w_initializer = get_initializer("w_initializer", w_initializer)

    def build(self, query_shape, key_shape, value_shape):
        _check_inputs(query_shape, key_shape, value_shape)
        self.w = self.add_weight(name="w", shape=(), initializer=self.w_initializer)

    def _scores(self, diff):
        return -0.5 * ops.square(diff * ops.cast(self.w, diff.dtype)), None

    def get_config(self):
        config = super().get_config()
        config["w_initializer"] = keras.initializers.serialize(self.w_initializer)
        return config
