"""实验：加性模型——打分 vᵀ tanh(W_q q + W_k k) 以及基于它的注意力汇聚。

NNDL (8.2)；Bahdanau 等人 2015（“concat”）；d2l 的加性注意力；课件“加性注意力”。加性打分是作用在
每一对（查询，键）上的单隐藏层网络：

    s(q, k) = vᵀ tanh(W_q q + W_k k),   W_q: (d_q, units), W_k: (d_k, units), v: (units,)

查询和键的维度可以不同：先把它们各自投影到 `units` 维。每个查询和每个键只投影一次，再通过广播对所有
Tq × Tk 对把投影相加，比对每一对从头运行网络便宜得多；实验的最后一部分计算两种方式的乘法次数。

用 `grader check additive` 为你的作业评分。这些层以 float64（以及一次 float32）调用，使用评分程序按名称
设置的权重；输出和梯度（关于查询、键、值以及每个权重）都与参考答案比较。形状是变化的：批量为 1 和
多个、Tq != Tk、d_q != d_k、units = 1。保持下面的名称、`build` 方法和签名不变。

各部分：AdditiveScore 5，AdditiveAttention 3，additive_multiplications 2——共 10 分。
"""

import keras
from keras import ops


class AdditiveScore(keras.layers.Layer):
    """加性打分函数，NNDL (8.2)：scores[b, i, j] = vᵀ tanh(W_q q_i + W_k k_j)。"""

    def __init__(self, units, **kwargs):
        # 已给出：不属于练习。
        super().__init__(**kwargs)
        self.units = units

    def build(self, query_shape, key_shape):
        # 已给出：不属于练习。保持权重的名称不变。
        self.query_kernel = self.add_weight(
            name="query_kernel", shape=(query_shape[-1], self.units)
        )
        self.key_kernel = self.add_weight(name="key_kernel", shape=(key_shape[-1], self.units))
        self.score_vector = self.add_weight(name="score_vector", shape=(self.units,))

    def call(self, query, key):
        """query (B, Tq, d_q), key (B, Tk, d_k) -> scores (B, Tq, Tk)。

        scores[b, i, j] = Σ_u score_vector[u] tanh((query[b, i] @ query_kernel)[u] + (key[b, j] @
        key_kernel)[u])。先投影，再把一个 (B, Tq, 1, units) 张量和一个 (B, 1, Tk, units) 张量相
        加。保持输入的 dtype。
        """
        raise NotImplementedError("练习 additive：投影查询和键，通过广播两两相加，取 tanh，再与 v 做点积")


class AdditiveAttention(AdditiveScore):
    """加性注意力汇聚：out_i = Σ_j softmax_j(s(q_i, k_j)) v_j。

    打分来自 `AdditiveScore`（这个类继承了它的权重和它的 `call`，你可以用
    `super().call(query, key)` 调用）；值可以与键不同。
    """

    def build(self, query_shape, key_shape, value_shape):
        # 已给出：不属于练习。
        super().build(query_shape, key_shape)

    def call(self, query, key, value):
        """query (B, Tq, d_q), key (B, Tk, d_k), value (B, Tk, d_v) -> (B, Tq, d_v)。

        注意力分布是加性打分在各个键上（即 (B, Tq, Tk) 打分的最后一个轴）的 softmax；每个输出是
        值的加权和。
        """
        raise NotImplementedError("练习 additive：加性打分，在键上做 softmax，再给值加权")


def additive_multiplications(tq, tk, d_q, d_k, units, project_first=True):
    """计算一个样本的 (Tq, Tk) 个加性打分所需的乘法次数。

    两个数的每次乘积算一次乘法（大小为 d 的向量与 (d, units) 矩阵的乘积花费 d·units 次；两个
    大小为 units 的向量的点积花费 units 次；加法和 tanh 不计）。

    - project_first=True（`AdditiveScore` 的做法）：对 Tq 个查询各算一次 W_q q，对 Tk 个键各
      算一次 W_k k，然后对 Tq·Tk 对中的每一对算 vᵀ tanh(·)。
    - project_first=False（对每一对都从头运行一遍网络）：对 Tq·Tk 对中的每一对，算 W_q q、
      W_k k 和 vᵀ tanh(·)。

    返回一个 int（或等于整数的数）。
    """
    raise NotImplementedError("练习 additive：每个查询和每个键各投影一次，再加上每一对的 units 次（用于 vᵀ）")
