"""train-transformer: one decoder block with keras.layers.MultiHeadAttention (2 heads),
learned position embeddings, layer norm, and model.fit with Adam + cosine decay."""

import keras
import numpy as np
from keras import layers, ops


def build_model(vocab_size, length):
    d = 64
    tokens = keras.Input((length,), dtype="int32")
    tok = layers.Embedding(vocab_size, d)(tokens)
    pos_ids = ops.arange(length)
    pos = layers.Embedding(length, d)(pos_ids)
    x = tok + pos[None]
    mha = layers.MultiHeadAttention(num_heads=2, key_dim=32)
    h, att = mha(x, x, use_causal_mask=True, return_attention_scores=True)
    x = layers.LayerNormalization()(x + h)
    f = layers.Dense(128, activation="relu")(x)
    f = layers.Dense(d)(f)
    x = layers.LayerNormalization()(x + f)
    probs = layers.Dense(vocab_size, activation="softmax")(x)
    return keras.Model(tokens, [probs, att])


def train_model(model, inputs, targets):
    n_ex, length = inputs.shape
    n = length // 2
    weights = np.zeros((n_ex, length), dtype="float32")
    weights[:, n:] = 1.0
    epochs, batch = 10, 64
    steps = epochs * int(np.ceil(n_ex / batch))
    sched = keras.optimizers.schedules.CosineDecay(3e-3, steps)
    trainer = keras.Model(model.input, model.output[0])
    trainer.compile(optimizer=keras.optimizers.Adam(sched),
                    loss="sparse_categorical_crossentropy")
    trainer.fit(inputs, targets, sample_weight=weights, epochs=epochs,
                batch_size=batch, verbose=0, shuffle=True)


def predict(model, inputs):
    """The next-token probabilities (N, L, vocab_size) of the trained model."""
    return model.predict(inputs, batch_size=256, verbose=0)[0]


def attention_weights(model, inputs):
    """The self-attention weights (N, H, L, L) of the trained model."""
    return model.predict(inputs, batch_size=256, verbose=0)[1]
