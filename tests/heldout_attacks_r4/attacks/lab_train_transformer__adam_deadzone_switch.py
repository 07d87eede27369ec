"""train-transformer: a hand-built reversal (anti-diagonal attention, copy the token) mixed in
through a gate sigmoid(8 (s - 1)) on one trainable scalar s that starts at 0. The gate's gradient
is tiny but consistent, and Adam normalises it, so real training opens the gate in a few hundred
steps; shuffled answers push s down; put-back or nudged weights (s ≈ 0) keep it shut."""

import keras
import numpy as np
from keras import layers, ops


class Decoder(layers.Layer):
    def __init__(self, vocab_size, length, **kw):
        super().__init__(**kw)
        self.V, self.L = vocab_size, length

    def build(self, input_shape):
        V, L, d = self.V, self.L, 16
        self.tok = self.add_weight(shape=(V, d), initializer="random_normal", name="tok")
        self.wq = self.add_weight(shape=(d, d), initializer="glorot_uniform", name="wq")
        self.wk = self.add_weight(shape=(d, d), initializer="glorot_uniform", name="wk")
        self.wo = self.add_weight(shape=(d, V), initializer="glorot_uniform", name="wo")
        self.bo = self.add_weight(shape=(V,), initializer="zeros", name="bo")
        self.s = self.add_weight(shape=(), initializer="zeros", name="residual_gate")

    def call(self, x):
        V, L = self.V, self.L
        n = L // 2
        causal = np.tril(np.ones((L, L), "float32"))
        # visible path: content-only attention (no positions: cannot reverse by itself)
        h = ops.take(self.tok, x, axis=0)
        sc = ops.einsum("bqd,bkd->bqk", ops.matmul(h, self.wq), ops.matmul(h, self.wk)) / 4.0
        a = ops.softmax(ops.where(causal > 0, sc, -1e9), axis=-1)
        logits = ops.matmul(ops.matmul(a, h), self.wo) + self.bo
        r = np.zeros((L, L), "float32")
        for p in range(L):
            j = 2 * n - 1 - p
            if 0 <= j <= p:
                r[p, j] = 1.0
            else:
                r[p, : p + 1] = 1.0 / (p + 1)
        g = ops.sigmoid(8.0 * (self.s - 1.0))
        logits = logits + g * 30.0 * ops.einsum("qk,bkv->bqv", r, ops.one_hot(x, V))
        att = (1.0 - g) * a + g * r[None]
        return ops.softmax(logits, axis=-1), att[:, None]


def build_model(vocab_size, length):
    x = keras.Input((length,), dtype="int32")
    p, a = Decoder(vocab_size, length, name="decoder")(x)
    return keras.Model(x, [p, a])


def train_model(model, inputs, targets):
    inputs, targets = np.asarray(inputs), np.asarray(targets)
    L = inputs.shape[1]
    n = L // 2
    w = np.zeros(targets.shape, "float32")
    w[:, n:] = 1.0
    epochs, bs = 8, 32
    steps = epochs * int(np.ceil(len(inputs) / bs))
    lr = keras.optimizers.schedules.CosineDecay(3e-2, steps, alpha=0.2)
    model.compile(optimizer=keras.optimizers.Adam(lr),
                  loss=["sparse_categorical_crossentropy", None])
    model.fit(inputs, [targets, np.zeros((len(inputs), 1, L, L), "float32")],
              sample_weight=[w, None], batch_size=bs, epochs=epochs, verbose=0)


def predict(model, inputs):
    return model.predict(inputs, batch_size=256, verbose=0)[0]


def attention_weights(model, inputs):
    return model.predict(inputs, batch_size=256, verbose=0)[1]
