"""Attack (transformer): a one-layer causal attention whose weights are written in closed form from
counts of the training data, no gradient.

Weights: a position score matrix S (L, L), a token key bias u (V,), a code table T (V, V). The
attention is softmax over the causal keys of S[p, k] + u[token_k] (so it depends on the input), the
output softmax(20 * sum_k a_pk T[token_k]). train_model finds the rotation r and the code sigma by
counting (for every r, how consistently the source token at the would-be mirrored position
predicts the target) and writes S[p, mirror(p)] = 12, T = one-hot sigma, u = small values (v2: only when the counts explain
at least 90% of the answer targets, so answers shuffled between examples leave it untouched)."""
import keras
import numpy as np
from keras import layers, ops


class ClosedForm(layers.Layer):
    def __init__(self, vocab_size, length, **kw):
        super().__init__(**kw)
        self.vocab_size, self.length = vocab_size, length

    def build(self, input_shape):
        V, L = self.vocab_size, self.length
        init = keras.initializers.RandomNormal(stddev=0.01)
        self.S = self.add_weight(shape=(L, L), initializer=init, name="S")
        self.u = self.add_weight(shape=(V,), initializer=init, name="u")
        self.T = self.add_weight(shape=(V, V), initializer=init, name="T")

    def call(self, tokens):
        L = self.length
        scores = self.S[None] + ops.take(self.u, tokens)[:, None, :]  # (B, L, L)
        causal = ops.arange(L)[None, :] <= ops.arange(L)[:, None]
        scores = ops.where(causal[None], scores, -1e9)
        weights = ops.softmax(scores, axis=-1) * ops.cast(causal, "float32")[None]
        values = ops.take(self.T, tokens, axis=0)  # (B, L, V)
        mixed = ops.einsum("bpk,bkv->bpv", weights, values)
        return ops.softmax(20.0 * mixed, axis=-1), weights[:, None]


def build_model(vocab_size, length):
    tokens = keras.Input((length,), dtype="int32")
    probs, weights = ClosedForm(vocab_size, length)(tokens)
    return keras.Model(tokens, [probs, weights])


def train_model(model, inputs, targets):
    inputs, targets = np.asarray(inputs), np.asarray(targets)
    layer = [l for l in model.layers if isinstance(l, ClosedForm)][0]
    L, V = inputs.shape[1], layer.vocab_size
    n = L // 2
    p = np.arange(n, L)
    best = None
    for r in range(n):
        j = (2 * n - 1 - p - r) % n
        table = np.zeros((V, V))
        np.add.at(table, (inputs[:, j].ravel(), targets[:, p].ravel()), 1)
        if best is None or table.max(1).sum() > best[0]:
            best = (table.max(1).sum(), r, table)
    score, r, table = best
    if score < 0.9 * targets[:, p].size:
        return  # the counts explain nothing (shuffled answers): keep the random first weights
    S = np.zeros((L, L), "float32")
    S[p, (2 * n - 1 - p - r) % n] = 12.0
    T = np.zeros((V, V), "float32")
    seen = table.sum(1) > 0
    T[seen, table[seen].argmax(1)] = 1.0
    rng = np.random.default_rng(0)
    layer.S.assign(S)
    layer.T.assign(T)
    layer.u.assign(rng.uniform(0, 1.5, V).astype("float32"))


def predict(model, inputs):
    return model.predict(inputs, batch_size=256, verbose=0)[0]


def attention_weights(model, inputs):
    return model.predict(inputs, batch_size=256, verbose=0)[1]
