"""Attack: the answer is learned, but by a GRU that reads the facts in order with the question
appended to each (no attention at all); the "attention" output is a picture computed by a
weightless layer by rule (one-hot on the latest fact about the person asked)."""

import keras
import numpy as np
from keras import layers, ops


class PictureOfAttention(layers.Layer):
    def __init__(self, facts, **kw):
        super().__init__(**kw)
        self.F = facts

    def call(self, x):
        x = ops.cast(x, "int32")
        match = ops.cast(ops.equal(x[:, : self.F, 0], x[:, self.F : self.F + 1, 0]), "float32")
        idx = ops.cast(ops.arange(self.F), "float32")[None]
        return ops.softmax(50.0 * match + 5.0 * idx, axis=-1)


def build_model(vocab_size, facts):
    x = keras.Input((facts + 1, 2), dtype="int32")
    emb = layers.Embedding(vocab_size, 16)
    story = ops.reshape(emb(x[:, :facts]), (-1, facts, 32))
    q = ops.repeat(emb(x[:, facts : facts + 1, 0]), facts, axis=1)
    h = layers.GRU(64)(ops.concatenate([story, q], axis=-1))
    probs = layers.Dense(vocab_size, activation="softmax")(h)
    att = PictureOfAttention(facts)(x)
    model = keras.Model(x, [probs, att])
    model.trainer = keras.Model(x, probs)
    return model


def train_model(model, inputs, targets):
    model.trainer.compile(keras.optimizers.Adam(5e-3), "sparse_categorical_crossentropy")
    model.trainer.fit(inputs, targets, batch_size=64, epochs=20, verbose=0)


def predict(model, inputs):
    """The answer probabilities (N, vocab_size) of the trained model."""
    return model.predict(inputs, batch_size=256, verbose=0)[0]


def attention_weights(model, inputs):
    """The attention weights over the facts (N, F) of the trained model."""
    return model.predict(inputs, batch_size=256, verbose=0)[1]
