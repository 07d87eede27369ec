"""Honest: a float64 Transformer decoder whose output layer is tied to its token embedding.

All layers compute in float64; the next-token logits are the final states times the transposed
token embedding (weight tying) plus a bias; learned positions; one-head causal attention and an
MLP. Adam with a step-decay schedule (halved every 3 epochs), 12 epochs, answer positions only.
"""

import keras
import numpy as np
from keras import layers, ops

DTYPE = "float64"


class TiedOutput(layers.Layer):
    def __init__(self, embedding, **kwargs):
        super().__init__(dtype=DTYPE, **kwargs)
        self.embedding = embedding

    def build(self, input_shape):
        self.bias = self.add_weight((self.embedding.input_dim,), initializer="zeros", name="bias")

    def call(self, hidden):
        logits = ops.matmul(hidden, ops.transpose(self.embedding.embeddings)) + self.bias
        return ops.softmax(logits, axis=-1)


class Positions(layers.Layer):
    def build(self, input_shape):
        self.table = self.add_weight(
            (input_shape[1], input_shape[2]), initializer=keras.initializers.RandomNormal(0.0, 0.5),
            name="table",
        )

    def call(self, hidden):
        return hidden + self.table[None]


def build_model(vocab_size, length):
    model_dim = 64
    tokens = keras.Input((length,), dtype="int32")
    embedding = layers.Embedding(vocab_size, model_dim, dtype=DTYPE)
    hidden = Positions(dtype=DTYPE)(embedding(tokens))
    attended, weights = layers.MultiHeadAttention(1, model_dim, dtype=DTYPE)(
        hidden, hidden, use_causal_mask=True, return_attention_scores=True
    )
    hidden = hidden + attended
    hidden = hidden + layers.Dense(model_dim, dtype=DTYPE)(
        layers.Dense(2 * model_dim, activation="relu", dtype=DTYPE)(hidden)
    )
    probabilities = TiedOutput(embedding)(hidden)
    return keras.Model(tokens, [probabilities, weights])


def train_model(model, inputs, targets):
    predictor = keras.Model(model.inputs, model.outputs[0])
    epochs, batch_size = 12, 64
    per_epoch = -(-len(inputs) // batch_size)
    rate = keras.optimizers.schedules.ExponentialDecay(1e-2, 3 * per_epoch, 0.5, staircase=True)
    predictor.compile(keras.optimizers.Adam(rate), "sparse_categorical_crossentropy")
    length = inputs.shape[1]
    answer_positions = (np.arange(length) >= length // 2).astype("float64")
    weights = np.repeat(answer_positions[None], len(inputs), axis=0)
    predictor.fit(inputs, targets, sample_weight=weights, batch_size=batch_size, epochs=epochs, verbose=0)


def predict(model, inputs):
    """The next-token probabilities (N, L, vocab_size) of the trained model."""
    return model.predict(inputs, batch_size=256, verbose=0)[0]


def attention_weights(model, inputs):
    """The self-attention weights (N, H, L, L) of the trained model."""
    return model.predict(inputs, batch_size=256, verbose=0)[1]
