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
    """每个查询注意力最大的键，(8.8)：scores (B, Tq, Tk) -> int (B, Tq)。

    indices[b, i] = argmax_j scores[b, i, j]；相等时取第一个（最小的）j。softmax 是单调的，
    所以打分的 argmax 就是权重 α 的 argmax。
    """
    raise NotImplementedError("练习 hard：在键（最后一个轴）上取 argmax")


def hard_select(scores, value):
    """硬性注意力的输出：scores (B, Tq, Tk), value (B, Tk, d_v) -> (B, Tq, d_v)。

    out[b, i] = value[b, hard_indices(scores)[b, i]]：每个查询一个值向量，原样复制（不是平
    均）。提示：用下标的 one-hot 矩阵乘以值，或者用 `ops.take_along_axis`。
    """
    raise NotImplementedError("练习 hard：被选下标的 one-hot (B, Tq, Tk)，乘以值")


def sample_indices(weights, noise):
    """用逆 CDF 为每个查询采样一个键：weights (B, Tq, Tk), noise (B, Tq) -> int。

    weights[b, i] 是一个概率向量 α（非负，和为一，可能含有零）。noise[b, i] = u，在 [0, 1)
    内。返回满足 c_{ĵ-1} <= u < c_ĵ 的 ĵ，其中 c = cumsum(α)，沿键计算：即满足 c_j <= u 的 j
    的个数。为防舍入使 c_{Tk-1} 略小于一，把结果截断到 Tk - 1。评分程序的 u 包括恰好落在边界
    上的 c_j（u = c_j 选中下一个权重为正的键）以及 u = 0。绝不返回权重为零的键。
    """
    raise NotImplementedError("练习 hard：在键上求累积和，数 c_j <= u 的个数，截断到 Tk - 1")


class StraightThroughHardAttention(keras.layers.Layer):
    """硬性注意力（argmax），打分的梯度用直通估计器。"""

    def call(self, scores, value):
        """scores (B, Tq, Tk), value (B, Tk, d_v) -> (B, Tq, d_v)。

        前向：恰好是 hard_select(scores, value)。反向：关于打分的梯度是软性注意力 softmax(scores)
        @ value 的梯度；关于值的梯度是硬选择的梯度。使用 w = e_ĵ + α - stop_gradient(α)（或 α +
        stop_gradient(e_ĵ - α)），其中 α = softmax(scores)，沿键计算。
        """
        raise NotImplementedError("练习 hard：保留硬性 one-hot 的值；哪一项能把软性 α 的梯度借给它？")
