"""Attack: a textbook one-hop MemN2N built with random weights; train_model ignores the data and
writes the hand-made weights of attack_handset_build (A = -40 I, B = -I + time direction,
T_A[i] = 5 i, C = I, W = 20 I) with set_weights. No gradient step."""

import keras
import numpy as np
from keras import layers, ops


class Temporal(layers.Layer):
    def build(self, shape):
        self.t = self.add_weight(shape=(shape[1], shape[2]), name="t")

    def call(self, x):
        return x + self.t[None]


class Hop(layers.Layer):
    def call(self, u, m, c):
        p = ops.softmax(ops.einsum("bd,bfd->bf", u, m), axis=-1)
        return u + ops.einsum("bf,bfd->bd", p, c), p


def make(vocab_size, facts):
    d = vocab_size + 1
    x = keras.Input((facts + 1, 2), dtype="int32")
    story, q = x[:, :facts], x[:, facts, 0]
    m = Temporal(name="TA")(ops.sum(layers.Embedding(vocab_size, d, name="A")(story), axis=2))
    c = Temporal(name="TC")(ops.sum(layers.Embedding(vocab_size, d, name="C")(story), axis=2))
    u = layers.Embedding(vocab_size, d, name="B")(q)
    ou, p = Hop()(u, m, c)
    probs = layers.Dense(vocab_size, activation="softmax", name="W")(ou)
    return keras.Model(x, [probs, p])


def hand_weights(vocab_size, facts):
    V, d = vocab_size, vocab_size + 1
    eye = np.eye(V, d, dtype="float32")
    b = -eye.copy()
    b[:, V] = 1.0
    ta = np.zeros((facts, d), "float32")
    ta[:, V] = 5.0 * np.arange(facts)
    w = np.zeros((d, V), "float32")
    w[:V, :V] = 20.0 * np.eye(V)
    return {"A": [-40.0 * eye], "TA": [ta], "C": [eye], "TC": [np.zeros((facts, d), "float32")],
            "B": [b], "W": [w, np.zeros(V, "float32")]}


def set_hand(model, vocab_size, facts):
    for name, values in hand_weights(vocab_size, facts).items():
        model.get_layer(name).set_weights(values)


def build_model(vocab_size, facts):
    return make(vocab_size, facts)


def train_model(model, inputs, targets):
    set_hand(model, model.outputs[0].shape[-1], inputs.shape[1] - 1)


def predict(model, inputs):
    """The answer probabilities (N, vocab_size) of the trained model."""
    return model.predict(inputs, batch_size=256, verbose=0)[0]


def attention_weights(model, inputs):
    """The attention weights over the facts (N, F) of the trained model."""
    return model.predict(inputs, batch_size=256, verbose=0)[1]
