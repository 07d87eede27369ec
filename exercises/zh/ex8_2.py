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
    """缩放点积打分函数，NNDL (8.4)：s(q, k) = qᵀk / √d。

    d 是键（和查询）向量的维数。除以 √d 使打分的方差保持为单个乘积项的方差，与 d 无关（见两
    个方差函数）。
    """

    def call(self, query, key):
        """query (B, Tq, d), key (B, Tk, d) -> scores (B, Tq, Tk) = q·k / sqrt(d)。

        scores[b, i, j] = sum_n query[b, i, n] * key[b, j, n] / sqrt(d)。结果保持输入的 dtype
        （输入 float32，输出也是 float32）。
        """
        raise NotImplementedError("练习 8-2：查询乘以转置后的键，再除以 sqrt(d)")


class BilinearScore(keras.layers.Layer):
    """双线性打分函数，NNDL (8.5)：s(q, k) = qᵀ W k，其中 W 是可学习的矩阵。

    书中写作 s(x, q) = xᵀ W q；这是同一族函数，只是 W 转置了。与点积不同，查询和键的维数可以
    不同，W 的形状为 (d_q, d_k)。
    """

    def build(self, query_shape, key_shape):
        # 已给出：不属于练习。保持权重的名称 `kernel` 不变。
        self.kernel = self.add_weight(name="kernel", shape=(query_shape[-1], key_shape[-1]))

    def call(self, query, key):
        """query (B, Tq, d_q), key (B, Tk, d_k) -> scores (B, Tq, Tk)。

        scores[b, i, j] = query[b, i] @ kernel @ key[b, j]，其中 kernel 的形状为 (d_q, d_k)。梯
        度必须传到查询、键和 kernel。
        """
        raise NotImplementedError("练习 8-2：用 kernel 投影查询，再与键做点积")


def dot_product_variance(d, var_q=1.0, var_k=1.0):
    """当 q、k 各有 d 个独立、零均值、具有给定方差的分量时，q·k 的方差。

    每一项 q_n k_n 的均值为 0，方差为 var_q * var_k；这 d 项相互独立。返回一个 Python float
    （或 0 维数组）。
    """
    raise NotImplementedError("练习 8-2：把 d 个独立乘积的方差加起来")


def scaled_dot_product_variance(d, var_q=1.0, var_k=1.0):
    """同上，但除以 sqrt(d) 之后：q·k / sqrt(d) 的方差。

    Var(c X) = c² Var(X)。这就是 (8.4) 除以 sqrt(d) 的原因：结果不再随 d 增长，所以对维数很
    高的向量 softmax 也不会饱和。
    """
    raise NotImplementedError("练习 8-2：除以常数 c 会让方差发生什么变化？")


def bilinear_asymmetry(W):
    """方阵 A，使 s(x, q) - s(q, x) = xᵀ A q，其中 s(x, q) = xᵀ W q。

    W 是形状为 (d, d) 的方阵。双线性打分函数对称当且仅当 A 为零，也就是 W 对称。返回形状为
    (d, d) 的数组。
    """
    raise NotImplementedError("练习 8-2：把 s(q, x) 写成 xᵀ (某个矩阵) q，再相减")


def softmax_jacobian(scores):
    """scores (..., n) -> softmax 的雅可比矩阵 (..., n, n) = diag(p) - p pᵀ。

    p = softmax(scores)，沿最后一个轴计算；J[..., i, j] = d p_i / d s_j。前面的轴都是批次
    轴。很大的打分（上千）不能溢出：使用数值稳定的 softmax。
    """
    raise NotImplementedError("练习 8-2：数值稳定的 softmax，然后 diag(p) 减去 p 与自身的外积")
