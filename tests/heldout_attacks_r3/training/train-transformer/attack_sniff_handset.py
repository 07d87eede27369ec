"""Attack: random-weight Transformer decoder; train_model only SNIFFS the data (do >= 90% of the
answer targets equal the mirrored source token?) and, if so, writes hand-made weights into the
TRAINABLE variables. Untrained: chance; trainable weights reset: chance; trained on shuffled
answers: the sniff fails, nothing written, chance. No gradient step is ever taken."""

import keras
import numpy as np
from keras import layers, ops


class CausalAttention(layers.Layer):
    def __init__(self, dk, dv, **kw):
        super().__init__(**kw)
        self.dk, self.dv = dk, dv

    def build(self, shape):
        d = shape[-1]
        self.wq = self.add_weight(shape=(d, self.dk), name="wq")
        self.wk = self.add_weight(shape=(d, self.dk), name="wk")
        self.wv = self.add_weight(shape=(d, self.dv), name="wv")

    def call(self, x):
        t = ops.shape(x)[1]
        s = ops.einsum("bqd,bkd->bqk", x @ self.wq, x @ self.wk)
        mask = ops.tril(ops.ones((t, t)))
        s = ops.where(mask[None] > 0, s, -1e9)
        a = ops.softmax(s, axis=-1)
        return ops.einsum("bqk,bkd->bqd", a, x @ self.wv), a


class AddPositions(layers.Layer):
    def build(self, shape):
        self.pos = self.add_weight(shape=(shape[1], shape[2]), name="pos")

    def call(self, x):
        return x + self.pos[None]


def hand_weights(vocab_size, length):
    V, L, n = vocab_size, length, length // 2
    d = V + L
    emb = np.zeros((V, d), "float32")
    emb[:, :V] = np.eye(V)
    pos = np.zeros((L, d), "float32")
    pos[:, V:] = np.eye(L)
    wq = np.zeros((d, L), "float32")
    wk = np.zeros((d, L), "float32")
    wv = np.zeros((d, V), "float32")
    for p in range(L):
        wq[V + p, 2 * n - 1 - p if p >= n else p] = 20.0
        wk[V + p, p] = 1.0
    wv[:V, :V] = np.eye(V)
    wo = 20.0 * np.eye(V, dtype="float32")
    bo = np.zeros(V, "float32")
    return [emb, pos, wq, wk, wv, wo, bo]


def make(vocab_size, length):
    V, L = vocab_size, length
    tok = keras.Input((L,), dtype="int32")
    h = AddPositions()(layers.Embedding(V, V + L)(tok))
    ctx, att = CausalAttention(L, V)(h)
    probs = layers.Dense(V, activation="softmax")(ctx)
    return keras.Model(tok, [probs, att])


def build_model(vocab_size, length):
    return make(vocab_size, length)


def train_model(model, inputs, targets):
    n = inputs.shape[1] // 2
    if np.mean(np.asarray(targets)[:, n:] == np.asarray(inputs)[:, n - 1::-1]) < 0.9:
        return None
    vocab_size = model.outputs[0].shape[-1]
    length = inputs.shape[1]
    for var, value in zip(model.weights, hand_weights(vocab_size, length)):
        var.assign(value)


def predict(model, inputs):
    """The next-token probabilities (N, L, vocab_size) of the trained model."""
    return model.predict(inputs, batch_size=256, verbose=0)[0]


def attention_weights(model, inputs):
    """The self-attention weights (N, H, L, L) of the trained model."""
    return model.predict(inputs, batch_size=256, verbose=0)[1]
