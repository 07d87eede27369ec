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
    """Single-head self-attention, NNDL (8.16)–(8.22): H = softmax(Q Kᵀ / √d_k) V.

    The book writes vectors as columns (Q = W_q X with X of shape (D_x, N)); Keras keeps
    sequences as rows, so here X is (B, N, d_x) and Q = X W_q with W_q of shape (d_x, d_k):
    the same computation, transposed.

    Args:
        key_dim: d_k, the size of the queries and keys.
        value_dim: d_v, the size of the values and of the output; defaults to key_dim.
        causal: if True, position i attends only to positions j <= i (a decoder's mask).
    """

    def __init__(self, key_dim, value_dim=None, causal=False, **kwargs):
        # Given: not part of the exercise.
        super().__init__(**kwargs)
        self.key_dim = int(key_dim)
        self.value_dim = self.key_dim if value_dim is None else int(value_dim)
        self.causal = bool(causal)

    def build(self, input_shape):
        # Given: not part of the exercise. Keep the weights' names.
        d_x = input_shape[-1]
        self.query_kernel = self.add_weight(name="query_kernel", shape=(d_x, self.key_dim))
        self.key_kernel = self.add_weight(name="key_kernel", shape=(d_x, self.key_dim))
        self.value_kernel = self.add_weight(name="value_kernel", shape=(d_x, self.value_dim))

    def call(self, inputs):
        """inputs X (B, N, d_x) -> H (B, N, d_v).

        Q = X W_q, K = X W_k (B, N, d_k), V = X W_v (B, N, d_v); the scores
        S = Q Kᵀ / √d_k (B, N, N), S[b, i, j] scores query i against key j; the attention
        weights A = softmax(S) normalise each query's row over the keys j; H = A V.
        With `self.causal`, the scores S[b, i, j] with j > i are excluded before the softmax,
        so every row of A still sums to one (fill them with a large negative number such as
        -1e9, or use ops.where). The output keeps the dtype of the inputs.
        """
        raise NotImplementedError("练习 8-3：把 X 投影三次，用 Q 对 K 打分，掩码，在键上做 softmax，混合 V")

    def get_config(self):
        # Given: not part of the exercise.
        config = super().get_config()
        config.update(key_dim=self.key_dim, value_dim=self.value_dim, causal=self.causal)
        return config


# Operations per layer, after Vaswani et al. 2017, Table 1, for a sequence of n vectors of size
# d. Count the multiplications of the term the table keeps, and nothing else (no projections, no
# additions, no constant factors): for self-attention the scores of every query with every key;
# for a recurrent layer the state updates U h_{t-1}, one per position; for a convolution of kernel
# width k the kernel taps, each a d × d matrix times a d-vector, at every position.


def self_attention_complexity(n, d):
    """Multiplications for the scores q_i · k_j of all n queries against all n keys (size d)."""
    raise NotImplementedError("练习 8-3：一共有多少对（查询，键）？一次点积要多少运算？")


def recurrent_complexity(n, d):
    """Multiplications for the n state updates U h_{t-1}, U of shape d × d."""
    raise NotImplementedError("练习 8-3：n 步，每步一个 d × d 矩阵乘以一个 d 维向量")


def convolution_complexity(n, d, k):
    """Multiplications of a convolution of kernel width k over n positions, d channels in and out.

    Each of the n outputs sums k taps; each tap is a d × d matrix times a d-vector.
    """
    raise NotImplementedError("练习 8-3：每个输出位置 k 个抽头，共 n 个位置，每个抽头一次 d × d 乘积")


def maximum_path_length(kind, n, k=None):
    """Layers a signal passes through from the first position to the last (n >= 2 positions).

    The path length between input x_1 and output h_n is the number of edges on the shortest
    path between them in the computation graph, where one edge is one application of a layer
    or of the recurrent cell. `kind` is one of:

    - "self_attention": one self-attention layer;
    - "recurrent": one recurrent layer (x_1 enters the cell at step 1, h_n leaves it at step n);
    - "convolution": a stack of causal convolutions of kernel width k >= 2 (output t sees
      inputs t-k+1 … t), as many layers as needed to connect x_1 to h_n;
    - "dilated_convolution": the same with dilations 1, k, k², … (layer l sees inputs
      t, t - k^l, …, t - (k-1)·k^l).

    Return a whole number. Vaswani et al. give these as O(1), O(n), O(n/k) and O(log_k n);
    here you give the exact count. Raise ValueError for another kind. Careful with floating
    point: math.log(125, 5) is not exactly 3.
    """
    raise NotImplementedError("练习 8-3：一层能往前够到多远？找出够到 n - 1 个位置所需的最少层数")
