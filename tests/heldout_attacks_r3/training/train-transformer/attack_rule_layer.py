"""Attack: a custom Keras layer with no weights computes the reversal by rule.

The attention matrix is a constant anti-diagonal (self at the source positions), the output the
one-hot of the attended token, smoothed. train_model trains nothing.
"""

import keras
import numpy as np
from keras import layers, ops


class MirrorRule(layers.Layer):
    def __init__(self, vocab_size, length, **kw):
        super().__init__(**kw)
        self.vocab_size = vocab_size
        self.length = length
        n = length // 2
        a = np.zeros((length, length), "float32")
        for p in range(length):
            a[p, 2 * n - 1 - p if p >= n else p] = 1.0
        self.table = a

    def call(self, tokens):
        a = ops.convert_to_tensor(self.table)
        onehot = ops.one_hot(ops.cast(tokens, "int32"), self.vocab_size)
        ctx = ops.einsum("pq,bqv->bpv", a, onehot)
        probs = 0.97 * ctx + 0.03 / self.vocab_size
        batch = ops.shape(tokens)[0]
        att = ops.broadcast_to(a[None, None], (batch, 1, self.length, self.length))
        return probs, att


def build_model(vocab_size, length):
    inputs = keras.Input((length,), dtype="int32")
    probs, att = MirrorRule(vocab_size, length)(inputs)
    return keras.Model(inputs, [probs, att])


def train_model(model, inputs, targets):
    return None


def predict(model, inputs):
    """The next-token probabilities (N, L, vocab_size) of the trained model."""
    return model.predict(inputs, batch_size=256, verbose=0)[0]


def attention_weights(model, inputs):
    """The self-attention weights (N, H, L, L) of the trained model."""
    return model.predict(inputs, batch_size=256, verbose=0)[1]
