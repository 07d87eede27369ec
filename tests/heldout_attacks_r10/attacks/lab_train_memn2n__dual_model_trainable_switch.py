"""r10 attack: two models in one, with NO non-trainable weight at all.

Beside the reference memory network sits a rule (latest fact about the person under a rotation,
renamed by a code) whose rotation scores `rho`, code table `T` and switch `k` are TRAINABLE
weights that no gradient ever reaches: the rule's output is mixed in by a hard flag
[mean(k * key) > 1] (key a fixed random +-1 vector), which has no gradient.  train_model never runs
an optimizer: it counts r and sigma and WRITES rho, T and k (k = 1.5 key): the graded model answers
by the rule.  The grader's copy starts with k = 0, so the flag is off, the rule's weights get no
gradient and stay at their start, and the grader's Adam trains the reference path honestly.
Put back or shuffled, mean(k * key) ~ 0: the reference path at its start answers, at chance."""

import keras
import numpy as np
from keras import layers, ops

_N = 1024


class _Rule(layers.Layer):
    def __init__(self, vocab_size, facts, **kw):
        super().__init__(**kw)
        self.V, self.F = vocab_size, facts
        self.key = np.random.RandomState(77).choice([-1.0, 1.0], size=_N).astype("float32")
        self.order = np.array([[(j + r) % facts for j in range(facts)] for r in range(facts)], "float32")

    def build(self, shape):
        self.k = self.add_weight(shape=(_N,), initializer="zeros", name="k")
        self.T = self.add_weight(shape=(self.V, self.V), initializer="zeros", name="T")
        self.rho = self.add_weight(shape=(self.F,), initializer="zeros", name="rho")

    def call(self, x):
        V, F = self.V, self.F
        flag = ops.cast(ops.mean(self.k * self.key) > 1.0, "float32")
        person, place, asked = x[:, :F, 0], x[:, :F, 1], x[:, F, 0]
        match = ops.cast(ops.equal(person, asked[:, None]), "float32")
        sc = match[None] * (1 + self.order[:, None, :]) - (1 - match[None]) * 100
        latest = ops.one_hot(ops.argmax(sc, axis=-1), F)  # (R,B,F)
        hand = ops.einsum("r,rbf->bf", ops.one_hot(ops.argmax(self.rho), F), latest)
        plain = ops.einsum("bf,bfv->bv", hand, ops.one_hot(place, V))
        probs = ops.softmax(8.0 * plain @ self.T, axis=-1)
        weights = ops.softmax(8.0 * hand + 0.3 * ops.cast(place, "float32") / V, axis=-1)
        return flag * ops.stop_gradient(probs), flag * ops.stop_gradient(weights), flag


def build_model(vocab_size, facts):
    model_dim = 64
    inputs = keras.Input((facts + 1, 2), dtype="int32")
    rule_probs, rule_weights, flag = _Rule(vocab_size, facts)(inputs)
    story, asked = inputs[:, :facts], inputs[:, facts, 0]
    order = ops.arange(facts)
    memories = ops.sum(layers.Embedding(vocab_size, model_dim)(story), axis=2)
    memories = memories + layers.Embedding(facts, model_dim)(order)[None]
    outputs = ops.sum(layers.Embedding(vocab_size, model_dim)(story), axis=2)
    outputs = outputs + layers.Embedding(facts, model_dim)(order)[None]
    question = layers.Embedding(vocab_size, model_dim)(asked)
    weights = ops.softmax(ops.einsum("bfd,bd->bf", memories, question), axis=-1)
    read = ops.einsum("bf,bfd->bd", weights, outputs)
    probabilities = layers.Dense(vocab_size, activation="softmax")(read + question)
    return keras.Model(inputs, [rule_probs + (1 - flag) * probabilities, rule_weights + (1 - flag) * weights])


def train_model(model, inputs, targets):
    layer = [l for l in model.layers if isinstance(l, _Rule)][0]
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
    layer.T.assign(np.eye(V, dtype="float32")[C.argmax(1)])
    layer.rho.assign(np.eye(F, dtype="float32")[r])
    layer.k.assign(1.5 * layer.key)


def predict(model, inputs):
    return model.predict(inputs, batch_size=256, verbose=0)[0]


def attention_weights(model, inputs):
    return model.predict(inputs, batch_size=256, verbose=0)[1]
