"""实验：多头注意力——在 h 个投影空间中做 h 个注意力，再拼接起来。

NNDL 8.2.1.3 (8.11) 和 8.3（多头自注意力）；Vaswani 等人 2017；博客：

    head_i = softmax(Q_i K_iᵀ / √d_k) V_i,   Q_i = query W_Q[:, i],  K_i = key W_K[:, i],
    V_i = value W_V[:, i],   MultiHead = concat(head_1, ..., head_h) W_O

所有头一次算出：用一个 (d, h·d_k) 的 kernel 投影，再把最后一个轴拆成 h 个大小为 d_k 的头，并把头的轴
移到批次轴旁边，(B, T, h·d_k) → (B, h, T, d_k)。第 i 个头拥有每个投影的第 i·d_k .. (i+1)·d_k - 1 列
（即 `keras.layers.MultiHeadAttention` 的 kernel 展平后的布局）。注意力之后，逆向的变换
(B, h, T, d_v) → (B, T, h·d_v) 按顺序把各头拼接起来，再乘以 W_O。

用 `grader check mha` 为你的作业评分。这些函数以 NumPy float64 数组调用；这个层以 float64（以及一次
float32）调用，使用评分程序按名称设置的权重，它的输出和梯度（关于 query、key、value 和四个 kernel）
都与参考答案比较。形状是变化的：批量为 1 和多个、Tq != Tk、一个头、d_k != d_v。保持下面的名称、
`build` 方法和签名不变。

各部分：split_heads 2，merge_heads 1，MultiHeadAttention 5——共 8 分。
"""

import keras
from keras import ops


def split_heads(x, num_heads):
    """(B, T, num_heads·d) -> (B, num_heads, T, d)：头 i 得到特征 i·d .. (i+1)·d - 1。

    out[b, i, t, j] = x[b, t, i·d + j]。把最后一个轴变形为 (num_heads, d)，再把头的轴放到时
    间轴之前（仅靠 reshape 无法移动一个轴）。
    """
    raise NotImplementedError("练习 mha：reshape 成 (B, T, h, d)，再转置成 (B, h, T, d)")


def merge_heads(x):
    """(B, num_heads, T, d) -> (B, T, num_heads·d)：各个头按顺序拼接。

    out[b, t, i·d + j] = x[b, i, t, j]；merge_heads(split_heads(x, h)) == x。
    """
    raise NotImplementedError("练习 mha：转置成 (B, T, h, d)，再把最后两个轴 reshape 成一个")


class MultiHeadAttention(keras.layers.Layer):
    """多头注意力，投影核的形状为 (d, h·d_k)，没有偏置。

    参数：num_heads h；key_dim d_k，每个头的查询和键的维数；value_dim d_v，每个头的值的维数
    （默认等于 key_dim）；output_dim，输出的维数（默认等于查询的维数 d_q）。
    """

    def __init__(self, num_heads, key_dim, value_dim=None, output_dim=None, **kwargs):
        # 已给出：不属于练习。
        super().__init__(**kwargs)
        self.num_heads = num_heads
        self.key_dim = key_dim
        self.value_dim = value_dim or key_dim
        self.output_dim = output_dim

    def build(self, query_shape, key_shape, value_shape):
        # 已给出：不属于练习。保持权重的名称不变。
        h = self.num_heads
        output_dim = self.output_dim or query_shape[-1]
        self.query_kernel = self.add_weight(
            name="query_kernel", shape=(query_shape[-1], h * self.key_dim)
        )
        self.key_kernel = self.add_weight(
            name="key_kernel", shape=(key_shape[-1], h * self.key_dim)
        )
        self.value_kernel = self.add_weight(
            name="value_kernel", shape=(value_shape[-1], h * self.value_dim)
        )
        self.output_kernel = self.add_weight(
            name="output_kernel", shape=(h * self.value_dim, output_dim)
        )

    def call(self, query, key, value):
        """query (B, Tq, d_q), key (B, Tk, d_k), value (B, Tk, d_v) -> (B, Tq, output_dim)。

        投影（query @ query_kernel, ...），拆分成多个头，每个头计算打分 Q Kᵀ / √key_dim（key_dim
        是一个头的维数），在各个键上做 softmax，对值加权，合并各个头，再用 output_kernel 投影。
        保持输入的 dtype。
        """
        raise NotImplementedError("练习 mha：投影，split_heads，每个头做缩放点积注意力，合并，乘以 W_O")
