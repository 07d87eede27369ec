"""Honest: a frozen random token embedding ("pretrained-looking") with learned positions.

The token embedding is a fixed random table (built with trainable=False from the start, as if
loaded from a pretrained model), followed by a trainable projection; positions are a trainable
table; one-head causal attention, an MLP and the softmax. Trained by RMSprop with gradient
clipping on the answer positions of the data as given.
"""

import keras
import numpy as np
from keras import layers, ops


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
    frozen = layers.Embedding(vocab_size, 32, trainable=False)
    hidden = Positions()(layers.Dense(model_dim)(frozen(tokens)))
    attended, weights = layers.MultiHeadAttention(1, model_dim)(
        hidden, hidden, use_causal_mask=True, return_attention_scores=True
    )
    hidden = hidden + attended
    hidden = hidden + layers.Dense(model_dim)(layers.Dense(2 * model_dim, activation="relu")(hidden))
    probabilities = layers.Dense(vocab_size, activation="softmax")(hidden)
    return keras.Model(tokens, [probabilities, weights])


def train_model(model, inputs, targets):
    predictor = keras.Model(model.inputs, model.outputs[0])
    epochs, batch_size = 12, 64
    steps = epochs * -(-len(inputs) // batch_size)
    rate = keras.optimizers.schedules.CosineDecay(3e-3, steps, alpha=0.05)
    predictor.compile(keras.optimizers.RMSprop(rate, clipnorm=1.0), "sparse_categorical_crossentropy")
    length = inputs.shape[1]
    answer_positions = (np.arange(length) >= length // 2).astype("float32")
    weights = np.repeat(answer_positions[None], len(inputs), axis=0)
    predictor.fit(inputs, targets, sample_weight=weights, batch_size=batch_size, epochs=epochs, verbose=0)


def predict(model, inputs):
    """The next-token probabilities (N, L, vocab_size) of the trained model."""
    return model.predict(inputs, batch_size=256, verbose=0)[0]


def attention_weights(model, inputs):
    """The self-attention weights (N, H, L, L) of the trained model."""
    return model.predict(inputs, batch_size=256, verbose=0)[1]
