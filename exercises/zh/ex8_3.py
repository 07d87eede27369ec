"""练习 8-3——自注意力，以及它与卷积、循环网络相比的代价。

NNDL §8.3，公式 (8.16)–(8.22)，以及习题 8-3：比较卷积层、循环层、全连接层和自注意力层。你要写一个
自注意力层（可选因果掩码），再算出这一比较所依据的数值（参照 Vaswani 等人 2017 年论文的表 1）：
一层的运算量，以及信号在两个位置之间传递的最长路径。

用 `grader check 8-3` 为你的作业评分。这个层以 float64（以及一次 float32）调用，使用评分程序给的
kernel；它的输出和梯度（关于输入和三个 kernel）都与参考答案比较。形状是有意变化的：批量为 1 和
多个、n = 1、d_x、d_k 和 d_v 各不相同，以及方阵 kernel。各函数会用多种 n、d 和 k 以关键字参数
调用：保持下面的名称和签名不变。书面比较写在 `exercises/answers/8-3.md`（由你的教师评阅，评分程序
不读）。

各部分：SelfAttention 3，因果掩码 1，layer_complexity 2，maximum_path_length 2——共 8 分，
另有书面比较 2 分，由教师评阅。
"""

import keras
from keras import ops

PATH_KINDS = ("self_attention", "recurrent", "convolution", "dilated_convolution")


class SelfAttention(keras.layers.Layer):
    """单头自注意力，NNDL (8.16)–(8.22)：H = softmax(Q Kᵀ / √d_k) V。

    书中把向量写成列（Q = W_q X，X 的形状为 (D_x, N)）；Keras 把序列按行存放，所以这里 X 为
    (B, N, d_x)，Q = X W_q，W_q 的形状为 (d_x, d_k)：计算相同，只是转置了。

    参数：
        key_dim：d_k，查询和键的维数。
        value_dim：d_v，值和输出的维数；默认等于 key_dim。
        causal：为 True 时，位置 i 只注意位置 j <= i（解码器的掩码）。
    """

    def __init__(self, key_dim, value_dim=None, causal=False, **kwargs):
        # 已给出：不属于练习。
        super().__init__(**kwargs)
        self.key_dim = int(key_dim)
        self.value_dim = self.key_dim if value_dim is None else int(value_dim)
        self.causal = bool(causal)

    def build(self, input_shape):
        # 已给出：不属于练习。保持权重的名称不变。
        d_x = input_shape[-1]
        self.query_kernel = self.add_weight(name="query_kernel", shape=(d_x, self.key_dim))
        self.key_kernel = self.add_weight(name="key_kernel", shape=(d_x, self.key_dim))
        self.value_kernel = self.add_weight(name="value_kernel", shape=(d_x, self.value_dim))

    def call(self, inputs):
        """输入 X (B, N, d_x) -> H (B, N, d_v)。

        Q = X W_q，K = X W_k (B, N, d_k)，V = X W_v (B, N, d_v)；打分 S = Q Kᵀ / √d_k (B, N, N)，
        S[b, i, j] 是查询 i 对键 j 的打分；注意力分布 A = softmax(S) 把每个查询的那一行在各个键 j
        上归一化；H = A V。设置了 `self.causal` 时，j > i 的打分 S[b, i, j] 要在 softmax 之前排
        除，这样 A 的每一行之和仍为一（用一个很大的负数如 -1e9 填充它们，或使用 ops.where）。输
        出保持输入的 dtype。
        """
        raise NotImplementedError("练习 8-3：把 X 投影三次，用 Q 对 K 打分，掩码，在键上做 softmax，混合 V")

    def get_config(self):
        # 已给出：不属于练习。
        config = super().get_config()
        config.update(key_dim=self.key_dim, value_dim=self.value_dim, causal=self.causal)
        return config


# 每层的运算量，依据 Vaswani 等人 2017 年论文的表 1，序列有 n 个大小为 d 的向量。只数表中保留的那一
# 项的乘法次数，其他都不数（不数投影、不数加法、不计常数因子）：自注意力数每个查询与每个键的打分；循
# 环层数状态更新 U h_{t-1}，每个位置一次；宽度为 k 的卷积数卷积核的各个抽头，每个抽头是一个 d × d 矩
# 阵乘以一个 d 维向量，每个位置都要算。


def self_attention_complexity(n, d):
    """n 个查询与 n 个键（维数为 d）两两打分 q_i · k_j 所需的乘法次数。"""
    raise NotImplementedError("练习 8-3：一共有多少对（查询，键）？一次点积要多少运算？")


def recurrent_complexity(n, d):
    """n 次状态更新 U h_{t-1} 所需的乘法次数，U 的形状为 d × d。"""
    raise NotImplementedError("练习 8-3：n 步，每步一个 d × d 矩阵乘以一个 d 维向量")


def convolution_complexity(n, d, k):
    """宽度为 k 的卷积在 n 个位置上、输入输出各 d 个通道时的乘法次数。

    n 个输出中的每一个都是 k 个抽头之和；每个抽头是一个 d × d 矩阵乘以一个 d 维向量。
    """
    raise NotImplementedError("练习 8-3：每个输出位置 k 个抽头，共 n 个位置，每个抽头一次 d × d 乘积")


def maximum_path_length(kind, n, k=None):
    """信号从第一个位置到最后一个位置所经过的层数（n >= 2 个位置）。

    输入 x_1 与输出 h_n 之间的路径长度，是计算图中它们之间最短路径上的边数，一条边就是一次应
    用一个层或一次应用循环单元。`kind` 是下列之一：

    - "self_attention"：一个自注意力层；
    - "recurrent"：一个循环层（x_1 在第 1 步进入循环单元，h_n 在第 n 步离开它）；
    - "convolution"：宽度为 k >= 2 的因果卷积的堆叠（输出 t 看到输入 t-k+1 … t），层数为连通
      x_1 与 h_n 所需的层数；
    - "dilated_convolution"：同上，但膨胀率为 1, k, k², …（第 l 层看到输入 t, t - k^l, …, t -
      (k-1)·k^l）。

    返回一个整数。Vaswani 等人给出的是 O(1)、O(n)、O(n/k) 和 O(log_k n)；这里你要给出精确的
    层数。其他 kind 抛出 ValueError。小心浮点数：math.log(125, 5) 并不恰好等于 3。
    """
    raise NotImplementedError("练习 8-3：一层能往前够到多远？找出够到 n - 1 个位置所需的最少层数")
