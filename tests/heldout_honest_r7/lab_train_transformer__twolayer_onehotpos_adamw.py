"""train-transformer: two single-head decoder layers written by hand (keras.ops), positions as
one-hot vectors concatenated to the token embedding and projected, dropout, no layer norm;
both layers' attention maps returned as the H = 2 "heads". Trained with model.fit, a custom
loss that slices the answer half, AdamW and exponential decay."""

import keras
import numpy as np
from keras import layers, ops


class SingleHeadCausal(layers.Layer):
    def __init__(self, d, **kw):
        super().__init__(**kw)
        self.d = d
        self.q = layers.Dense(d)
        self.k = layers.Dense(d)
        self.v = layers.Dense(d)

    def call(self, x):
        q, k, v = self.q(x), self.k(x), self.v(x)
        s = ops.einsum("bqd,bkd->bqk", q, k) / np.sqrt(self.d)
        l = ops.shape(x)[1]
        causal = ops.tril(ops.ones((l, l)))
        s = s - 1e9 * (1.0 - causal)[None]
        a = ops.softmax(s, axis=-1)
        return ops.einsum("bqk,bkd->bqd", a, v), a


def build_model(vocab_size, length):
    d = 48
    tokens = keras.Input((length,), dtype="int32")
    tok = layers.Embedding(vocab_size, d)(tokens)
    onehot = ops.eye(length)[None] * ops.ones_like(tok[..., :1])   # (B, L, L)
    x = layers.Dense(d)(ops.concatenate([tok, onehot], axis=-1))
    maps = []
    for _ in range(2):
        h, a = SingleHeadCausal(d)(x)
        x = x + layers.Dropout(0.05)(h)
        x = x + layers.Dense(d)(layers.Dense(2 * d, activation="relu")(x))
        maps.append(a)
    att = ops.stack(maps, axis=1)
    probs = layers.Dense(vocab_size, activation="softmax")(x)
    return keras.Model(tokens, [probs, att])


def train_model(model, inputs, targets):
    n_ex, length = inputs.shape
    n = length // 2

    def answer_loss(y_true, y_pred):
        y_true = ops.cast(y_true, "int32")
        ce = keras.losses.sparse_categorical_crossentropy(y_true[:, n:], y_pred[:, n:])
        return ops.mean(ce, axis=-1)

    epochs, batch = 10, 32
    steps = epochs * int(np.ceil(n_ex / batch))
    sched = keras.optimizers.schedules.ExponentialDecay(2e-3, steps, 0.1)
    trainer = keras.Model(model.input, model.output[0])
    trainer.compile(optimizer=keras.optimizers.AdamW(sched, weight_decay=1e-4),
                    loss=answer_loss)
    trainer.fit(inputs, targets, epochs=epochs, batch_size=batch, verbose=0)


def predict(model, inputs):
    """The next-token probabilities (N, L, vocab_size) of the trained model."""
    return model.predict(inputs, batch_size=256, verbose=0)[0]


def attention_weights(model, inputs):
    """The self-attention weights (N, H, L, L) of the trained model."""
    return model.predict(inputs, batch_size=256, verbose=0)[1]
