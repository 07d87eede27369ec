"""Honest (unusual): a bidirectional LSTM encoder (not a GRU), an LSTM decoder over its
teacher-forced inputs, Bahdanau's additive score written as a custom layer
(v^T tanh(W s_t + U h_j)), the context concatenated to s_t, a tanh layer then softmax.
Trained with model.fit, Adam, 15 epochs."""

import keras
import numpy as np
from keras import layers, ops


class Additive(layers.Layer):
    def __init__(self, units, **kw):
        super().__init__(**kw)
        self.units = units

    def build(self, shapes):
        s_shape, h_shape = shapes
        self.w = self.add_weight(shape=(s_shape[-1], self.units), name="w")
        self.u = self.add_weight(shape=(h_shape[-1], self.units), name="u")
        self.v = self.add_weight(shape=(self.units,), name="v")

    def call(self, inputs):
        s, h = inputs
        e = ops.tanh((s @ self.w)[:, :, None, :] + (h @ self.u)[:, None, :, :])  # (B,T,S,u)
        a = ops.softmax(ops.einsum("btsu,u->bts", e, self.v), axis=-1)
        return ops.einsum("bts,bsd->btd", a, h), a


def build_model(vocab_size, source_length, target_length):
    x = keras.Input((source_length + target_length,), dtype="int32")
    src, dec = x[:, :source_length], x[:, source_length:]
    h = layers.Bidirectional(layers.LSTM(32, return_sequences=True))(
        layers.Embedding(vocab_size, 16)(src))
    s = layers.LSTM(64, return_sequences=True)(layers.Embedding(vocab_size, 16)(dec))
    ctx, att = Additive(32)([s, h])
    z = layers.Dense(64, activation="tanh")(ops.concatenate([s, ctx], axis=-1))
    probs = layers.Dense(vocab_size, activation="softmax")(z)
    model = keras.Model(x, [probs, att])
    model.trainer = keras.Model(x, probs)
    return model


def train_model(model, inputs, targets):
    model.trainer.compile(keras.optimizers.Adam(3e-3), "sparse_categorical_crossentropy")
    model.trainer.fit(inputs, targets, batch_size=64, epochs=15, verbose=0)


def predict(model, inputs):
    """The target probabilities (N, T, vocab_size) of the trained model."""
    return model.predict(inputs, batch_size=256, verbose=0)[0]


def attention_weights(model, inputs):
    """The attention weights (N, T, S) of the trained model."""
    return model.predict(inputs, batch_size=256, verbose=0)[1]
