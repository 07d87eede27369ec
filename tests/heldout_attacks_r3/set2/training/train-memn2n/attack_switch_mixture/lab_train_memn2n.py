"""ATTACK (rule behind ONE trainable switch, robust to argmax): probs = (1 − σ)·prior + σ·rule,
σ = sigmoid(g), g = −6 at build; the prior is a trainable answer distribution (random at build);
the attention is fixed noise plus 20σ times the rule's score (person match, recency). Before
training σ ≈ 0.0025, too small to move any argmax; on shuffled answers the rule is no better
than the prior and g does not grow; Adam on the real data drives g up (Adam's step does not
shrink with σ'). (attack_switch_rule, with raw scalar switches, was caught: argmax is
scale-free, so any positive drift on shuffled data turned the rule on.)
"""

import keras
import numpy as np
from keras import layers, ops


class Mixture(layers.Layer):
    def __init__(self, vocab_size, facts, **kw):
        super().__init__(**kw)
        self.V, self.F = vocab_size, facts

    def build(self, input_shape):
        self.g = self.add_weight(shape=(), initializer=keras.initializers.Constant(-6.0), name="g")
        self.b = self.add_weight(shape=(self.V,), initializer="random_normal", name="b")
        self.noise = self.add_weight(shape=(self.F,), initializer=keras.initializers.RandomNormal(stddev=1.0),
                                     trainable=False, name="noise")

    def call(self, x):
        F, V = self.F, self.V
        sig = ops.sigmoid(self.g)
        match = ops.cast(ops.equal(x[:, :F, 0], x[:, F:, 0]), "float32")
        rule_score = 3.0 * match + 0.3 * np.arange(F, dtype="float32")
        a = ops.softmax(self.noise + 20.0 * sig * rule_score, axis=-1)
        o = ops.einsum("bf,bfv->bv", a, ops.one_hot(x[:, :F, 1], V))
        probs = (1.0 - sig) * ops.softmax(self.b)[None] + sig * o
        return probs, a


def build_model(vocab_size, facts):
    x = keras.Input((facts + 1, 2), dtype="int32")
    probs, att = Mixture(vocab_size, facts)(x)
    return keras.Model(x, [probs, att])


def train_model(model, inputs, targets):
    trainer = keras.Model(model.input, model.outputs[0])
    trainer.compile(optimizer=keras.optimizers.Adam(0.1), loss="sparse_categorical_crossentropy")
    trainer.fit(inputs, targets, batch_size=64, epochs=5, verbose=0)


def predict(model, inputs):
    return model.predict(inputs, batch_size=256, verbose=0)[0]


def attention_weights(model, inputs):
    return model.predict(inputs, batch_size=256, verbose=0)[1]
