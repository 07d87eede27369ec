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
    """Boolean mask of the valid positions: valid_lens (...,) -> mask (..., maxlen).

    mask[..., j] is True for j < valid_lens[...] (the first valid_lens positions are real
    tokens) and False for the padding after them. valid_lens holds integers between 0 and
    maxlen (the grader passes int64 arrays of shape (B,) or (B, Tq)); maxlen is an int.
    Compare with `ops.less`: TensorFlow's `<` refuses to compare int32 with int64 tensors.
    """
    raise NotImplementedError("练习 masked-softmax：把位置 0 .. maxlen-1 与每个长度比较（广播）")


def masked_softmax(scores, valid_lens=None):
    """Softmax over the last axis that keeps only the first valid_lens keys (d2l style).

    scores (B, Tq, Tk) float. valid_lens: None (a plain softmax), an int array (B,) (one
    length per example, the same for all its queries) or (B, Tq) (one length per query).
    Returns weights (B, Tq, Tk): weights[b, i, j] = 0 for j >= the length; the kept weights
    of a row sum to one; a row of length 0 is all zeros (not NaN, not uniform). Stable for
    large scores (about a thousand). Hint: `sequence_mask`, then `masked_softmax_from_mask`.
    """
    raise NotImplementedError("练习 masked-softmax：长度 (B,) 作用在打分的哪些轴上？然后掩码，再做 softmax")


def masked_softmax_from_mask(scores, mask):
    """Softmax over the last axis of scores where mask is True; zero where it is False.

    scores (B, Tq, Tk) float; mask bool, broadcastable to scores: (B, Tq, Tk), a padding
    mask (B, 1, Tk) or a causal mask (Tq, Tk). True means "keep". Returns (B, Tq, Tk) with
    exact zeros at masked positions and all-zero rows where every key is masked.
    """
    raise NotImplementedError("练习 masked-softmax：把被掩码的打分填成一个很大的负数，做 softmax，再把它们置零")


class MaskedAttentionPooling(keras.layers.Layer):
    """Attention pooling over the valid keys only: out = masked_softmax(scores, lens) @ values.

    The layer has no weights. The grader passes every input of a layer in the layer's dtype,
    so valid_lens arrives as a float tensor holding whole numbers; a length is not something
    to differentiate, and the gradient with respect to it must be zero.
    """

    def call(self, scores, values, valid_lens):
        """scores (B, Tq, Tk), values (B, Tk, d_v), valid_lens (B,) or (B, Tq) -> (B, Tq, d_v).

        out[b, i] = Σ_j α[b, i, j] values[b, j] with α = masked_softmax(scores, valid_lens):
        a query whose keys are all masked gives a zero vector. Gradients with respect to the
        scores and the values are checked too: they must be finite (no NaN) everywhere,
        including the fully masked rows, and zero for the masked scores.
        """
        raise NotImplementedError("练习 masked-softmax：带掩码的权重，再与值做批量矩阵乘积")
