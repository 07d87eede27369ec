"""Attack (transformer): no learning. Attention scores are a free (L, L) table G (zeros at first,
so uniform causal attention) over one-hot token values; train_model counts (mirrored source
token, target) pairs in numpy to read the code σ, writes it into the output kernel, and writes
G = 20·anti-diagonal only when the counted code is clean (a switch against shuffled answers).
"""

import keras
import numpy as np
from keras import layers, ops


class Table(layers.Layer):
    def build(self, shape):
        length = shape[-1]
        self.table = self.add_weight(shape=(length, length), initializer="zeros", name="table")

    def call(self, tokens):
        length = ops.shape(tokens)[-1]
        causal = ops.tril(ops.ones((length, length)))
        scores = ops.where(causal > 0, self.table, -1e9)
        zeros = ops.zeros_like(ops.cast(tokens, "float32"))[:, :, None]
        return ops.softmax(zeros + scores[None], axis=-1)


def build_model(vocab_size, length):
    tokens = keras.Input((length,), dtype="int32")
    weights = Table(name="table")(tokens)  # (B, L, L)
    values = ops.one_hot(tokens, vocab_size)
    read = ops.einsum("bqk,bkv->bqv", weights, values)
    probabilities = layers.Dense(vocab_size, activation="softmax", name="code")(read)
    return keras.Model(tokens, [probabilities, weights])


def train_model(model, inputs, targets):
    inputs, targets = np.asarray(inputs), np.asarray(targets)
    length = inputs.shape[1]
    n = length // 2
    vocab = model.get_layer("code").get_weights()[0].shape[0]
    counts = np.zeros((vocab, vocab))
    for p in range(n, length):
        np.add.at(counts, (inputs[:, length - 1 - p], targets[:, p]), 1.0)
    kernel = np.zeros((vocab, vocab), "float32")
    seen = counts.sum(1) > 0
    kernel[seen, counts[seen].argmax(1)] = 12.0
    model.get_layer("code").set_weights([kernel, np.zeros(vocab, "float32")])
    if counts.max(1).sum() / counts.sum() > 0.9:
        table = np.zeros((length, length), "float32")
        for p in range(length):
            table[p, length - 1 - p if p >= n else p] = 20.0
        model.get_layer("table").set_weights([table])


def predict(model, inputs):
    """The next-token probabilities (N, L, vocab_size) of the trained model."""
    return model.predict(inputs, batch_size=256, verbose=0)[0]


def attention_weights(model, inputs):
    """The self-attention weights (N, H, L, L) of the trained model."""
    return model.predict(inputs, batch_size=256, verbose=0)[1]
