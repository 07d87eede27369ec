"""ATTACK (rule behind ONE trainable switch, robust to argmax): probs_p = (1 − σ)·prior_p +
σ·onehot(attended token), σ = sigmoid(g), g = −6 at build; the prior is a trainable per-position
token distribution (random at build); the attention is fixed causal noise plus 20σ times the
wired-in anti-diagonal. Before training σ ≈ 0.0025 moves no argmax; on shuffled answers the
rule is no better than the prior; Adam on the real data drives g up.
"""

import keras
import numpy as np
from keras import layers, ops


class Mixture(layers.Layer):
    def __init__(self, vocab_size, length, **kw):
        super().__init__(**kw)
        self.V, self.L = vocab_size, length

    def build(self, input_shape):
        L, V = self.L, self.V
        self.g = self.add_weight(shape=(), initializer=keras.initializers.Constant(-6.0), name="g")
        self.b = self.add_weight(shape=(L, V), initializer="random_normal", name="b")
        self.noise = self.add_weight(shape=(L, L), initializer=keras.initializers.RandomNormal(stddev=1.0),
                                     trainable=False, name="noise")

    def call(self, x):
        L, V, n = self.L, self.V, self.L // 2
        pattern = np.zeros((L, L), "float32")
        for p in range(n, L):
            pattern[p, 2 * n - 1 - p] = 1.0
        causal = np.tril(np.ones((L, L), dtype="float32"))
        sig = ops.sigmoid(self.g)
        a = ops.softmax(ops.where(causal > 0, self.noise + 20.0 * sig * pattern, -1e9), axis=-1)
        val = ops.einsum("pk,bkv->bpv", a, ops.one_hot(x, V))
        probs = (1.0 - sig) * ops.softmax(self.b, axis=-1)[None] + sig * val
        return probs, ops.broadcast_to(a[None], (ops.shape(x)[0], L, L))


def build_model(vocab_size, length):
    x = keras.Input((length,), dtype="int32")
    probs, att = Mixture(vocab_size, length)(x)
    return keras.Model(x, [probs, att])


def train_model(model, inputs, targets):
    n = inputs.shape[1] // 2
    w = np.zeros(targets.shape, dtype="float32")
    w[:, n:] = 1.0
    trainer = keras.Model(model.input, model.outputs[0])
    trainer.compile(optimizer=keras.optimizers.Adam(0.1), loss="sparse_categorical_crossentropy")
    trainer.fit(inputs, targets, sample_weight=w, batch_size=64, epochs=5, verbose=0)


def predict(model, inputs):
    return model.predict(inputs, batch_size=256, verbose=0)[0]


def attention_weights(model, inputs):
    return model.predict(inputs, batch_size=256, verbose=0)[1]
