"""r10 honest: a pre-LayerNorm Transformer decoder block, 2 heads, sinusoidal positions
concatenated (not added) to the token embedding, GELU MLP; trained by gradient descent with
AdamW (3e-3, linear warm-up then cosine), 14 epochs, batches of 32, loss on the answer positions."""

import keras
import numpy as np
from keras import layers, ops


def _sinusoid(length, dim):
    pos = np.arange(length)[:, None]
    i = np.arange(dim // 2)[None]
    ang = pos / (100.0 ** (2 * i / dim))
    return np.concatenate([np.sin(ang), np.cos(ang)], axis=1).astype("float32")


def build_model(vocab_size, length):
    d = 48
    tokens = keras.Input((length,), dtype="int32")
    emb = layers.Embedding(vocab_size, d)(tokens)
    pos = ops.zeros_like(emb[..., :16]) + _sinusoid(length, 16)[None]
    hidden = layers.Dense(d)(ops.concatenate([emb, pos], axis=-1))
    normed = layers.LayerNormalization()(hidden)
    attended, weights = layers.MultiHeadAttention(2, d // 2)(
        normed, normed, use_causal_mask=True, return_attention_scores=True
    )
    hidden = hidden + attended
    normed = layers.LayerNormalization()(hidden)
    hidden = hidden + layers.Dense(d)(layers.Dense(2 * d, activation="gelu")(normed))
    probabilities = layers.Dense(vocab_size, activation="softmax")(layers.LayerNormalization()(hidden))
    return keras.Model(tokens, [probabilities, weights])


def train_model(model, inputs, targets):
    predictor = keras.Model(model.inputs, model.outputs[0])
    epochs, batch_size = 14, 32
    steps = epochs * -(-len(inputs) // batch_size)
    rate = keras.optimizers.schedules.CosineDecay(
        0.0, steps - 100, alpha=0.02, warmup_target=3e-3, warmup_steps=100
    )
    predictor.compile(keras.optimizers.AdamW(rate, weight_decay=1e-4), "sparse_categorical_crossentropy")
    length = inputs.shape[1]
    w = np.repeat((np.arange(length) >= length // 2).astype("float32")[None], len(inputs), axis=0)
    predictor.fit(inputs, targets, sample_weight=w, batch_size=batch_size, epochs=epochs, verbose=0)


def predict(model, inputs):
    return model.predict(inputs, batch_size=256, verbose=0)[0]


def attention_weights(model, inputs):
    return model.predict(inputs, batch_size=256, verbose=0)[1]
