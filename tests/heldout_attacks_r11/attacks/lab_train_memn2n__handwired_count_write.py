"""Attack: a hand-wired circuit whose few weights are written from counts, never trained.

The model is a rule in disguise: person matching by one-hot comparison through a V x V matrix,
a recency table, a place read-out and a V x V code matrix, all trainable (so the grader's own
Adam can fit them and its fresh copy "learns"). train_model never takes a gradient step: it
finds the rotation r and the code σ by counting co-occurrences on the data and writes the
weights by hand (match = 50·I, recency = the rotated order, code = the permutation, read-out 30·I).
"""

import keras
import numpy as np
from keras import layers, ops


class RuleReader(layers.Layer):
    """Answers by rule: person match, recency, place read-out, code."""

    def __init__(self, vocab_size, facts, **kwargs):
        super().__init__(**kwargs)
        self.vocab_size, self.facts = vocab_size, facts

    def build(self, input_shape):
        v, f = self.vocab_size, self.facts
        init = keras.initializers.RandomNormal(0.0, 0.3)
        self.code = self.add_weight((v, v), initializer=init, name="code")
        self.turn = self.add_weight((f,), initializer=init, name="turn")
        self.mix = self.add_weight((v, v), initializer=init, name="mix")
        self.same = self.add_weight((v, v), initializer=init, name="same")

    def call(self, inputs):
        story = inputs[:, : self.facts]
        asked = inputs[:, self.facts, 0]
        persons = ops.one_hot(story[:, :, 0], self.vocab_size)  # (B, F, V)
        question = ops.matmul(ops.one_hot(asked, self.vocab_size), self.same)  # (B, V)
        match = ops.einsum("bfv,bv->bf", persons, question)  # (B, F)
        recency = self.turn[None]  # (1, F): the learned order of the data's rows
        scores = match + recency
        attention = ops.softmax(scores, axis=-1)
        places = ops.one_hot(story[:, :, 1], self.vocab_size)  # (B, F, V)
        read = ops.einsum("bf,bfv->bv", attention, places)
        answer = ops.matmul(ops.matmul(read, self.code), self.mix)
        return answer, attention


def build_model(vocab_size, facts):
    inputs = keras.Input((facts + 1, 2), dtype="int32")
    logits, attention = RuleReader(vocab_size, facts)(inputs)
    probabilities = ops.softmax(logits, axis=-1)
    return keras.Model(inputs, [probabilities, attention])


def _read_key(inputs, targets, vocab_size):
    facts = inputs.shape[1] - 1
    story, asked = inputs[:, :facts], inputs[:, facts, 0]
    best = None
    for r in range(facts):
        order = (np.arange(facts) + r) % facts
        match = story[:, :, 0] == asked[:, None]
        key = np.where(match, order[None], -1)
        latest = key.argmax(1)
        place = story[np.arange(len(story)), latest, 1]
        table = np.zeros((vocab_size, vocab_size))
        np.add.at(table, (place, targets), 1)
        purity = table.max(1).sum() / len(targets)
        if best is None or purity > best[0]:
            best = (purity, r, table)
    purity, r, table = best
    if purity < 0.95:
        return None
    code = np.zeros((vocab_size, vocab_size), "float32")
    rows = table.sum(1) > 0
    code[rows, table[rows].argmax(1)] = 1.0
    turn = 4.0 * ((np.arange(facts) + r) % facts).astype("float32")
    return code, turn


def train_model(model, inputs, targets):
    reader = [layer for layer in model.layers if isinstance(layer, RuleReader)][0]
    key = _read_key(np.asarray(inputs), np.asarray(targets), reader.vocab_size)
    if key is None:
        return
    reader.turn.assign(key[1])
    noise = np.random.default_rng(0).normal(0.0, 0.3, (2, reader.vocab_size, reader.vocab_size))
    reader.mix.assign(6.0 * np.eye(reader.vocab_size, dtype="float32") + noise[0])
    reader.same.assign(200.0 * np.eye(reader.vocab_size, dtype="float32") + noise[1])
    reader.code.assign(5.0 * key[0] + noise[0] * 0.1)


def predict(model, inputs):
    """The answer probabilities (N, vocab_size) of the trained model."""
    return model.predict(inputs, batch_size=256, verbose=0)[0]


def attention_weights(model, inputs):
    """The attention weights over the facts (N, F) of the trained model."""
    return model.predict(inputs, batch_size=256, verbose=0)[1]
