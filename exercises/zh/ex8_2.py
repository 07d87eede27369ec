"""练习 8-2——打分函数、点积为什么要缩放，以及双线性模型的不对称性。

NNDL §8.2，公式 (8.3)–(8.5)。注意力打分函数 s(q, k) 衡量键 k 与查询 q 的匹配程度。你要写两个打分层，
以及四个解释其设计的小函数。

用 `grader check 8-2` 为你的作业评分。评分程序以 float64（以及一次 float32）调用你的代码，把输出
和梯度（关于输入和 kernel）都与参考答案比较，识别出已知错误时会指出它。形状是有意变化的：批量为 1
和多个、Tq != Tk、d_q != d_k、d = 1。请使用 `keras.ops`（普通函数中也可用 NumPy）；保持下面的
名称和签名不变。

各部分：ScaledDotScore 3，BilinearScore 3，两个方差函数 2，bilinear_asymmetry 1，
softmax_jacobian 1——共 10 分。
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
        raise NotImplementedError("练习 8-2：查询乘以转置后的键，再除以 sqrt(d)")


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
        raise NotImplementedError("练习 8-2：用 kernel 投影查询，再与键做点积")


def dot_product_variance(d, var_q=1.0, var_k=1.0):
    """Variance of q·k for q, k with d independent zero-mean components of those variances.

    Each term q_n k_n has mean 0 and variance var_q * var_k; the d terms are independent.
    Return a Python float (or a 0-d array).
    """
    raise NotImplementedError("练习 8-2：把 d 个独立乘积的方差加起来")


def scaled_dot_product_variance(d, var_q=1.0, var_k=1.0):
    """The same after dividing by sqrt(d): the variance of q·k / sqrt(d).

    Var(c X) = c² Var(X). This is why (8.4) divides by sqrt(d): the result no longer grows
    with d, so the softmax does not saturate for wide vectors.
    """
    raise NotImplementedError("练习 8-2：除以常数 c 会让方差发生什么变化？")


def bilinear_asymmetry(W):
    """The square matrix A with s(x, q) - s(q, x) = xᵀ A q for s(x, q) = xᵀ W q.

    W is a square (d, d) array. The bilinear score is symmetric exactly when A is zero, that
    is when W is symmetric. Return an array of shape (d, d).
    """
    raise NotImplementedError("练习 8-2：把 s(q, x) 写成 xᵀ (某个矩阵) q，再相减")


def softmax_jacobian(scores):
    """scores (..., n) -> Jacobian of softmax (..., n, n) = diag(p) - p pᵀ.

    p = softmax(scores) over the last axis; J[..., i, j] = d p_i / d s_j. Leading axes are
    batch axes. Large scores (a thousand) must not overflow: use a stable softmax.
    """
    raise NotImplementedError("练习 8-2：数值稳定的 softmax，然后 diag(p) 减去 p 与自身的外积")
