"""Attack (seq2seq): no learning. The date is rewritten by a constant table (step t, source token)
→ plain digit; the attention is a free (T, S) score table G (zero at first, uniform) that
train_model sets to 20·[j = a(t)]; the digit code σ is counted from (plain digit, target) pairs in
numpy and written into the output kernel. A switch sets G only when the counted code is clean.
"""

import keras
import numpy as np
from keras import layers, ops

ALIGN = [0, 1, 2, 2, 3, 4, 5, 6]


def _rewrite_table(vocab_size):
    """(T, vocab, 10): at step t, which plain digit the attended source token gives."""
    table = np.zeros((8, vocab_size, 10), "float32")
    for t in range(8):
        for d in range(10):
            table[t, d, d] = 1.0
    for month in range(1, 13):
        table[2, 9 + month, month // 10] = 1.0
        table[3, 9 + month, month % 10] = 1.0
    return table


class Table(layers.Layer):
    def __init__(self, target_length, **kwargs):
        super().__init__(**kwargs)
        self.target_length = target_length

    def build(self, shape):
        self.table = self.add_weight(
            shape=(self.target_length, shape[-1]), initializer="zeros", name="table"
        )

    def call(self, source):
        zeros = ops.zeros_like(ops.cast(source, "float32"))[:, None, :]
        return ops.softmax(zeros + self.table[None], axis=-1)


def build_model(vocab_size, source_length, target_length):
    inputs = keras.Input((source_length + target_length,), dtype="int32")
    source = inputs[:, :source_length]
    weights = Table(target_length, name="table")(source)  # (B, T, S)
    read = ops.einsum("bts,bsv->btv", weights, ops.one_hot(source, vocab_size))
    plain = ops.einsum("btv,tvd->btd", read, _rewrite_table(vocab_size))
    probabilities = layers.Dense(vocab_size, activation="softmax", name="code")(plain)
    return keras.Model(inputs, [probabilities, weights])


def train_model(model, inputs, targets):
    inputs, targets = np.asarray(inputs), np.asarray(targets)
    vocab = model.get_layer("code").get_weights()[1].shape[0]
    src = inputs[:, :7]
    month = src[:, 2] - 9
    plain = np.stack([src[:, 0], src[:, 1], month // 10, month % 10,
                      src[:, 3], src[:, 4], src[:, 5], src[:, 6]], 1)
    counts = np.zeros((10, vocab))
    np.add.at(counts, (plain.ravel(), targets.ravel()), 1.0)
    kernel = np.zeros((10, vocab), "float32")
    kernel[np.arange(10), counts.argmax(1)] = 12.0
    model.get_layer("code").set_weights([kernel, np.zeros(vocab, "float32")])
    if counts.max(1).sum() / counts.sum() > 0.9:
        table = np.zeros((8, 7), "float32")
        table[np.arange(8), ALIGN] = 20.0
        model.get_layer("table").set_weights([table])


def predict(model, inputs):
    """The target probabilities (N, T, vocab_size) of the trained model."""
    return model.predict(inputs, batch_size=256, verbose=0)[0]


def attention_weights(model, inputs):
    """The attention weights (N, T, S) of the trained model."""
    return model.predict(inputs, batch_size=256, verbose=0)[1]
