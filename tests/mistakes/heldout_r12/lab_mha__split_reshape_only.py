"""Lab: multi-head attention — h attentions in h projection spaces, concatenated.

NNDL 8.2.1.3 (8.11) and 8.3 (multi-head self-attention); Vaswani et al. 2017; the blog:

    head_i = softmax(Q_i K_iᵀ / √d_k) V_i,   Q_i = query W_Q[:, i],  K_i = key W_K[:, i],
    V_i = value W_V[:, i],   MultiHead = concat(head_1, ..., head_h) W_O

All heads are computed at once: project with one (d, h·d_k) kernel, then split the last axis
into h heads of size d_k and move the head axis next to the batch axis, (B, T, h·d_k) →
(B, h, T, d_k). Head i owns the columns i·d_k .. (i+1)·d_k - 1 of each projection (the layout
of `keras.layers.MultiHeadAttention`'s kernels, flattened). After attention, the inverse move
(B, h, T, d_v) → (B, T, h·d_v) concatenates the heads in order before W_O.

Grade your work with `grader check mha`. The functions are called with NumPy float64 arrays;
the layer is called in float64 (and once in float32) with the grader's weights, set by name,
and its outputs AND gradients (w.r.t. the query, key, value and the four kernels) are compared
with the reference. Shapes vary: batch 1 and several, Tq != Tk, one head, d_k != d_v. Keep the
names, the `build` method and the signatures below.

Parts: split_heads 2, merge_heads 1, MultiHeadAttention 5 — 8 points.
"""

import keras
from keras import ops


def split_heads(x, num_heads):
    """(B, T, num_heads·d) -> (B, num_heads, T, d): head i gets features i·d .. (i+1)·d - 1.

    out[b, i, t, j] = x[b, t, i·d + j]. Reshape the last axis into (num_heads, d), then put
    the head axis before the time axis (a reshape alone cannot move an axis).
    """
    batch, steps, features = x.shape
    return ops.reshape(x, (batch, num_heads, steps, features // num_heads))


def merge_heads(x):
    """(B, num_heads, T, d) -> (B, T, num_heads·d): the heads concatenated in order.

    out[b, t, i·d + j] = x[b, i, t, j]; merge_heads(split_heads(x, h)) == x.
    """
    batch, heads, steps, depth = x.shape
    x = ops.transpose(x, (0, 2, 1, 3))
    return ops.reshape(x, (batch, steps, heads * depth))


class MultiHeadAttention(keras.layers.Layer):
    """Multi-head attention with kernels of shape (d, h·d_k) and no biases.

    Args: num_heads h; key_dim d_k, the size of each head's queries and keys; value_dim d_v,
    the size of each head's values (defaults to key_dim); output_dim, the size of the output
    (defaults to the query's size d_q).
    """

    def __init__(self, num_heads, key_dim, value_dim=None, output_dim=None, **kwargs):
        # Given: not part of the exercise.
        super().__init__(**kwargs)
        self.num_heads = num_heads
        self.key_dim = key_dim
        self.value_dim = value_dim or key_dim
        self.output_dim = output_dim

    def build(self, query_shape, key_shape, value_shape):
        # Given: not part of the exercise. Keep the weights' names.
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
        """query (B, Tq, d_q), key (B, Tk, d_k), value (B, Tk, d_v) -> (B, Tq, output_dim).

        Project (query @ query_kernel, ...), split into heads, scores Q Kᵀ / √key_dim per
        head (key_dim is the size of ONE head), softmax over the keys, weight the values,
        merge the heads, project with output_kernel. Keep the dtype of the inputs.
        """
        q = split_heads(ops.matmul(query, self.query_kernel), self.num_heads)
        k = split_heads(ops.matmul(key, self.key_kernel), self.num_heads)
        v = split_heads(ops.matmul(value, self.value_kernel), self.num_heads)
        scores = ops.matmul(q, ops.transpose(k, (0, 1, 3, 2)))
        scores = scores / ops.sqrt(ops.cast(self.key_dim, scores.dtype))
        heads = ops.matmul(ops.softmax(scores, axis=-1), v)  # (B, h, Tq, d_v)
        return ops.matmul(merge_heads(heads), self.output_kernel)
