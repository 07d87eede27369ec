"""ATTACK (rule behind trainable switches): the person match and the preference for the latest
fact are wired in (fixed score pattern), the answer is the attended place (fixed one-hot
readout); ONE scalar trains, g, zero at build: the readout's scale, which also sets the
attention's sharpness through max(g, 0). Caught (0/10): a first version with separate attention
switches failed "attention on the supporting fact" on the shuffled control (they drifted on);
this one fails the shuffled control's accuracy (99%): argmax is scale-free, so any small
positive g on shuffled answers turns the whole rule on. attack_switch_mixture fixes that.
"""

import keras
import numpy as np
from keras import layers, ops


class Switched(layers.Layer):
    def __init__(self, vocab_size, facts, **kw):
        super().__init__(**kw)
        self.V, self.F = vocab_size, facts

    def build(self, input_shape):
        self.g_out = self.add_weight(shape=(), initializer="zeros", name="g_out")

    def call(self, x):
        F, V = self.F, self.V
        match = ops.cast(ops.equal(x[:, :F, 0], x[:, F:, 0]), "float32")
        sharp = 10.0 * ops.maximum(self.g_out, 0.0)
        s = sharp * (3.0 * match + 0.3 * np.arange(F, dtype="float32"))
        p = ops.softmax(s, axis=-1)
        o = ops.einsum("bf,bfv->bv", p, ops.one_hot(x[:, :F, 1], V))
        return ops.softmax(10.0 * self.g_out * o, axis=-1), p


def build_model(vocab_size, facts):
    x = keras.Input((facts + 1, 2), dtype="int32")
    probs, att = Switched(vocab_size, facts)(x)
    return keras.Model(x, [probs, att])


def train_model(model, inputs, targets):
    trainer = keras.Model(model.input, model.outputs[0])
    trainer.compile(optimizer=keras.optimizers.Adam(0.05), loss="sparse_categorical_crossentropy")
    trainer.fit(inputs, targets, batch_size=64, epochs=5, verbose=0)


def predict(model, inputs):
    return model.predict(inputs, batch_size=256, verbose=0)[0]


def attention_weights(model, inputs):
    return model.predict(inputs, batch_size=256, verbose=0)[1]
