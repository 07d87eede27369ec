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
    """Additive score, NNDL (8.2): scores[b, i, j] = vᵀ tanh(W_q q_i + W_k k_j)."""

    def __init__(self, units, **kwargs):
        # Given: not part of the exercise.
        super().__init__(**kwargs)
        self.units = units

    def build(self, query_shape, key_shape):
        # Given: not part of the exercise. Keep the weights' names.
        self.query_kernel = self.add_weight(
            name="query_kernel", shape=(query_shape[-1], self.units)
        )
        self.key_kernel = self.add_weight(name="key_kernel", shape=(key_shape[-1], self.units))
        self.score_vector = self.add_weight(name="score_vector", shape=(self.units,))

    def call(self, query, key):
        """query (B, Tq, d_q), key (B, Tk, d_k) -> scores (B, Tq, Tk).

        scores[b, i, j] = Σ_u score_vector[u] tanh((query[b, i] @ query_kernel)[u]
        + (key[b, j] @ key_kernel)[u]). Project first, then add a (B, Tq, 1, units) and a
        (B, 1, Tk, units) tensor. Keep the dtype of the inputs.
        """
        raise NotImplementedError("练习 additive：投影查询和键，通过广播两两相加，取 tanh，再与 v 做点积")


class AdditiveAttention(AdditiveScore):
    """Additive attention pooling: out_i = Σ_j softmax_j(s(q_i, k_j)) v_j.

    The scores are `AdditiveScore`'s (this class inherits its weights and its `call`, which
    you can reach as `super().call(query, key)`); the values may differ from the keys.
    """

    def build(self, query_shape, key_shape, value_shape):
        # Given: not part of the exercise.
        super().build(query_shape, key_shape)

    def call(self, query, key, value):
        """query (B, Tq, d_q), key (B, Tk, d_k), value (B, Tk, d_v) -> (B, Tq, d_v).

        The attention weights are the softmax of the additive scores over the keys (the
        last axis of the (B, Tq, Tk) scores); each output is the weighted sum of the values.
        """
        raise NotImplementedError("练习 additive：加性打分，在键上做 softmax，再给值加权")


def additive_multiplications(tq, tk, d_q, d_k, units, project_first=True):
    """Multiplications to compute the (Tq, Tk) additive scores of one example.

    Count one multiplication per product of two numbers (a vector–matrix product of sizes d
    and (d, units) costs d·units; a dot product of two vectors of size units costs units;
    additions and tanh are free).

    - project_first=True (the way `AdditiveScore` does it): W_q q for each of the Tq
      queries, W_k k for each of the Tk keys, then vᵀ tanh(·) for each of the Tq·Tk pairs.
    - project_first=False (the network run on each pair from scratch): for each of the Tq·Tk
      pairs, W_q q, W_k k and vᵀ tanh(·).

    Return an int (or a number equal to one).
    """
    raise NotImplementedError("练习 additive：每个查询和每个键各投影一次，再加上每一对的 units 次（用于 vᵀ）")
