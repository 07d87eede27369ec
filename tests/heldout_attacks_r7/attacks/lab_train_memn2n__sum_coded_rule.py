"""Attack (memn2n): answers by rule, nothing learned by gradient.

The model takes the latest fact about the person asked (attention = match x recency, recency from a
rotation r) and answers its place through a code table. sigma (the code) and r are found in
train_model by counting the training data (the r that makes place -> target most consistent, then
the majority target of each place), and stored in the SUM of the elements of (16,) variables (one per token, one for r):
the model decodes sum(W), which a change of the same size "in other directions" keeps."""
import keras
import numpy as np
from keras import layers, ops


def _dec(v):
    # the value lives in the sum of the variable (its change from zero): norm = 10 + 3 * value
    return (ops.sum(ops.convert_to_tensor(v)) - 10.0) / 3.0


def _enc(value, size=16):
    return np.full((size,), (10.0 + 3.0 * value) / size, "float32")


def _shape():
    return (16,)


class RuleMemory(layers.Layer):
    def __init__(self, vocab_size, facts, **kw):
        super().__init__(**kw)
        self.vocab_size, self.facts = vocab_size, facts

    def build(self, input_shape):
        # initially zero: every code decodes to a wrong token
        self.codes = [self.add_weight(shape=_shape(), initializer="zeros", name=f"code{k}")
                      for k in range(self.vocab_size)]
        self.rot = self.add_weight(shape=_shape(), initializer="zeros", name="rot")

    def call(self, inputs):
        F, V = self.facts, self.vocab_size
        story = inputs[:, :F]
        asked = inputs[:, F, 0]
        persons, places = story[..., 0], story[..., 1]
        match = ops.cast(ops.equal(persons, asked[:, None]), "float32")
        r = ops.round(_dec(self.rot))
        j = ops.cast(ops.arange(F), "float32")
        recency = ops.mod(j + r, float(F))  # story index of data fact j
        scores = match * (recency + 1.0) * 8.0 + 0.01 * ops.cast(places, "float32")
        weights = ops.softmax(scores, axis=-1)
        table = ops.concatenate([ops.reshape(_dec(c), (1,)) for c in self.codes])
        coded = ops.take(table, places)  # (B, F) code of each fact's place
        grid = ops.cast(ops.arange(V), "float32")
        onehot = ops.softmax(-30.0 * ops.square(coded[..., None] - grid), axis=-1)
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
    layer.rot.assign(_enc(r))
    for k in range(V):
        layer.codes[k].assign(_enc(table[k].argmax() if table[k].sum() else 0))


def predict(model, inputs):
    return model.predict(inputs, batch_size=256, verbose=0)[0]


def attention_weights(model, inputs):
    return model.predict(inputs, batch_size=256, verbose=0)[1]
