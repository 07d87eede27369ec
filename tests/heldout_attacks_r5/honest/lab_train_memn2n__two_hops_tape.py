"""Honest (memn2n): a two-hop end-to-end memory network with adjacent weight tying (Sukhbaatar et
al. §2.2: hop k's output embedding is hop k+1's memory embedding), learned temporal encodings held
in their own layer, attention returned per hop (B, 2, F), and a hand-written training loop
(tf.GradientTape, Adam, gradient clipping, mini-batches) instead of fit. Everything is learned.
"""

import keras
import numpy as np
import tensorflow as tf
from keras import layers, ops


class Temporal(layers.Layer):
    """A learned temporal encoding (facts, dim) added to the memories."""

    def build(self, shape):
        self.encoding = self.add_weight(
            shape=tuple(shape[1:]), initializer=keras.initializers.RandomNormal(0.0, 0.1), name="t"
        )

    def call(self, memories):
        return memories + self.encoding[None]


def build_model(vocab_size, facts):
    dim, hops = 48, 2
    inputs = keras.Input((facts + 1, 2), dtype="int32")
    story, asked = inputs[:, :facts], inputs[:, facts, 0]
    embed = [layers.Embedding(vocab_size, dim, embeddings_initializer=keras.initializers.RandomNormal(0.0, 0.1)) for _ in range(hops + 1)]
    temporal = [Temporal() for _ in range(hops + 1)]
    u = embed[0](asked)  # question shares the first memory embedding (adjacent tying)
    attention = []
    for k in range(hops):
        memories = temporal[k](ops.sum(embed[k](story), axis=2))
        outputs = temporal[k + 1](ops.sum(embed[k + 1](story), axis=2))
        p = ops.softmax(ops.einsum("bfd,bd->bf", memories, u), axis=-1)
        attention.append(p)
        u = u + ops.einsum("bf,bfd->bd", p, outputs)
    probabilities = layers.Dense(vocab_size, activation="softmax")(u)
    return keras.Model(inputs, [probabilities, ops.stack(attention, axis=1)])


def train_model(model, inputs, targets):
    inputs = np.asarray(inputs, "int32")
    targets = np.asarray(targets, "int32")
    epochs, batch = 20, 64
    optimizer = keras.optimizers.Adam(5e-3, clipnorm=5.0)
    loss_fn = keras.losses.SparseCategoricalCrossentropy()
    variables = model.trainable_variables

    @tf.function
    def step(x, y):
        with tf.GradientTape() as tape:
            loss = loss_fn(y, model(x, training=True)[0])
        optimizer.apply_gradients(zip(tape.gradient(loss, variables), variables))
        return loss

    rng = np.random.default_rng(0)
    for _ in range(epochs):
        order = rng.permutation(len(inputs))
        for start in range(0, len(inputs), batch):
            idx = order[start:start + batch]
            step(tf.constant(inputs[idx]), tf.constant(targets[idx]))


def predict(model, inputs):
    """The answer probabilities (N, vocab_size) of the trained model."""
    return model.predict(inputs, batch_size=256, verbose=0)[0]


def attention_weights(model, inputs):
    """The attention weights over the facts (N, hops, F) of the trained model."""
    return model.predict(inputs, batch_size=256, verbose=0)[1]
