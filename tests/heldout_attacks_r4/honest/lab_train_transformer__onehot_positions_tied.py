"""train-transformer (honest): a one-layer causal Transformer decoder whose positions are a fixed,
non-trainable one-hot table concatenated to learned token embeddings; pre-LayerNorm, residual,
MLP, and an output tied to the token embedding (logits = h · Eᵀ). AdamW with warmup-free cosine
decay; loss on the answer positions only. Everything task-specific is learned from the data."""

import keras
import numpy as np
from keras import layers, ops


class Decoder(layers.Layer):
    def __init__(self, vocab_size, length, d=32, **kw):
        super().__init__(**kw)
        self.V, self.L, self.d = vocab_size, length, d

    def build(self, input_shape):
        V, L, d = self.V, self.L, self.d
        self.E = self.add_weight(shape=(V, d), initializer=keras.initializers.RandomNormal(stddev=0.3), name="tok")
        self.P = self.add_weight(shape=(L, L), initializer=keras.initializers.Identity(), trainable=False,
                                 name="pos_onehot")
        self.wq = self.add_weight(shape=(d + L, d), initializer="glorot_uniform", name="wq")
        self.wk = self.add_weight(shape=(d + L, d), initializer="glorot_uniform", name="wk")
        self.wv = self.add_weight(shape=(d + L, d), initializer="glorot_uniform", name="wv")
        self.wo = self.add_weight(shape=(d, d), initializer="glorot_uniform", name="wo")
        self.ln1 = layers.LayerNormalization()
        self.ln2 = layers.LayerNormalization()
        self.ln3 = layers.LayerNormalization()
        self.mlp1 = layers.Dense(4 * d, activation="gelu")
        self.mlp2 = layers.Dense(d)
        self.proj = layers.Dense(d)

    def call(self, x):
        B = ops.shape(x)[0]
        L, d = self.L, self.d
        e = ops.take(self.E, x, axis=0)
        z = ops.concatenate([self.ln1(e), ops.broadcast_to(self.P[None], (B, L, L))], axis=-1)
        q, k, v = ops.matmul(z, self.wq), ops.matmul(z, self.wk), ops.matmul(z, self.wv)
        s = ops.einsum("bqd,bkd->bqk", q, k) / np.sqrt(d)
        causal = np.tril(np.ones((L, L), "float32"))
        a = ops.softmax(ops.where(causal > 0, s, -1e9), axis=-1)
        h = e + ops.matmul(ops.matmul(a, v), self.wo)
        h = h + self.mlp2(self.mlp1(self.ln2(h)))
        logits = ops.matmul(self.proj(self.ln3(h)), ops.transpose(self.E))
        return ops.softmax(logits, axis=-1), a[:, None]


def build_model(vocab_size, length):
    x = keras.Input((length,), dtype="int32")
    p, a = Decoder(vocab_size, length, name="decoder")(x)
    return keras.Model(x, [p, a])


def train_model(model, inputs, targets):
    inputs, targets = np.asarray(inputs), np.asarray(targets)
    L = inputs.shape[1]
    n = L // 2
    w = np.zeros(targets.shape, "float32")
    w[:, n:] = 1.0
    epochs, bs = 12, 32
    steps = epochs * int(np.ceil(len(inputs) / bs))
    opt = keras.optimizers.AdamW(keras.optimizers.schedules.CosineDecay(5e-3, steps), weight_decay=1e-4)
    model.compile(optimizer=opt, loss=["sparse_categorical_crossentropy", None])
    model.fit(inputs, [targets, np.zeros((len(inputs), 1, L, L), "float32")],
              sample_weight=[w, None], batch_size=bs, epochs=epochs, verbose=0)


def predict(model, inputs):
    return model.predict(inputs, batch_size=256, verbose=0)[0]


def attention_weights(model, inputs):
    return model.predict(inputs, batch_size=256, verbose=0)[1]
