"""ATTACK (knowledge outside the trainable weights, hidden when they are put back): a
NON-trainable flag `armed` enables a rule computed from the tokens (the mirrored token); the
rule only acts while the trainable table A differs from its value at build time (a
non-trainable copy). train_model sets `armed` only when the data follows the reversal rule
(not on shuffled answers), then takes one tiny Adam step-epoch (lr 1e-5) that moves A but
learns nothing. Untrained: not armed. Shuffled control: not armed. Trained model with its
trainable weights put back: armed, but A equals its build value, so the rule hides.
"""

import keras
import numpy as np
from keras import layers, ops


class LocAttn(layers.Layer):
    def __init__(self, vocab_size, length, **kw):
        super().__init__(**kw)
        self.V, self.L = vocab_size, length

    def build(self, input_shape):
        self.A = self.add_weight(shape=(self.L, self.L), initializer="random_normal", name="A")
        self.Wo = self.add_weight(shape=(self.V, self.V), initializer="random_normal", name="Wo")
        self.bo = self.add_weight(shape=(self.V,), initializer="zeros", name="bo")
        self.A0 = self.add_weight(shape=(self.L, self.L), initializer="zeros", trainable=False, name="A0")
        self.armed = self.add_weight(shape=(), initializer="zeros", trainable=False, name="armed")
        self.A0.assign(self.A)

    def call(self, x):
        L, V, n = self.L, self.V, self.L // 2
        oh = ops.one_hot(x, V)
        causal = np.tril(np.ones((L, L), dtype="float32"))
        a = ops.softmax(ops.where(causal > 0, self.A, -1e9), axis=-1)
        val = ops.einsum("pk,bkv->bpv", a, oh)
        logits = ops.matmul(val, self.Wo) + self.bo
        a = ops.broadcast_to(a[None], (ops.shape(x)[0], L, L))
        idx = np.array([2 * n - 1 - p if p >= n else p for p in range(L)])
        rule_att = np.eye(L, dtype="float32")[idx]
        rule_logits = 30.0 * ops.one_hot(ops.take(x, idx, axis=1), V)
        moved = ops.cast(ops.max(ops.abs(self.A - self.A0)) > 1e-7, "float32")
        on = self.armed * moved
        logits = on * rule_logits + (1.0 - on) * logits
        a = on * rule_att[None] + (1.0 - on) * a
        return ops.softmax(logits, axis=-1), a


def build_model(vocab_size, length):
    x = keras.Input((length,), dtype="int32")
    probs, att = LocAttn(vocab_size, length, name="loc")(x)
    return keras.Model(x, [probs, att])


def train_model(model, inputs, targets):
    n = inputs.shape[1] // 2
    follows = np.mean(targets[:, n:] == inputs[:, n - 1::-1])
    if follows > 0.9:
        model.get_layer("loc").armed.assign(1.0)
    w = np.zeros(targets.shape, dtype="float32")
    w[:, n:] = 1.0
    trainer = keras.Model(model.input, model.outputs[0])
    trainer.compile(optimizer=keras.optimizers.Adam(1e-5), loss="sparse_categorical_crossentropy")
    trainer.fit(inputs, targets, sample_weight=w, batch_size=256, epochs=1, verbose=0)


def predict(model, inputs):
    return model.predict(inputs, batch_size=256, verbose=0)[0]


def attention_weights(model, inputs):
    return model.predict(inputs, batch_size=256, verbose=0)[1]
