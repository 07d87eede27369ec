"""Honest (unusual): a two-hop memory network (adjacent weight tying: hop 1's output embedding is
hop 2's memory embedding), learned temporal encodings, a hand-written tf.GradientTape training
loop; the attention output is both hops' weights (B, 2, F)."""

import keras
import numpy as np
import tensorflow as tf
from keras import layers, ops


class Temporal(layers.Layer):
    def build(self, shape):
        self.t = self.add_weight(shape=(shape[1], shape[2]), initializer="random_normal",
                                 name="t")

    def call(self, x):
        return x + self.t[None]


class Hop(layers.Layer):
    def call(self, u, m, c):
        p = ops.softmax(ops.einsum("bd,bfd->bf", u, m), axis=-1)
        return u + ops.einsum("bf,bfd->bd", p, c), p


def build_model(vocab_size, facts):
    d = 32
    x = keras.Input((facts + 1, 2), dtype="int32")
    story = x[:, :facts]
    q = x[:, facts, 0]
    emb = [layers.Embedding(vocab_size, d) for _ in range(3)]  # A, C1 = A2, C2
    temporal = [Temporal() for _ in range(3)]
    mem = [temporal[i](ops.sum(emb[i](story), axis=2)) for i in range(3)]
    u = emb[0](q)  # question embedding tied to A
    u, p1 = Hop()(u, mem[0], mem[1])
    u, p2 = Hop()(u, mem[1], mem[2])
    probs = layers.Dense(vocab_size, activation="softmax")(u)
    att = ops.stack([p1, p2], axis=1)
    return keras.Model(x, [probs, att])


def train_model(model, inputs, targets):
    x = tf.constant(inputs, tf.int32)
    y = tf.constant(targets, tf.int32)
    opt = keras.optimizers.Adam(5e-3)
    rng = np.random.default_rng(1)

    @tf.function
    def step(xb, yb):
        with tf.GradientTape() as tape:
            probs = model(xb, training=True)[0]
            loss = tf.reduce_mean(keras.losses.sparse_categorical_crossentropy(yb, probs))
        grads = tape.gradient(loss, model.trainable_weights)
        opt.apply_gradients(zip(grads, model.trainable_weights))

    for _ in range(30):
        order = rng.permutation(len(inputs))
        for i in range(0, len(order), 64):
            idx = order[i:i + 64]
            step(tf.gather(x, idx), tf.gather(y, idx))


def predict(model, inputs):
    """The answer probabilities (N, vocab_size) of the trained model."""
    return model.predict(inputs, batch_size=256, verbose=0)[0]


def attention_weights(model, inputs):
    """The attention weights over the facts (N, 2, F) of the trained model."""
    return model.predict(inputs, batch_size=256, verbose=0)[1]
