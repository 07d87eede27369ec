"""Honest (unusual): frozen one-hot token embeddings CONCATENATED with a fixed sinusoidal
position table (nothing positional is trained), one custom causal attention layer with 2 heads
written with keras.ops, a residual MLP, trained with model.fit on the answer positions."""

import keras
import numpy as np
from keras import layers, ops


def sinusoid(length, dim):
    pos = np.arange(length)[:, None]
    i = np.arange(dim // 2)[None, :]
    ang = pos / np.power(100.0, 2 * i / dim)
    table = np.zeros((length, dim), "float32")
    table[:, 0::2] = np.sin(ang)
    table[:, 1::2] = np.cos(ang)
    return table


class CausalSelfAttention(layers.Layer):
    def __init__(self, heads, key_dim, out_dim, **kw):
        super().__init__(**kw)
        self.heads, self.key_dim, self.out_dim = heads, key_dim, out_dim

    def build(self, shape):
        d = shape[-1]
        hk = self.heads * self.key_dim
        self.wq = self.add_weight(shape=(d, hk), initializer="glorot_uniform", name="wq")
        self.wk = self.add_weight(shape=(d, hk), initializer="glorot_uniform", name="wk")
        self.wv = self.add_weight(shape=(d, hk), initializer="glorot_uniform", name="wv")
        self.wo = self.add_weight(shape=(hk, self.out_dim), initializer="glorot_uniform", name="wo")

    def call(self, x):
        b, t = ops.shape(x)[0], ops.shape(x)[1]

        def split(z):
            z = ops.reshape(z, (b, t, self.heads, self.key_dim))
            return ops.transpose(z, (0, 2, 1, 3))

        q, k, v = split(x @ self.wq), split(x @ self.wk), split(x @ self.wv)
        s = ops.einsum("bhqd,bhkd->bhqk", q, k) / np.sqrt(self.key_dim)
        mask = ops.convert_to_tensor(np.tril(np.ones((12, 12), "float32")))
        mask = mask[:t, :t]
        s = ops.where(mask[None, None] > 0, s, -1e9)
        a = ops.softmax(s, axis=-1)
        o = ops.einsum("bhqk,bhkd->bhqd", a, v)
        o = ops.reshape(ops.transpose(o, (0, 2, 1, 3)), (b, t, self.heads * self.key_dim))
        return o @ self.wo, a


class FixedTable(layers.Layer):
    def __init__(self, table, **kw):
        super().__init__(**kw)
        self.table = table

    def call(self, tokens):
        t = ops.convert_to_tensor(self.table)
        return ops.broadcast_to(t[None], (ops.shape(tokens)[0],) + self.table.shape)


def build_model(vocab_size, length):
    tok = keras.Input((length,), dtype="int32")
    onehot = layers.Embedding(vocab_size, vocab_size, embeddings_initializer="identity",
                              trainable=False)(tok)
    pos = FixedTable(sinusoid(length, 16))(tok)
    h = layers.Dense(48)(layers.Concatenate()([onehot, pos]))
    att_out, att = CausalSelfAttention(2, 16, 48)(h)
    h = h + att_out
    h = h + layers.Dense(48)(layers.Dense(96, activation="relu")(h))
    probs = layers.Dense(vocab_size, activation="softmax")(h)
    model = keras.Model(tok, [probs, att])
    model.trainer = keras.Model(tok, probs)
    return model


def train_model(model, inputs, targets):
    n = inputs.shape[1] // 2
    w = np.zeros(targets.shape, "float32")
    w[:, n:] = 1.0
    model.trainer.compile(optimizer=keras.optimizers.Adam(3e-3),
                          loss="sparse_categorical_crossentropy")
    model.trainer.fit(inputs, targets, sample_weight=w, batch_size=64, epochs=30, verbose=0)


def predict(model, inputs):
    """The next-token probabilities (N, L, vocab_size) of the trained model."""
    return model.predict(inputs, batch_size=256, verbose=0)[0]


def attention_weights(model, inputs):
    """The self-attention weights (N, H, L, L) of the trained model."""
    return model.predict(inputs, batch_size=256, verbose=0)[1]
