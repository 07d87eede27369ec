"""Exercise 8-3 — self-attention, and what it costs next to convolution and recurrence.

NNDL §8.3, equations (8.16)–(8.22), and exercise 8-3: compare convolutional, recurrent, fully
connected and self-attention layers. You write a self-attention layer (with an optional causal
mask), then the numbers that the comparison rests on, after Vaswani et al. 2017, Table 1: the
operations one layer costs, and the longest path a signal travels between two positions.

Grade your work with `grader check 8-3`. The layer is called in float64 (and once in float32)
with the grader's kernels; its outputs AND gradients (w.r.t. the input and the three kernels) are
compared with the reference. Shapes vary on purpose: batch 1 and several, n = 1, d_x, d_k and d_v
all different, and square kernels. The functions are checked for many n, d and k, called with
keyword arguments: keep the names and signatures below. The written comparison goes in
`exercises/answers/8-3.md` (read by your instructor, not by the grader).

Parts: SelfAttention 3, causal mask 1, layer_complexity 2, maximum_path_length 2 — 8 points,
plus the written comparison, 2 points for the instructor.
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
        queries = ops.matmul(inputs, self.query_kernel)
        keys = ops.matmul(inputs, self.key_kernel)
        values = ops.matmul(inputs, self.value_kernel)
        scores = ops.einsum("bik,bjk->bij", queries, keys)
        scores = scores / ops.sqrt(ops.cast(self.key_dim, scores.dtype))
        if self.causal:
            positions = ops.arange(ops.shape(scores)[-1])
            allowed = ops.expand_dims(positions, 1) <= ops.expand_dims(positions, 0)
            scores = ops.where(allowed, scores, ops.cast(-1e9, scores.dtype))
        attention = ops.softmax(scores, axis=-1)
        return ops.einsum("bij,bjv->biv", attention, values)

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
    pairs = n * n
    return pairs * d


def recurrent_complexity(n, d):
    """Multiplications for the n state updates U h_{t-1}, U of shape d × d."""
    cost_per_step = d * d
    return n * cost_per_step


def convolution_complexity(n, d, k):
    """Multiplications of a convolution of kernel width k over n positions, d channels in and out.

    Each of the n outputs sums k taps; each tap is a d × d matrix times a d-vector.
    """
    cost_per_position = k * d * d
    return n * cost_per_position


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
    if kind == "self_attention":
        return 1
    if kind == "recurrent":
        return n
    if kind == "convolution":
        return -(-(n - 1) // (k - 1))
    if kind == "dilated_convolution":
        layers, receptive_field = 0, 1
        while receptive_field < n:
            receptive_field *= k
            layers += 1
        return layers
    raise ValueError(f"kind must be one of {PATH_KINDS}, received {kind!r}")
