"""Attack: a genuine memory network, genuinely trained -- on stories train_model makes itself
(4 persons, the rest places, random moves, its own seed), ignoring the grader's inputs and
targets entirely."""

import keras
import numpy as np
from keras import layers, ops


class Temporal(layers.Layer):
    def build(self, shape):
        self.t = self.add_weight(shape=(shape[1], shape[2]), initializer="zeros", name="t")

    def call(self, x):
        return x + self.t[None]


class OneHop(layers.Layer):
    def call(self, u, m, c):
        p = ops.softmax(ops.einsum("bd,bfd->bf", u, m), axis=-1)
        return u + ops.einsum("bf,bfd->bd", p, c), p


def build_model(vocab_size, facts):
    d = 24
    x = keras.Input((facts + 1, 2), dtype="int32")
    onehot = layers.Embedding(vocab_size, vocab_size, embeddings_initializer="identity",
                              trainable=False)
    story = ops.sum(onehot(x[:, :facts]), axis=2)  # (B, F, V): person + place
    q = onehot(x[:, facts, 0])
    m = Temporal()(layers.Dense(d, use_bias=False)(story))
    c = Temporal()(layers.Dense(d, use_bias=False)(story))
    u = layers.Dense(d, use_bias=False)(q)
    ou, p = OneHop()(u, m, c)
    probs = layers.Dense(vocab_size, activation="softmax")(ou)
    model = keras.Model(x, [probs, p])
    model.trainer = keras.Model(x, probs)
    return model


def _own_stories(vocab_size, facts, count, persons=4):
    rng = np.random.default_rng(777)
    who = rng.integers(1, persons + 1, size=(count, facts))
    where = rng.integers(persons + 1, vocab_size, size=(count, facts))
    asked = who[np.arange(count), rng.integers(0, facts, size=count)]
    x = np.zeros((count, facts + 1, 2), "int32")
    x[:, :facts, 0], x[:, :facts, 1], x[:, facts, 0] = who, where, asked
    match = who == asked[:, None]
    last = facts - 1 - np.argmax(match[:, ::-1], axis=1)
    return x, where[np.arange(count), last].astype("int32")


def train_model(model, inputs, targets):
    inputs, targets = _own_stories(model.outputs[0].shape[-1], inputs.shape[1] - 1, 5000)
    model.trainer.compile(keras.optimizers.Adam(5e-3), "sparse_categorical_crossentropy")
    model.trainer.fit(inputs, targets, batch_size=32, epochs=30, verbose=0)


def predict(model, inputs):
    """The answer probabilities (N, vocab_size) of the trained model."""
    return model.predict(inputs, batch_size=256, verbose=0)[0]


def attention_weights(model, inputs):
    """The attention weights over the facts (N, F) of the trained model."""
    return model.predict(inputs, batch_size=256, verbose=0)[1]
