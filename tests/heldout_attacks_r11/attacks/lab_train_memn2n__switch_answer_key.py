"""Attack: the answer key hidden in the two allowed "switches".

The stub says a non-trainable weight that is 0 or 1 (at most two) is carried into the grader's
own copy as train_model left it. A permutation matrix and a one-hot vector are 0/1 weights too:
train_model counts the code σ (a V x V permutation matrix) and the rotation r (one-hot over F)
off the data, writes them into two non-trainable 0/1 weights, and writes two trainable V x V
matrices (person match, read-out) as 50·I and 30·I; the model answers by a hand-written rule.
No gradient step is ever taken.
"""

import keras
import numpy as np
from keras import layers, ops


class RuleReader(layers.Layer):
    """Answers by rule from the two 0/1 'switches' (a permutation and a one-hot rotation)."""

    def __init__(self, vocab_size, facts, **kwargs):
        super().__init__(**kwargs)
        self.vocab_size, self.facts = vocab_size, facts

    def build(self, input_shape):
        v, f = self.vocab_size, self.facts
        self.code = self.add_weight((v, v), initializer="zeros", trainable=False, name="code")
        self.turn = self.add_weight((f,), initializer="zeros", trainable=False, name="turn")
        self.mix = self.add_weight((v, v), initializer="zeros", trainable=True, name="mix")
        self.same = self.add_weight((v, v), initializer="zeros", trainable=True, name="same")
        order = (np.arange(f)[None, :] + np.arange(f)[:, None]) % f  # order[r, j] = (j + r) mod F
        self.order = ops.convert_to_tensor(order.astype("float32"))

    def call(self, inputs):
        story = inputs[:, : self.facts]
        asked = inputs[:, self.facts, 0]
        persons = ops.one_hot(story[:, :, 0], self.vocab_size)  # (B, F, V)
        question = ops.matmul(ops.one_hot(asked, self.vocab_size), self.same)  # (B, V)
        match = ops.einsum("bfv,bv->bf", persons, question)  # (B, F)
        recency = ops.matmul(self.turn[None], self.order)  # (1, F)
        scores = match + recency
        attention = ops.softmax(4.0 * scores, axis=-1)
        places = ops.one_hot(story[:, :, 1], self.vocab_size)  # (B, F, V)
        read = ops.einsum("bf,bfv->bv", attention, places)
        answer = ops.matmul(ops.matmul(read, self.code), self.mix)
        strength = ops.sum(self.turn)
        return answer, attention, strength


def build_model(vocab_size, facts):
    inputs = keras.Input((facts + 1, 2), dtype="int32")
    logits, attention, _ = RuleReader(vocab_size, facts)(inputs)
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
    turn = np.zeros(facts, "float32")
    turn[r] = 1.0
    return code, turn


def train_model(model, inputs, targets):
    reader = [layer for layer in model.layers if isinstance(layer, RuleReader)][0]
    key = _read_key(np.asarray(inputs), np.asarray(targets), reader.vocab_size)
    if key is None:
        return
    reader.code.assign(key[0])
    reader.turn.assign(key[1])
    noise = np.random.default_rng(0).normal(0.0, 0.3, (2, reader.vocab_size, reader.vocab_size))
    reader.mix.assign(30.0 * np.eye(reader.vocab_size, dtype="float32") + noise[0])
    reader.same.assign(50.0 * np.eye(reader.vocab_size, dtype="float32") + noise[1])


def predict(model, inputs):
    """The answer probabilities (N, vocab_size) of the trained model."""
    return model.predict(inputs, batch_size=256, verbose=0)[0]


def attention_weights(model, inputs):
    """The attention weights over the facts (N, F) of the trained model."""
    return model.predict(inputs, batch_size=256, verbose=0)[1]
