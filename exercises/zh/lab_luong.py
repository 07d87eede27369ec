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
    """h̃ = tanh([c; h] @ W_c): context (B, Tq, d_s), query (B, Tq, d_h) -> (B, Tq, units).

    The context comes FIRST in the concatenation, [c_t; h_t], matching the rows of W_c
    (d_s + d_h, units).
    """
    raise NotImplementedError("练习 luong：在最后一个轴上先拼接上下文、再拼接查询，乘以 W_c，取 tanh")


class LuongAttention(keras.layers.Layer):
    """Luong global attention: every source position, scored by "dot", "general" or "concat".

    Returns the attentional states h̃_t = tanh(W_cᵀ [c_t; h_t]) of every decoder step. The
    weights are created in `build` (given) and set by the grader by name: `W_c` always, `W_a`
    for "general" and "concat", `v_a` for "concat".
    """

    def __init__(self, units=4, score="dot", **kwargs):
        super().__init__(**kwargs)
        if score not in SCORES:
            raise ValueError(f"`score` must be one of {SCORES}. Received: score={score!r}")
        self.units = units
        self.score = score

    def build(self, query_shape, encoder_states_shape):
        # Given: not part of the exercise. Keep the weights' names.
        d_h, d_s = query_shape[-1], encoder_states_shape[-1]
        if self.score == "general":
            self.W_a = self.add_weight(name="W_a", shape=(d_h, d_s))
        elif self.score == "concat":
            self.W_a = self.add_weight(name="W_a", shape=(d_h + d_s, self.units))
            self.v_a = self.add_weight(name="v_a", shape=(self.units,))
        self.W_c = self.add_weight(name="W_c", shape=(d_s + d_h, self.units))

    def scores(self, query, encoder_states):
        """query (B, Tq, d_h), encoder_states (B, S, d_s) -> scores (B, Tq, S)."""
        if self.score == "dot":
            raise NotImplementedError("练习 luong：对每一对计算 h_t · h̄_s：一次批量矩阵乘积（不缩放）")
        if self.score == "general":
            raise NotImplementedError("练习 luong：h_t W_a h̄_s：用 W_a 投影查询，再与键做点积")
        raise NotImplementedError("练习 luong：[h_t; h̄_s] @ W_a = h_t @ W_a[:d_h] + h̄_s @ W_a[d_h:]；取 tanh；与 v_a 做点积")

    def call(self, query, encoder_states):
        """query (B, Tq, d_h) = h_1..h_Tq, encoder_states (B, S, d_s) -> h̃ (B, Tq, units).

        scores -> softmax over the S source positions -> context c_t -> attentional state.
        The result keeps the dtype of the inputs.
        """
        raise NotImplementedError("练习 luong：在最后一个轴上对 self.scores 做 softmax，求上下文，再求 attentional_state")


def local_p_weights(scores, positions, window):
    """Local-p alignment weights: (B, Tq, S) scores, (B, Tq) positions p_t -> (B, Tq, S).

    For source position s = 0, ..., S-1 and distance δ = s - p_t:
        a[b, t, s] = softmax over {s : |δ| <= D} of scores[b, t, :]  ×  exp(-δ² / (2σ²))
    with D = `window` (an int >= 1) and σ = D / 2; a = 0 where |δ| > D. The softmax runs over
    the window only (mask the scores outside it before the softmax); the grader's p_t always
    leave at least one position in the window. The grader checks the zeros outside the window
    as well as the values.
    """
    raise NotImplementedError("练习 luong：距离 s - p_t，窗口掩码，带掩码的 softmax，乘以高斯（σ = D/2）")


class LocalPAttention(keras.layers.Layer):
    """Luong local-p attention with the dot score, returning h̃_t = tanh(W_cᵀ [c_t; h_t]).

    p_t = S · sigmoid(v_pᵀ tanh(W_pᵀ h_t)) predicts where to look; `local_p_weights` gives the
    weights. Weights (given in `build`, set by name): `W_p` (d, units), `v_p` (units,),
    `W_c` (2d, units). Query and encoder states have the same size d (the dot score).
    """

    def __init__(self, units=4, window=2, **kwargs):
        super().__init__(**kwargs)
        self.units = units
        self.window = window

    def build(self, query_shape, encoder_states_shape):
        # Given: not part of the exercise. Keep the weights' names.
        d = query_shape[-1]
        self.W_p = self.add_weight(name="W_p", shape=(d, self.units))
        self.v_p = self.add_weight(name="v_p", shape=(self.units,))
        self.W_c = self.add_weight(name="W_c", shape=(encoder_states_shape[-1] + d, self.units))

    def positions(self, query, source_length):
        """p_t = S · sigmoid(v_pᵀ tanh(W_pᵀ h_t)): query (B, Tq, d) -> (B, Tq)."""
        raise NotImplementedError("练习 luong：对投影取 tanh，与 v_p 做点积，取 sigmoid，乘以 S")

    def call(self, query, encoder_states):
        """query (B, Tq, d), encoder_states (B, S, d) -> h̃ (B, Tq, units).

        Dot scores, p_t from `positions` (S = encoder_states.shape[1]), `local_p_weights`
        with D = self.window, context, `attentional_state`.
        """
        raise NotImplementedError("练习 luong：dot 打分、位置、local_p_weights、上下文、attentional_state")
