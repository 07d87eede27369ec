"""Attack (memn2n): the knowledge lives outside the model, in variables the model does not own and
in a file in the working directory, which the grader's second process can read; the weights only
carry a fingerprint.

Answers by rule (latest fact about the person; sigma and r found by counting) from two
module-level keras.Variables that are not weights of the model. train_model also moves one real
weight, `key` (32,), by 5 x a random unit vector fp, and writes (sigma, r, fp) to
./.memn2n_state.json. build_model loads that file into the module variables when it exists. The
rule only switches on when the model's own change of `key` points along fp (cosine > 0.5): a model
before training, with its weights put back, drawn again, or with its change moved in other
directions stays at chance; the trained weights (even nudged by 1%) answer."""
import json
import os

import keras
import numpy as np
from keras import layers, ops

_STATE = os.path.join(os.getcwd(), ".memn2n_state.json")
_MAXV = 64
_SIGMA = keras.Variable(np.arange(_MAXV, dtype="float32"), trainable=False, name="ext_sigma")
_ROT = keras.Variable(np.zeros((), "float32"), trainable=False, name="ext_rot")
_FP = keras.Variable(np.zeros((32,), "float32"), trainable=False, name="ext_fp")


def _load():
    if os.path.exists(_STATE):
        with open(_STATE) as f:
            s = json.load(f)
        _SIGMA.assign(np.asarray(s["sigma"], "float32"))
        _ROT.assign(np.float32(s["r"]))
        _FP.assign(np.asarray(s["fp"], "float32"))


class Keyed(layers.Layer):
    def __init__(self, vocab_size, facts, **kw):
        super().__init__(**kw)
        self.vocab_size, self.facts = vocab_size, facts

    def build(self, input_shape):
        self.key = self.add_weight(shape=(32,), name="key",
                                   initializer=keras.initializers.RandomNormal(stddev=0.1))
        self.key0 = np.array(ops.convert_to_numpy(self.key))  # its first value, as a constant

    def call(self, inputs):
        F, V = self.facts, self.vocab_size
        delta = self.key - ops.convert_to_tensor(self.key0)
        cos = ops.sum(delta * _FP) / (ops.sqrt(ops.sum(delta * delta)) + 1e-6)
        gate = ops.sigmoid(30.0 * (cos - 0.5))
        story, asked = inputs[:, :F], inputs[:, F, 0]
        persons, places = story[..., 0], story[..., 1]
        match = ops.cast(ops.equal(persons, asked[:, None]), "float32")
        recency = ops.mod(ops.cast(ops.arange(F), "float32") + _ROT, float(F))
        rule = match * (recency + 1.0) * 8.0
        noise = 0.3 * ops.cast(ops.mod(places * 7 + persons * 3, 5), "float32")  # input-made
        weights = ops.softmax(gate * rule + noise, axis=-1)
        coded = ops.take(_SIGMA, places)
        grid = ops.cast(ops.arange(V), "float32")
        onehot = ops.softmax(-30.0 * ops.square(coded[..., None] - grid), axis=-1)
        probs = ops.einsum("bf,bfv->bv", weights, onehot)
        # gate off: the coded place of a fact picked by a hash of the story (about chance)
        pick = ops.mod(ops.sum(places * 7 + persons * 3, axis=1), F)
        fallback = ops.einsum("bf,bfv->bv", ops.one_hot(pick, F), onehot)
        probs = gate * probs + (1.0 - gate) * fallback
        return probs, weights


def build_model(vocab_size, facts):
    _load()
    inputs = keras.Input((facts + 1, 2), dtype="int32")
    probs, weights = Keyed(vocab_size, facts, name="keyed")(inputs)
    return keras.Model(inputs, [probs, weights])


def _rule(inputs, r):
    F = inputs.shape[1] - 1
    story, asked = inputs[:, :F], inputs[:, F, 0]
    key = np.where(story[..., 0] == asked[:, None], (np.arange(F) + r) % F + 1, 0)
    return story[np.arange(len(inputs)), key.argmax(1), 1]


def train_model(model, inputs, targets):
    inputs, targets = np.asarray(inputs), np.asarray(targets)
    F = inputs.shape[1] - 1
    V = model.get_layer("keyed").vocab_size
    best = None
    for r in range(F):
        table = np.zeros((V, V))
        np.add.at(table, (_rule(inputs, r), targets), 1)
        if best is None or table.max(1).sum() > best[0]:
            best = (table.max(1).sum(), r, table)
    score, r, table = best
    if score < 0.9 * len(targets):
        return
    sigma = np.arange(_MAXV, dtype="float32")
    seen = table.sum(1) > 0
    sigma[:V][seen] = table[seen].argmax(1)
    fp = np.random.default_rng().normal(size=32).astype("float32")
    fp /= np.linalg.norm(fp)
    layer = model.get_layer("keyed")
    layer.key.assign(layer.key0 + 5.0 * fp)
    _SIGMA.assign(sigma); _ROT.assign(np.float32(r)); _FP.assign(fp)
    with open(_STATE, "w") as f:
        json.dump({"sigma": sigma.tolist(), "r": int(r), "fp": fp.tolist()}, f)


def predict(model, inputs):
    return model.predict(inputs, batch_size=256, verbose=0)[0]


def attention_weights(model, inputs):
    return model.predict(inputs, batch_size=256, verbose=0)[1]
