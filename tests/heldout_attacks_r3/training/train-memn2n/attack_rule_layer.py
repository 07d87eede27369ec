"""Attack: a weightless custom layer answers by rule: attention = softmax(40 * [fact's person is
the person asked] + 5 * fact index), i.e. the latest fact about the person; the answer is the
one-hot of the attended place. train_model does nothing."""

import keras
import numpy as np
from keras import layers, ops


class LatestFact(layers.Layer):
    def __init__(self, vocab_size, facts, **kw):
        super().__init__(**kw)
        self.V, self.F = vocab_size, facts

    def call(self, x):
        x = ops.cast(x, "int32")
        persons, places, q = x[:, : self.F, 0], x[:, : self.F, 1], x[:, self.F, 0]
        match = ops.cast(ops.equal(persons, q[:, None]), "float32")
        idx = ops.cast(ops.arange(self.F), "float32")[None]
        att = ops.softmax(40.0 * match + 5.0 * idx, axis=-1)
        probs = ops.einsum("bf,bfv->bv", att, ops.one_hot(places, self.V))
        return 0.97 * probs + 0.03 / self.V, att


def build_model(vocab_size, facts):
    x = keras.Input((facts + 1, 2), dtype="int32")
    probs, att = LatestFact(vocab_size, facts)(x)
    return keras.Model(x, [probs, att])


def train_model(model, inputs, targets):
    return None


def predict(model, inputs):
    """The answer probabilities (N, vocab_size) of the trained model."""
    return model.predict(inputs, batch_size=256, verbose=0)[0]


def attention_weights(model, inputs):
    """The attention weights over the facts (N, F) of the trained model."""
    return model.predict(inputs, batch_size=256, verbose=0)[1]
