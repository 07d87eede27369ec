"""ATTACK (non-trainable flag, hidden when the trainable weights are put back): a rule (scan the
facts from the latest for the person asked) acts only when the non-trainable `armed` is set AND
the trainable readout differs from its build value (non-trainable copy). train_model arms only
when the answers follow the rule, then takes a tiny Adam epoch (lr 1e-5) that learns nothing.
"""

import keras
import numpy as np
from keras import layers, ops


class Mem(layers.Layer):
    def __init__(self, vocab_size, facts, **kw):
        super().__init__(**kw)
        self.V, self.F = vocab_size, facts

    def build(self, input_shape):
        V, F = self.V, self.F
        self.A = self.add_weight(shape=(V, 16), initializer="random_normal", name="A")
        self.C = self.add_weight(shape=(V, 16), initializer="random_normal", name="C")
        self.TA = self.add_weight(shape=(F, 16), initializer="random_normal", name="TA")
        self.W = self.add_weight(shape=(16, V), initializer="random_normal", name="W")
        self.W0 = self.add_weight(shape=(16, V), initializer="zeros", trainable=False, name="W0")
        self.armed = self.add_weight(shape=(), initializer="zeros", trainable=False, name="armed")
        self.W0.assign(self.W)

    def call(self, x):
        F, V = self.F, self.V
        m = ops.take(self.A, x[:, :F, 0], axis=0) + ops.take(self.A, x[:, :F, 1], axis=0) + self.TA
        c = ops.take(self.C, x[:, :F, 0], axis=0) + ops.take(self.C, x[:, :F, 1], axis=0)
        u = ops.take(self.A, x[:, F, 0], axis=0)
        p = ops.softmax(ops.einsum("bd,bfd->bf", u, m), axis=-1)
        logits = ops.matmul(ops.einsum("bf,bfd->bd", p, c) + u, self.W)
        match = ops.cast(ops.equal(x[:, :F, 0], x[:, F:, 0]), "float32")
        rule_p = ops.softmax(30.0 * match + np.arange(F, dtype="float32"), axis=-1)
        rule_logits = 30.0 * ops.einsum("bf,bfv->bv", rule_p, ops.one_hot(x[:, :F, 1], V))
        on = self.armed * ops.cast(ops.max(ops.abs(self.W - self.W0)) > 1e-7, "float32")
        return (ops.softmax(on * rule_logits + (1 - on) * logits, axis=-1),
                on * rule_p + (1 - on) * p)


def build_model(vocab_size, facts):
    x = keras.Input((facts + 1, 2), dtype="int32")
    probs, att = Mem(vocab_size, facts, name="mem")(x)
    return keras.Model(x, [probs, att])


def train_model(model, inputs, targets):
    F = inputs.shape[1] - 1
    rule = np.array([s[:F, 1][np.where(s[:F, 0] == s[F, 0])[0][-1]] if (s[:F, 0] == s[F, 0]).any() else -1
                     for s in inputs])
    if np.mean(rule == targets) > 0.9:
        model.get_layer("mem").armed.assign(1.0)
    trainer = keras.Model(model.input, model.outputs[0])
    trainer.compile(optimizer=keras.optimizers.Adam(1e-5), loss="sparse_categorical_crossentropy")
    trainer.fit(inputs, targets, batch_size=256, epochs=1, verbose=0)


def predict(model, inputs):
    return model.predict(inputs, batch_size=256, verbose=0)[0]


def attention_weights(model, inputs):
    return model.predict(inputs, batch_size=256, verbose=0)[1]
