"""train-transformer attempt."""

import keras
import numpy as np
from keras import layers, ops


class AddPositions(layers.Layer):
    """Adds a learned (L, d) position table to token embeddings (B, L, d)."""

    def build(self, input_shape):
        self.table = self.add_weight(
            name="positions", shape=(input_shape[1], input_shape[2]),
            initializer=keras.initializers.RandomNormal(stddev=0.5),
        )

    def call(self, x):
        return x + self.table[None]


def build_model(vocab_size, length):
    d = 64
    tokens = keras.Input(shape=(length,), dtype="int32")
    x = layers.Embedding(vocab_size, d)(tokens)
    x = AddPositions()(x)
    attended, scores = layers.MultiHeadAttention(num_heads=2, key_dim=32)(
        x, x, use_causal_mask=True, return_attention_scores=True
    )
    x = layers.LayerNormalization()(x + attended)
    x = x + layers.Dense(d)(layers.Dense(128, activation="relu")(x))
    probabilities = layers.Dense(vocab_size, activation="softmax")(x)
    return keras.Model(tokens, [probabilities, scores])


def train_model(model, inputs, targets):
    length = inputs.shape[1]
    n = length // 2
    weights = np.zeros(targets.shape, dtype="float32")
    weights[:, n:] = 1.0                      # only the answer positions are learnable
    # the label of position t is the token after it
    targets = np.concatenate([targets[:, 1:], targets[:, -1:]], axis=1)
    head = keras.Model(model.inputs, model.outputs[0])
    head.compile(optimizer=keras.optimizers.Adam(3e-3), loss="sparse_categorical_crossentropy")
    head.fit(inputs, targets, sample_weight=weights, batch_size=64, epochs=30, verbose=0)


def predict(model, inputs):
    """The next-token probabilities (N, L, vocab_size) of the trained model."""
    return model.predict(inputs, batch_size=256, verbose=0)[0]


def attention_weights(model, inputs):
    """The self-attention weights (N, H, L, L) of the trained model."""
    return model.predict(inputs, batch_size=256, verbose=0)[1]
