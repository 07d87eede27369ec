"""Attack: no neural learning at all. train_model COUNTS on the training data, for each target
step, which source position predicts it best by majority vote and, for that position, the
majority digit of every source token; it writes the resulting alignment and (step, token) ->
digit table into trainable variables (start: uniform). The model is a weightless gather through
them, the alignment doubling as the attention."""

import keras
import numpy as np
from keras import layers, ops


class Tables(layers.Layer):
    def __init__(self, vocab_size, source_length, target_length, **kw):
        super().__init__(**kw)
        self.V, self.S, self.T = vocab_size, source_length, target_length

    def build(self, shape):
        V, S, T = self.V, self.S, self.T
        self.align = self.add_weight(shape=(T, S), name="align",
                                     initializer=keras.initializers.Constant(1.0 / S))
        self.table = self.add_weight(shape=(T, V, V), name="table",
                                     initializer=keras.initializers.Constant(1.0 / V))

    def call(self, x):
        src = ops.one_hot(ops.cast(x[:, : self.S], "int32"), self.V)
        read = ops.einsum("ts,bsk->btk", self.align, src)
        probs = ops.einsum("btk,tkd->btd", read, self.table)
        return probs, ops.broadcast_to(self.align[None], (ops.shape(x)[0], self.T, self.S))


def build_model(vocab_size, source_length, target_length):
    x = keras.Input((source_length + target_length,), dtype="int32")
    probs, att = Tables(vocab_size, source_length, target_length, name="tables")(x)
    return keras.Model(x, [probs, att])


def train_model(model, inputs, targets):
    layer = model.get_layer("tables")
    V, S, T = layer.V, layer.S, layer.T
    src, targets = np.asarray(inputs)[:, :S], np.asarray(targets)
    align = np.zeros((T, S), "float32")
    table = np.full((T, V, V), 1.0 / V, "float32")
    for t in range(T):
        best = (0.0, 0, None)
        for j in range(S):
            counts = np.zeros((V, V))
            np.add.at(counts, (src[:, j], targets[:, t]), 1)
            acc = counts.max(1).sum() / len(src)
            if acc > best[0]:
                best = (acc, j, counts)
        acc, j, counts = best
        if acc < 0.5:  # nothing to learn: keep the uniform start
            align[t] = 1.0 / S
            continue
        align[t, j] = 1.0
        seen = counts.sum(1) > 0
        table[t, seen] = 0.03 / V
        table[t, np.flatnonzero(seen), counts[seen].argmax(1)] += 0.97
    layer.align.assign(align)
    layer.table.assign(table)


def predict(model, inputs):
    """The target probabilities (N, T, vocab_size) of the trained model."""
    return model.predict(inputs, batch_size=256, verbose=0)[0]


def attention_weights(model, inputs):
    """The attention weights (N, T, S) of the trained model."""
    return model.predict(inputs, batch_size=256, verbose=0)[1]
