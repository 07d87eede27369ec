"""实验：带掩码的 softmax——忽略填充和未来位置的注意力分布。

NNDL (8.1) 和 (8.6)；d2l“掩蔽 softmax 操作”。一个批次中的序列长度不同，被填充到同一长度 Tk。注意力
必须让填充的权重恰好为零，而且解码器的查询 i 不能看到键 j > i（因果掩码）。因此在键上的 softmax 只在
保留的位置上进行：

    α_j = exp(s_j) / Σ_{k kept} exp(s_k) for a kept key j,    α_j = 0 for a masked key j.

（对保留的键 j 如上式，对被掩码的键 j，α_j = 0。）所有键都被掩码的一行（有效长度为 0）得到全零的
权重，而不是 NaN：它的 softmax 没有可归一化的东西。把被掩码的打分换成一个很大的有限负数（若用
-inf，全被掩码的一行会计算 exp(-inf - (-inf))，即 NaN，只有最后一步能补救），做数值稳定的 softmax，再把被掩码的位置设为恰好为零。

用 `grader check masked-softmax` 为你的作业评分。这些函数以 NumPy 数组调用（打分为 float64，长度为
int64，掩码为 bool），可以返回 NumPy 数组或张量；这个层以 float64（以及一次 float32）调用，它的输出和
梯度都与参考答案比较。评分程序还会在你返回的结果上检查：被掩码的位置恰好为零，每行之和为一（全被掩码
时为零）。保持下面的名称和签名不变。

各部分：sequence_mask 2，masked_softmax 4，masked_softmax_from_mask 2，
MaskedAttentionPooling 2——共 10 分。
"""

import keras
from keras import ops


def sequence_mask(valid_lens, maxlen):
    """有效位置的布尔掩码：valid_lens (...,) -> mask (..., maxlen)。

    当 j < valid_lens[...] 时 mask[..., j] 为 True（前 valid_lens 个位置是真实的词元），其后
    的填充为 False。valid_lens 保存 0 到 maxlen 之间的整数（评分程序传入形状为 (B,) 或 (B,
    Tq) 的 int64 数组）；maxlen 是一个 int。用 `ops.less` 比较：TensorFlow 的 `<` 拒绝比较
    int32 与 int64 张量。
    """
    raise NotImplementedError("练习 masked-softmax：把位置 0 .. maxlen-1 与每个长度比较（广播）")


def masked_softmax(scores, valid_lens=None):
    """沿最后一个轴、只保留前 valid_lens 个键的 softmax（d2l 的风格）。

    scores (B, Tq, Tk) 为浮点数。valid_lens：None（普通的 softmax）、int 数组 (B,)（每个样本
    一个长度，它的所有查询都相同）或 (B, Tq)（每个查询一个长度）。返回权重 (B, Tq, Tk)：j >=
    长度时 weights[b, i, j] = 0；一行中保留的权重之和为一；长度为 0 的行全为零（不是 NaN，也
    不是均匀分布）。对很大的打分（上千）也要数值稳定。提示：先 `sequence_mask`，再
    `masked_softmax_from_mask`。
    """
    raise NotImplementedError("练习 masked-softmax：长度 (B,) 作用在打分的哪些轴上？然后掩码，再做 softmax")


def masked_softmax_from_mask(scores, mask):
    """沿 scores 的最后一个轴、在 mask 为 True 处做 softmax；mask 为 False 处为零。

    scores (B, Tq, Tk) 为浮点数；mask 为布尔值，可广播到 scores：(B, Tq, Tk)、填充掩码 (B, 1,
    Tk) 或因果掩码 (Tq, Tk)。True 表示“保留”。返回 (B, Tq, Tk)，被掩码的位置恰好为零，所有键
    都被掩码的行全为零。被掩码位置上的分数可以是任何值，也可能远大于保留位置的分数。
    """
    raise NotImplementedError("练习 masked-softmax：把被掩码的打分填成一个很大的负数，做 softmax，再把它们置零")


class MaskedAttentionPooling(keras.layers.Layer):
    """只在有效的键上做注意力汇聚：out = masked_softmax(scores, lens) @ values。

    这个层没有权重。评分程序以层的 dtype 传入层的每个输入，所以 valid_lens 以保存整数值的浮
    点张量传入；长度不是要求导的对象，关于它的梯度必须为零。
    """

    def call(self, scores, values, valid_lens):
        """scores (B, Tq, Tk), values (B, Tk, d_v), valid_lens (B,) 或 (B, Tq) -> (B, Tq, d_v)。

        out[b, i] = Σ_j α[b, i, j] values[b, j]，其中 α = masked_softmax(scores, valid_lens)：所
        有键都被掩码的查询给出零向量。关于打分和值的梯度也会检查：它们必须处处有限（没有 NaN），
        包括完全被掩码的行，并且对被掩码的打分为零。
        """
        raise NotImplementedError("练习 masked-softmax：带掩码的权重，再与值做批量矩阵乘积")
