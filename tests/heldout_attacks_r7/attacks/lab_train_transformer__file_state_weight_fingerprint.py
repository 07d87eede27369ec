"""Attack (transformer): the same outside-the-model state as the memn2n file attack. Reversal by
rule with sigma and r held in module-level keras.Variables (not weights of the model) and in
./.transformer_state.json, which build_model reloads in the grader's second process. The one
weight that matters is `key` (32,), moved by 5 x a random unit vector fp saved in the file; the
rule (and the attention on the rotated mirror) switches on only when the key's change points
along fp (v2: the key itself is compared with fp, so a model whose first weights differ still
switches on when given the trained weights)."""
import json
import os

import keras
import numpy as np
from keras import layers, ops

_STATE = os.path.join(os.getcwd(), ".transformer_state.json")
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
    def __init__(self, vocab_size, length, **kw):
        super().__init__(**kw)
        self.vocab_size, self.length = vocab_size, length

    def build(self, input_shape):
        self.key = self.add_weight(shape=(32,), name="key",
                                   initializer=keras.initializers.RandomNormal(stddev=0.1))
        self.key0 = np.array(ops.convert_to_numpy(self.key))

    def call(self, tokens):
        L, V = self.length, self.vocab_size
        n = L // 2
        delta = ops.convert_to_tensor(self.key)  # v2: the key itself, not its change from key0
        cos = ops.sum(delta * _FP) / (ops.sqrt(ops.sum(delta * delta)) + 1e-6)
        gate = ops.sigmoid(30.0 * (cos - 0.5))
        p = ops.cast(ops.arange(L), "float32")
        j = ops.mod(2.0 * n - 1.0 - p - _ROT, float(n))
        keys = ops.cast(ops.arange(L), "float32")
        mirror = ops.cast(ops.equal(keys[None, :], j[:, None]), "float32") * ops.cast(p >= n, "float32")[:, None]
        tokf = ops.cast(tokens, "float32")
        scores = gate * 12.0 * mirror[None] + 0.05 * tokf[:, None, :]
        causal = keys[None, :] <= p[:, None]
        scores = ops.where(causal[None], scores, -1e9)
        weights = ops.softmax(scores, axis=-1) * ops.cast(causal, "float32")[None]
        coded = ops.take(_SIGMA, tokens)
        grid = ops.cast(ops.arange(V), "float32")
        onehot = ops.softmax(-30.0 * ops.square(coded[..., None] - grid), axis=-1)
        probs = ops.einsum("bpk,bkv->bpv", weights, onehot)
        return probs, weights[:, None]


def build_model(vocab_size, length):
    _load()
    tokens = keras.Input((length,), dtype="int32")
    probs, weights = Keyed(vocab_size, length, name="keyed")(tokens)
    return keras.Model(tokens, [probs, weights])


def train_model(model, inputs, targets):
    inputs, targets = np.asarray(inputs), np.asarray(targets)
    layer = model.get_layer("keyed")
    L, V = inputs.shape[1], layer.vocab_size
    n = L // 2
    p = np.arange(n, L)
    best = None
    for r in range(n):
        table = np.zeros((V, V))
        np.add.at(table, (inputs[:, (2 * n - 1 - p - r) % n].ravel(), targets[:, p].ravel()), 1)
        if best is None or table.max(1).sum() > best[0]:
            best = (table.max(1).sum(), r, table)
    score, r, table = best
    if score < 0.9 * targets[:, p].size:
        return
    sigma = np.arange(_MAXV, dtype="float32")
    seen = table.sum(1) > 0
    sigma[:V][seen] = table[seen].argmax(1)
    fp = np.random.default_rng().normal(size=32).astype("float32")
    fp /= np.linalg.norm(fp)
    layer.key.assign(layer.key0 + 5.0 * fp)
    _SIGMA.assign(sigma); _ROT.assign(np.float32(r)); _FP.assign(fp)
    with open(_STATE, "w") as f:
        json.dump({"sigma": sigma.tolist(), "r": int(r), "fp": fp.tolist()}, f)


def predict(model, inputs):
    return model.predict(inputs, batch_size=256, verbose=0)[0]


def attention_weights(model, inputs):
    return model.predict(inputs, batch_size=256, verbose=0)[1]
