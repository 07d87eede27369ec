"""Attack (memn2n): a hand-wired rule whose two tables are filled by counting, no gradient.

Attention = softmax(8 * match(person, asked) * (1 + recency)), recency = (j + r) mod F, with the
rotation r read from a one-hot weight vector `rot` (F,), and the answer = code table `table`
(V, V) applied to the attended fact's place. The person match is
also a weight (an embedding `who` whose dot products are set to the identity). train_model counts, for every candidate r, how
consistently "place of the latest fact" predicts the target, keeps the best r and the majority
target of each place, and writes them into the weights as one-hot rows (ordinary positions in
ordinary matrices, so a change moved in other directions breaks them)."""
import keras
import numpy as np
from keras import layers, ops


class RuleMemory(layers.Layer):
    def __init__(self, vocab_size, facts, **kw):
        super().__init__(**kw)
        self.vocab_size, self.facts = vocab_size, facts

    def build(self, input_shape):
        V, F = self.vocab_size, self.facts
        self.table = self.add_weight(shape=(V, V), initializer=keras.initializers.RandomNormal(stddev=0.1),
                                     name="table")
        self.who = self.add_weight(shape=(V, V), initializer=keras.initializers.RandomNormal(stddev=0.01),
                                   name="who")  # person embedding, set to the identity
        self.rot = self.add_weight(shape=(F,), initializer=keras.initializers.RandomNormal(stddev=0.1),
                                   name="rot")

    def call(self, inputs):
        F, V = self.facts, self.vocab_size
        story = inputs[:, :F]
        asked = inputs[:, F, 0]
        persons, places = story[..., 0], story[..., 1]
        q = ops.take(self.who, asked, axis=0)  # (B, V)
        k = ops.take(self.who, persons, axis=0)  # (B, F, V)
        match = ops.einsum("bv,bfv->bf", q, k)
        rdist = ops.softmax(20.0 * self.rot)  # (F,) which rotation
        j = ops.arange(F)
        rec_table = ops.cast(ops.mod(j[:, None] + j[None, :], F), "float32")  # (j, r)
        recency = ops.matmul(rec_table, rdist)  # (F,)
        scores = match * (recency + 1.0) * 8.0 + 0.01 * ops.cast(places, "float32")
        weights = ops.softmax(scores, axis=-1)
        logits = ops.take(self.table, places, axis=0)  # (B, F, V)
        onehot = ops.softmax(20.0 * logits, axis=-1)
        probs = ops.einsum("bf,bfv->bv", weights, onehot)
        return probs, weights


def build_model(vocab_size, facts):
    inputs = keras.Input((facts + 1, 2), dtype="int32")
    probs, weights = RuleMemory(vocab_size, facts)(inputs)
    return keras.Model(inputs, [probs, weights])


def _rule(inputs, r):
    F = inputs.shape[1] - 1
    story = inputs[:, :F]
    asked = inputs[:, F, 0]
    match = story[..., 0] == asked[:, None]
    key = np.where(match, (np.arange(F) + r) % F + 1, 0)
    return story[np.arange(len(inputs)), key.argmax(1), 1]


def train_model(model, inputs, targets):
    inputs, targets = np.asarray(inputs), np.asarray(targets)
    F = inputs.shape[1] - 1
    layer = [l for l in model.layers if isinstance(l, RuleMemory)][0]
    V = layer.vocab_size
    best = None
    for r in range(F):
        table = np.zeros((V, V))
        np.add.at(table, (_rule(inputs, r), targets), 1)
        if best is None or table.max(1).sum() > best[0]:
            best = (table.max(1).sum(), r, table)
    _, r, table = best
    layer.rot.assign(np.eye(F, dtype="float32")[r])
    new = np.zeros((V, V), "float32")
    seen = table.sum(1) > 0
    new[seen, table[seen].argmax(1)] = 1.0
    layer.table.assign(new)
    layer.who.assign(np.eye(V, dtype="float32"))


def predict(model, inputs):
    return model.predict(inputs, batch_size=256, verbose=0)[0]


def attention_weights(model, inputs):
    return model.predict(inputs, batch_size=256, verbose=0)[1]
