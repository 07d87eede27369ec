"""Honest: a memory network with position-encoded sentences, layer norm and Nadam.

Each fact's two tokens are weighted by a learned per-slot vector before summing (a small
"position encoding" of the sentence, as in Sukhbaatar et al. §4.1), a trainable temporal table
marks the fact's row, the read-out is LayerNorm(o + u) through a hidden ReLU layer, and the
model is fitted by Nadam with an exponential decay, 14 epochs, on the data as given.
"""

import keras
from keras import layers, ops


class Memory(layers.Layer):
    """Sum of the fact's token embeddings, weighted per slot, plus a learned temporal code."""

    def __init__(self, vocab_size, dim, **kwargs):
        super().__init__(**kwargs)
        self.embedding = layers.Embedding(vocab_size, dim)
        self.dim = dim

    def build(self, input_shape):
        self.slots = self.add_weight((2, self.dim), initializer="ones", name="slots")
        self.time = self.add_weight(
            (input_shape[1], self.dim), initializer=keras.initializers.RandomNormal(0.0, 0.1), name="time"
        )

    def call(self, story):
        return ops.sum(self.embedding(story) * self.slots, axis=2) + self.time[None]


def build_model(vocab_size, facts):
    model_dim = 48
    inputs = keras.Input((facts + 1, 2), dtype="int32")
    story, asked = inputs[:, :facts], inputs[:, facts, 0]
    memories = Memory(vocab_size, model_dim)(story)
    outputs = Memory(vocab_size, model_dim)(story)
    question = layers.Embedding(vocab_size, model_dim)(asked)
    weights = ops.softmax(ops.einsum("bfd,bd->bf", memories, question), axis=-1)
    read = ops.einsum("bf,bfd->bd", weights, outputs)
    hidden = layers.LayerNormalization()(read + question)
    hidden = layers.Dense(64, activation="relu")(hidden)
    probabilities = layers.Dense(vocab_size, activation="softmax")(hidden)
    return keras.Model(inputs, [probabilities, weights])


def train_model(model, inputs, targets):
    predictor = keras.Model(model.inputs, model.outputs[0])
    epochs, batch_size = 14, 64
    per_epoch = -(-len(inputs) // batch_size)
    rate = keras.optimizers.schedules.ExponentialDecay(5e-3, per_epoch, 0.85)
    predictor.compile(keras.optimizers.Nadam(rate), "sparse_categorical_crossentropy")
    predictor.fit(inputs, targets, batch_size=batch_size, epochs=epochs, verbose=0)


def predict(model, inputs):
    """The answer probabilities (N, vocab_size) of the trained model."""
    return model.predict(inputs, batch_size=256, verbose=0)[0]


def attention_weights(model, inputs):
    """The attention weights over the facts (N, F) of the trained model."""
    return model.predict(inputs, batch_size=256, verbose=0)[1]
