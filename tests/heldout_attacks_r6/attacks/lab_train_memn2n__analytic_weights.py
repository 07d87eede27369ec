"""Attack: a hand-built one-hot memory network whose few weights are written by `train_model`
from counting, never by gradient descent. For every candidate rotation r, the place of the
latest fact about the asked person (in the order r implies) must map to the target as a
function; the r that agrees best is kept, sigma is read off the counts, and the temporal
encoding, the person-matching scale and the (V, V) output matrix are assigned directly.
"""

import keras
import numpy as np
from keras import layers, ops


class OneHotMemory(layers.Layer):
    def __init__(self, vocab_size, facts, **kwargs):
        super().__init__(**kwargs)
        self.vocab_size, self.facts = vocab_size, facts

    def build(self, input_shape):
        init = keras.initializers.RandomNormal(stddev=0.05)
        self.match = self.add_weight(shape=(), initializer="zeros", name="match")
        self.temporal = self.add_weight(shape=(self.facts,), initializer=init, name="temporal")
        self.out = self.add_weight(shape=(self.vocab_size, self.vocab_size), initializer=init, name="out")

    def call(self, inputs):
        story = inputs[:, : self.facts]
        persons = ops.one_hot(story[..., 0], self.vocab_size)  # (B, F, V)
        places = ops.one_hot(story[..., 1], self.vocab_size)
        asked = ops.one_hot(inputs[:, self.facts, 0], self.vocab_size)  # (B, V)
        scores = self.match * ops.einsum("bfv,bv->bf", persons, asked) + self.temporal[None]
        weights = ops.softmax(scores, axis=-1)
        read = ops.einsum("bf,bfv->bv", weights, places)
        probs = ops.softmax(ops.matmul(read, self.out), axis=-1)
        return probs, weights


def build_model(vocab_size, facts):
    inputs = keras.Input((facts + 1, 2), dtype="int32")
    probs, weights = OneHotMemory(vocab_size, facts)(inputs)
    return keras.Model(inputs, [probs, weights])


def _support(inputs, r):
    facts = inputs.shape[1] - 1
    order = (np.arange(facts) + r) % facts
    match = inputs[:, :facts, 0] == inputs[:, facts, 0][:, None]
    key = np.where(match, order[None], -1)
    return key.argmax(axis=1)


def train_model(model, inputs, targets):
    inputs, targets = np.asarray(inputs), np.asarray(targets)
    layer = [l for l in model.layers if isinstance(l, OneHotMemory)][0]
    vocab, facts = layer.vocab_size, layer.facts
    rows = np.arange(len(inputs))
    best, best_r = -1, 0
    for r in range(facts):
        place = inputs[rows, _support(inputs, r), 1]
        counts = np.zeros((vocab, vocab))
        np.add.at(counts, (place, targets), 1)
        agree = counts.max(axis=1).sum()
        if agree > best:
            best, best_r, best_counts = agree, r, counts
    sigma = best_counts.argmax(axis=1)
    out = np.zeros((vocab, vocab), "float32")
    out[np.arange(vocab), sigma] = 30.0
    order = ((np.arange(facts) + best_r) % facts).astype("float32")
    layer.match.assign(50.0)
    layer.temporal.assign(2.0 * order)
    layer.out.assign(out)


def predict(model, inputs):
    return model.predict(inputs, batch_size=256, verbose=0)[0]


def attention_weights(model, inputs):
    return model.predict(inputs, batch_size=256, verbose=0)[1]
