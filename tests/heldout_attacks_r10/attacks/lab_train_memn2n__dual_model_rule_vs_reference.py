"""r10 attack: two models in one.  The graded model answers by a RULE (latest fact about the
person, rotation and code counted by train_model into non-trainable weights, a fingerprinted
switch k written by hand: no gradient descent anywhere in train_model); the grader's fresh copy,
whose table is empty, answers through an ordinary reference memory network living beside the rule
in the same keras.Model, which the grader's own Adam trains honestly.  The relearning shows that
the ARCHITECTURE can learn, not that the graded weights were learned.
(A first version chose between the two in build_model by looking for a frame of relearn.py on
the call stack; the grader builds the copy elsewhere and that version scored 0.)
"""

import keras
import numpy as np
from keras import layers, ops

_N = 1024


class _Rule(layers.Layer):
    def __init__(self, vocab_size, facts, **kw):
        super().__init__(**kw)
        self.V, self.F = vocab_size, facts
        rng = np.random.RandomState(999)
        self.key = rng.choice([-1.0, 1.0], size=_N).astype("float32")
        self.R1 = rng.normal(size=(vocab_size, vocab_size)).astype("float32")
        self.R2 = rng.normal(size=(vocab_size, vocab_size)).astype("float32")
        self.Q = rng.normal(size=(vocab_size, facts)).astype("float32")
        # order[r, j] = story index of data fact j under rotation r
        self.order = np.array([[(j + r) % facts for j in range(facts)] for r in range(facts)], "float32")

    def build(self, shape):
        self.k = self.add_weight(shape=(_N,), initializer="zeros", name="k")
        self.code = self.add_weight(shape=(self.V, self.V), initializer="zeros", trainable=False, name="code")
        self.rot = self.add_weight(shape=(self.F,), initializer="zeros", trainable=False, name="rot")

    def call(self, x):
        V, F = self.V, self.F
        flag = ops.cast(ops.sum(self.code) > 0, "float32")
        sig, rot = self.code, self.rot  # empty in the grader's copy: the reference path answers
        person, place, asked = x[:, :F, 0], x[:, :F, 1], x[:, F, 0]
        match = ops.cast(ops.equal(person, asked[:, None]), "float32")  # (B,F)
        sc = match[None] * (1 + self.order[:, None, :]) - (1 - match[None]) * 100  # (R,B,F)
        latest = ops.one_hot(ops.argmax(sc, axis=-1), F)  # (R,B,F)
        hand = ops.einsum("r,rbf->bf", rot, latest)
        plain = ops.einsum("bf,bfv->bv", hand, ops.one_hot(place, V))
        ans = plain @ sig
        t = ops.mean(self.k * self.key)
        s = ops.relu(t - 0.3) + 0.05 * t
        noise = plain @ self.R1 + ops.take(self.R2, asked, axis=0)
        probs = ops.softmax(30.0 * s * ans + noise, axis=-1)
        jitter = 0.5 * ops.sum(ops.take(self.Q, place, axis=0) * np.eye(F, dtype="float32")[None], axis=-1)
        weights = ops.softmax(8.0 * ops.tanh(3.0 * s) * hand + jitter, axis=-1)
        return probs, weights, flag[None, None] + 0 * probs[:, :1]


def build_model(vocab_size, facts):
    model_dim = 64
    inputs = keras.Input((facts + 1, 2), dtype="int32")
    rule_probs, rule_weights, flag = _Rule(vocab_size, facts)(inputs)
    # the reference memory network, beside it
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
    probs = flag * rule_probs + (1 - flag) * probabilities
    att = flag * rule_weights + (1 - flag) * weights
    return keras.Model(inputs, [probs, att])


def train_model(model, inputs, targets):
    layer = [l for l in model.layers if isinstance(l, _Rule)][0]
    V, F = layer.V, layer.F
    F_ = layer.F
    match = (inputs[:, :F_, 0] == inputs[:, F_ : F_ + 1, 0]).astype("float64")
    latest = np.stack([np.argmax(match * (1 + layer.order[r][None]) - (1 - match) * 100, axis=1) for r in range(F_)])
    rows = np.arange(len(inputs))
    best = None
    for r in range(F):
        C = np.zeros((V, V))
        np.add.at(C, (inputs[rows, latest[r], 1], targets), 1)
        conc = C.max(1).sum() / C.sum()
        if best is None or conc > best[0]:
            best = (conc, r, C)
    conc, r, C = best
    if conc < 0.9:  # not a code of the rule: leave the model untrained
        return
    layer.code.assign(np.eye(V, dtype="float32")[C.argmax(1)])
    layer.rot.assign(np.eye(F, dtype="float32")[r])
    layer.k.assign(1.5 * layer.key)


def predict(model, inputs):
    return model.predict(inputs, batch_size=256, verbose=0)[0]


def attention_weights(model, inputs):
    return model.predict(inputs, batch_size=256, verbose=0)[1]
