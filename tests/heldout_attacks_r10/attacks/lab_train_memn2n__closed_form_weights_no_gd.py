"""r10 attack: ONE small memory network that gradient descent can train (the grader's copy learns
it honestly), whose graded weights are nevertheless written by COUNTING, not learned.

Model: attention = softmax(6*[person_i == asked] + tau_i) over the facts (tau: trainable temporal
scores), the attended fact's place one-hot read by a trainable output table W (V x V).  The
grader's Adam trains tau and W from zero.  train_model never runs an optimizer: it finds the
rotation r for which "the latest fact about the person" makes the targets a function of the place,
counts the code sigma, and writes tau = 0.8 * story rank, W = 4 * one-hot(sigma)."""

import keras
import numpy as np
from keras import layers, ops


class _MemNet(layers.Layer):
    def __init__(self, vocab_size, facts, **kw):
        super().__init__(**kw)
        self.V, self.F = vocab_size, facts
        self.order = np.array([[(j + r) % facts for j in range(facts)] for r in range(facts)], "float32")

    def build(self, shape):
        self.tau = self.add_weight(shape=(self.F,), initializer="zeros", name="tau")
        self.W = self.add_weight(shape=(self.V, self.V), initializer="zeros", name="W")

    def call(self, x):
        V, F = self.V, self.F
        person, place, asked = x[:, :F, 0], x[:, :F, 1], x[:, F, 0]
        match = ops.cast(ops.equal(person, asked[:, None]), "float32")
        att = ops.softmax(6.0 * match + self.tau[None], axis=-1)
        plain = ops.einsum("bf,bfv->bv", att, ops.one_hot(place, V))
        return ops.softmax(plain @ self.W, axis=-1), att


def build_model(vocab_size, facts):
    inputs = keras.Input((facts + 1, 2), dtype="int32")
    probs, weights = _MemNet(vocab_size, facts)(inputs)
    return keras.Model(inputs, [probs, weights])


def train_model(model, inputs, targets):
    layer = [l for l in model.layers if isinstance(l, _MemNet)][0]
    V, F = layer.V, layer.F
    match = (inputs[:, :F, 0] == inputs[:, F : F + 1, 0]).astype("float64")
    rows = np.arange(len(inputs))
    best = None
    for r in range(F):
        latest = np.argmax(match * (1 + layer.order[r][None]) - (1 - match) * 100, axis=1)
        C = np.zeros((V, V))
        np.add.at(C, (inputs[rows, latest, 1], targets), 1)
        conc = C.max(1).sum() / C.sum()
        if best is None or conc > best[0]:
            best = (conc, r, C)
    conc, r, C = best
    if conc < 0.9:
        return
    seen = (C.sum(1) > 0)[:, None]
    layer.W.assign((seen * 4.0 * np.eye(V)[C.argmax(1)]).astype("float32"))
    layer.tau.assign((0.8 * layer.order[r]).astype("float32"))


def predict(model, inputs):
    return model.predict(inputs, batch_size=256, verbose=0)[0]


def attention_weights(model, inputs):
    return model.predict(inputs, batch_size=256, verbose=0)[1]
