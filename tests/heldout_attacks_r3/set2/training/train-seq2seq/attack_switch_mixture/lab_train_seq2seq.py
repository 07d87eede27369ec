"""ATTACK (rule behind ONE trainable switch, robust to argmax): probs_t = (1 − σ)·prior_t +
σ·table_t(context_t), σ = sigmoid(g), g = −6 at build; the prior is a trainable per-step digit
distribution (random at build); the attention is fixed noise plus 20σ times the wired-in
alignment a(t); the month-to-digits table is wired in. See the memn2n twin for why.
"""

import keras
import numpy as np
from keras import layers, ops

ALIGN = [0, 1, 2, 2, 3, 4, 5, 6]


class Mixture(layers.Layer):
    def __init__(self, vocab_size, source_length, target_length, **kw):
        super().__init__(**kw)
        self.V, self.S, self.T = vocab_size, source_length, target_length

    def build(self, input_shape):
        V, S, T = self.V, self.S, self.T
        self.g = self.add_weight(shape=(), initializer=keras.initializers.Constant(-6.0), name="g")
        self.b = self.add_weight(shape=(T, V), initializer="random_normal", name="b")
        self.noise = self.add_weight(shape=(T, S), initializer=keras.initializers.RandomNormal(stddev=1.0),
                                     trainable=False, name="noise")

    def call(self, x):
        V, S, T = self.V, self.S, self.T
        pattern = np.zeros((T, S), "float32")
        table = np.zeros((T, V, V), "float32")
        for t, j in enumerate(ALIGN):
            pattern[t, j] = 1.0
            if t in (2, 3):
                for v in range(10, 22):
                    table[t, v, (v - 9) // 10 if t == 2 else (v - 9) % 10] = 1.0
            else:
                table[t, :10, :10] = np.eye(10)
        sig = ops.sigmoid(self.g)
        a = ops.softmax(self.noise + 20.0 * sig * pattern, axis=-1)
        ctx = ops.einsum("ts,bsv->btv", a, ops.one_hot(x[:, :S], V))
        rule = ops.einsum("btv,tvw->btw", ctx, table)
        probs = (1.0 - sig) * ops.softmax(self.b, axis=-1)[None] + sig * rule
        return probs, ops.broadcast_to(a[None], (ops.shape(x)[0], T, S))


def build_model(vocab_size, source_length, target_length):
    x = keras.Input((source_length + target_length,), dtype="int32")
    probs, att = Mixture(vocab_size, source_length, target_length)(x)
    return keras.Model(x, [probs, att])


def train_model(model, inputs, targets):
    trainer = keras.Model(model.input, model.outputs[0])
    trainer.compile(optimizer=keras.optimizers.Adam(0.1), loss="sparse_categorical_crossentropy")
    trainer.fit(inputs, targets, batch_size=64, epochs=5, verbose=0)


def predict(model, inputs):
    return model.predict(inputs, batch_size=256, verbose=0)[0]


def attention_weights(model, inputs):
    return model.predict(inputs, batch_size=256, verbose=0)[1]
