"""transformer-block attempt."""

import math

import keras
from keras import ops


def layer_norm(x, gamma, beta, epsilon=1e-5):
    mean, variance = ops.moments(x, axes=[-1], keepdims=True)
    inv = ops.rsqrt(variance + epsilon)
    return (x - mean) * inv * gamma + beta


def rms_norm(x, gamma, epsilon=1e-6):
    mean_square = ops.mean(ops.square(x), axis=-1, keepdims=True)
    return gamma * (x * ops.rsqrt(mean_square + epsilon))


def feed_forward(x, ff_kernel_1, ff_bias_1, ff_kernel_2, ff_bias_2):
    hidden = ops.relu(ops.add(ops.matmul(x, ff_kernel_1), ff_bias_1))
    return ops.add(ops.matmul(hidden, ff_kernel_2), ff_bias_2)


def attention_mask(lengths, steps, causal=False):
    lengths = ops.cast(ops.convert_to_tensor(lengths), "float32")
    positions = ops.cast(ops.arange(steps), "float32")
    keys = positions[None, None, :] < lengths[:, None, None]          # (B, 1, T)
    mask = ops.broadcast_to(keys, (ops.shape(lengths)[0], steps, steps))
    if causal:
        lower = positions[None, :] <= positions[:, None]               # [i, j]: j <= i
        mask = ops.logical_and(mask, lower[None])
    return mask


def multi_head_self_attention(x, mask, kernels, num_heads):
    """Given: not part of the exercise (lab mha)."""
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
    def __init__(
        self, num_heads=1, ff_dim=8, norm_first=False, causal=False, epsilon=1e-5, **kwargs
    ):
        super().__init__(**kwargs)
        self.num_heads, self.ff_dim, self.epsilon = num_heads, ff_dim, epsilon
        self.norm_first, self.causal = norm_first, causal

    def build(self, x_shape, lengths_shape):
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
        kernels = (self.query_kernel, self.key_kernel, self.value_kernel, self.output_kernel)
        return multi_head_self_attention(y, mask, kernels, self.num_heads)

    def ffn(self, y):
        return feed_forward(y, self.ff_kernel_1, self.ff_bias_1, self.ff_kernel_2, self.ff_bias_2)

    def norm_1(self, y):
        return layer_norm(y, self.norm_1_gamma, self.norm_1_beta, self.epsilon)

    def norm_2(self, y):
        return layer_norm(y, self.norm_2_gamma, self.norm_2_beta, self.epsilon)

    def call(self, x, lengths):
        mask = attention_mask(lengths, ops.shape(x)[1], self.causal)
        sublayers = ((self.norm_1, lambda y: self.attend(y, mask)), (self.norm_2, self.ffn))
        h = x
        for norm, sublayer in sublayers:
            if self.norm_first:
                y = norm(h)
                h = y + sublayer(y)
            else:
                h = norm(h + sublayer(h))
        return h
