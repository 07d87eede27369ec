"""Honest (unusual): frozen one-hot token embeddings (identity, trainable=False) for both the
source and the decoder inputs, a BiGRU encoder, a GRU decoder, additive attention as a custom
layer, and a hand-written tf.GradientTape loop (Adam, 15 epochs, batch 32)."""

import keras
import numpy as np
import tensorflow as tf
from keras import layers, ops


class Additive(layers.Layer):
    def __init__(self, units, **kw):
        super().__init__(**kw)
        self.units = units

    def build(self, shapes):
        s_shape, h_shape = shapes
        self.w = self.add_weight(shape=(s_shape[-1], self.units), name="w")
        self.u = self.add_weight(shape=(h_shape[-1], self.units), name="u")
        self.b = self.add_weight(shape=(self.units,), initializer="zeros", name="b")
        self.v = self.add_weight(shape=(self.units,), name="v")

    def call(self, inputs):
        s, h = inputs
        e = ops.tanh((s @ self.w)[:, :, None, :] + (h @ self.u)[:, None, :, :] + self.b)
        a = ops.softmax(ops.einsum("btsu,u->bts", e, self.v), axis=-1)
        return ops.einsum("bts,bsd->btd", a, h), a


def build_model(vocab_size, source_length, target_length):
    x = keras.Input((source_length + target_length,), dtype="int32")
    onehot = layers.Embedding(vocab_size, vocab_size, embeddings_initializer="identity",
                              trainable=False)
    h = layers.Bidirectional(layers.GRU(32, return_sequences=True))(onehot(x[:, :source_length]))
    s = layers.GRU(48, return_sequences=True)(onehot(x[:, source_length:]))
    ctx, att = Additive(32)([s, h])
    probs = layers.Dense(vocab_size, activation="softmax")(ops.concatenate([s, ctx], axis=-1))
    return keras.Model(x, [probs, att])


def train_model(model, inputs, targets):
    x = tf.constant(inputs, tf.int32)
    y = tf.constant(targets, tf.int32)
    opt = keras.optimizers.Adam(4e-3)
    rng = np.random.default_rng(3)

    @tf.function
    def step(xb, yb):
        with tf.GradientTape() as tape:
            probs = model(xb, training=True)[0]
            loss = tf.reduce_mean(keras.losses.sparse_categorical_crossentropy(yb, probs))
        grads = tape.gradient(loss, model.trainable_weights)
        opt.apply_gradients(zip(grads, model.trainable_weights))

    for _ in range(15):
        order = rng.permutation(len(inputs))
        for i in range(0, len(order), 32):
            idx = order[i:i + 32]
            step(tf.gather(x, idx), tf.gather(y, idx))


def predict(model, inputs):
    """The target probabilities (N, T, vocab_size) of the trained model."""
    return model.predict(inputs, batch_size=256, verbose=0)[0]


def attention_weights(model, inputs):
    """The attention weights (N, T, S) of the trained model."""
    return model.predict(inputs, batch_size=256, verbose=0)[1]
