"""实验：Bahdanau 注意力——以上一个解码器状态为查询的一步解码。

课件“Bahdanau 注意力”（解码器上一个隐状态是查询，编码器状态是键和值，源句的有效长度用来掩盖填充）；
博客“Bahdanau 注意力”，e_ij = score(s_{i-1}, h_j)；Bahdanau、Cho 和 Bengio 2015。在输出第 t 步，
解码器有它的上一个状态 s_{t-1} 和源句的编码器状态 h_1, ..., h_T：

    e_tj = vᵀ tanh(W_sᵀ s_{t-1} + W_hᵀ h_j)      additive score, one per source position j
    α_tj = softmax_j(e_tj)                       over the VALID source positions j < length
    c_t  = Σ_j α_tj h_j                          the context, fed into the step that makes s_t

（依次为：每个源端位置 j 一个加性打分；只在有效的源端位置 j < length 上做 softmax；上下文向量，送入
生成 s_t 的那一步。）新状态 s_t 是由 c_t 算出的，所以 c_t 不能用 s_t：查询是 s_{t-1}。（下一个实验的
Luong 注意力改用当前状态 h_t。）一个批次中的源句长度不同，被填充到相同的 T；填充位置的权重必须恰好
为零。

用 `grader check bahdanau` 为你的作业评分。这个层以 float64（以及一次 float32）调用；它的输出和梯度
（关于上一个状态、编码器状态以及权重 `W_s`、`W_h`、`v`）都与参考答案比较。`alignment` 以 NumPy 数组
调用（返回 NumPy 数组或张量）。形状是变化的：批量为 1 和多个、d_s != d_h、T = 1、长度为 1。保持下面
的名称和签名不变；层中请使用 `keras.ops`。

各部分：无填充的一步 3，源端有填充的一步 3，alignment 3——共 9 分。
"""

import keras
from keras import ops


def additive_scores(queries, keys, W_s, W_h, v):
    """Additive scores for every (query, key) pair: (B, Tq, d_s), (B, T, d_h) -> (B, Tq, T).

    e[b, i, j] = v · tanh(queries[b, i] @ W_s + keys[b, j] @ W_h), with W_s of shape
    (d_s, units), W_h of shape (d_h, units) and v of shape (units,). Project the queries and
    the keys first (one matrix product each), then add every projected query to every
    projected key by broadcasting: (B, Tq, 1, units) + (B, 1, T, units).
    """
    raise NotImplementedError("练习 bahdanau：投影查询和键，通过广播相加，取 tanh，再与 v 做点积")


def masked_softmax(scores, lengths):
    """Softmax over the last axis that ignores padded positions: (B, Tq, T), (B,) -> (B, Tq, T).

    Position j of example b is valid when j < lengths[b] (1 <= lengths[b] <= T); invalid
    positions get weight exactly 0 and the valid ones sum to 1. Replace the scores of the
    invalid positions by a very negative number (e.g. -1e9) BEFORE the softmax. `lengths` may
    arrive as whole numbers in a float array.
    """
    raise NotImplementedError("练习 bahdanau：把位置 0..T-1 与长度比较，无效处填 -1e9，再做 softmax")


class BahdanauAttentionStep(keras.layers.Layer):
    """One decoder step of Bahdanau attention: (s_{t-1}, h_1..h_T, lengths) -> context c_t.

    e_j = vᵀ tanh(W_sᵀ s_{t-1} + W_hᵀ h_j), α = softmax over the valid positions j < length,
    c_t = Σ_j α_j h_j. The weights `W_s` (d_s, units), `W_h` (d_h, units) and `v` (units,)
    are created in `build` (given); the grader sets them by name.
    """

    def __init__(self, units=8, **kwargs):
        super().__init__(**kwargs)
        self.units = units

    def build(self, previous_state_shape, encoder_states_shape):
        # Given: not part of the exercise. Keep the weights' names.
        self.W_s = self.add_weight(name="W_s", shape=(previous_state_shape[-1], self.units))
        self.W_h = self.add_weight(name="W_h", shape=(encoder_states_shape[-1], self.units))
        self.v = self.add_weight(name="v", shape=(self.units,))

    def call(self, previous_state, encoder_states, source_lengths):
        """previous_state (B, d_s), encoder_states (B, T, d_h), source_lengths (B,) -> (B, d_h).

        previous_state is s_{t-1}, the query; encoder_states are the keys AND the values;
        source_lengths[b] is the number of real (unpadded) source positions of example b,
        1 <= length <= T (the grader passes it as a float array of whole numbers). Returns the
        context c_t. Use `additive_scores` (with one query: Tq = 1) and `masked_softmax`.
        The result keeps the dtype of the inputs.
        """
        raise NotImplementedError("练习 bahdanau：Tq = 1 时的打分，带掩码的 softmax，编码器状态的加权和")


def alignment(decoder_states, encoder_states, source_lengths, W_s, W_h, v):
    """The attention weights of a whole output sentence: the alignment matrix of the paper.

    decoder_states (B, T_out + 1, d_s) holds s_0, s_1, ..., s_{T_out} (s_0 is the initial
    state), encoder_states (B, T_in, d_h), source_lengths (B,) integers, W_s, W_h, v as in the
    layer. Returns α of shape (B, T_out, T_in): row t - 1 (t = 1, ..., T_out) holds the
    weights α_tj that produced output t, computed with the query s_{t-1}. Every row sums to 1
    over the valid source positions and is 0 on the padding (the grader checks this too).
    This matrix is the heatmap of Bahdanau et al.'s figure 3.
    """
    raise NotImplementedError("练习 bahdanau：哪些解码器状态是查询？然后 additive_scores、masked_softmax")
