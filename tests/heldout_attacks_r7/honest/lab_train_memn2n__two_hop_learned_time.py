"""Honest (memn2n): two hops with adjacent weight tying (C_k = A_{k+1}), a *trainable* temporal
encoding per fact slot (a custom layer's add_weight, not a fixed table), the question's embedding
B = A_1, final answer softmax(W(u_2)); both hops' attention returned (B, 2, F). Trained by gradient
descent on the grader's data with model.fit: Adam, learning rate 5e-3 with exponential decay,
15 epochs, batch 32."""
import keras
import numpy as np
from keras import layers, ops


class Temporal(layers.Layer):
    """Adds a learned vector T[i] to memory i."""

    def __init__(self, facts, dim, **kw):
        super().__init__(**kw)
        self.facts, self.dim = facts, dim

    def build(self, input_shape):
        self.table = self.add_weight(shape=(self.facts, self.dim), name="table",
                                     initializer=keras.initializers.RandomNormal(stddev=0.1))

    def call(self, memories):
        return memories + self.table[None]


def build_model(vocab_size, facts):
    d, hops = 48, 2
    inputs = keras.Input((facts + 1, 2), dtype="int32")
    story, question = inputs[:, :facts], inputs[:, facts, 0]
    embs = [layers.Embedding(vocab_size, d, embeddings_initializer=keras.initializers.RandomNormal(stddev=0.1))
            for _ in range(hops + 1)]
    times = [Temporal(facts, d) for _ in range(hops + 1)]
    u = embs[0](question)
    attention = []
    for k in range(hops):
        m = times[k](ops.sum(embs[k](story), axis=2))
        c = times[k + 1](ops.sum(embs[k + 1](story), axis=2))
        p = ops.softmax(ops.einsum("bfd,bd->bf", m, u), axis=-1)
        u = u + ops.einsum("bf,bfd->bd", p, c)
        attention.append(p)
    probabilities = layers.Dense(vocab_size, activation="softmax")(u)
    return keras.Model(inputs, [probabilities, ops.stack(attention, axis=1)])


def train_model(model, inputs, targets):
    predictor = keras.Model(model.inputs, model.outputs[0])
    steps = -(-len(inputs) // 32)
    rate = keras.optimizers.schedules.ExponentialDecay(5e-3, steps, 0.85)
    predictor.compile(keras.optimizers.Adam(rate), "sparse_categorical_crossentropy")
    predictor.fit(inputs, targets, batch_size=32, epochs=15, verbose=0)


def predict(model, inputs):
    return model.predict(inputs, batch_size=256, verbose=0)[0]


def attention_weights(model, inputs):
    return model.predict(inputs, batch_size=256, verbose=0)[1]
