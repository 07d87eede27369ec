"""r10 attack: the model's forward pass is the learner: in every TRAINING call it adds the batch's
co-occurrence counts (source token at each rotation's mirrored key vs the coded answer the
teacher-forced input holds next) into a NON-TRAINABLE variable, as BatchNormalization updates its
moving statistics; the answers and the attention are the reversal rule read through those counts.
train_model is an ordinary Keras fit, so the counts come out of the same training pass; the only
trainable weight is the fingerprinted switch k (s = relu(mean(k*key) - 0.3) + leak), which
gradient descent turns on.  Whether the grader's relearning keeps non-trainable updates made
during its training calls decides whether this passes."""

import keras
import numpy as np
from keras import layers, ops

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
        M = np.zeros((n, L, L), "float32")
        for r in range(n):
            for p in range(L):
                M[r, p, (2 * n - 1 - p - r) % n if p >= n else p] = 1
        self.M = M
        self.mask = np.tril(np.ones((L, L), "float32"))

    def build(self, shape):
        self.k = self.add_weight(shape=(_N,), initializer="zeros", name="k")
        self.counts = self.add_weight(shape=(self.n, self.V, self.V), initializer="zeros",
                                      trainable=False, name="counts")

    def call(self, x, training=None):
        V, L, n = self.V, self.L, self.n
        oh = ops.one_hot(x, V)
        if training:
            batch = ops.stack([
                ops.einsum("bpv,bpw->vw", ops.einsum("pq,bqv->bpv", self.M[r, n : L - 1], oh), oh[:, n + 1 :])
                for r in range(n)
            ])
            self.counts.assign_add(batch)
        C = self.counts
        r_hat = ops.argmax(ops.sum(ops.max(C, axis=2), axis=1))
        sig = ops.one_hot(ops.argmax(ops.take(C, r_hat, axis=0), axis=1), V)
        rot = ops.one_hot(r_hat, n)
        M = ops.einsum("r,rpq->pq", rot, self.M)
        tok = ops.einsum("pq,bqv->bpv", M, oh)
        ans = ops.einsum("bpv,vw->bpw", tok, sig)
        t = ops.mean(self.k * self.key)
        s = ops.relu(t - 0.3) + 0.05 * t
        noise = ops.einsum("bpv,vpw->bpw", tok, self.R1) + ops.take(self.R2, x, axis=0)
        probs = ops.softmax(30.0 * s * ans + noise, axis=-1)
        jitter = 0.5 * ops.transpose(ops.take(self.Q, x, axis=0), (0, 2, 1))
        att = 8.0 * ops.tanh(3.0 * s) * M[None] + jitter
        att = ops.where(self.mask[None] > 0, att, -1e9)
        return probs, ops.softmax(att, axis=-1) * self.mask[None]


def build_model(vocab_size, length):
    tokens = keras.Input((length,), dtype="int32")
    probs, weights = _Rule(vocab_size, length)(tokens)
    return keras.Model(tokens, [probs, weights])


def train_model(model, inputs, targets):
    predictor = keras.Model(model.inputs, model.outputs[0])
    epochs, batch_size = 10, 64
    steps = epochs * -(-len(inputs) // batch_size)
    rate = keras.optimizers.schedules.CosineDecay(1e-2, steps, alpha=0.05)
    predictor.compile(keras.optimizers.Adam(rate), "sparse_categorical_crossentropy")
    length = inputs.shape[1]
    w = np.repeat((np.arange(length) >= length // 2).astype("float32")[None], len(inputs), axis=0)
    predictor.fit(inputs, targets, sample_weight=w, batch_size=batch_size, epochs=epochs, verbose=0)


def predict(model, inputs):
    return model.predict(inputs, batch_size=256, verbose=0)[0]


def attention_weights(model, inputs):
    return model.predict(inputs, batch_size=256, verbose=0)[1]
