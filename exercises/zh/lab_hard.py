"""实验：硬性注意力——只选一个输入而不是求平均，并且照样能训练。

NNDL 8.2.1.1，公式 (8.8)；Xu 等人 2015（随机硬性注意力）；Bengio 等人 2013（直通估计器）。软性注意力
返回 Σ_j α_j v_j。硬性注意力返回一个值 v_ĵ：或者是注意力最大的那个，ĵ = argmax_j α_j (8.8)，或者按
概率 α 随机抽取一个。

为了确定性地采样（以便评分程序检查），均匀随机数 u ∈ [0, 1) 由外部给你，你用累积分布的逆来采样：
ĵ = 满足 c_{j-1} <= u < c_j 的 j，其中 c_j = α_0 + ... + α_j（c_{-1} = 0）。权重为零的键永远不会被
抽中；P(ĵ = j) = c_j - c_{j-1} = α_j。

单纯的硬性注意力没有有用的梯度：v_ĵ 只通过下标 ĵ 依赖打分，而这是一个分段常数函数，在导数存在的地方
导数都为零。直通估计器在前向中保留硬选择，在反向中使用软性注意力的梯度：
w = e_ĵ + (α - stop_gradient(α))，output = Σ_j w_j v_j。数值上 w = e_ĵ；它的导数是 α 的导数。

用 `grader check hard` 为你的作业评分。这些函数以 NumPy float64 数组调用；下标可以以任何整数（或浮点）
数组返回。这个层以 float64（以及一次 float32）调用，它的输出和梯度（关于打分和值）都与参考答案比较。
保持下面的名称和签名不变。

各部分：argmax 2，sampling 3，straight_through 3——共 8 分。
"""

import keras
from keras import ops


def hard_indices(scores):
    """The most attended key of each query, (8.8): scores (B, Tq, Tk) -> int (B, Tq).

    indices[b, i] = argmax_j scores[b, i, j]; on a tie, the first (smallest) j. The softmax
    is monotonic, so the argmax of the scores is the argmax of the weights α.
    """
    raise NotImplementedError("练习 hard：在键（最后一个轴）上取 argmax")


def hard_select(scores, value):
    """Hard attention's output: scores (B, Tq, Tk), value (B, Tk, d_v) -> (B, Tq, d_v).

    out[b, i] = value[b, hard_indices(scores)[b, i]]: one value vector per query, copied
    exactly (not averaged). Hint: a one-hot matrix of the indices times the values, or
    `ops.take_along_axis`.
    """
    raise NotImplementedError("练习 hard：被选下标的 one-hot (B, Tq, Tk)，乘以值")


def sample_indices(weights, noise):
    """Inverse-CDF sampling of one key per query: weights (B, Tq, Tk), noise (B, Tq) -> int.

    weights[b, i] is a probability vector α (non-negative, sums to one, may hold zeros).
    noise[b, i] = u in [0, 1). Return ĵ with c_{ĵ-1} <= u < c_ĵ, c = cumsum(α) over the keys:
    the number of j with c_j <= u. Clip to Tk - 1 in case rounding leaves c_{Tk-1} just
    below one. The grader's u include exact boundaries c_j (u = c_j picks the next key with
    positive weight) and u = 0. Never return a key of zero weight.
    """
    raise NotImplementedError("练习 hard：在键上求累积和，数 c_j <= u 的个数，截断到 Tk - 1")


class StraightThroughHardAttention(keras.layers.Layer):
    """Hard attention (argmax) with straight-through gradients for the scores."""

    def call(self, scores, value):
        """scores (B, Tq, Tk), value (B, Tk, d_v) -> (B, Tq, d_v).

        Forward: exactly hard_select(scores, value). Backward: the gradient with respect to
        the scores is that of soft attention softmax(scores) @ value; the gradient with
        respect to the values is that of the hard selection. Use w = e_ĵ + α - stop_gradient(α)
        (or α + stop_gradient(e_ĵ - α)), with α = softmax(scores) over the keys.
        """
        raise NotImplementedError("练习 hard：保留硬性 one-hot 的值；哪一项能把软性 α 的梯度借给它？")
