"""Lab: Nadaraya–Watson kernel regression — attention pooling with a kernel.

Slides "注意力池化" (Nadaraya 1964, Watson 1964); d2l "attention pooling". Given training pairs
(x_j, y_j), the prediction at a query x is a weighted average of the y_j:

    f(x) = Σ_j K((x - x_j) / h) y_j / Σ_k K((x - x_k) / h) = Σ_j α(x, x_j) y_j

This is attention pooling: x is the query, the x_j are the keys, the y_j are the values and the
normalised kernel α(x, x_j) is the attention weight. With the Gaussian kernel
K(u) ∝ exp(-u²/2) the weights are a softmax: α(x, x_j) = softmax_j(-(x - x_j)² / (2 h²)).
The kernel's constant factor 1/√(2π) cancels in the ratio. No parameter is learned: the model
is non-parametric. Then you make it parametric with one learned weight w.

Grade your work with `grader check nw`. The plain functions are called with NumPy float64
arrays (return NumPy arrays or tensors); the layer is called in float64 (and once in float32)
and its outputs AND gradients (w.r.t. the queries, keys, values and the weight `w`) are
compared with the reference. Shapes vary: one query, one training point, m != n. Keep the names
and signatures below.

Parts: gaussian_weights 2, nadaraya_watson 3, ParametricNadarayaWatson 4 — 9 points.
"""

import keras
from keras import ops


def gaussian_weights(queries, keys, bandwidth=1.0):
    """Attention weights of Gaussian kernel regression, (m,) and (n,) -> (m, n).

    alpha[i, j] = exp(-(x_i - x_j)² / (2 h²)) / Σ_k exp(-(x_i - x_k)² / (2 h²)), that is
    a softmax over the keys (the last axis) of -(x_i - x_j)² / (2 h²).

    queries: the query points x_i, shape (m,). keys: the training inputs x_j, shape (n,).
    bandwidth: h > 0, the kernel width. Every row sums to one. The grader also asks for
    queries far from every key with a small h (scores of minus tens of thousands), where
    exp() underflows to 0 for every key: use a numerically stable softmax.
    """
    queries = ops.convert_to_tensor(queries)
    keys = ops.cast(keys, queries.dtype)
    differences = ops.expand_dims(queries, -1) - ops.expand_dims(keys, 0)
    return ops.softmax(-ops.square(differences) / bandwidth**2, axis=-1)


def nadaraya_watson(queries, keys, values, kernel="gaussian", bandwidth=1.0):
    """Nadaraya–Watson predictions f(x_i) = Σ_j K(u_ij) y_j / Σ_k K(u_ik), (m,) -> (m,).

    u_ij = (x_i - x_j) / h. The kernels (constant factors cancel in the ratio):

    - "gaussian": K(u) = exp(-u²/2) (the weights of `gaussian_weights`);
    - "boxcar": K(u) = 1 where |u| <= 1, else 0 (the mean of the y_j within distance h,
      a training point at distance exactly h included);
    - "epanechnikov": K(u) = 1 - u² where |u| < 1, else 0 (never negative).

    queries (m,), keys (n,), values (n,): the query points, the training inputs x_j and the
    training outputs y_j. A query with no training point inside a compact kernel's support
    (every K = 0) is predicted as 0, not NaN. Returns shape (m,). Raise ValueError for a
    kernel other than these three (names are case-sensitive).
    """
    queries = ops.convert_to_tensor(queries)
    keys = ops.cast(keys, queries.dtype)
    values = ops.cast(values, queries.dtype)
    if kernel == "gaussian":
        weights = gaussian_weights(queries, keys, bandwidth)
    else:
        u = (ops.expand_dims(queries, -1) - ops.expand_dims(keys, 0)) / bandwidth
        if kernel == "boxcar":
            k = ops.cast(ops.abs(u) <= 1.0, u.dtype)
        elif kernel == "epanechnikov":
            k = ops.maximum(1.0 - ops.square(u), 0.0)
        else:
            raise ValueError(f"unknown kernel {kernel!r}")
        total = ops.sum(k, axis=-1, keepdims=True)
        weights = k / ops.where(total > 0, total, ops.ones_like(total))
    return ops.sum(weights * ops.expand_dims(values, 0), axis=-1)


class ParametricNadarayaWatson(keras.layers.Layer):
    """Nadaraya–Watson regression with one learned weight w (slides "带参数注意力池化").

    f(x_i) = Σ_j softmax_j(-½ ((x_i - x_j) w)²) y_j

    w plays the part of 1/h: a large w makes a narrow kernel. Training it by gradient descent
    needs gradients with respect to w, which Keras computes from your `call`.
    """

    def build(self, queries_shape, keys_shape, values_shape):
        # Given: not part of the exercise. Keep the weight's name `w` (a scalar).
        self.w = self.add_weight(name="w", shape=(), initializer="ones")

    def call(self, queries, keys, values):
        """queries (B, m), keys (B, n), values (B, n) -> predictions (B, m).

        Example b has its own training set keys[b], values[b]. out[b, i] =
        Σ_j softmax_j(-½ ((queries[b, i] - keys[b, j]) * w)²) values[b, j], the softmax over
        the keys j. Gradients must reach the queries, keys, values and w; keep the dtype of
        the inputs (float32 in, float32 out).
        """
        differences = ops.expand_dims(queries, -1) - ops.expand_dims(keys, -2)
        scores = -0.5 * ops.square(differences * self.w)
        weights = ops.softmax(scores, axis=-1)
        return ops.sum(weights * ops.expand_dims(values, -2), axis=-1)
