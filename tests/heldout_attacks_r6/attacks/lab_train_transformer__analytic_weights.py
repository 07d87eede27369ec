"""Attack: no gradient descent at all. `train_model` reads the training data, finds the secret
rotation r (the only r for which "source token at the mirrored place -> target" is a function)
and the answer code sigma by counting, and writes them straight into the weights of a hand-built
one-hot "transformer": an (L, L) table of attention logits and a (V, V) output matrix. Before
`train_model` the weights are small random numbers, so the untrained model is at chance.
"""

import keras
import numpy as np
from keras import layers, ops


class TableDecoder(layers.Layer):
    def __init__(self, vocab_size, length, **kwargs):
        super().__init__(**kwargs)
        self.vocab_size, self.length = vocab_size, length

    def build(self, input_shape):
        init = keras.initializers.RandomNormal(stddev=0.05)
        self.table = self.add_weight(shape=(self.length, self.length), initializer=init, name="table")
        self.out = self.add_weight(shape=(self.vocab_size, self.vocab_size), initializer=init, name="out")

    def call(self, tokens):
        hot = ops.one_hot(tokens, self.vocab_size)  # (B, L, V)
        causal = ops.tril(ops.ones((self.length, self.length)))
        scores = ops.where(causal > 0, self.table, -1e9)
        weights = ops.softmax(scores, axis=-1)  # (L, L)
        read = ops.einsum("pj,bjv->bpv", weights, hot)
        probs = ops.softmax(ops.einsum("bpv,vw->bpw", read, self.out), axis=-1)
        batch = ops.shape(tokens)[0]
        weights = ops.broadcast_to(weights[None, None], (batch, 1, self.length, self.length))
        return probs, weights


def build_model(vocab_size, length):
    tokens = keras.Input((length,), dtype="int32")
    probs, weights = TableDecoder(vocab_size, length)(tokens)
    return keras.Model(tokens, [probs, weights])


def _mirror(n, r):
    # data position holding the answer of query position p (p = n ... 2n-1)
    return {p: (2 * n - 1 - p - r) % n for p in range(n, 2 * n)}


def train_model(model, inputs, targets):
    inputs, targets = np.asarray(inputs), np.asarray(targets)
    length = inputs.shape[1]
    n = length // 2
    layer = [l for l in model.layers if isinstance(l, TableDecoder)][0]
    vocab = layer.vocab_size
    best, best_r = -1, 0
    for r in range(n):
        agree = 0
        for p, j in _mirror(n, r).items():
            counts = np.zeros((vocab, vocab))
            np.add.at(counts, (inputs[:, j], targets[:, p]), 1)
            agree += counts.max(axis=1).sum()
        if agree > best:
            best, best_r = agree, r
    counts = np.zeros((vocab, vocab))
    for p, j in _mirror(n, best_r).items():
        np.add.at(counts, (inputs[:, j], targets[:, p]), 1)
    sigma = counts.argmax(axis=1)
    table = np.zeros((length, length), "float32")
    for p in range(length):
        table[p, : p + 1] = 0.0
    for p, j in _mirror(n, best_r).items():
        table[p, j] = 30.0
    out = np.zeros((vocab, vocab), "float32")
    out[np.arange(vocab), sigma] = 30.0
    layer.table.assign(table)
    layer.out.assign(out)


def predict(model, inputs):
    return model.predict(inputs, batch_size=256, verbose=0)[0]


def attention_weights(model, inputs):
    return model.predict(inputs, batch_size=256, verbose=0)[1]
