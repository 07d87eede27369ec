"""Attack: the "latest fact about the person asked" rule is hard-coded (scores 8 [same person] +
fact index; answer = the attended place, one-hot); the only trainable weights are two scalars
that scale the rule's scores and its output logits, both starting at 0 (uniform attention and
answer). fit() learns to turn the rule up on real data; on shuffled answers it does not."""

import keras
import numpy as np
from keras import layers, ops


class GatedRule(layers.Layer):
    def __init__(self, vocab_size, facts, **kw):
        super().__init__(**kw)
        self.V, self.F = vocab_size, facts

    def build(self, shape):
        self.g_att = self.add_weight(shape=(), initializer="zeros", name="g_att")
        self.g_out = self.add_weight(shape=(), initializer="zeros", name="g_out")

    def call(self, x):
        x = ops.cast(x, "int32")
        persons, places, q = x[:, : self.F, 0], x[:, : self.F, 1], x[:, self.F, 0]
        match = ops.cast(ops.equal(persons, q[:, None]), "float32")
        idx = ops.cast(ops.arange(self.F), "float32")[None]
        att = ops.softmax(self.g_att * (8.0 * match + idx), axis=-1)
        ctx = ops.einsum("bf,bfv->bv", att, ops.one_hot(places, self.V))
        return ops.softmax(self.g_out * ctx, axis=-1), att


def build_model(vocab_size, facts):
    x = keras.Input((facts + 1, 2), dtype="int32")
    probs, att = GatedRule(vocab_size, facts)(x)
    model = keras.Model(x, [probs, att])
    model.trainer = keras.Model(x, probs)
    return model


def train_model(model, inputs, targets):
    model.trainer.compile(keras.optimizers.Adam(0.3), "sparse_categorical_crossentropy")
    model.trainer.fit(inputs, targets, batch_size=100, epochs=8, verbose=0)


def predict(model, inputs):
    """The answer probabilities (N, vocab_size) of the trained model."""
    return model.predict(inputs, batch_size=256, verbose=0)[0]


def attention_weights(model, inputs):
    """The attention weights over the facts (N, F) of the trained model."""
    return model.predict(inputs, batch_size=256, verbose=0)[1]
