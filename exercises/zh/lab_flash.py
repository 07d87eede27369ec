"""实验：flash——用在线 softmax 按键分块计算精确注意力（FlashAttention 的前向计算）。

NNDL §8.2（注意力汇聚）和 §8.3；Milakov 和 Gimelshein 2018（在线 softmax）；Rabe 和 Staats
2021；Dao 等人 2022（FlashAttention）。注意力 softmax(QKᵀ/√d)V 会构造一个 (Tq, Tk) 的打分矩阵。
其实不必：每次处理一个键块，为每个查询保存运行最大值 m、运行和 l 以及未归一化的运行输出 o。
处理完一个打分为 s_j = q·k_j / √d 的块之后：

    m' = max(m, max_j s_j)
    l' = l e^(m − m') + Σ_j e^(s_j − m')
    o' = o e^(m − m') + Σ_j e^(s_j − m') v_j

最后一个块之后，output = o / l，L = m + log l = log Σ_j e^(s_j)，即反向传播保存下来的
log-sum-exp，用它可以不经完整的 softmax 重新算出任意块的权重 p_j = e^(s_j − L)。减去运行最大值
使每个 e^(·) ≤ 1：±1000 的打分也不会溢出。

一个查询的状态是一行：state[..., 0] = m，state[..., 1] = l，state[..., 2:] = o，形状为
(B, Tq, 2 + d_v)；`empty_state`（已给出）是任何键之前的状态（m = −∞，l = 0，o = 0）。

用 `grader check flash` 为你的作业评分。这些函数以 float64（以及一次 float32）的 NumPy 数组
调用。评分器每次只给 `online_softmax_step` 和 `block_weights` 一个键块，并附上它用自己不发送的
键算出的状态和 log-sum-exp；`flash_forward` 必须从给定状态出发，返回每个块之后的状态；层的梯度
穿过你的 `flash_attention` 求得。保持名称和签名不变。

各部分：online_softmax_step 3，flash_forward 3，output and log-sum-exp 2，block_weights 1，
gradients 1——共 10 分。
"""

import math

import keras
from keras import ops


def empty_state(query, value):
    """已给出：不属于练习。任何键之前的状态，(B, Tq, 2 + d_v)：m = −∞，
    l = 0，o = 0，dtype 与查询相同。
    """
    batch, queries = ops.shape(query)[0], ops.shape(query)[1]
    running_max = ops.full((batch, queries, 1), float("-inf"), dtype=query.dtype)
    return ops.concatenate(
        [running_max, ops.zeros((batch, queries, 1 + ops.shape(value)[-1]), query.dtype)], -1
    )


def online_softmax_step(state, query, key_block, value_block):
    """再处理一个键块之后的状态。

    Args:
        state: (B, Tq, 2 + d_v)，到目前为止见过的键的 [m, l, o]（或空状态）。
        query: (B, Tq, d)。key_block: (B, Bk, d)。value_block: (B, Bk, d_v)。

    Returns:
        (B, Tq, 2 + d_v)：[m', l', o']，其中 s_j = q·k_j / √d 取遍这个块的键，
        m' = max(m, max_j s_j)，l' = l e^(m − m') + Σ_j e^(s_j − m')，
        o' = o e^(m − m') + Σ_j e^(s_j − m') v_j。永远不要计算未平移的 e^(s_j)。
    """
    raise NotImplementedError("练习 flash：这个块的打分、新的最大值、重新缩放旧的和与输出、再加上")


def flash_forward(state, query, key, value, block_size):
    """从 `state` 出发，以每块 `block_size` 个键遍历所有键。

    Args:
        state: (B, Tq, 2 + d_v)，这些键之前见过的键的状态（或空状态）。
        query: (B, Tq, d)。key: (B, Tk, d)。value: (B, Tk, d_v)。
        block_size: 每块的键数；不能整除 Tk 时最后一块较短。

    Returns:
        (n_blocks, B, Tq, 2 + d_v)：每个块之后的状态，n_blocks = ⌈Tk / block_size⌉。
    """
    raise NotImplementedError("练习 flash：每个块一次 online_softmax_step，每次从上一个块的状态出发")


def flash_attention(query, key, value, block_size):
    """按键分块计算的 softmax(QKᵀ/√d)V：(B, Tq, d), (B, Tk, d), (B, Tk, d_v) ->
    (B, Tq, d_v)，即（从空状态出发的）最终状态的 o / l。
    """
    raise NotImplementedError("练习 flash：flash_forward 从空状态出发的最后一个状态，o 除以 l")


def saved_logsumexp(query, key, value, block_size):
    """反向传播保存的 log-sum-exp：最终状态的 L = m + log l，(B, Tq)，
    等于对全部键的 log Σ_j e^(s_j)。
    """
    raise NotImplementedError("练习 flash：flash_forward 从空状态出发的最后一个状态，m + log l")


def block_weights(query, key_block, logsumexp):
    """由保存的 log-sum-exp 重新算出的一个块的注意力权重（反向传播）。

    Args:
        query: (B, Tq, d)。key_block: (B, Bk, d)，部分键。
        logsumexp: (B, Tq)，全部键的 L（其中大部分不在这个块里）。

    Returns:
        (B, Tq, Bk)：p_j = e^(q·k_j / √d − L)，即完整 softmax 中属于这个块的各列。
    """
    raise NotImplementedError("练习 flash：这个块缩放后的打分减去 L，再求指数")


class FlashAttention(keras.layers.Layer):
    """已给出：不属于练习。把你的 `flash_attention` 包装成层，以便评分器
    求它关于查询、键和值的梯度。
    """

    def __init__(self, block_size=2, **kwargs):
        super().__init__(**kwargs)
        self.block_size = block_size

    def call(self, query, key, value):
        return flash_attention(query, key, value, self.block_size)
