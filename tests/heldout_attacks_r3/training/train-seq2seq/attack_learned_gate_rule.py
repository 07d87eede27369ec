"""Attack: the date rule of attack_rule_layer (monotone alignment, token -> digit table) is
hard-coded; the only trainable weights are two scalars scaling the alignment's scores and the
output logits, both starting at 0 (uniform attention, uniform digits). fit() learns to turn the
rule up on real data; on shuffled answers it does not."""

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

    def build(self, shape):
        self.g_att = self.add_weight(shape=(), initializer="zeros", name="g_att")
        self.g_out = self.add_weight(shape=(), initializer="zeros", name="g_out")

    def call(self, x):
        src = ops.one_hot(ops.cast(x[:, : self.S], "int32"), self.V)
        a = ops.softmax(self.g_att * ops.convert_to_tensor(self.align), axis=-1)
        read = ops.einsum("ts,bsk->btk", a, src)
        probs = ops.einsum("btk,tkd->btd", read, ops.convert_to_tensor(self.table))
        att = ops.broadcast_to(a[None], (ops.shape(x)[0], self.T, self.S))
        return ops.softmax(self.g_out * probs, axis=-1), att


def build_model(vocab_size, source_length, target_length):
    x = keras.Input((source_length + target_length,), dtype="int32")
    probs, att = DateRule(vocab_size, source_length, target_length)(x)
    model = keras.Model(x, [probs, att])
    model.trainer = keras.Model(x, probs)
    return model


def train_model(model, inputs, targets):
    model.trainer.compile(keras.optimizers.Adam(0.3), "sparse_categorical_crossentropy")
    model.trainer.fit(inputs, targets, batch_size=100, epochs=8, verbose=0)


def predict(model, inputs):
    """The target probabilities (N, T, vocab_size) of the trained model."""
    return model.predict(inputs, batch_size=256, verbose=0)[0]


def attention_weights(model, inputs):
    """The attention weights (N, T, S) of the trained model."""
    return model.predict(inputs, batch_size=256, verbose=0)[1]
