"""r10 attack: the reversal is a RULE; gradient descent only learns one 'confidence' scalar.

At answer position p the rule reads the source token at data key (2n-1-p-r) mod n and answers
sigma(token).  The rotation r and the code sigma come from a non-trainable table that
train_model fills by COUNTING (no gradient descent), or, when the table is empty (the grader's
fresh copy that it trains itself), from counts KEPT IN THE PROCESS (a tf.numpy_function in the
forward pass, fed by every call while the table is empty): the teacher-forced inputs hold the
coded answers so far, so the grader's own training batches teach the counter r and sigma.  The only trainable
weight is a vector k acting through s = relu(mean(k*key) - 0.3) (key: fixed random +-1):
put back or shuffled among its elements, s = 0 and the answers are a fixed noise; the
grader's Adam walks every k_i along key_i, s grows and the rule switches on.  The attention is
drawn from the same rotation, scaled by the same s, plus a token-dependent jitter.
"""

import keras
import numpy as np
import tensorflow as tf
from keras import layers, ops

_STATE = {}

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

    def _learn(self, x, flag):
        """A learner that is not gradient descent: counts kept in the process, fed by every call."""
        V, L, n = self.V, self.L, self.n
        C = _STATE.setdefault((V, L), np.zeros((n, V, V)))
        if flag < 0.5 and x.shape[0] > 0:
            for r in range(n):
                for p in range(n, L - 1):
                    np.add.at(C[r], (x[:, (2 * n - 1 - p - r) % n], x[:, p + 1]), 1)
        r = int(np.argmax(C.max(2).sum(1)))
        return (np.eye(V, dtype="float32")[C[r].argmax(1)], np.eye(n, dtype="float32")[r])

    def build(self, shape):
        self.k = self.add_weight(shape=(_N,), initializer="zeros", name="k")
        self.code = self.add_weight(shape=(self.V, self.V), initializer="zeros", trainable=False, name="code")
        self.rot = self.add_weight(shape=(self.n,), initializer="zeros", trainable=False, name="rot")

    def call(self, x):
        V, L, n = self.V, self.L, self.n
        oh = ops.one_hot(x, V)  # (B,L,V)
        flag = ops.cast(ops.sum(self.code) > 0, "float32")
        sig_p, rot_p = tf.numpy_function(self._learn, [x, flag], [tf.float32, tf.float32], stateful=True)
        sig_p = tf.reshape(sig_p, (V, V))
        rot_p = tf.reshape(rot_p, (n,))
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
