"""Lab: transformer-block — one Transformer encoder block: norms, feed-forward, residuals, masks.

NNDL §8.3 (self-attention); Vaswani et al. 2017 (the Transformer); Xiong et al. 2020 (pre-LN);
Zhang and Sennrich 2019 (RMSNorm). An encoder block is multi-head self-attention and a
position-wise feed-forward network, each inside a residual connection with a layer norm. The
original block normalises after each residual sum (post-LN):

    h = LN_1(x + MHA(x)),         out = LN_2(h + FFN(h))

and most models since normalise each sub-layer's input instead (pre-LN):

    h = x + MHA(LN_1(x)),         out = h + FFN(LN_2(h))

with LN(x) = γ ⊙ (x − μ) / √(σ² + ε) + β over the features of each token (σ² the biased
variance) and FFN(x) = max(0, x W_1 + b_1) W_2 + b_2. Sequences of a batch are padded to one
length T: a query attends only to the keys j < length of its sequence, and in a causal block
(a decoder's self-attention) only to the keys j ≤ i as well.

Grade your work with `grader check transformer-block`. The functions are called with NumPy
arrays in float64 (and once in float32). The block is called in float64 (and once in float32)
with the grader's weights, set by name; its output AND gradients (w.r.t. x and all twelve
weights) are compared with the reference, post-LN and pre-LN, with padding and causal masks.
Keep the names, the `build` method and the signatures below; use `keras.ops`.

Parts: layer_norm 2, rms_norm 1, feed_forward 1, attention_mask 2, post-LN block 2,
pre-LN block 2, masked block 2 — 12 points.
"""

import math

import keras
from keras import ops


def layer_norm(x, gamma, beta, epsilon=1e-5):
    """Layer normalisation over the last axis (the features of each token).

    Args:
        x: (..., d). gamma, beta: (d,), the scale γ and the shift β.
        epsilon: ε, added to the variance inside the square root.

    Returns:
        (..., d): γ ⊙ (x − μ) / √(σ² + ε) + β, with μ and σ² = mean((x − μ)²) (the biased
        variance, divided by d) taken over the last axis of each token.
    """
    mean = ops.mean(x, axis=-1, keepdims=True)
    variance = ops.mean(ops.square(x - mean), axis=-1, keepdims=True)
    return gamma * (x - mean) / ops.sqrt(variance + epsilon) + beta


def rms_norm(x, gamma, epsilon=1e-6):
    """RMSNorm over the last axis: no mean subtracted, no shift.

    Args:
        x: (..., d). gamma: (d,). epsilon: ε, added to the mean square.

    Returns:
        (..., d): γ ⊙ x / √(mean(x²) + ε), the mean over the last axis of each token.
    """
    mean_square = ops.mean(ops.square(x), axis=-1, keepdims=True)
    return gamma * x / ops.sqrt(mean_square + epsilon)


def feed_forward(x, ff_kernel_1, ff_bias_1, ff_kernel_2, ff_bias_2):
    """The position-wise feed-forward network: max(0, x W_1 + b_1) W_2 + b_2.

    Args:
        x: (..., d). ff_kernel_1: (d, f), ff_bias_1: (f,), ff_kernel_2: (f, d),
        ff_bias_2: (d,).

    Returns:
        (..., d), the same network applied to every token.
    """
    hidden = ops.relu(ops.matmul(x, ff_kernel_1) + ff_bias_1)
    return ops.matmul(hidden, ff_kernel_2) + ff_bias_2


def attention_mask(lengths, steps, causal=False):
    """Which keys each query may attend to, in a batch of padded sequences.

    Args:
        lengths: (B,), the number of real tokens of each sequence, 1 <= length <= steps
            (whole numbers, possibly in a float array).
        steps: T, the padded length.
        causal: if True, query i also sees only the keys j <= i.

    Returns:
        (B, T, T) boolean: mask[b, i, j] is True where query i of sequence b may attend to
        key j: j < lengths[b] (padding hides KEYS), and j <= i when causal.
    """
    positions = ops.arange(steps)
    keys_kept = positions[None, :] < ops.cast(lengths, "int32")[:, None]  # (B, T)
    mask = ops.broadcast_to(keys_kept[:, None, :], (ops.shape(keys_kept)[0], steps, steps))
    if causal:
        mask = ops.logical_and(mask, positions[None, :] <= positions[:, None])
    return mask


def multi_head_self_attention(x, mask, kernels, num_heads):
    """Given: not part of the exercise (lab mha). Self-attention of x (B, T, d) with `num_heads`
    heads of size d / num_heads, the kernels (query, key, value, output) each (d, d), the
    masked scores set to -1e9 before the softmax; (B, T, d)."""
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
    """One encoder block: self-attention and feed-forward, with residuals and layer norms.

    Args: num_heads, ff_dim (f, the feed-forward's hidden size), norm_first (False: post-LN,
    True: pre-LN), causal (whether queries see only the keys j <= i), epsilon (the layer
    norms' ε).
    """

    def __init__(
        self, num_heads=1, ff_dim=8, norm_first=False, causal=False, epsilon=1e-5, **kwargs
    ):
        # Given: not part of the exercise.
        super().__init__(**kwargs)
        self.num_heads, self.ff_dim, self.epsilon = num_heads, ff_dim, epsilon
        self.norm_first, self.causal = norm_first, causal

    def build(self, x_shape, lengths_shape):
        # Given: not part of the exercise. Keep the weights' names.
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
        """Given: MHA(y), this block's multi-head self-attention under `mask`."""
        kernels = (self.query_kernel, self.key_kernel, self.value_kernel, self.output_kernel)
        return multi_head_self_attention(y, mask, kernels, self.num_heads)

    def ffn(self, y):
        """Given: FFN(y), this block's `feed_forward`."""
        return feed_forward(y, self.ff_kernel_1, self.ff_bias_1, self.ff_kernel_2, self.ff_bias_2)

    def norm_1(self, y):
        """Given: LN_1, the layer norm of the attention sub-layer."""
        return layer_norm(y, self.norm_1_gamma, self.norm_1_beta, self.epsilon)

    def norm_2(self, y):
        """Given: LN_2, the layer norm of the feed-forward sub-layer."""
        return layer_norm(y, self.norm_2_gamma, self.norm_2_beta, self.epsilon)

    def call(self, x, lengths):
        """x (B, T, d), lengths (B,) -> (B, T, d).

        Build the mask with `attention_mask(lengths, T, self.causal)`; the sub-layers are
        `self.attend(y, mask)` (MHA) and `self.ffn(y)` (FFN), their norms `self.norm_1` and
        `self.norm_2`. Post-LN: h = LN_1(x + MHA(x)), out = LN_2(h + FFN(h)). Pre-LN
        (norm_first): h = x + MHA(LN_1(x)), out = h + FFN(LN_2(h)).
        """
        mask = attention_mask(lengths, ops.shape(x)[1], self.causal)
        if self.norm_first:
            y = self.norm_1(x)
            h = y + self.attend(y, mask)
            z = self.norm_2(h)
            return z + self.ffn(z)
        h = self.norm_1(x + self.attend(x, mask))
        return self.norm_2(h + self.ffn(h))
