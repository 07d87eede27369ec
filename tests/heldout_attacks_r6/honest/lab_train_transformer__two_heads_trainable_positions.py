"""Honest: a one-layer Transformer decoder with two causal heads, a *trainable* position table
(its own layer, add_weight), layer normalisation before the attention and the MLP, trained by
Adam with cosine decay on the answer positions. Returns both heads' weights (B, 2, L, L).
"""

import keras
import numpy as np
from keras import layers, ops


class Positions(layers.Layer):
    def __init__(self, length, dim, **kwargs):
        super().__init__(**kwargs)
        self.length, self.dim = length, dim

    def build(self, input_shape):
        self.table = self.add_weight(
            shape=(self.length, self.dim), initializer=keras.initializers.RandomNormal(stddev=1.0), name="table"
        )

    def call(self, x):
        return x + self.table[None]


def build_model(vocab_size, length):
    dim = 64
    tokens = keras.Input((length,), dtype="int32")
    hidden = Positions(length, dim)(layers.Embedding(vocab_size, dim)(tokens))
    normed = layers.LayerNormalization()(hidden)
    attended, weights = layers.MultiHeadAttention(2, 32)(
        normed, normed, use_causal_mask=True, return_attention_scores=True
    )
    hidden = hidden + attended
    normed = layers.LayerNormalization()(hidden)
    hidden = hidden + layers.Dense(dim)(layers.Dense(2 * dim, activation="gelu")(normed))
    probabilities = layers.Dense(vocab_size, activation="softmax")(hidden)
    return keras.Model(tokens, [probabilities, weights])


def train_model(model, inputs, targets):
    predictor = keras.Model(model.inputs, model.outputs[0])
    epochs, batch_size = 14, 64
    steps = epochs * -(-len(inputs) // batch_size)
    rate = keras.optimizers.schedules.CosineDecay(5e-3, steps, alpha=0.05)
    predictor.compile(keras.optimizers.Adam(rate), "sparse_categorical_crossentropy")
    length = inputs.shape[1]
    answer = (np.arange(length) >= length // 2).astype("float32")
    weights = np.repeat(answer[None], len(inputs), axis=0)
    predictor.fit(inputs, targets, sample_weight=weights, batch_size=batch_size, epochs=epochs, verbose=0)


def predict(model, inputs):
    return model.predict(inputs, batch_size=256, verbose=0)[0]


def attention_weights(model, inputs):
    return model.predict(inputs, batch_size=256, verbose=0)[1]
