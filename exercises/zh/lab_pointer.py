"""实验：指针网络——指向输入位置的注意力分布。

NNDL 8.2.1.5“指针网络”，公式 (8.12)–(8.15)；Vinyals、Fortunato 和 Jaitly 2015。对于输出是输入位置
序列的问题（排序、凸包、挑选单词），在 N 个输入上的注意力分布本身就是输出。设 e_1, ..., e_N 是各输入的
编码器状态，d_m 是输出第 m 步的解码器状态：

    u_{m,j} = vᵀ tanh(W_1ᵀ e_j + W_2ᵀ d_m)                          the pointer scores (8.15)
    p(c_m = j | c_1, ..., c_{m-1}, x) = softmax_j(u_{m,j})            (8.14)
    p(c_1, ..., c_M | x) = Π_m p(c_m | c_1, ..., c_{m-1}, x)          (8.12)-(8.13)

（第一行是指针打分。）当输出必须是输入的一个排列（排序）时，之前某一步选过的位置在后面各步要被掩盖：
它的打分变为 -∞，概率为 0。

在完整的指针网络中，d_m 依赖第 m-1 步选中的输入（解码器会读取它），所以第 m 步的打分要等第 m-1 步
确定之后才存在。这里一次给出所有步的打分，这样掩码的逻辑不变，代码也更短。

用 `grader check pointer` 为你的作业评分。这个层以 float64（以及一次 float32）调用；它的输出和梯度
（关于两个输入以及权重 `W_1`、`W_2`、`v`）都与参考答案比较。这些函数以 NumPy 数组调用（下标为整数）；
返回 NumPy 数组或张量。形状是变化的：批量为 1 和多个、M != N、d_e != d_d。保持下面的名称和签名不变。

各部分：PointerScores 4，greedy_decode 4，sequence_log_likelihood 2——共 10 分。
"""

import keras
import numpy as np
from keras import ops


class PointerScores(keras.layers.Layer):
    """Pointer scores u_{m,j} = vᵀ tanh(W_1ᵀ e_j + W_2ᵀ d_m), NNDL (8.15).

    Weights (created in `build`, given; set by the grader by name): `W_1` (d_e, units)
    projects the encoder states, `W_2` (d_d, units) the decoder states, `v` (units,).
    """

    def __init__(self, units=4, **kwargs):
        super().__init__(**kwargs)
        self.units = units

    def build(self, encoder_states_shape, decoder_states_shape):
        # Given: not part of the exercise. Keep the weights' names.
        self.W_1 = self.add_weight(name="W_1", shape=(encoder_states_shape[-1], self.units))
        self.W_2 = self.add_weight(name="W_2", shape=(decoder_states_shape[-1], self.units))
        self.v = self.add_weight(name="v", shape=(self.units,))

    def call(self, encoder_states, decoder_states):
        """encoder_states (B, N, d_e), decoder_states (B, M, d_d) -> scores u (B, M, N).

        u[b, m, j] = v · tanh(encoder_states[b, j] @ W_1 + decoder_states[b, m] @ W_2): one
        row per output step m, one column per input position j. These are the raw scores
        (logits), no softmax. The result keeps the dtype of the inputs.
        """
        raise NotImplementedError("练习 pointer：分别投影，广播成 (B, M, N, units)，取 tanh，与 v 做点积")


def greedy_decode(scores):
    """Greedy decoding with the chosen positions masked: (B, M, N) scores -> (B, M) indices.

    scores[b, m] are the pointer scores of output step m (M <= N). At step m = 0, 1, ...,
    choose the input position with the highest score AMONG THE POSITIONS NOT CHOSEN at
    earlier steps (set the scores of the chosen ones to -∞ first). Return integer indices in
    [0, N); no position appears twice in a row of the result, so with M = N each row is a
    permutation of 0, ..., N-1 (the grader checks this as well as the values).
    """
    raise NotImplementedError("练习 pointer：逐步循环：把已选位置用 -inf 掩盖，取 argmax，记下它")


def sequence_log_likelihood(scores, targets):
    """log p(c_1, ..., c_M | x) of given target positions: (B, M, N), (B, M) -> (B,).

    targets[b] holds M distinct positions c_1, ..., c_M in [0, N) (teacher forcing: the true
    outputs). log p = Σ_m log softmax(scores[b, m] with c_1, ..., c_{m-1} masked)[c_m]: the
    chain rule (8.12)-(8.13), with the positions chosen before step m excluded from its
    softmax. The grader includes scores near 1000: compute the log-softmax stably (subtract
    the maximum, or use a log-sum-exp).
    """
    raise NotImplementedError("练习 pointer：掩盖之前的目标，每步做数值稳定的 log-softmax，取出 c_m，求和")
