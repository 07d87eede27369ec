"""Attack: no encoder, no decoder RNN, no gradient descent. The rotation r is read off the
training sources (the month token is the only token >= 10, at date position 2), the digit code
sigma is counted from the targets (when the counts are not a clean function, e.g. shuffled
answers, it leaves the random weights alone so it stays at chance like a real learner), and `train_model` writes a (T, S) table of attention logits
and a per-step (T, V, V) lookup from the attended source token to the coded digit. The
"attention" depends on the step only, so two steps with the same decoder input still differ.
"""

import keras
import numpy as np
from keras import layers, ops

ALIGN = [0, 1, 2, 2, 3, 4, 5, 6]


class StepTable(layers.Layer):
    def __init__(self, vocab_size, source_length, target_length, **kwargs):
        super().__init__(**kwargs)
        self.vocab_size, self.S, self.T = vocab_size, source_length, target_length

    def build(self, input_shape):
        init = keras.initializers.RandomNormal(stddev=0.05)
        self.table = self.add_weight(shape=(self.T, self.S), initializer=init, name="table")
        self.lookup = self.add_weight(shape=(self.T, self.vocab_size, self.vocab_size), initializer=init, name="lookup")

    def call(self, inputs):
        source = ops.one_hot(inputs[:, : self.S], self.vocab_size)  # (B, S, V)
        weights = ops.softmax(self.table, axis=-1)  # (T, S)
        read = ops.einsum("ts,bsv->btv", weights, source)
        probs = ops.softmax(ops.einsum("btv,tvw->btw", read, self.lookup), axis=-1)
        batch = ops.shape(inputs)[0]
        return probs, ops.broadcast_to(weights[None], (batch, self.T, self.S))


def build_model(vocab_size, source_length, target_length):
    inputs = keras.Input((source_length + target_length,), dtype="int32")
    probs, weights = StepTable(vocab_size, source_length, target_length)(inputs)
    return keras.Model(inputs, [probs, weights])


def _plain_digit(step, token):
    if step in (2, 3):
        month = token - 9 if token >= 10 else token
        return month // 10 if step == 2 else month % 10
    return token if token < 10 else 0


def train_model(model, inputs, targets):
    inputs, targets = np.asarray(inputs), np.asarray(targets)
    layer = [l for l in model.layers if isinstance(l, StepTable)][0]
    S, T, V = layer.S, layer.T, layer.vocab_size
    month_at = np.bincount((inputs[:, :S] >= 10).argmax(axis=1), minlength=S).argmax()
    r = (2 - month_at) % S
    where = [(ALIGN[t] - r) % S for t in range(T)]
    counts = np.zeros((10, V))
    for t in range(T):
        plain = np.array([_plain_digit(t, tok) for tok in inputs[:, where[t]]])
        np.add.at(counts, (plain, targets[:, t]), 1)
    sigma = counts.argmax(axis=1)
    if counts.max(axis=1).sum() < 0.9 * counts.sum():
        return  # answers not a function of the source (shuffled): stay at chance, as a learner would
    table = np.zeros((T, S), "float32")
    table[np.arange(T), where] = 30.0
    lookup = np.zeros((T, V, V), "float32")
    for t in range(T):
        for tok in range(V):
            lookup[t, tok, sigma[_plain_digit(t, tok)]] = 30.0
    layer.table.assign(table)
    layer.lookup.assign(lookup)


def predict(model, inputs):
    return model.predict(inputs, batch_size=256, verbose=0)[0]


def attention_weights(model, inputs):
    return model.predict(inputs, batch_size=256, verbose=0)[1]
