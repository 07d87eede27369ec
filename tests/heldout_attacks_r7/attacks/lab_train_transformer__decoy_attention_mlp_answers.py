"""Attack (transformer): the answers come from no attention at all, and the attention returned
is a decoy trained to look right.

Answers: a causal position-wise MLP: for each position p, a Dense over the one-hot tokens of
positions 0 ... p only (a masked (L, L*V) mixing), trained by gradient descent on the grader's
data; a per-position lookup learns "the answer at p is sigma(token at a fixed slot)" without any
attention. Attention: softmax of a trainable position matrix S plus a token bias, causal, not
used by the answer path at all; it is fitted separately (cross-entropy) to labels made by rule:
the mirrored slot for the rotation r found by counting the data (no labels if the counts explain
less than 90% of the targets)."""
import keras
import numpy as np
from keras import layers, ops


class CausalMix(layers.Layer):
    """out[p] = sum_{k <= p} W[p, k] onehot(token_k) : a per-position Dense over the prefix."""

    def __init__(self, vocab_size, length, units, **kw):
        super().__init__(**kw)
        self.V, self.L, self.units = vocab_size, length, units

    def build(self, input_shape):
        self.W = self.add_weight(shape=(self.L, self.L, self.V, self.units), name="W",
                                 initializer=keras.initializers.RandomNormal(stddev=0.05))
        self.b = self.add_weight(shape=(self.L, self.units), initializer="zeros", name="b")

    def call(self, tokens):
        onehot = ops.one_hot(tokens, self.V)  # (B, L, V)
        mask = ops.cast(ops.arange(self.L)[None, :] <= ops.arange(self.L)[:, None], "float32")
        W = self.W * mask[:, :, None, None]
        return ops.einsum("bkv,pkvu->bpu", onehot, W) + self.b[None]


class Decoy(layers.Layer):
    def __init__(self, vocab_size, length, **kw):
        super().__init__(**kw)
        self.V, self.L = vocab_size, length

    def build(self, input_shape):
        init = keras.initializers.RandomNormal(stddev=0.01)
        self.S = self.add_weight(shape=(self.L, self.L), initializer=init, name="S")
        self.u = self.add_weight(shape=(self.V,), initializer=init, name="u")

    def call(self, tokens):
        scores = self.S[None] + ops.take(self.u, tokens)[:, None, :]
        causal = ops.arange(self.L)[None, :] <= ops.arange(self.L)[:, None]
        scores = ops.where(causal[None], scores, -1e9)
        return ops.softmax(scores, axis=-1) * ops.cast(causal, "float32")[None]


def build_model(vocab_size, length):
    tokens = keras.Input((length,), dtype="int32")
    hidden = layers.Activation("relu")(CausalMix(vocab_size, length, 64)(tokens))
    probabilities = layers.Dense(vocab_size, activation="softmax")(hidden)
    weights = Decoy(vocab_size, length, name="decoy")(tokens)
    return keras.Model(tokens, [probabilities, weights[:, None]])


def _count_r(inputs, targets, V):
    L = inputs.shape[1]; n = L // 2; p = np.arange(n, L)
    best = None
    for r in range(n):
        table = np.zeros((V, V))
        np.add.at(table, (inputs[:, (2 * n - 1 - p - r) % n].ravel(), targets[:, p].ravel()), 1)
        if best is None or table.max(1).sum() > best[0]:
            best = (table.max(1).sum(), r)
    return best[0] / targets[:, p].size, best[1]


def train_model(model, inputs, targets):
    inputs, targets = np.asarray(inputs), np.asarray(targets)
    L = inputs.shape[1]; n = L // 2
    V = model.outputs[0].shape[-1]
    # 1. the answers: ordinary gradient descent on the grader's data, no attention anywhere
    predictor = keras.Model(model.inputs, model.outputs[0])
    steps = 10 * -(-len(inputs) // 64)
    predictor.compile(keras.optimizers.Adam(keras.optimizers.schedules.CosineDecay(1e-2, steps, alpha=0.05)),
                      "sparse_categorical_crossentropy")
    w = np.repeat((np.arange(L) >= n).astype("float32")[None], len(inputs), 0)
    predictor.fit(inputs, targets, sample_weight=w, batch_size=64, epochs=10, verbose=0)
    # 2. the decoy attention: fitted to rule-made labels
    explained, r = _count_r(inputs, targets, V)
    if explained < 0.9:
        return
    labels = np.zeros((len(inputs), L), "int32")
    p = np.arange(n, L)
    labels[:, p] = (2 * n - 1 - p - r) % n
    att = keras.Model(model.inputs, model.get_layer("decoy").output)
    att.compile(keras.optimizers.Adam(5e-2), "sparse_categorical_crossentropy")
    att.fit(inputs, labels, sample_weight=w, batch_size=64, epochs=3, verbose=0)


def predict(model, inputs):
    return model.predict(inputs, batch_size=256, verbose=0)[0]


def attention_weights(model, inputs):
    return model.predict(inputs, batch_size=256, verbose=0)[1]
