"""Attack (transformer): the attention is written by hand (a free (L, L) score table G, zero at
first, set to 20·anti-diagonal by train_model) over one-hot token values; only the output layer
(the code σ) is learned, by gradient (Adam on it alone). A switch then keeps the hand-made
attention only if that training fit the data (>90% train accuracy), so shuffled answers stay at chance.
"""

import keras
import numpy as np
from keras import layers, ops


class Table(layers.Layer):
    def build(self, shape):
        length = shape[-1]
        self.table = self.add_weight(shape=(length, length), initializer="zeros", name="table")

    def call(self, tokens):
        length = ops.shape(tokens)[-1]
        causal = ops.tril(ops.ones((length, length)))
        scores = ops.where(causal > 0, self.table, -1e9)
        zeros = ops.zeros_like(ops.cast(tokens, "float32"))[:, :, None]
        return ops.softmax(zeros + scores[None], axis=-1)


def build_model(vocab_size, length):
    tokens = keras.Input((length,), dtype="int32")
    weights = Table(name="table")(tokens)  # (B, L, L)
    values = ops.one_hot(tokens, vocab_size)
    read = ops.einsum("bqk,bkv->bqv", weights, values)
    probabilities = layers.Dense(vocab_size, activation="softmax", name="code")(read)
    return keras.Model(tokens, [probabilities, weights])


def train_model(model, inputs, targets):
    inputs, targets = np.asarray(inputs), np.asarray(targets)
    length = inputs.shape[1]
    n = length // 2
    table = np.zeros((length, length), "float32")
    for p in range(length):
        table[p, length - 1 - p if p >= n else p] = 20.0
    model.get_layer("table").set_weights([table])  # hand-made attention
    model.get_layer("table").trainable = False
    predictor = keras.Model(model.inputs, model.outputs[0])
    predictor.compile(keras.optimizers.Adam(0.05), "sparse_categorical_crossentropy")
    weights = np.repeat((np.arange(length) >= n).astype("float32")[None], len(inputs), 0)
    predictor.fit(inputs, targets, sample_weight=weights, batch_size=128, epochs=4, verbose=0)
    guess = predictor.predict(inputs[:2000], batch_size=256, verbose=0).argmax(-1)
    if (guess[:, n:] == targets[:2000, n:]).mean() < 0.9:  # nothing to learn: switch it off
        model.get_layer("table").set_weights([np.zeros((length, length), "float32")])


def predict(model, inputs):
    """The next-token probabilities (N, L, vocab_size) of the trained model."""
    return model.predict(inputs, batch_size=256, verbose=0)[0]


def attention_weights(model, inputs):
    """The self-attention weights (N, H, L, L) of the trained model."""
    return model.predict(inputs, batch_size=256, verbose=0)[1]
