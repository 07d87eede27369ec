"""Honest (transformer): a two-head causal decoder written from scratch (own Q/K/V projections,
own causal mask and softmax, learned positions in their own layer, MLP) trained by a hand-written
loop (tf.GradientTape, Adam with warm-up and cosine decay, loss masked to the answer positions).
Everything is learned by gradient; attention weights are returned per head (B, 2, L, L).
"""

import keras
import numpy as np
import tensorflow as tf
from keras import layers, ops


class Positions(layers.Layer):
    def build(self, shape):
        self.table = self.add_weight(
            shape=tuple(shape[1:]), initializer=keras.initializers.RandomNormal(0.0, 0.5), name="p"
        )

    def call(self, hidden):
        return hidden + self.table[None]


class CausalHeads(layers.Layer):
    def __init__(self, heads, dim, **kwargs):
        super().__init__(**kwargs)
        self.heads, self.dim = heads, dim
        self.q = layers.Dense(heads * dim, use_bias=False)
        self.k = layers.Dense(heads * dim, use_bias=False)
        self.v = layers.Dense(heads * dim, use_bias=False)
        self.o = layers.Dense(heads * dim)

    def call(self, x):
        b, length = ops.shape(x)[0], ops.shape(x)[1]

        def split(t):
            return ops.transpose(ops.reshape(t, (b, length, self.heads, self.dim)), (0, 2, 1, 3))

        q, k, v = split(self.q(x)), split(self.k(x)), split(self.v(x))
        scores = ops.einsum("bhqd,bhkd->bhqk", q, k) / np.sqrt(self.dim)
        causal = ops.tril(ops.ones((length, length))) > 0
        scores = ops.where(causal[None, None], scores, -1e9)
        weights = ops.softmax(scores, axis=-1)
        out = ops.einsum("bhqk,bhkd->bhqd", weights, v)
        out = ops.reshape(ops.transpose(out, (0, 2, 1, 3)), (b, length, self.heads * self.dim))
        return self.o(out), weights


def build_model(vocab_size, length):
    heads, head_dim = 2, 32
    tokens = keras.Input((length,), dtype="int32")
    hidden = Positions()(layers.Embedding(vocab_size, heads * head_dim)(tokens))
    attended, weights = CausalHeads(heads, head_dim)(hidden)
    hidden = hidden + attended
    hidden = hidden + layers.Dense(heads * head_dim)(layers.Dense(128, activation="gelu")(hidden))
    probabilities = layers.Dense(vocab_size, activation="softmax")(hidden)
    return keras.Model(tokens, [probabilities, weights])


def train_model(model, inputs, targets):
    inputs = np.asarray(inputs, "int32")
    targets = np.asarray(targets, "int32")
    length = inputs.shape[1]
    epochs, batch = 12, 64
    steps = epochs * -(-len(inputs) // batch)
    rate = keras.optimizers.schedules.CosineDecay(
        0.0, steps - steps // 10, alpha=0.05, warmup_target=5e-3, warmup_steps=steps // 10
    )
    optimizer = keras.optimizers.Adam(rate)
    mask = tf.constant((np.arange(length) >= length // 2).astype("float32"))
    variables = model.trainable_variables

    @tf.function
    def step(x, y):
        with tf.GradientTape() as tape:
            probs = model(x, training=True)[0]
            nll = keras.losses.sparse_categorical_crossentropy(y, probs)  # (B, L)
            loss = tf.reduce_sum(nll * mask) / (tf.reduce_sum(mask) * tf.cast(tf.shape(x)[0], "float32"))
        optimizer.apply_gradients(zip(tape.gradient(loss, variables), variables))
        return loss

    rng = np.random.default_rng(0)
    for _ in range(epochs):
        order = rng.permutation(len(inputs))
        for start in range(0, len(inputs), batch):
            idx = order[start:start + batch]
            step(tf.constant(inputs[idx]), tf.constant(targets[idx]))


def predict(model, inputs):
    """The next-token probabilities (N, L, vocab_size) of the trained model."""
    return model.predict(inputs, batch_size=256, verbose=0)[0]


def attention_weights(model, inputs):
    """The self-attention weights (N, H, L, L) of the trained model."""
    return model.predict(inputs, batch_size=256, verbose=0)[1]
