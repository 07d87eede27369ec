"""Honest (unusual): frozen one-hot token embeddings (an identity Embedding, trainable=False)
followed by trainable projections (no bias) for memories, outputs and the question; the temporal
encoding is a learned (F, d) table; one hop; answers from Dense(o + u); model.fit."""

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


def train_model(model, inputs, targets):
    model.trainer.compile(keras.optimizers.Adam(5e-3), "sparse_categorical_crossentropy")
    model.trainer.fit(inputs, targets, batch_size=32, epochs=30, verbose=0)


def predict(model, inputs):
    """The answer probabilities (N, vocab_size) of the trained model."""
    return model.predict(inputs, batch_size=256, verbose=0)[0]


def attention_weights(model, inputs):
    """The attention weights over the facts (N, F) of the trained model."""
    return model.predict(inputs, batch_size=256, verbose=0)[1]
