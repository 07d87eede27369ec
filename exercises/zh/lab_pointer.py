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
    """指针打分 u_{m,j} = vᵀ tanh(W_1ᵀ e_j + W_2ᵀ d_m)，NNDL (8.15)。

    权重（在 `build` 中创建，已给出；由评分程序按名称设置）：`W_1` (d_e, units) 投影编码器状
    态，`W_2` (d_d, units) 投影解码器状态，`v` (units,)。
    """

    def __init__(self, units=4, **kwargs):
        super().__init__(**kwargs)
        self.units = units

    def build(self, encoder_states_shape, decoder_states_shape):
        # 已给出：不属于练习。保持权重的名称不变。
        self.W_1 = self.add_weight(name="W_1", shape=(encoder_states_shape[-1], self.units))
        self.W_2 = self.add_weight(name="W_2", shape=(decoder_states_shape[-1], self.units))
        self.v = self.add_weight(name="v", shape=(self.units,))

    def call(self, encoder_states, decoder_states):
        """encoder_states (B, N, d_e), decoder_states (B, M, d_d) -> scores u (B, M, N)。

        u[b, m, j] = v · tanh(encoder_states[b, j] @ W_1 + decoder_states[b, m] @ W_2)：每个输出
        步 m 一行，每个输入位置 j 一列。这些是原始打分（logits），不做 softmax。结果保持输入的
        dtype。
        """
        raise NotImplementedError("练习 pointer：分别投影，广播成 (B, M, N, units)，取 tanh，与 v 做点积")


def greedy_decode(scores):
    """贪心解码，已选的位置被屏蔽：(B, M, N) 打分 -> (B, M) 下标。

    scores[b, m] 是输出步 m 的指针打分（M <= N）。在第 m = 0, 1, ... 步，在之前各步没有选过
    的位置中选出打分最高的输入位置（先把已选位置的打分设为 -∞）。返回 [0, N) 内的整数下标；
    结果的一行中没有位置出现两次，所以当 M = N 时每一行都是 0, ..., N-1 的一个排列（评分程序
    既检查这一点，也检查取值）。
    """
    raise NotImplementedError("练习 pointer：逐步循环：把已选位置用 -inf 掩盖，取 argmax，记下它")


def sequence_log_likelihood(scores, targets):
    """给定目标位置的 log p(c_1, ..., c_M | x)：(B, M, N), (B, M) -> (B,)。

    targets[b] 保存 [0, N) 内 M 个互不相同的位置 c_1, ..., c_M（教师强制：真实的输出）。log p
    = Σ_m log softmax(scores[b, m] with c_1, ..., c_{m-1} masked)[c_m]：即链式法则
    (8.12)-(8.13)，第 m 步之前选过的位置从该步的 softmax 中排除。评分程序会给出接近 1000 的
    打分：要稳定地计算 log-softmax（减去最大值，或使用 log-sum-exp）。
    """
    raise NotImplementedError("练习 pointer：掩盖之前的目标，每步做数值稳定的 log-softmax，取出 c_m，求和")
