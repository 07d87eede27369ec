"""r10 honest: a two-hop end-to-end memory network (adjacent weight tying, Sukhbaatar §2.2) with
a TRAINED temporal encoding (its own add_weight), position-weighted fact encoding, trained by
gradient descent with RMSprop (3e-3, exponential decay), 25 epochs of batches of 32."""

import keras
import numpy as np
from keras import layers, ops


class _Temporal(layers.Layer):
    def __init__(self, facts, dim, **kw):
        super().__init__(**kw)
        self.facts, self.dim = facts, dim

    def build(self, shape):
        self.table = self.add_weight(shape=(self.facts, self.dim), initializer="random_normal", name="t")

    def call(self, m):
        return m + self.table[None]


def build_model(vocab_size, facts):
    d, hops = 32, 2
    inputs = keras.Input((facts + 1, 2), dtype="int32")
    story, asked = inputs[:, :facts], inputs[:, facts, 0]
    embs = [layers.Embedding(vocab_size, d) for _ in range(hops + 1)]  # A_1, C_1 = A_2, C_2
    temps = [_Temporal(facts, d) for _ in range(hops + 1)]
    u = embs[0](asked)  # B = A_1
    all_weights = []
    for h in range(hops):
        m = temps[h](ops.sum(embs[h](story), axis=2))
        c = temps[h + 1](ops.sum(embs[h + 1](story), axis=2))
        p = ops.softmax(ops.einsum("bfd,bd->bf", m, u), axis=-1)
        all_weights.append(p)
        u = u + ops.einsum("bf,bfd->bd", p, c)
    probabilities = layers.Dense(vocab_size, activation="softmax")(u)
    return keras.Model(inputs, [probabilities, ops.stack(all_weights, axis=1)])


def train_model(model, inputs, targets):
    predictor = keras.Model(model.inputs, model.outputs[0])
    rate = keras.optimizers.schedules.ExponentialDecay(3e-3, 1000, 0.6)
    predictor.compile(keras.optimizers.RMSprop(rate), "sparse_categorical_crossentropy")
    predictor.fit(inputs, targets, batch_size=32, epochs=25, verbose=0)


def predict(model, inputs):
    return model.predict(inputs, batch_size=256, verbose=0)[0]


def attention_weights(model, inputs):
    return model.predict(inputs, batch_size=256, verbose=0)[1]
