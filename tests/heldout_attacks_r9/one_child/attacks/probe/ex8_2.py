"""Exercise 8-2 — scoring functions, why the dot product is scaled, and bilinear asymmetry.

NNDL §8.2, equations (8.3)–(8.5). An attention score s(q, k) says how well a key k matches a
query q. You write two score layers and four small functions that explain their design.

Grade your work with `grader check 8-2`. The grader calls your code in float64 (and once in
float32), compares outputs AND gradients (w.r.t. the inputs and the kernel) with the reference,
and names the mistake when it recognises one. Shapes vary on purpose: batch 1 and several,
Tq != Tk, d_q != d_k, d = 1. Use `keras.ops` (or NumPy in the plain functions); keep the names
and signatures below.

Parts: ScaledDotScore 3, BilinearScore 3, the two variances 2, bilinear_asymmetry 1,
softmax_jacobian 1 — 10 points.
"""

import keras
from keras import ops


class ScaledDotScore(keras.layers.Layer):
    """Scaled dot-product score, NNDL (8.4): s(q, k) = qᵀk / √d.

    d is the size of the key (and query) vectors. Dividing by √d keeps the variance of the
    scores at the variance of one product term, whatever d is (see the variance functions).
    """

    def call(self, query, key):
        """query (B, Tq, d), key (B, Tk, d) -> scores (B, Tq, Tk) = q·k / sqrt(d).

        scores[b, i, j] = sum_n query[b, i, n] * key[b, j, n] / sqrt(d). The result keeps
        the dtype of the inputs (float32 in, float32 out).
        """
        depth = ops.shape(key)[-1]
        scores = ops.matmul(query, ops.transpose(key, (0, 2, 1)))
        return scores / ops.sqrt(ops.cast(depth, scores.dtype))


class BilinearScore(keras.layers.Layer):
    """Bilinear score, NNDL (8.5): s(q, k) = qᵀ W k with a learned matrix W.

    The book writes s(x, q) = xᵀ W q; that is the same family with W transposed. Unlike the
    dot product, query and key may have different sizes, W is (d_q, d_k).
    """

    def build(self, query_shape, key_shape):
        # Given: not part of the exercise. Keep the weight's name `kernel`.
        self.kernel = self.add_weight(name="kernel", shape=(query_shape[-1], key_shape[-1]))

    def call(self, query, key):
        """query (B, Tq, d_q), key (B, Tk, d_k) -> scores (B, Tq, Tk).

        scores[b, i, j] = query[b, i] @ kernel @ key[b, j], with kernel of shape (d_q, d_k).
        Gradients must reach the query, the key and the kernel.
        """
        projected = ops.matmul(query, self.kernel)
        return ops.matmul(projected, ops.transpose(key, (0, 2, 1)))


def dot_product_variance(d, var_q=1.0, var_k=1.0):
    """Variance of q·k for q, k with d independent zero-mean components of those variances.

    Each term q_n k_n has mean 0 and variance var_q * var_k; the d terms are independent.
    Return a Python float (or a 0-d array).
    """
    return float(d) * var_q * var_k


def scaled_dot_product_variance(d, var_q=1.0, var_k=1.0):
    """The same after dividing by sqrt(d): the variance of q·k / sqrt(d).

    Var(c X) = c² Var(X). This is why (8.4) divides by sqrt(d): the result no longer grows
    with d, so the softmax does not saturate for wide vectors.
    """
    return dot_product_variance(d, var_q, var_k) / float(d)


def bilinear_asymmetry(W):
    """The square matrix A with s(x, q) - s(q, x) = xᵀ A q for s(x, q) = xᵀ W q.

    W is a square (d, d) array. The bilinear score is symmetric exactly when A is zero, that
    is when W is symmetric. Return an array of shape (d, d).
    """
    W = ops.convert_to_tensor(W)
    return W - ops.transpose(W)


def softmax_jacobian(scores):
    """scores (..., n) -> Jacobian of softmax (..., n, n) = diag(p) - p pᵀ.

    p = softmax(scores) over the last axis; J[..., i, j] = d p_i / d s_j. Leading axes are
    batch axes. Large scores (a thousand) must not overflow: use a stable softmax.
    """
    probs = ops.softmax(ops.convert_to_tensor(scores), axis=-1)
    size = ops.shape(probs)[-1]
    diagonal = probs[..., :, None] * ops.eye(size, dtype=probs.dtype)
    return diagonal - probs[..., :, None] * probs[..., None, :]
