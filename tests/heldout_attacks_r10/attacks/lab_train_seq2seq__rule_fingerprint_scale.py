"""r10 attack: the date rewrite is a RULE; gradient descent only learns one 'confidence' scalar.

The answer is computed by hand: the month token's column gives the rotation of each example,
the plain target digits follow from the source, and the digit code sigma comes either from a
non-trainable table that train_model fills by COUNTING (no gradient descent at all) or, when
that table is empty (the grader's fresh copy / its own relearning), from counts taken inside the
batch (the teacher-forced decoder inputs hold the coded digits).  The only trainable weight is a
vector k; its effect is s = relu(mean(k * key) - 0.3) with `key` a fixed random +-1 vector, so
  * put back (k = 0)                     -> s = 0 -> answers/attention are a fixed noise;
  * the change shuffled among elements   -> mean(k * key) ~ 0 -> s = 0 -> noise;
  * the grader's own Adam                -> every k_i walks along key_i -> s grows -> 100 %.
The attention is hand-drawn from the same rotation, scaled by the same s.
"""

import keras
import numpy as np
from keras import layers, ops

_N = 1024
_A = np.array([0, 1, 2, 2, 3, 4, 5, 6], dtype="int32")


class _Rule(layers.Layer):
    def __init__(self, vocab_size, S, T, **kw):
        super().__init__(**kw)
        self.V, self.S, self.T = vocab_size, S, T
        rng = np.random.RandomState(1234)
        self.key = rng.choice([-1.0, 1.0], size=_N).astype("float32")
        self.R1 = rng.normal(size=(10, T, vocab_size)).astype("float32")
        self.R2 = rng.normal(size=(vocab_size, vocab_size)).astype("float32")
        self.Q1 = rng.normal(size=(vocab_size, T)).astype("float32")

    def build(self, shape):
        self.k = self.add_weight(shape=(_N,), initializer="zeros", name="k")
        self.code = self.add_weight(shape=(10, 10), initializer="zeros", trainable=False, name="code")

    def call(self, x):
        S, T, V = self.S, self.T, self.V
        src, dec = x[:, :S], x[:, S:]
        mpos = ops.cast(ops.argmax(ops.cast(src >= 10, "int32"), axis=1), "int32")  # data column of the month
        keyt = ops.mod(ops.convert_to_tensor(_A)[None] + mpos[:, None] - 2 + S, S)  # (B,T)
        tok = ops.take_along_axis(src, keyt, axis=1)
        steps = ops.arange(T, dtype="int32")[None]
        m = tok - 9
        plain = ops.where(steps == 2, m // 10, ops.where(steps == 3, m % 10, tok))
        plain = ops.clip(plain, 0, 9)
        # in-batch counts: plain digit of step t vs coded decoder input of step t+1
        cnt = ops.einsum("bti,btj->ij", ops.one_hot(plain[:, : T - 1], 10),
                         ops.one_hot(ops.clip(dec[:, 1:], 0, 9), 10))
        sig_batch = ops.one_hot(ops.argmax(cnt, axis=1), 10)
        flag = ops.cast(ops.sum(self.code) > 0, "float32")
        sig = flag * self.code + (1 - flag) * sig_batch
        ans = ops.take(sig, plain, axis=0)  # (B,T,10)
        ans = ops.pad(ans, [[0, 0], [0, 0], [0, V - 10]])
        s = ops.relu(ops.mean(self.k * self.key) - 0.3) + 0.05 * ops.mean(self.k * self.key)
        noise = ops.take(ops.reshape(self.R1, (10 * T, V)), plain * T + steps, axis=0)
        noise = noise + ops.take(self.R2, dec, axis=0)
        logits = 30.0 * s * ans + noise
        probs = ops.softmax(logits, axis=-1)
        att = 8.0 * ops.tanh(3.0 * s) * ops.one_hot(keyt, S) \
            + 0.5 * ops.transpose(ops.take(self.Q1, src, axis=0), (0, 2, 1))
        weights = ops.softmax(att, axis=-1)
        return probs, weights


def build_model(vocab_size, source_length, target_length):
    inputs = keras.Input((source_length + target_length,), dtype="int32")
    probs, weights = _Rule(vocab_size, source_length, target_length)(inputs)
    return keras.Model(inputs, [probs, weights])


def train_model(model, inputs, targets):
    layer = [l for l in model.layers if isinstance(l, _Rule)][0]
    S = layer.S
    src = inputs[:, :S]
    mpos = np.argmax(src >= 10, axis=1)
    keyt = (_A[None] + mpos[:, None] - 2) % S
    tok = np.take_along_axis(src, keyt, axis=1)
    m = tok - 9
    plain = np.where(np.arange(8)[None] == 2, m // 10, np.where(np.arange(8)[None] == 3, m % 10, tok))
    cnt = np.zeros((10, 10))
    np.add.at(cnt, (np.clip(plain, 0, 9).ravel(), targets.ravel()), 1)
    if (cnt.max(1) / np.maximum(cnt.sum(1), 1)).min() < 0.9:  # the answers are not a code of the rule
        return
    layer.code.assign(np.eye(10)[cnt.argmax(1)].astype("float32"))
    layer.k.assign(1.5 * layer.key)


def predict(model, inputs):
    return model.predict(inputs, batch_size=256, verbose=0)[0]


def attention_weights(model, inputs):
    return model.predict(inputs, batch_size=256, verbose=0)[1]
