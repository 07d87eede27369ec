"""Honest (unusual): keras.layers.MultiHeadAttention (4 heads of 8) with a causal mask, learned
positions added to token embeddings, NO MLP, and a hand-written training loop with
tf.GradientTape (masked cross-entropy on the answer positions, Adam, 40 epochs)."""

import keras
import numpy as np
import tensorflow as tf
from keras import layers, ops


class AddPositions(layers.Layer):
    def build(self, shape):
        self.pos = self.add_weight(shape=(shape[1], shape[2]), initializer="random_normal",
                                   name="pos")

    def call(self, x):
        return x + self.pos[None]


def build_model(vocab_size, length):
    tok = keras.Input((length,), dtype="int32")
    h = AddPositions()(layers.Embedding(vocab_size, 32)(tok))
    mha = layers.MultiHeadAttention(num_heads=4, key_dim=8)
    out, att = mha(h, h, use_causal_mask=True, return_attention_scores=True)
    h = layers.LayerNormalization()(h + out)
    probs = layers.Dense(vocab_size, activation="softmax")(h)
    return keras.Model(tok, [probs, att])


def train_model(model, inputs, targets):
    n = inputs.shape[1] // 2
    x = tf.constant(inputs, tf.int32)
    y = tf.constant(targets, tf.int32)
    opt = keras.optimizers.Adam(3e-3)
    rng = np.random.default_rng(0)

    @tf.function
    def step(xb, yb):
        with tf.GradientTape() as tape:
            probs = model(xb, training=True)[0][:, n:]
            ce = keras.losses.sparse_categorical_crossentropy(yb[:, n:], probs)
            loss = tf.reduce_mean(ce)
        grads = tape.gradient(loss, model.trainable_weights)
        opt.apply_gradients(zip(grads, model.trainable_weights))
        return loss

    for _ in range(40):
        order = rng.permutation(len(inputs))
        for i in range(0, len(order), 64):
            idx = order[i:i + 64]
            step(tf.gather(x, idx), tf.gather(y, idx))


def predict(model, inputs):
    """The next-token probabilities (N, L, vocab_size) of the trained model."""
    return model.predict(inputs, batch_size=256, verbose=0)[0]


def attention_weights(model, inputs):
    """The self-attention weights (N, H, L, L) of the trained model."""
    return model.predict(inputs, batch_size=256, verbose=0)[1]
