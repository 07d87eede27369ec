"""实验：现代 Hopfield 网络——状态的一次更新就是一步注意力。

NNDL 8.6（作为联想记忆的 Hopfield 网络）；Ramsauer 等人 2020，“Hopfield Networks is All You Need”，
公式 (3)。现代（连续）Hopfield 网络把 N 个大小为 d 的模式 x_1, ..., x_N 存为 X (d, N) 的各列。状态 ξ
（一个查询，例如被破坏的模式）按下式更新：

    ξ_new = X softmax(β Xᵀ ξ)

softmax 在 N 个模式上进行。β > 0 是逆温度：β 很小时权重接近均匀，ξ_new 接近各模式的平均；β 很大时
权重接近 one-hot，ξ_new 就是与 ξ 最相似的存储模式，所以被破坏的模式一次更新就能取回（习题 8-6 的经典
Hopfield 网络需要许多次异步更新，而且只能存储大约 0.14 d 个模式）。

用行而不是列来写（Q = ξᵀ，K = V = Xᵀ），这个更新就是键值对注意力：softmax(β Q Kᵀ) V，存储的模式
同时作为键和值，β 是打分的缩放；β = 1/√d 时恰好就是 Transformer 的缩放点积注意力。

用 `grader check modern-hopfield` 为你的作业评分。这些函数以 NumPy float64 数组调用（返回 NumPy 数组
或张量）；这个层以 float64（以及一次 float32）调用，它的输出和梯度（关于查询和模式）都与参考答案
比较。会用到多种 β 和模式集，一个或多个状态，d != N。保持下面的名称和签名不变。

各部分：hopfield_update 4，retrieve 2，HopfieldAttention 4——共 10 分。
"""

import keras
import numpy as np
from keras import ops


def hopfield_update(X, xi, beta=1.0):
    """一次更新 ξ_new = X softmax(β Xᵀ ξ)：X (d, N)，ξ (d,) 或 (d, M) -> 与 ξ 形状相同。

    X 的各列是存储的模式。ξ 是一个状态 (d,)，或作为 (d, M) 数组各列的 M 个状态，每个各自更
    新：softmax 在 N 个模式上进行（Xᵀξ 的轴 0），绝不在各个状态上进行。β 可能很大（评分程序
    用到 1000）：使用数值稳定的 softmax（减去最大值）。
    """
    raise NotImplementedError("练习 modern-hopfield：打分 β Xᵀ ξ (N, ...)，在模式上（轴 0）做数值稳定的 softmax，再用 X 乘以它")


def retrieve(X, xi, beta=1.0, steps=1):
    """取回：把更新应用 `steps` 次，每次都作用在上一次的结果上。

    X (d, N) 是存储的模式，ξ (d,) 或 (d, M) 是起始状态（例如存储模式被破坏的副本），`steps`
    >= 1。返回最终状态，形状与 ξ 相同。β 很大时一步就够了：结果（在 1% 以内）就是与 ξ 最接近
    的存储模式。评分程序检查取值和这条取回性质；它的用例从翻转了部分符号的存储模式出发。
    """
    raise NotImplementedError("练习 modern-hopfield：调用 hopfield_update `steps` 次，把每次的结果传回去")


class HopfieldAttention(keras.layers.Layer):
    """按注意力层的行约定写出的 Hopfield 更新：softmax(β Q Pᵀ) P。

    查询 Q 是按行排列的状态 ξ；存储的模式 P 既是键也是值。`beta` 是构造函数的参数（没有权
    重）。
    """

    def __init__(self, beta=1.0, **kwargs):
        super().__init__(**kwargs)
        self.beta = beta

    def call(self, queries, patterns):
        """queries (B, M, d), patterns (B, N, d) -> (B, M, d)。

        output[b, m] = Σ_n softmax_n(β queries[b, m] · patterns[b, n]) patterns[b, n]，即对每个
        样本 b 计算 hopfield_update(patterns[b].T, queries[b].T, β).T。结果保持输入的 dtype；梯
        度要传到查询和模式（模式同时是键和值）。
        """
        raise NotImplementedError("练习 modern-hopfield：打分 β Q Pᵀ (B, M, N)，在模式上做 softmax，乘以 P")
