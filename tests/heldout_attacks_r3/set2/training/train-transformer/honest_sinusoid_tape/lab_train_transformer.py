"""HONEST (unusual training): a one-layer Transformer decoder whose positions are the FIXED
sinusoidal table (a non-trainable weight, concatenated to trainable token embeddings), trained
by a custom GradientTape loop (Adam), the loss on the answer positions only.
"""

import keras
import numpy as np
import tensorflow as tf
from keras import layers, ops


def _sinusoid(length, d):
    pos = np.arange(length)[:, None]
    i = np.arange(d // 2)[None]
    ang = pos / 10000 ** (2 * i / d)
    pe = np.zeros((length, d), "float32")
    pe[:, 0::2], pe[:, 1::2] = np.sin(ang), np.cos(ang)
    return pe


class FixedPositions(layers.Layer):
    def __init__(self, length, d, **kw):
        super().__init__(**kw)
        self.length, self.d = length, d

    def build(self, input_shape):
        self.table = self.add_weight(shape=(self.length, self.d), trainable=False, name="table")
        self.table.assign(_sinusoid(self.length, self.d))

    def call(self, h):
        return ops.concatenate([h, ops.broadcast_to(self.table[None], (ops.shape(h)[0], self.length, self.d))], -1)


def build_model(vocab_size, length):
    x = keras.Input((length,), dtype="int32")
    h = FixedPositions(length, 16)(layers.Embedding(vocab_size, 32)(x))
    h = layers.Dense(48)(h)
    a, w = layers.MultiHeadAttention(num_heads=2, key_dim=24)(h, h, use_causal_mask=True, return_attention_scores=True)
    h = layers.LayerNormalization()(h + a)
    h = layers.LayerNormalization()(h + layers.Dense(48)(layers.Dense(96, activation="relu")(h)))
    probs = layers.Dense(vocab_size, activation="softmax")(h)
    return keras.Model(x, [probs, w])


def train_model(model, inputs, targets):
    n = inputs.shape[1] // 2
    mask = np.zeros(targets.shape, "float32")
    mask[:, n:] = 1.0
    opt = keras.optimizers.Adam(3e-3)
    loss_fn = keras.losses.SparseCategoricalCrossentropy(reduction="none")

    @tf.function
    def step(x, y, m):
        with tf.GradientTape() as tape:
            probs = model(x, training=True)[0]
            loss = tf.reduce_sum(loss_fn(y, probs) * m) / tf.reduce_sum(m)
        grads = tape.gradient(loss, model.trainable_variables)
        opt.apply_gradients(zip(grads, model.trainable_variables))
        return loss

    rng = np.random.default_rng(0)
    for epoch in range(40):
        order = rng.permutation(len(inputs))
        for i in range(0, len(inputs), 64):
            b = order[i:i + 64]
            step(tf.constant(inputs[b]), tf.constant(targets[b]), tf.constant(mask[b]))


def predict(model, inputs):
    return model.predict(inputs, batch_size=256, verbose=0)[0]


def attention_weights(model, inputs):
    return model.predict(inputs, batch_size=256, verbose=0)[1]
