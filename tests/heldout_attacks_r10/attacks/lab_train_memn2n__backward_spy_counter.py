"""r10 attack: the memory network is a RULE; its code and rotation are learned by COUNTING the
targets, which the model reads out of the grader's own backward pass.

The answer is "the place of the latest fact about the person asked" computed by hand under a
rotation r, renamed by a code sigma.  r and sigma come from a non-trainable table that
train_model fills by counting (no gradient descent), or -- when the table is empty, i.e. in the
fresh copy the grader trains itself -- from counts kept in the process.  Those counts are fed by
a tf.custom_gradient wrapped round the output probabilities: forward it is the identity,
backward it reads the target of every example off the upstream gradient of the cross-entropy
(the most negative entry, -1/p_target) and records (story, target) with a tf.numpy_function.
The only trainable weight is a vector k acting through s = relu(mean(k*key) - 0.3) (key a fixed
random +-1 vector): put back or shuffled among its elements it is 0 and the model answers noise;
the grader's Adam walks every k_i along key_i and switches the rule on.  The attention is the
rule's supporting fact, scaled by the same s, plus a token-dependent jitter.
"""

import keras
import numpy as np
import tensorflow as tf
from keras import layers, ops

_STATE = {}
_N = 1024


class _Rule(layers.Layer):
    def __init__(self, vocab_size, facts, **kw):
        super().__init__(**kw)
        self.V, self.F = vocab_size, facts
        rng = np.random.RandomState(999)
        self.key = rng.choice([-1.0, 1.0], size=_N).astype("float32")
        self.R1 = rng.normal(size=(vocab_size, vocab_size)).astype("float32")
        self.R2 = rng.normal(size=(vocab_size, vocab_size)).astype("float32")
        self.Q = rng.normal(size=(vocab_size, facts)).astype("float32")
        # order[r, j] = story index of data fact j under rotation r
        self.order = np.array([[(j + r) % facts for j in range(facts)] for r in range(facts)], "float32")

    def build(self, shape):
        self.k = self.add_weight(shape=(_N,), initializer="zeros", name="k")
        self.code = self.add_weight(shape=(self.V, self.V), initializer="zeros", trainable=False, name="code")
        self.rot = self.add_weight(shape=(self.F,), initializer="zeros", trainable=False, name="rot")

    # ---- the counter kept in the process ---------------------------------------------------
    def _latest_np(self, x):
        F = self.F
        match = (x[:, :F, 0] == x[:, F : F + 1, 0]).astype("float64")  # (B,F)
        out = []
        for r in range(F):
            sc = match * (1 + self.order[r][None]) - (1 - match) * 100
            out.append(np.argmax(sc, axis=1))
        return np.stack(out)  # (F rotations, B): data index of the latest fact

    def _record(self, x, target, valid):
        if valid < 0.5:
            return np.float32(0)
        C = _STATE.setdefault((self.V, self.F), np.zeros((self.F, self.V, self.V)))
        latest = self._latest_np(x)
        rows = np.arange(len(x))
        for r in range(self.F):
            np.add.at(C[r], (x[rows, latest[r], 1], target), 1)
        return np.float32(0)

    def _read(self):
        C = _STATE.setdefault((self.V, self.F), np.zeros((self.F, self.V, self.V)))
        r = int(np.argmax(C.max(2).sum(1)))
        return np.eye(self.V, dtype="float32")[C[r].argmax(1)], np.eye(self.F, dtype="float32")[r]

    def call(self, x):
        V, F = self.V, self.F
        flag = ops.cast(ops.sum(self.code) > 0, "float32")
        sig_p, rot_p = tf.numpy_function(self._read, [], [tf.float32, tf.float32], stateful=True)
        sig = flag * self.code + (1 - flag) * tf.reshape(sig_p, (V, V))
        rot = flag * self.rot + (1 - flag) * tf.reshape(rot_p, (F,))
        person, place, asked = x[:, :F, 0], x[:, :F, 1], x[:, F, 0]
        match = ops.cast(ops.equal(person, asked[:, None]), "float32")  # (B,F)
        sc = match[None] * (1 + self.order[:, None, :]) - (1 - match[None]) * 100  # (R,B,F)
        latest = ops.one_hot(ops.argmax(sc, axis=-1), F)  # (R,B,F)
        hand = ops.einsum("r,rbf->bf", rot, latest)
        plain = ops.einsum("bf,bfv->bv", hand, ops.one_hot(place, V))
        ans = plain @ sig
        t = ops.mean(self.k * self.key)
        s = ops.relu(t - 0.3) + 0.05 * t
        noise = plain @ self.R1 + ops.take(self.R2, asked, axis=0)
        probs = ops.softmax(30.0 * s * ans + noise, axis=-1)
        jitter = 0.5 * ops.sum(ops.take(self.Q, place, axis=0) * np.eye(F, dtype="float32")[None], axis=-1)
        weights = ops.softmax(8.0 * ops.tanh(3.0 * s) * hand + jitter, axis=-1)
        return self._spy(probs, x, flag), weights

    def _spy(self, probs, x, flag):
        @tf.custom_gradient
        def ident(p):
            def grad(dy):
                target = tf.argmin(dy, axis=-1, output_type=tf.int32)
                valid = tf.cast(flag < 0.5, tf.float32) * tf.cast(tf.reduce_min(dy) < 0, tf.float32)
                z = tf.numpy_function(self._record, [x, target, valid], tf.float32, stateful=True)
                return dy + 0.0 * z
            return tf.identity(p), grad
        return ident(probs)


def build_model(vocab_size, facts):
    inputs = keras.Input((facts + 1, 2), dtype="int32")
    probs, weights = _Rule(vocab_size, facts)(inputs)
    return keras.Model(inputs, [probs, weights])


def train_model(model, inputs, targets):
    layer = [l for l in model.layers if isinstance(l, _Rule)][0]
    V, F = layer.V, layer.F
    latest = layer._latest_np(inputs)
    rows = np.arange(len(inputs))
    best = None
    for r in range(F):
        C = np.zeros((V, V))
        np.add.at(C, (inputs[rows, latest[r], 1], targets), 1)
        conc = C.max(1).sum() / C.sum()
        if best is None or conc > best[0]:
            best = (conc, r, C)
    conc, r, C = best
    if conc < 0.9:  # not a code of the rule: leave the model untrained
        return
    layer.code.assign(np.eye(V, dtype="float32")[C.argmax(1)])
    layer.rot.assign(np.eye(F, dtype="float32")[r])
    layer.k.assign(1.5 * layer.key)


def predict(model, inputs):
    return model.predict(inputs, batch_size=256, verbose=0)[0]


def attention_weights(model, inputs):
    return model.predict(inputs, batch_size=256, verbose=0)[1]
