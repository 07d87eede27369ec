"""实验：Luong 注意力——有三种打分函数的全局注意力，以及 local-p 注意力。

博客“Luong 注意力”（查询是当前的解码器状态 h_t，而不是 s_{t-1}；三种打分函数）；Luong、Pham 和
Manning 2015，§3.1–3.2。设 h_t 是输出第 t 步的解码器状态，h̄_s 是编码器状态（键 = 值），
s = 0, ..., S-1：

    score(h_t, h̄_s) = h_tᵀ h̄_s                       "dot"
                    = h_tᵀ W_a h̄_s                    "general"   W_a (d_h, d_s)
                    = v_aᵀ tanh(W_aᵀ [h_t; h̄_s])      "concat"    W_a (d_h + d_s, units)
    a_t(s) = softmax_s(score(h_t, h̄_s))
    c_t    = Σ_s a_t(s) h̄_s
    h̃_t    = tanh(W_cᵀ [c_t; h_t])                   the attentional state, W_c (d_s + d_h, units)

（h̃_t 是注意力状态。）因为查询 h_t 不依赖 c_t，所有输出步的注意力可以一次算出：这个层一次接收全部
解码器状态 (B, Tq, d_h)。

local-p 注意力只看预测位置附近的一个窗口。设 S 为源句长度：

    p_t    = S · sigmoid(v_pᵀ tanh(W_pᵀ h_t))         a real number in (0, S)
    a_t(s) = softmax over the window |s - p_t| <= D of score(h_t, h̄_s)
             × exp(-(s - p_t)² / (2σ²)),  σ = D / 2,  and 0 outside the window

（p_t 是 (0, S) 内的实数；a_t(s) 是在窗口 |s - p_t| <= D 上对打分做 softmax，再乘以高斯因子，窗口外
为 0。）位置 s 从 0 开始计数。高斯偏向 p_t 附近的位置；和论文一样，权重之和小于 1，p_t 通过高斯因子
学习。

用 `grader check luong` 为你的作业评分。这些层以 float64（以及一次 float32）调用；它们的输出和梯度
（关于解码器状态、编码器状态以及每个权重）都与参考答案比较。`local_p_weights` 以 NumPy 数组调用。
形状是变化的：批量为 1 和多个、Tq != S、d_h != d_s、units != d。保持下面的名称和签名不变；层中请使用
`keras.ops`。

各部分：全局 dot 2，全局 general 2，全局 concat 2，local_p_weights 2，LocalPAttention 2
——共 10 分。
"""

import keras
from keras import ops

SCORES = ("dot", "general", "concat")


def attentional_state(context, query, W_c):
    """h̃ = tanh([c; h] @ W_c)：context (B, Tq, d_s), query (B, Tq, d_h) -> (B, Tq, units)。

    拼接时上下文向量在前，即 [c_t; h_t]，与 W_c (d_s + d_h, units) 的行相对应。
    """
    raise NotImplementedError("练习 luong：在最后一个轴上先拼接上下文、再拼接查询，乘以 W_c，取 tanh")


class LuongAttention(keras.layers.Layer):
    """Luong 全局注意力：对每个源端位置打分，打分函数为 "dot"、"general" 或 "concat"。

    返回每个解码步的注意力状态 h̃_t = tanh(W_cᵀ [c_t; h_t])。权重在 `build` 中创建（已给
    出），由评分程序按名称设置：`W_c` 总是有，`W_a` 用于 "general" 和 "concat"，`v_a` 用于
    "concat"。
    """

    def __init__(self, units=4, score="dot", **kwargs):
        super().__init__(**kwargs)
        if score not in SCORES:
            raise ValueError(f"`score` must be one of {SCORES}. Received: score={score!r}")
        self.units = units
        self.score = score

    def build(self, query_shape, encoder_states_shape):
        # 已给出：不属于练习。保持权重的名称不变。
        d_h, d_s = query_shape[-1], encoder_states_shape[-1]
        if self.score == "general":
            self.W_a = self.add_weight(name="W_a", shape=(d_h, d_s))
        elif self.score == "concat":
            self.W_a = self.add_weight(name="W_a", shape=(d_h + d_s, self.units))
            self.v_a = self.add_weight(name="v_a", shape=(self.units,))
        self.W_c = self.add_weight(name="W_c", shape=(d_s + d_h, self.units))

    def scores(self, query, encoder_states):
        """query (B, Tq, d_h), encoder_states (B, S, d_s) -> scores (B, Tq, S)。"""
        if self.score == "dot":
            raise NotImplementedError("练习 luong：对每一对计算 h_t · h̄_s：一次批量矩阵乘积（不缩放）")
        if self.score == "general":
            raise NotImplementedError("练习 luong：h_t W_a h̄_s：用 W_a 投影查询，再与键做点积")
        raise NotImplementedError("练习 luong：[h_t; h̄_s] @ W_a = h_t @ W_a[:d_h] + h̄_s @ W_a[d_h:]；取 tanh；与 v_a 做点积")

    def call(self, query, encoder_states):
        """query (B, Tq, d_h) = h_1..h_Tq, encoder_states (B, S, d_s) -> h̃ (B, Tq, units)。

        打分 -> 在 S 个源端位置上做 softmax -> 上下文向量 c_t -> 注意力状态。结果保持输入的
        dtype。
        """
        raise NotImplementedError("练习 luong：在最后一个轴上对 self.scores 做 softmax，求上下文，再求 attentional_state")


def local_p_weights(scores, positions, window):
    """local-p 对齐权重：(B, Tq, S) 打分，(B, Tq) 位置 p_t -> (B, Tq, S)。

    对源端位置 s = 0, ..., S-1 和距离 δ = s - p_t：
        a[b, t, s] = softmax over {s : |δ| <= D} of scores[b, t, :]  ×  exp(-δ² / (2σ²))
    其中 D = `window`（一个 int >= 1），σ = D / 2；|δ| > D 处 a = 0。softmax 只在窗口内进行
    （在 softmax 之前屏蔽窗口外的打分）；评分程序给出的 p_t 总会在窗口内留下至少一个位置。评
    分程序既检查窗口外的零，也检查取值。
    """
    raise NotImplementedError("练习 luong：距离 s - p_t，窗口掩码，带掩码的 softmax，乘以高斯（σ = D/2）")


class LocalPAttention(keras.layers.Layer):
    """使用点积打分的 Luong local-p 注意力，返回 h̃_t = tanh(W_cᵀ [c_t; h_t])。

    p_t = S · sigmoid(v_pᵀ tanh(W_pᵀ h_t)) 预测看向哪里；`local_p_weights` 给出权重。权重
    （在 `build` 中给出，按名称设置）：`W_p` (d, units)、`v_p` (units,)、`W_c` (2d, units)。
    查询和编码器状态的维数都是 d（点积打分）。
    """

    def __init__(self, units=4, window=2, **kwargs):
        super().__init__(**kwargs)
        self.units = units
        self.window = window

    def build(self, query_shape, encoder_states_shape):
        # 已给出：不属于练习。保持权重的名称不变。
        d = query_shape[-1]
        self.W_p = self.add_weight(name="W_p", shape=(d, self.units))
        self.v_p = self.add_weight(name="v_p", shape=(self.units,))
        self.W_c = self.add_weight(name="W_c", shape=(encoder_states_shape[-1] + d, self.units))

    def positions(self, query, source_length):
        """p_t = S · sigmoid(v_pᵀ tanh(W_pᵀ h_t))：query (B, Tq, d) -> (B, Tq)。"""
        raise NotImplementedError("练习 luong：对投影取 tanh，与 v_p 做点积，取 sigmoid，乘以 S")

    def call(self, query, encoder_states):
        """query (B, Tq, d), encoder_states (B, S, d) -> h̃ (B, Tq, units)。

        点积打分，由 `positions` 得到 p_t（S = encoder_states.shape[1]），D = self.window 的
        `local_p_weights`，上下文向量，`attentional_state`。
        """
        raise NotImplementedError("练习 luong：dot 打分、位置、local_p_weights、上下文、attentional_state")
