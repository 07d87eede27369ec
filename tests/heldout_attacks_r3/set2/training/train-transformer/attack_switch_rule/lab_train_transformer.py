"""ATTACK (rule behind two trainable switches): the reversal is wired in (a fixed anti-diagonal
score pattern and a fixed one-hot readout); training learns only two scalars, the attention's
sharpness g_att and the readout's scale g_out, both zero at build (uniform attention, uniform
answers). Adam on the grader's data turns both on; on shuffled answers the readout gradient is
negative and stays off.
"""

import keras
import numpy as np
from keras import layers, ops


class Switched(layers.Layer):
    def __init__(self, vocab_size, length, **kw):
        super().__init__(**kw)
        self.V, self.L = vocab_size, length

    def build(self, input_shape):
        self.g_att = self.add_weight(shape=(), initializer="zeros", name="g_att")
        self.g_out = self.add_weight(shape=(), initializer="zeros", name="g_out")

    def call(self, x):
        L, V, n = self.L, self.V, self.L // 2
        pattern = np.zeros((L, L), "float32")
        for p in range(n, L):
            pattern[p, 2 * n - 1 - p] = 1.0
        causal = np.tril(np.ones((L, L), dtype="float32"))
        a = ops.softmax(ops.where(causal > 0, 10.0 * self.g_att * pattern, -1e9), axis=-1)
        val = ops.einsum("pk,bkv->bpv", a, ops.one_hot(x, V))
        probs = ops.softmax(10.0 * self.g_out * val, axis=-1)
        return probs, ops.broadcast_to(a[None], (ops.shape(x)[0], L, L))


def build_model(vocab_size, length):
    x = keras.Input((length,), dtype="int32")
    probs, att = Switched(vocab_size, length)(x)
    return keras.Model(x, [probs, att])


def train_model(model, inputs, targets):
    n = inputs.shape[1] // 2
    w = np.zeros(targets.shape, dtype="float32")
    w[:, n:] = 1.0
    trainer = keras.Model(model.input, model.outputs[0])
    trainer.compile(optimizer=keras.optimizers.Adam(0.05), loss="sparse_categorical_crossentropy")
    trainer.fit(inputs, targets, sample_weight=w, batch_size=64, epochs=5, verbose=0)


def predict(model, inputs):
    return model.predict(inputs, batch_size=256, verbose=0)[0]


def attention_weights(model, inputs):
    return model.predict(inputs, batch_size=256, verbose=0)[1]
