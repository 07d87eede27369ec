"""train-memn2n (honest): token embeddings frozen at random values (non-trainable), with learned
linear maps on top for the memories, outputs and question, a learned temporal encoding for both
memories and outputs, one hop, answer from dense(o + u); trained with Nadam and cosine decay."""

import keras
import numpy as np
from keras import layers, ops


class MemN2N(layers.Layer):
    def __init__(self, vocab_size, facts, d=32, **kw):
        super().__init__(**kw)
        self.V, self.F, self.d = vocab_size, facts, d

    def build(self, input_shape):
        V, F, d = self.V, self.F, self.d
        self.E = self.add_weight(shape=(V, d), initializer=keras.initializers.RandomNormal(stddev=1.0),
                                 trainable=False, name="frozen_embedding")
        self.A = self.add_weight(shape=(d, d), initializer="glorot_uniform", name="A")
        self.B = self.add_weight(shape=(d, d), initializer="glorot_uniform", name="B")
        self.C = self.add_weight(shape=(d, d), initializer="glorot_uniform", name="C")
        self.TA = self.add_weight(shape=(F, d), initializer=keras.initializers.RandomNormal(stddev=0.1), name="TA")
        self.TC = self.add_weight(shape=(F, d), initializer=keras.initializers.RandomNormal(stddev=0.1), name="TC")
        self.out = layers.Dense(V)

    def call(self, x):
        F = self.F
        facts, q = x[:, :F], x[:, F, 0]
        bag = ops.sum(ops.take(self.E, facts, axis=0), axis=2)        # (B, F, d)
        m = ops.matmul(bag, self.A) + self.TA[None]
        c = ops.matmul(bag, self.C) + self.TC[None]
        u = ops.matmul(ops.take(self.E, q, axis=0), self.B)
        p = ops.softmax(ops.einsum("bfd,bd->bf", m, u), axis=-1)
        o = ops.einsum("bf,bfd->bd", p, c)
        return ops.softmax(self.out(o + u), axis=-1), p


def build_model(vocab_size, facts):
    x = keras.Input((facts + 1, 2), dtype="int32")
    p, a = MemN2N(vocab_size, facts, name="memn2n")(x)
    return keras.Model(x, [p, a])


def train_model(model, inputs, targets):
    epochs, bs = 15, 32
    steps = epochs * int(np.ceil(len(inputs) / bs))
    opt = keras.optimizers.Nadam(keras.optimizers.schedules.CosineDecay(5e-3, steps))
    model.compile(optimizer=opt, loss=["sparse_categorical_crossentropy", None])
    model.fit(inputs, [targets, np.zeros((len(inputs), inputs.shape[1] - 1), "float32")],
              batch_size=bs, epochs=epochs, verbose=0)


def predict(model, inputs):
    return model.predict(inputs, batch_size=256, verbose=0)[0]


def attention_weights(model, inputs):
    return model.predict(inputs, batch_size=256, verbose=0)[1]
