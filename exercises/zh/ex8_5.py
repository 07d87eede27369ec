"""练习 8-5——使用外部记忆的两种方式：记忆网络的多跳读取与神经图灵机的寻址。

NNDL §8.5（记忆增强神经网络）：§8.5.1 端到端记忆网络（Sukhbaatar 等人 2015）和 §8.5.2 神经图灵机
（Graves 等人 2014）。书中的习题 8-5 问这两者在操作外部记忆的方式上有什么共同点、有什么不同。你在这里
把两者的读取机制写成代码，再在 `answers/8-5.md` 中用文字比较它们。

端到端记忆网络（MemN2N）只读取一个在整个问题中固定不变的记忆，按内容读取，读取多次（多跳）。每个
记忆片段 i 有一个输入（寻址）向量 a_i 和一个输出向量 c_i：

    p = softmax(A q)      o = Σ_i p_i c_i      q ← q + o          (one hop)

神经图灵机（NTM）在每个时刻都读写它的记忆 M，并用一个结合内容和位置的四步寻址来确定读写的位置：

    w^c = softmax(β cos(k, M_i))            content: which rows look like the key
    w^g = g w^c + (1 − g) w_prev             interpolation with last step's weights
    w̃_i = Σ_o s_o w^g_(i − o) mod N          circular shift by a distribution over offsets
    w_i = w̃_i^γ / Σ_j w̃_j^γ                 sharpening

（依次为：内容寻址，看哪些行像键；与上一步的权重插值；按偏移量上的分布做循环移位；锐化。）

用 `grader check 8-5` 为你的作业评分。取值会在许多随机参数和形状上以 float64 与参考答案比较（批量
为 1 和多个、一个记忆片段、宽度为 1、N = 2 个片段时移位会立即回绕）。给出的两个层 `MemN2NRead` 和
`NTMAddressing` 会运行你的函数，使评分程序还能比较关于每个输入的梯度（以及 float32 的 dtype）：请用
`keras.ops` 写这些函数（经 NumPy 转一圈会截断梯度）。保持下面的名称和签名不变；每个函数都接受一个批次。

各部分：memn2n_hop 2，memn2n_read 1，content_weights 2，interpolate 和 sharpen 1，
circular_shift 2，ntm_address 2——共 10 分；书面比较交由教师评阅。
"""

import keras
from keras import ops

# --------------------------------------------------------------------------------------------
# End-to-end memory network (NNDL §8.5.1): read-only, content-based, several hops.
# --------------------------------------------------------------------------------------------


def memn2n_hop(query, memory_in, memory_out):
    """One hop of an end-to-end memory network: read the memory, add what was read to the query.

    p_i = softmax_i(a_iᵀ q)       (a_i = memory_in[b, i], the addressing vectors)
    o   = Σ_i p_i c_i             (c_i = memory_out[b, i], the output vectors)
    return q + o                  (the query of the next hop)

    Args:
        query: q, shape (B, d).
        memory_in: the addressing memory A, shape (B, n, d): n slots.
        memory_out: the output memory C, shape (B, n, d).

    Returns:
        The next query q + o, shape (B, d). The softmax runs over the n slots of each batch row.
    """
    raise NotImplementedError("练习 8-5：在各片段上对 memory_in·q 做 softmax，给 memory_out 加权，再加上 q")


def memn2n_read(query, memory_in, memory_out, hops):
    """`hops` hops of `memn2n_hop` with the same memories (layer-wise weight tying).

    q^(1) = query;  q^(k+1) = q^(k) + o^(k)  for k = 1 .. hops;  return q^(hops + 1).

    The network's answer module then predicts from what this returns: Sukhbaatar et al.'s
    â = softmax(W (o^(K) + q^(K))) takes exactly q^(K+1).

    Args:
        query: shape (B, d).
        memory_in, memory_out: shape (B, n, d) each, the same at every hop.
        hops: int K ≥ 1.

    Returns:
        Shape (B, d).
    """
    raise NotImplementedError("练习 8-5：调用 memn2n_hop `hops` 次，把它的返回值传回去")


class MemN2NRead(keras.layers.Layer):
    """Given: not part of the exercise. `memn2n_read` as a layer, so that gradients are checked.

    Call arguments: query (B, d), memory_in (B, n, d), memory_out (B, n, d).
    """

    def __init__(self, hops=1, **kwargs):
        super().__init__(**kwargs)
        self.hops = hops

    def call(self, query, memory_in, memory_out):
        return memn2n_read(query, memory_in, memory_out, self.hops)


# --------------------------------------------------------------------------------------------
# Neural Turing machine addressing (NNDL §8.5.2; Graves et al. 2014, §3.3): content, then
# location. Memory M has N rows (slots) of width W; one head, one weighting per batch row.
# --------------------------------------------------------------------------------------------


def content_weights(memory, key, beta):
    """Content addressing: cosine similarity of the key with every row, times β, softmax.

    w^c_i = exp(β K(k, M_i)) / Σ_j exp(β K(k, M_j)),    K(u, v) = uᵀv / (‖u‖ ‖v‖)

    β ≥ 0 is the key strength: β = 0 gives uniform weights, a large β focuses on the best row.
    The grader uses β up to about a thousand: use a numerically stable softmax. It never passes
    an all-zero row or key (an epsilon of 1e-8 or less in the norms does no harm).

    Args:
        memory: M, shape (B, N, W).
        key: k, shape (B, W).
        beta: β, shape (B,): one per batch row.

    Returns:
        w^c, shape (B, N); each row sums to 1.
    """
    raise NotImplementedError("练习 8-5：余弦（点积除以两个范数），乘以 beta，在 N 个片段上做 softmax")


def interpolate(w_content, w_previous, gate):
    """Interpolation gate: w^g = g w^c + (1 − g) w_prev.

    g = 1 keeps the content weights; g = 0 ignores the content and keeps last step's weights
    (so that location-based addressing can go on from where it was).

    Args:
        w_content: w^c, shape (B, N).
        w_previous: w_prev, shape (B, N).
        gate: g in [0, 1], shape (B,).

    Returns:
        w^g, shape (B, N).
    """
    raise NotImplementedError("练习 8-5：g 乘以内容权重，加上 (1 - g) 乘以上一步的权重")


def circular_shift(weights, shift):
    """Location addressing: a circular convolution of the weights with a shift distribution.

    w̃_i = Σ_{o=−k}^{k} s_o w_{(i − o) mod N}

    `shift` has 2k + 1 entries per row, for the offsets −k, …, +k in that order: shift[:, j] is
    the probability of offset j − k. With 3 entries (the usual case) the order is (−1, 0, +1).
    Offset +1 moves the focus one slot FORWARD: with s = (0, 0, 1), w̃_i = w_(i−1), so the weight
    of slot i lands on slot i + 1, and the weight of the last slot on slot 0 (the memory is a
    ring: indices wrap around modulo N, even when N is smaller than 2k + 1).

    Args:
        weights: w^g, shape (B, N).
        shift: s, shape (B, 2k + 1), rows summing to 1.

    Returns:
        w̃, shape (B, N).
    """
    raise NotImplementedError("练习 8-5：按每个偏移量 o = j - k 滚动权重，乘以 shift[:, j]，再相加")


def sharpen(weights, gamma):
    """Sharpening: w_i = w̃_i^γ / Σ_j w̃_j^γ, with γ ≥ 1.

    The shift blurs the focus; raising to a power γ and renormalising sharpens it again.

    Args:
        weights: w̃, shape (B, N), entries > 0.
        gamma: γ ≥ 1, shape (B,).

    Returns:
        w, shape (B, N); each row sums to 1.
    """
    raise NotImplementedError("练习 8-5：取 gamma 次幂，再让每行除以它的和")


def ntm_address(memory, key, beta, gate, w_previous, shift, gamma):
    """The whole NTM addressing of one head: content → interpolation → shift → sharpening.

    w = sharpen(circular_shift(interpolate(content_weights(M, k, β), w_prev, g), s), γ)

    Args:
        memory: (B, N, W); key: (B, W); beta, gate, gamma: (B,); w_previous: (B, N);
        shift: (B, 2k + 1), offsets −k..k as in `circular_shift`.

    Returns:
        The head's weights w, shape (B, N). Gradients w.r.t. every argument are checked.
    """
    raise NotImplementedError("练习 8-5：按公式的顺序串联你的四个函数")


class NTMAddressing(keras.layers.Layer):
    """Given: not part of the exercise. `ntm_address` as a layer, so that gradients are checked.

    Call arguments: memory, key, beta, gate, w_previous, shift, gamma as in `ntm_address`.
    """

    def call(self, memory, key, beta, gate, w_previous, shift, gamma):
        return ntm_address(memory, key, beta, gate, w_previous, shift, gamma)
