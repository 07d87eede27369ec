"""Honest: a pre-norm Transformer decoder with two heads and sinusoidal positions, AdamW.

Sinusoidal position codes (Vaswani et al.) added to learned token embeddings, a pre-LayerNorm
block with two-head causal self-attention and an MLP, AdamW with weight decay and cosine decay,
12 epochs; the loss is weighted to the answer positions, as the targets elsewhere are noise.
"""

import keras
import numpy as np
from keras import layers, ops


def _sinusoids(length, dim):
    position = np.arange(length)[:, None]
    rate = 1.0 / (10000 ** (np.arange(0, dim, 2) / dim))
    table = np.zeros((length, dim), "float32")
    table[:, 0::2] = np.sin(position * rate)
    table[:, 1::2] = np.cos(position * rate)
    return table


def build_model(vocab_size, length):
    model_dim = 64
    tokens = keras.Input((length,), dtype="int32")
    hidden = layers.Embedding(vocab_size, model_dim)(tokens) + ops.convert_to_tensor(_sinusoids(length, model_dim))[None]
    normed = layers.LayerNormalization()(hidden)
    attended, weights = layers.MultiHeadAttention(2, model_dim // 2)(
        normed, normed, use_causal_mask=True, return_attention_scores=True
    )
    hidden = hidden + attended
    normed = layers.LayerNormalization()(hidden)
    hidden = hidden + layers.Dense(model_dim)(layers.Dense(2 * model_dim, activation="gelu")(normed))
    probabilities = layers.Dense(vocab_size, activation="softmax")(layers.LayerNormalization()(hidden))
    return keras.Model(tokens, [probabilities, weights])


def train_model(model, inputs, targets):
    predictor = keras.Model(model.inputs, model.outputs[0])
    epochs, batch_size = 12, 64
    steps = epochs * -(-len(inputs) // batch_size)
    rate = keras.optimizers.schedules.CosineDecay(5e-3, steps, alpha=0.05)
    predictor.compile(keras.optimizers.AdamW(rate, weight_decay=1e-4), "sparse_categorical_crossentropy")
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
