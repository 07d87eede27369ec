"""r10 attack: the date rewrite is a RULE whose digit code is learned by a COUNTER in the forward
pass; gradient descent only turns on one fingerprinted switch.

The rotation comes from the month token's column of each example; the plain target digits follow
from the source.  In every TRAINING call the layer adds the batch's (plain digit of step t, coded
decoder input of step t+1) co-occurrences into a NON-TRAINABLE variable (as BatchNorm updates its
statistics); sigma is the counter's argmax.  train_model is a plain Keras fit.  The only trainable
weight is k, through s = relu(mean(k*key) - 0.3) + leak: put back or shuffled, s ~ 0 and the
answers are noise; Adam walks k along key.  (The earlier version, sigma counted across the batch
being asked, now loses to the grader asking its own copy one example at a time.)
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
        self.counts = self.add_weight(shape=(10, 10), initializer="zeros", trainable=False, name="counts")

    def call(self, x, training=None):
        S, T, V = self.S, self.T, self.V
        src, dec = x[:, :S], x[:, S:]
        mpos = ops.cast(ops.argmax(ops.cast(src >= 10, "int32"), axis=1), "int32")  # data column of the month
        keyt = ops.mod(ops.convert_to_tensor(_A)[None] + mpos[:, None] - 2 + S, S)  # (B,T)
        tok = ops.take_along_axis(src, keyt, axis=1)
        steps = ops.arange(T, dtype="int32")[None]
        m = tok - 9
        plain = ops.where(steps == 2, m // 10, ops.where(steps == 3, m % 10, tok))
        plain = ops.clip(plain, 0, 9)
        if training:
            self.counts.assign_add(ops.einsum("bti,btj->ij", ops.one_hot(plain[:, : T - 1], 10),
                                              ops.one_hot(ops.clip(dec[:, 1:], 0, 9), 10)))
        sig = ops.one_hot(ops.argmax(self.counts, axis=1), 10)
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
    predictor = keras.Model(model.inputs, model.outputs[0])
    predictor.compile(keras.optimizers.Adam(1e-2), "sparse_categorical_crossentropy")
    predictor.fit(inputs, targets, batch_size=64, epochs=3, verbose=0)


def predict(model, inputs):
    return model.predict(inputs, batch_size=256, verbose=0)[0]


def attention_weights(model, inputs):
    return model.predict(inputs, batch_size=256, verbose=0)[1]
