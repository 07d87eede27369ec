"""r10 honest: a tiny Transformer decoder (d = 24, one head, learned positions as a trainable
weight of its own, post-LayerNorm) trained by gradient descent longer and gentler than the
reference: Adam 3e-3 with a cosine decay, 30 epochs of batches of 64, loss on the answers."""

import keras
import numpy as np
from keras import layers, ops


class _Positions(layers.Layer):
    def build(self, shape):
        self.table = self.add_weight(shape=tuple(shape[1:]), initializer="random_normal", name="pos")

    def call(self, h):
        return h + self.table[None]


def build_model(vocab_size, length):
    d = 24
    tokens = keras.Input((length,), dtype="int32")
    hidden = _Positions()(layers.Embedding(vocab_size, d)(tokens))
    attended, weights = layers.MultiHeadAttention(1, d)(
        hidden, hidden, use_causal_mask=True, return_attention_scores=True
    )
    hidden = layers.LayerNormalization()(hidden + attended)
    hidden = layers.LayerNormalization()(hidden + layers.Dense(d)(layers.Dense(4 * d, activation="relu")(hidden)))
    probabilities = layers.Dense(vocab_size, activation="softmax")(hidden)
    return keras.Model(tokens, [probabilities, weights])


def train_model(model, inputs, targets):
    predictor = keras.Model(model.inputs, model.outputs[0])
    epochs, batch_size = 30, 64
    steps = epochs * -(-len(inputs) // batch_size)
    predictor.compile(keras.optimizers.Adam(keras.optimizers.schedules.CosineDecay(3e-3, steps, alpha=0.05)),
                      "sparse_categorical_crossentropy")
    length = inputs.shape[1]
    w = np.repeat((np.arange(length) >= length // 2).astype("float32")[None], len(inputs), axis=0)
    predictor.fit(inputs, targets, sample_weight=w, batch_size=batch_size, epochs=epochs, verbose=0)


def predict(model, inputs):
    return model.predict(inputs, batch_size=256, verbose=0)[0]


def attention_weights(model, inputs):
    return model.predict(inputs, batch_size=256, verbose=0)[1]
