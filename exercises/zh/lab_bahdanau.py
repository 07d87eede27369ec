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
    """每个（查询，键）对的加性打分：(B, Tq, d_s), (B, T, d_h) -> (B, Tq, T)。

    e[b, i, j] = v · tanh(queries[b, i] @ W_s + keys[b, j] @ W_h)，其中 W_s 的形状为 (d_s,
    units)，W_h 的形状为 (d_h, units)，v 的形状为 (units,)。先投影查询和键（各一次矩阵乘
    法），再通过广播把每个投影后的查询与每个投影后的键相加：(B, Tq, 1, units) + (B, 1, T,
    units)。
    """
    raise NotImplementedError("练习 bahdanau：投影查询和键，通过广播相加，取 tanh，再与 v 做点积")


def masked_softmax(scores, lengths):
    """沿最后一个轴、忽略填充位置的 softmax：(B, Tq, T), (B,) -> (B, Tq, T)。

    样本 b 的位置 j 当 j < lengths[b] 时有效（1 <= lengths[b] <= T）；无效位置的权重恰好为
    0，有效位置的权重之和为 1。在 softmax 之前，把无效位置的打分替换为一个很大的负数（例如
    -1e9）。`lengths` 可能以浮点数组中的整数值形式传入。
    """
    raise NotImplementedError("练习 bahdanau：把位置 0..T-1 与长度比较，无效处填 -1e9，再做 softmax")


class BahdanauAttentionStep(keras.layers.Layer):
    """Bahdanau 注意力的一步解码：(s_{t-1}, h_1..h_T, lengths) -> 上下文向量 c_t。

    e_j = vᵀ tanh(W_sᵀ s_{t-1} + W_hᵀ h_j)，α = 在有效位置 j < length 上的 softmax，c_t = Σ_j
    α_j h_j。权重 `W_s` (d_s, units)、`W_h` (d_h, units) 和 `v` (units,) 在 `build` 中创建
    （已给出）；评分程序按名称设置它们。
    """

    def __init__(self, units=8, **kwargs):
        super().__init__(**kwargs)
        self.units = units

    def build(self, previous_state_shape, encoder_states_shape):
        # 已给出：不属于练习。保持权重的名称不变。
        self.W_s = self.add_weight(name="W_s", shape=(previous_state_shape[-1], self.units))
        self.W_h = self.add_weight(name="W_h", shape=(encoder_states_shape[-1], self.units))
        self.v = self.add_weight(name="v", shape=(self.units,))

    def call(self, previous_state, encoder_states, source_lengths):
        """previous_state (B, d_s), encoder_states (B, T, d_h), source_lengths (B,) -> (B, d_h)。

        previous_state 是 s_{t-1}，即查询；encoder_states 既是键，也是值；source_lengths[b] 是样
        本 b 的真实（未填充的）源端位置数，1 <= length <= T（评分程序以整数值的浮点数组传入）。
        返回上下文向量 c_t。使用 `additive_scores`（只有一个查询：Tq = 1）和 `masked_softmax`。
        结果保持输入的 dtype。
        """
        raise NotImplementedError("练习 bahdanau：Tq = 1 时的打分，带掩码的 softmax，编码器状态的加权和")


def alignment(decoder_states, encoder_states, source_lengths, W_s, W_h, v):
    """整个输出句子的注意力分布：论文中的对齐矩阵。

    decoder_states (B, T_out + 1, d_s) 保存 s_0, s_1, ..., s_{T_out}（s_0 是初始状态），
    encoder_states (B, T_in, d_h)，source_lengths (B,) 为整数，W_s、W_h、v 与层中相同。返回
    形状为 (B, T_out, T_in) 的 α：第 t - 1 行（t = 1, ..., T_out）保存产生输出 t 的权重
    α_tj，它们用查询 s_{t-1} 计算。每一行在有效的源端位置上之和为 1，在填充位置上为 0（评分
    程序也会检查这一点）。这个矩阵就是 Bahdanau 等人论文图 3 中的热力图。
    """
    raise NotImplementedError("练习 bahdanau：哪些解码器状态是查询？然后 additive_scores、masked_softmax")
