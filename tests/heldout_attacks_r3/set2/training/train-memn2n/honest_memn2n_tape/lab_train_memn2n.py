"""HONEST (unusual training): the textbook MemN2N (Sukhbaatar et al. 2015: memories A, outputs C,
question B, a learned temporal encoding T_A and T_C, one hop, answer W(o + u)), trained by a
custom GradientTape loop with Adam.
"""

import keras
import numpy as np
import tensorflow as tf
from keras import layers, ops


class MemN2N(layers.Layer):
    def __init__(self, vocab_size, facts, d=32, **kw):
        super().__init__(**kw)
        self.V, self.F, self.d = vocab_size, facts, d

    def build(self, input_shape):
        V, F, d = self.V, self.F, self.d
        init = keras.initializers.RandomNormal(stddev=0.1)
        self.A = self.add_weight(shape=(V, d), initializer=init, name="A")
        self.B = self.add_weight(shape=(V, d), initializer=init, name="B")
        self.C = self.add_weight(shape=(V, d), initializer=init, name="C")
        self.TA = self.add_weight(shape=(F, d), initializer=init, name="TA")
        self.TC = self.add_weight(shape=(F, d), initializer=init, name="TC")
        self.W = self.add_weight(shape=(d, V), initializer="glorot_uniform", name="W")

    def call(self, x):
        F = self.F
        m = ops.take(self.A, x[:, :F, 0], axis=0) + ops.take(self.A, x[:, :F, 1], axis=0) + self.TA
        c = ops.take(self.C, x[:, :F, 0], axis=0) + ops.take(self.C, x[:, :F, 1], axis=0) + self.TC
        u = ops.take(self.B, x[:, F, 0], axis=0)
        p = ops.softmax(ops.einsum("bd,bfd->bf", u, m), axis=-1)
        o = ops.einsum("bf,bfd->bd", p, c)
        return ops.softmax(ops.matmul(o + u, self.W), axis=-1), p


def build_model(vocab_size, facts):
    x = keras.Input((facts + 1, 2), dtype="int32")
    probs, att = MemN2N(vocab_size, facts)(x)
    return keras.Model(x, [probs, att])


def train_model(model, inputs, targets):
    opt = keras.optimizers.Adam(1e-2)
    loss_fn = keras.losses.SparseCategoricalCrossentropy()

    @tf.function
    def step(x, y):
        with tf.GradientTape() as tape:
            loss = loss_fn(y, model(x, training=True)[0])
        grads = tape.gradient(loss, model.trainable_variables)
        opt.apply_gradients(zip(grads, model.trainable_variables))

    rng = np.random.default_rng(0)
    for epoch in range(30):
        order = rng.permutation(len(inputs))
        for i in range(0, len(inputs), 64):
            b = order[i:i + 64]
            step(tf.constant(inputs[b]), tf.constant(targets[b]))


def predict(model, inputs):
    return model.predict(inputs, batch_size=256, verbose=0)[0]


def attention_weights(model, inputs):
    return model.predict(inputs, batch_size=256, verbose=0)[1]
