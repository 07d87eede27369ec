"""Honest: a memory network with a learned temporal encoding and a linear start.

As in Sukhbaatar et al. §4.2, training starts with the softmax of the attention removed (a
linear, normalised score) and switches it on after a few epochs; the mode is a non-trainable
0/1 weight that train_model flips once. The temporal encoding is a trainable table. Everything
is learned by Adam on the data given; the model ends in softmax mode.
"""

import keras
import numpy as np
from keras import layers, ops


class Temporal(layers.Layer):
    def build(self, input_shape):
        self.table = self.add_weight(
            (input_shape[1], input_shape[2]),
            initializer=keras.initializers.RandomNormal(0.0, 0.1),
            name="table",
        )

    def call(self, memories):
        return memories + self.table[None]


class Attend(layers.Layer):
    """p = softmax(u · m) in softmax mode, a linear normalised score in the linear start."""

    def build(self, input_shape):
        self.mode = self.add_weight((), initializer="zeros", trainable=False, name="mode")

    def call(self, memories, question):
        scores = ops.einsum("bfd,bd->bf", memories, question)
        soft = ops.softmax(scores, axis=-1)
        shifted = scores - ops.min(scores, axis=-1, keepdims=True) + 1e-3
        linear = shifted / ops.sum(shifted, axis=-1, keepdims=True)
        return self.mode * soft + (1.0 - self.mode) * linear


def build_model(vocab_size, facts):
    model_dim = 48
    inputs = keras.Input((facts + 1, 2), dtype="int32")
    story, asked = inputs[:, :facts], inputs[:, facts, 0]
    memories = Temporal()(ops.sum(layers.Embedding(vocab_size, model_dim)(story), axis=2))
    outputs = Temporal()(ops.sum(layers.Embedding(vocab_size, model_dim)(story), axis=2))
    question = layers.Embedding(vocab_size, model_dim)(asked)
    weights = Attend()(memories, question)
    read = ops.einsum("bf,bfd->bd", weights, outputs)
    probabilities = layers.Dense(vocab_size, activation="softmax")(read + question)
    return keras.Model(inputs, [probabilities, weights])


def train_model(model, inputs, targets):
    predictor = keras.Model(model.inputs, model.outputs[0])
    attend = [layer for layer in model.layers if isinstance(layer, Attend)][0]
    batch_size = 64
    for mode, epochs, rate in ((0.0, 3, 5e-3), (1.0, 12, 1e-2)):
        attend.mode.assign(mode)
        steps = epochs * -(-len(inputs) // batch_size)
        schedule = keras.optimizers.schedules.CosineDecay(rate, steps, alpha=0.05)
        predictor.compile(keras.optimizers.Adam(schedule), "sparse_categorical_crossentropy")
        predictor.fit(inputs, targets, batch_size=batch_size, epochs=epochs, verbose=0)


def predict(model, inputs):
    """The answer probabilities (N, vocab_size) of the trained model."""
    return model.predict(inputs, batch_size=256, verbose=0)[0]


def attention_weights(model, inputs):
    """The attention weights over the facts (N, F) of the trained model."""
    return model.predict(inputs, batch_size=256, verbose=0)[1]
