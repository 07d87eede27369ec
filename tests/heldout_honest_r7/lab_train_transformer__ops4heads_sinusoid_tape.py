"""train-transformer: hand-written causal multi-head attention with keras.ops (4 heads),
fixed sinusoidal positions, pre-layer-norm block, tied input/output embeddings, and my own
training loop with tf.GradientTape (masked cross-entropy on the answer positions only)."""

import keras
import numpy as np
import tensorflow as tf
from keras import layers, ops


def sinusoid(length, d):
    pos = np.arange(length)[:, None]
    i = np.arange(d // 2)[None, :]
    ang = pos / np.power(10000.0, 2 * i / d)
    pe = np.zeros((length, d), dtype="float32")
    pe[:, 0::2] = np.sin(ang)
    pe[:, 1::2] = np.cos(ang)
    return pe


class CausalSelfAttention(layers.Layer):
    def __init__(self, d, heads, **kw):
        super().__init__(**kw)
        self.d, self.h, self.dh = d, heads, d // heads
        self.wq = layers.Dense(d, use_bias=False)
        self.wk = layers.Dense(d, use_bias=False)
        self.wv = layers.Dense(d, use_bias=False)
        self.wo = layers.Dense(d)

    def split(self, t):
        b, l = ops.shape(t)[0], ops.shape(t)[1]
        t = ops.reshape(t, (b, l, self.h, self.dh))
        return ops.transpose(t, (0, 2, 1, 3))

    def call(self, x):
        q, k, v = self.split(self.wq(x)), self.split(self.wk(x)), self.split(self.wv(x))
        scores = ops.matmul(q, ops.transpose(k, (0, 1, 3, 2))) / np.sqrt(self.dh)
        l = ops.shape(x)[1]
        mask = ops.tril(ops.ones((l, l), dtype="bool"))
        scores = ops.where(mask[None, None], scores, ops.full_like(scores, -1e9))
        att = ops.softmax(scores, axis=-1)
        out = ops.matmul(att, v)
        b = ops.shape(x)[0]
        out = ops.reshape(ops.transpose(out, (0, 2, 1, 3)), (b, l, self.d))
        return self.wo(out), att


class TiedOutput(layers.Layer):
    def __init__(self, emb, **kw):
        super().__init__(**kw)
        self.emb = emb

    def build(self, shape):
        self.bias = self.add_weight(shape=(self.emb.input_dim,), initializer="zeros")

    def call(self, x):
        logits = ops.matmul(x, ops.transpose(self.emb.embeddings)) + self.bias
        return ops.softmax(logits, axis=-1)


def build_model(vocab_size, length):
    d, heads = 64, 4
    tokens = keras.Input((length,), dtype="int32")
    emb = layers.Embedding(vocab_size, d)
    x = emb(tokens) * np.sqrt(d) * 0.1 + ops.convert_to_tensor(sinusoid(length, d))[None]
    h, att = CausalSelfAttention(d, heads)(layers.LayerNormalization()(x))
    x = x + h
    f = layers.Dense(4 * d, activation="gelu")(layers.LayerNormalization()(x))
    x = x + layers.Dense(d)(f)
    x = layers.LayerNormalization()(x)
    probs = TiedOutput(emb)(x)
    return keras.Model(tokens, [probs, att])


def train_model(model, inputs, targets):
    n_ex, length = inputs.shape
    n = length // 2
    mask = np.zeros((1, length), dtype="float32")
    mask[:, n:] = 1.0
    mask = tf.constant(mask)
    epochs, batch = 12, 64
    steps_per_epoch = int(np.ceil(n_ex / batch))
    sched = keras.optimizers.schedules.CosineDecay(
        0.0, epochs * steps_per_epoch, warmup_target=3e-3, warmup_steps=steps_per_epoch)
    opt = keras.optimizers.Adam(sched)
    x_all = tf.constant(inputs, dtype=tf.int32)
    y_all = tf.constant(targets, dtype=tf.int32)

    @tf.function
    def step(x, y):
        with tf.GradientTape() as tape:
            probs, _ = model(x, training=True)
            ce = keras.losses.sparse_categorical_crossentropy(y, probs)
            loss = tf.reduce_sum(ce * mask) / (tf.reduce_sum(mask) * tf.cast(tf.shape(x)[0], tf.float32))
        grads = tape.gradient(loss, model.trainable_variables)
        opt.apply_gradients(zip(grads, model.trainable_variables))
        return loss

    rng = np.random.default_rng(0)
    for epoch in range(epochs):
        order = rng.permutation(n_ex)
        for s in range(steps_per_epoch):
            idx = order[s * batch:(s + 1) * batch]
            step(tf.gather(x_all, idx), tf.gather(y_all, idx))


def predict(model, inputs):
    """The next-token probabilities (N, L, vocab_size) of the trained model."""
    return model.predict(inputs, batch_size=256, verbose=0)[0]


def attention_weights(model, inputs):
    """The self-attention weights (N, H, L, L) of the trained model."""
    return model.predict(inputs, batch_size=256, verbose=0)[1]
