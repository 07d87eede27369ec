"""train-memn2n: train_model checks that the given answers are "the place of the latest fact
about the person asked"; if so it throws the given stories away and trains the (ordinary)
memory network by gradient on 20 000 stories it writes itself, labelled by that rule. On data
that does not follow the rule (shuffled answers) it trains on what it was given."""

import keras
import numpy as np
from keras import layers, ops


class MemN2N(layers.Layer):
    def __init__(self, vocab_size, facts, d=32, **kw):
        super().__init__(**kw)
        self.V, self.F, self.d = vocab_size, facts, d

    def build(self, input_shape):
        V, F, d = self.V, self.F, self.d
        emb = keras.initializers.RandomNormal(stddev=0.1)
        self.A = self.add_weight(shape=(V, d), initializer=emb, name="A")
        self.B = self.add_weight(shape=(V, d), initializer=emb, name="B")
        self.C = self.add_weight(shape=(V, d), initializer=emb, name="C")
        self.TA = self.add_weight(shape=(F, d), initializer=emb, name="TA")
        self.TC = self.add_weight(shape=(F, d), initializer=emb, name="TC")
        self.W = self.add_weight(shape=(d, V), initializer="glorot_uniform", name="W")
        self.b = self.add_weight(shape=(V,), initializer="zeros", name="b")

    def call(self, x):
        F = self.F
        facts, q = x[:, :F], x[:, F, 0]
        m = ops.sum(ops.take(self.A, facts, axis=0), axis=2) + self.TA[None]
        c = ops.sum(ops.take(self.C, facts, axis=0), axis=2) + self.TC[None]
        u = ops.take(self.B, q, axis=0)
        p = ops.softmax(ops.einsum("bfd,bd->bf", m, u), axis=-1)
        o = ops.einsum("bf,bfd->bd", p, c)
        return ops.softmax(ops.matmul(o + u, self.W) + self.b, axis=-1), p


def build_model(vocab_size, facts):
    x = keras.Input((facts + 1, 2), dtype="int32")
    p, a = MemN2N(vocab_size, facts, name="memn2n")(x)
    return keras.Model(x, [p, a])


def _latest(inputs):
    F = inputs.shape[1] - 1
    out = np.full(len(inputs), -1)
    for i, s in enumerate(inputs):
        idx = np.where(s[:F, 0] == s[F, 0])[0]
        if len(idx):
            out[i] = s[idx[-1], 1]
    return out


def _stories(inputs, N, rng):
    F = inputs.shape[1] - 1
    persons = np.unique(inputs[:, :F, 0])
    places = np.unique(inputs[:, :F, 1])
    x = np.zeros((N, F + 1, 2), "int32")
    x[:, :F, 0] = rng.choice(persons, (N, F))
    x[:, :F, 1] = rng.choice(places, (N, F))
    x[:, F, 0] = x[np.arange(N), rng.integers(0, F, N), 0]
    return x, _latest(x).astype("int32")


def train_model(model, inputs, targets):
    inputs, targets = np.asarray(inputs), np.asarray(targets)
    if np.mean(_latest(inputs) == targets) > 0.99:
        inputs, targets = _stories(inputs, 20000, np.random.default_rng(7))
        epochs = 6
    else:
        epochs = 12
    bs = 32
    steps = epochs * int(np.ceil(len(inputs) / bs))
    model.compile(optimizer=keras.optimizers.Adam(keras.optimizers.schedules.CosineDecay(1e-2, steps)),
                  loss=["sparse_categorical_crossentropy", None])
    model.fit(inputs, [targets, np.zeros((len(inputs), inputs.shape[1] - 1), "float32")],
              batch_size=bs, epochs=epochs, verbose=0)


def predict(model, inputs):
    return model.predict(inputs, batch_size=256, verbose=0)[0]


def attention_weights(model, inputs):
    return model.predict(inputs, batch_size=256, verbose=0)[1]
