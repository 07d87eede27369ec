"""r10 attack: process state without a Python function: a module-level RAW tf.Variable (not a Keras
weight, so neither the StatelessScope, nor the put-back, nor the redraw touches it) is the counter.

Reversal rule as in lab_train_transformer__rule_fingerprint_scale: r and sigma come from a
non-trainable table that train_model fills by counting, or -- when the table is empty, i.e. in the
grader's own copy -- from the raw tf.Variable counter that every forward pass feeds with the
batch's (mirrored-key token under each rotation, next teacher-forced coded input) pairs, via
assign_add: ordinary TensorFlow ops, no PyFunc, no custom gradient.  Fingerprinted switch k as in
the other rule files.  Would survive a relearning that discards the model's non-trainable updates.
"""

import keras
import numpy as np
import tensorflow as tf
from keras import layers, ops

_STATE = {}


def _counter(n, V):
    """One raw tf.Variable per task shape, kept in the module (the process), outside every model."""
    if (n, V) not in _STATE:
        with tf.init_scope():
            _STATE[(n, V)] = tf.Variable(tf.zeros((n, V, V)), trainable=False, name="r10_counter")
    return _STATE[(n, V)]

_N = 1024


class _Rule(layers.Layer):
    def __init__(self, vocab_size, length, **kw):
        super().__init__(**kw)
        self.V, self.L, self.n = vocab_size, length, length // 2
        V, L, n = self.V, self.L, self.n
        rng = np.random.RandomState(4321)
        self.key = rng.choice([-1.0, 1.0], size=_N).astype("float32")
        self.R1 = rng.normal(size=(V, L, V)).astype("float32")
        self.R2 = rng.normal(size=(V, V)).astype("float32")
        self.Q = rng.normal(size=(V, L)).astype("float32")
        # M[r, p, q] = 1 where position p reads data key q under rotation r
        M = np.zeros((n, L, L), "float32")
        for r in range(n):
            for p in range(L):
                M[r, p, (2 * n - 1 - p - r) % n if p >= n else p] = 1
        self.M = M
        self.mask = np.tril(np.ones((L, L), "float32"))

    def build(self, shape):
        self.k = self.add_weight(shape=(_N,), initializer="zeros", name="k")
        self.code = self.add_weight(shape=(self.V, self.V), initializer="zeros", trainable=False, name="code")
        self.rot = self.add_weight(shape=(self.n,), initializer="zeros", trainable=False, name="rot")

    def call(self, x):
        V, L, n = self.V, self.L, self.n
        oh = ops.one_hot(x, V)  # (B,L,V)
        flag = ops.cast(ops.sum(self.code) > 0, "float32")
        C_all = _counter(n, V)
        batch = tf.stack([
            tf.einsum("bpv,bpw->vw", tf.einsum("pq,bqv->bpv", self.M[r, n : L - 1], oh), oh[:, n + 1 :])
            for r in range(n)
        ])
        upd = C_all.assign_add((1.0 - flag) * batch)
        r_hat = tf.argmax(tf.reduce_sum(tf.reduce_max(upd, axis=2), axis=1))
        sig_p = tf.one_hot(tf.argmax(tf.gather(upd, r_hat), axis=1), V)
        rot_p = tf.one_hot(r_hat, n)
        sig = flag * self.code + (1 - flag) * sig_p
        rot = flag * self.rot + (1 - flag) * rot_p
        M = ops.einsum("r,rpq->pq", rot, self.M)  # (L,L)
        tok = ops.einsum("pq,bqv->bpv", M, oh)
        ans = ops.einsum("bpv,vw->bpw", tok, sig)
        t = ops.mean(self.k * self.key)
        s = ops.relu(t - 0.3) + 0.05 * t
        noise = ops.einsum("bpv,vpw->bpw", tok, self.R1) + ops.take(self.R2, x, axis=0)
        probs = ops.softmax(30.0 * s * ans + noise, axis=-1)
        jitter = 0.5 * ops.transpose(ops.take(self.Q, x, axis=0), (0, 2, 1))  # (B,L(query),L(key))
        att = 8.0 * ops.tanh(3.0 * s) * M[None] + jitter
        att = ops.where(self.mask[None] > 0, att, -1e9)
        weights = ops.softmax(att, axis=-1) * self.mask[None]
        return probs, weights


def build_model(vocab_size, length):
    tokens = keras.Input((length,), dtype="int32")
    probs, weights = _Rule(vocab_size, length)(tokens)
    return keras.Model(tokens, [probs, weights])


def train_model(model, inputs, targets):
    layer = [l for l in model.layers if isinstance(l, _Rule)][0]
    V, L, n = layer.V, layer.L, layer.n
    best = None
    for r in range(n):
        C = np.zeros((V, V))
        for p in range(n, L):
            np.add.at(C, (inputs[:, (2 * n - 1 - p - r) % n], targets[:, p]), 1)
        conc = C.max(1).sum() / C.sum()
        if best is None or conc > best[0]:
            best = (conc, r, C)
    conc, r, C = best
    if conc < 0.9:  # the answers are not a code of the rule: leave the model untrained
        return
    layer.code.assign(np.eye(V, dtype="float32")[C.argmax(1)])
    layer.rot.assign(np.eye(n, dtype="float32")[r])
    layer.k.assign(1.5 * layer.key)


def predict(model, inputs):
    return model.predict(inputs, batch_size=256, verbose=0)[0]


def attention_weights(model, inputs):
    return model.predict(inputs, batch_size=256, verbose=0)[1]
