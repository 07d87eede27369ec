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
# 端到端记忆网络（NNDL §8.5.1）：只读、基于内容、多跳。
# --------------------------------------------------------------------------------------------


def memn2n_hop(query, memory_in, memory_out):
    """端到端记忆网络的一跳：读取记忆，把读到的内容加到查询上。

    p_i = softmax_i(a_iᵀ q)       （a_i = memory_in[b, i]，寻址向量）
    o   = Σ_i p_i c_i             （c_i = memory_out[b, i]，输出向量）
    return q + o                  （下一跳的查询）

    参数：
        query：q，形状 (B, d)。
        memory_in：寻址记忆 A，形状 (B, n, d)：n 个记忆片段。
        memory_out：输出记忆 C，形状 (B, n, d)。

    返回：
        下一个查询 q + o，形状 (B, d)。softmax 在每个批次行的 n 个记忆片段上进行。
    """
    raise NotImplementedError("练习 8-5：在各片段上对 memory_in·q 做 softmax，给 memory_out 加权，再加上 q")


def memn2n_read(query, memory_in, memory_out, hops):
    """用相同的记忆做 `hops` 跳 `memn2n_hop`（逐层权重共享）。

    q^(1) = query;  q^(k+1) = q^(k) + o^(k)  for k = 1 .. hops;  return q^(hops + 1).

    网络的回答模块随后根据这里的返回值做预测：Sukhbaatar 等人的 â = softmax(W (o^(K) +
    q^(K))) 用的正是 q^(K+1)。

    参数：
        query：形状 (B, d)。
        memory_in, memory_out：形状各为 (B, n, d)，每一跳都相同。
        hops：int K ≥ 1。

    返回：
        形状 (B, d)。
    """
    raise NotImplementedError("练习 8-5：调用 memn2n_hop `hops` 次，把它的返回值传回去")


class MemN2NRead(keras.layers.Layer):
    """已给出：不属于练习。把 `memn2n_read` 包成一个层，以便检查梯度。

    调用参数：query (B, d), memory_in (B, n, d), memory_out (B, n, d)。
    """

    def __init__(self, hops=1, **kwargs):
        super().__init__(**kwargs)
        self.hops = hops

    def call(self, query, memory_in, memory_out):
        return memn2n_read(query, memory_in, memory_out, self.hops)


# --------------------------------------------------------------------------------------------
# 神经图灵机的寻址（NNDL §8.5.2；Graves 等人 2014，§3.3）：先按内容，再按位置。记忆 M 有 N 行（记忆
# 片段），每行宽为 W；一个读写头，每个批次行一组权重。
# --------------------------------------------------------------------------------------------


def content_weights(memory, key, beta):
    """按内容寻址：键与每一行的余弦相似度，乘以 β，再做 softmax。

    w^c_i = exp(β K(k, M_i)) / Σ_j exp(β K(k, M_j)),    K(u, v) = uᵀv / (‖u‖ ‖v‖)

    β ≥ 0 是键强度：β = 0 给出均匀的权重，β 很大时聚焦在最匹配的行上。评分程序用到的 β 可达
    一千左右：使用数值稳定的 softmax。它从不传入全零的行或键（在范数中加一个不超过 1e-8 的
    epsilon 也无妨）。

    参数：
        memory：M，形状 (B, N, W)。
        key：k，形状 (B, W)。
        beta：β，形状 (B,)：每个批次行一个。

    返回：
        w^c，形状 (B, N)；每行之和为 1。
    """
    raise NotImplementedError("练习 8-5：余弦（点积除以两个范数），乘以 beta，在 N 个片段上做 softmax")


def interpolate(w_content, w_previous, gate):
    """插值门：w^g = g w^c + (1 − g) w_prev。

    g = 1 保留内容权重；g = 0 忽略内容，保留上一步的权重（这样按位置的寻址可以从上次停下的地
    方继续）。

    参数：
        w_content：w^c，形状 (B, N)。
        w_previous：w_prev，形状 (B, N)。
        gate：g，在 [0, 1] 内，形状 (B,)。

    返回：
        w^g，形状 (B, N)。
    """
    raise NotImplementedError("练习 8-5：g 乘以内容权重，加上 (1 - g) 乘以上一步的权重")


def circular_shift(weights, shift):
    """按位置寻址：权重与移位分布的循环卷积。

    w̃_i = Σ_{o=−k}^{k} s_o w_{(i − o) mod N}

    `shift` 每行有 2k + 1 个元素，依次对应偏移量 −k, …, +k：shift[:, j] 是偏移量 j − k 的概
    率。有 3 个元素时（通常的情况），顺序为 (−1, 0, +1)。偏移量 +1 把焦点向前移动一个记忆片
    段：当 s = (0, 0, 1) 时，w̃_i = w_(i−1)，所以记忆片段 i 的权重落到记忆片段 i + 1 上，最后
    一个记忆片段的权重落到记忆片段 0 上（记忆是一个环：下标按模 N 回绕，即使 N 小于 2k + 1 也
    是如此）。

    参数：
        weights：w^g，形状 (B, N)。
        shift：s，形状 (B, 2k + 1)，每行之和为 1。

    返回：
        w̃，形状 (B, N)。
    """
    raise NotImplementedError("练习 8-5：按每个偏移量 o = j - k 滚动权重，乘以 shift[:, j]，再相加")


def sharpen(weights, gamma):
    """锐化：w_i = w̃_i^γ / Σ_j w̃_j^γ，其中 γ ≥ 1。

    移位使焦点变得模糊；取 γ 次幂再重新归一化，使它重新变得尖锐。

    参数：
        weights：w̃，形状 (B, N)，元素 > 0。
        gamma：γ ≥ 1，形状 (B,)。

    返回：
        w，形状 (B, N)；每行之和为 1。
    """
    raise NotImplementedError("练习 8-5：取 gamma 次幂，再让每行除以它的和")


def ntm_address(memory, key, beta, gate, w_previous, shift, gamma):
    """一个读写头的完整神经图灵机寻址：内容 → 插值 → 移位 → 锐化。

    w = sharpen(circular_shift(interpolate(content_weights(M, k, β), w_prev, g), s), γ)

    参数：
        memory：(B, N, W)；key：(B, W)；beta, gate, gamma：(B,)；w_previous：(B, N)；
        shift：(B, 2k + 1)，偏移量 −k..k，与 `circular_shift` 中相同。

    返回：
        读写头的权重 w，形状 (B, N)。会检查关于每个参数的梯度。
    """
    raise NotImplementedError("练习 8-5：按公式的顺序串联你的四个函数")


class NTMAddressing(keras.layers.Layer):
    """已给出：不属于练习。把 `ntm_address` 包成一个层，以便检查梯度。

    调用参数：memory, key, beta, gate, w_previous, shift, gamma，与 `ntm_address` 中相同。
    """

    def call(self, memory, key, beta, gate, w_previous, shift, gamma):
        return ntm_address(memory, key, beta, gate, w_previous, shift, gamma)
