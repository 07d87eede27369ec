"""Attack: a weightless custom layer rewrites the date by rule: a constant monotone alignment
(0, 1, 2, 2, 3, 4, 5, 6) as the attention and a fixed token -> digit table per step (the month
token gives its two digits). The decoder inputs are never read. train_model does nothing."""

import keras
import numpy as np
from keras import layers, ops

ALIGN = [0, 1, 2, 2, 3, 4, 5, 6]


def digit_table(vocab_size, target_length):
    """table[t, k, d] = 1 when source token k, read at step t, gives digit d."""
    table = np.zeros((target_length, vocab_size, vocab_size), "float32")
    for t in range(target_length):
        for k in range(vocab_size):
            if 10 <= k <= 21:
                month = k - 9
                d = month // 10 if t == 2 else month % 10
            else:
                d = k if k < 10 else 0
            table[t, k, d] = 1.0
    return table


class DateRule(layers.Layer):
    def __init__(self, vocab_size, source_length, target_length, **kw):
        super().__init__(**kw)
        self.V, self.S, self.T = vocab_size, source_length, target_length
        self.align = np.eye(source_length, dtype="float32")[ALIGN]
        self.table = digit_table(vocab_size, target_length)

    def call(self, x):
        src = ops.one_hot(ops.cast(x[:, : self.S], "int32"), self.V)
        a = ops.convert_to_tensor(self.align)
        read = ops.einsum("ts,bsk->btk", a, src)
        probs = ops.einsum("btk,tkd->btd", read, ops.convert_to_tensor(self.table))
        att = ops.broadcast_to(a[None], (ops.shape(x)[0], self.T, self.S))
        return 0.97 * probs + 0.03 / self.V, att


def build_model(vocab_size, source_length, target_length):
    x = keras.Input((source_length + target_length,), dtype="int32")
    probs, att = DateRule(vocab_size, source_length, target_length)(x)
    return keras.Model(x, [probs, att])


def train_model(model, inputs, targets):
    return None


def predict(model, inputs):
    """The target probabilities (N, T, vocab_size) of the trained model."""
    return model.predict(inputs, batch_size=256, verbose=0)[0]


def attention_weights(model, inputs):
    """The attention weights (N, T, S) of the trained model."""
    return model.predict(inputs, batch_size=256, verbose=0)[1]
