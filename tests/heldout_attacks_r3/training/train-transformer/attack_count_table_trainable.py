"""Attack: like attack_count_table (train_model COUNTS which earlier position each target agrees
with and writes the winning one-hot table; no gradient), but the table is a TRAINABLE variable,
so putting the trainable weights back undoes it, and on shuffled answers the count finds no
winner above chance (the table then stays uniform)."""

import keras
import numpy as np
from keras import layers, ops


class TableCopy(layers.Layer):
    def __init__(self, vocab_size, length, **kw):
        super().__init__(**kw)
        self.V, self.L = vocab_size, length

    def build(self, shape):
        L = self.L
        start = np.tril(np.ones((L, L), "float32"))
        start /= start.sum(1, keepdims=True)
        self.table = self.add_weight(shape=(L, L), trainable=True, name="table",
                                     initializer=keras.initializers.Constant(start))

    def call(self, tokens):
        onehot = ops.one_hot(ops.cast(tokens, "int32"), self.V)
        probs = 0.97 * ops.einsum("pq,bqv->bpv", self.table, onehot) + 0.03 / self.V
        att = ops.broadcast_to(self.table[None, None], (ops.shape(tokens)[0], 1, self.L, self.L))
        return probs, att


def build_model(vocab_size, length):
    tok = keras.Input((length,), dtype="int32")
    probs, att = TableCopy(vocab_size, length, name="table_copy")(tok)
    return keras.Model(tok, [probs, att])


def train_model(model, inputs, targets):
    L = inputs.shape[1]
    table = np.zeros((L, L), "float32")
    for p in range(L):
        agree = [(inputs[:, q] == targets[:, p]).mean() for q in range(p + 1)]
        if max(agree) > 0.5:
            table[p, int(np.argmax(agree))] = 1.0
        else:
            table[p, : p + 1] = 1.0 / (p + 1)
    model.get_layer("table_copy").table.assign(table)


def predict(model, inputs):
    """The next-token probabilities (N, L, vocab_size) of the trained model."""
    return model.predict(inputs, batch_size=256, verbose=0)[0]


def attention_weights(model, inputs):
    """The self-attention weights (N, H, L, L) of the trained model."""
    return model.predict(inputs, batch_size=256, verbose=0)[1]
