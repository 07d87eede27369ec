"""实验：transformer-block——一个 Transformer 编码器块：归一化、前馈网络、残差、掩码。

NNDL §8.3（自注意力）；Vaswani 等人 2017（Transformer）；Xiong 等人 2020（pre-LN）；
Zhang 和 Sennrich 2019（RMSNorm）。编码器块由多头自注意力和逐位置的前馈网络组成，每个都处在
带层归一化的残差连接之中。最初的块在每次残差求和之后做归一化（post-LN）：

    h = LN_1(x + MHA(x)),         out = LN_2(h + FFN(h))

此后大多数模型改为对每个子层的输入做归一化（pre-LN）：

    h = x + MHA(LN_1(x)),         out = h + FFN(LN_2(h))

其中 LN(x) = γ ⊙ (x − μ) / √(σ² + ε) + β 在每个词元的特征上计算（σ² 为有偏方差），
FFN(x) = max(0, x W_1 + b_1) W_2 + b_2。一个批次中的序列被填充到同一长度 T：查询只关注其序列中
j < length 的键；在因果块（解码器的自注意力）中还只关注 j ≤ i 的键。

用 `grader check transformer-block` 为你的作业评分。这些函数以 float64（以及一次 float32）的
NumPy 数组调用。块以 float64（以及一次 float32）调用，权重由评分器按名称设置；它的输出以及梯度
（关于 x 和全部十二个权重）与参考答案比较，包括 post-LN 和 pre-LN，以及填充和因果掩码。
保持名称、`build` 方法和下面的签名不变；使用 `keras.ops`。

各部分：layer_norm 2，rms_norm 1，feed_forward 1，attention_mask 2，post-LN block 2，
pre-LN block 2，masked block 2——共 12 分。
"""

import math

import keras
from keras import ops


def layer_norm(x, gamma, beta, epsilon=1e-5):
    """在最后一个轴（每个词元的特征）上做层归一化。

    Args:
        x: (..., d)。gamma, beta: (d,)，缩放 γ 和平移 β。
        epsilon: ε，加在平方根内的方差上。

    Returns:
        (..., d)：γ ⊙ (x − μ) / √(σ² + ε) + β，其中 μ 和 σ² = mean((x − μ)²)（有偏方差，
        除以 d）在每个词元的最后一个轴上计算。
    """
    raise NotImplementedError("练习 transformer-block：在最后一个轴上求均值和有偏方差，归一化，再缩放和平移")


def rms_norm(x, gamma, epsilon=1e-6):
    """在最后一个轴上做 RMSNorm：不减均值，不平移。

    Args:
        x: (..., d)。gamma: (d,)。epsilon: ε，加在均方上。

    Returns:
        (..., d)：γ ⊙ x / √(mean(x²) + ε)，均值在每个词元的最后一个轴上计算。
    """
    raise NotImplementedError("练习 transformer-block：在最后一个轴上求均方根，再乘以 gamma")


def feed_forward(x, ff_kernel_1, ff_bias_1, ff_kernel_2, ff_bias_2):
    """逐位置的前馈网络：max(0, x W_1 + b_1) W_2 + b_2。

    Args:
        x: (..., d)。ff_kernel_1: (d, f)，ff_bias_1: (f,)，ff_kernel_2: (f, d)，
        ff_bias_2: (d,)。

    Returns:
        (..., d)，对每个词元应用同一个网络。
    """
    raise NotImplementedError("练习 transformer-block：第一层、ReLU、第二层（其后没有激活函数）")


def attention_mask(lengths, steps, causal=False):
    """在一批填充后的序列中，每个查询可以关注哪些键。

    Args:
        lengths: (B,)，每个序列的真实词元数，1 <= length <= steps
            （整数，可能放在浮点数组中）。
        steps: T，填充后的长度。
        causal: 若为 True，查询 i 还只能看到键 j <= i。

    Returns:
        (B, T, T) 布尔值：查询 i（序列 b）可以关注键 j 时 mask[b, i, j] 为 True：
        j < lengths[b]（填充隐藏的是键），并且在因果时 j <= i。
    """
    raise NotImplementedError("练习 transformer-block：把键的位置与长度比较；若为因果，还要 j <= i")


def multi_head_self_attention(x, mask, kernels, num_heads):
    """已给出：不属于练习（实验 mha）。x (B, T, d) 的自注意力，`num_heads`
    个头，每个头的维度为 d / num_heads，核（查询、键、值、输出）均为 (d, d)，
    被掩盖的打分在 softmax 之前设为 -1e9；(B, T, d)。
    """
    query_kernel, key_kernel, value_kernel, output_kernel = kernels
    batch, steps, features = ops.shape(x)
    depth = features // num_heads

    def heads(kernel):
        projected = ops.reshape(ops.matmul(x, kernel), (batch, steps, num_heads, depth))
        return ops.transpose(projected, (0, 2, 1, 3))

    query, key, value = heads(query_kernel), heads(key_kernel), heads(value_kernel)
    scores = ops.matmul(query, ops.transpose(key, (0, 1, 3, 2))) / math.sqrt(depth)
    scores = ops.where(mask[:, None], scores, ops.cast(-1e9, scores.dtype))
    attended = ops.matmul(ops.softmax(scores, axis=-1), value)
    merged = ops.reshape(ops.transpose(attended, (0, 2, 1, 3)), (batch, steps, features))
    return ops.matmul(merged, output_kernel)


class TransformerEncoderBlock(keras.layers.Layer):
    """一个编码器块：自注意力和前馈网络，带残差和层归一化。

    Args: num_heads，ff_dim（f，前馈网络的隐藏层大小），norm_first（False：post-LN，
    True：pre-LN），causal（查询是否只能看到键 j <= i），epsilon（层归一化的
    ε）。
    """

    def __init__(
        self, num_heads=1, ff_dim=8, norm_first=False, causal=False, epsilon=1e-5, **kwargs
    ):
        # 已给出：不属于练习。
        super().__init__(**kwargs)
        self.num_heads, self.ff_dim, self.epsilon = num_heads, ff_dim, epsilon
        self.norm_first, self.causal = norm_first, causal

    def build(self, x_shape, lengths_shape):
        # 已给出：不属于练习。保持权重的名称不变。
        d, f = x_shape[-1], self.ff_dim
        for name in ("query_kernel", "key_kernel", "value_kernel", "output_kernel"):
            setattr(self, name, self.add_weight(name=name, shape=(d, d)))
        self.ff_kernel_1 = self.add_weight(name="ff_kernel_1", shape=(d, f))
        self.ff_bias_1 = self.add_weight(name="ff_bias_1", shape=(f,), initializer="zeros")
        self.ff_kernel_2 = self.add_weight(name="ff_kernel_2", shape=(f, d))
        self.ff_bias_2 = self.add_weight(name="ff_bias_2", shape=(d,), initializer="zeros")
        for norm in ("norm_1", "norm_2"):
            gamma = self.add_weight(name=f"{norm}_gamma", shape=(d,), initializer="ones")
            beta = self.add_weight(name=f"{norm}_beta", shape=(d,), initializer="zeros")
            setattr(self, f"{norm}_gamma", gamma)
            setattr(self, f"{norm}_beta", beta)

    def attend(self, y, mask):
        """已给出：MHA(y)，这个块在 `mask` 下的多头自注意力。"""
        kernels = (self.query_kernel, self.key_kernel, self.value_kernel, self.output_kernel)
        return multi_head_self_attention(y, mask, kernels, self.num_heads)

    def ffn(self, y):
        """已给出：FFN(y)，这个块的 `feed_forward`。"""
        return feed_forward(y, self.ff_kernel_1, self.ff_bias_1, self.ff_kernel_2, self.ff_bias_2)

    def norm_1(self, y):
        """已给出：LN_1，注意力子层的层归一化。"""
        return layer_norm(y, self.norm_1_gamma, self.norm_1_beta, self.epsilon)

    def norm_2(self, y):
        """已给出：LN_2，前馈子层的层归一化。"""
        return layer_norm(y, self.norm_2_gamma, self.norm_2_beta, self.epsilon)

    def call(self, x, lengths):
        """x (B, T, d)，lengths (B,) -> (B, T, d)。

        用 `attention_mask(lengths, T, self.causal)` 构造掩码；两个子层是 `self.attend(y, mask)`
        （MHA）和 `self.ffn(y)`（FFN），它们的归一化是 `self.norm_1` 和 `self.norm_2`。
        Post-LN：h = LN_1(x + MHA(x))，out = LN_2(h + FFN(h))。Pre-LN（norm_first）：
        h = x + MHA(LN_1(x))，out = h + FFN(LN_2(h))。
        """
        raise NotImplementedError("练习 transformer-block：这些长度和 T 的掩码，self.causal 时为因果掩码")
        if self.norm_first:
            raise NotImplementedError("练习 transformer-block：pre-LN：对每个子层的输入做归一化，再加上它的输出")
        raise NotImplementedError("练习 transformer-block：post-LN：把每个子层的输出加到它的输入上，再做归一化")
