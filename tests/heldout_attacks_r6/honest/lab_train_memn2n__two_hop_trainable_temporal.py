"""Honest: a two-hop end-to-end memory network with adjacent weight tying (Sukhbaatar et al.
§2.2) and a *trainable* temporal encoding (a layer of its own with add_weight), trained by Adam
on the given targets. Every answer comes from learned embeddings; attention weights of both hops
are returned as (B, 2, F).
"""

import keras
from keras import layers, ops


class TemporalEncoding(layers.Layer):
    def __init__(self, facts, dim, **kwargs):
        super().__init__(**kwargs)
        self.facts, self.dim = facts, dim

    def build(self, input_shape):
        self.table = self.add_weight(
            shape=(self.facts, self.dim), initializer=keras.initializers.RandomNormal(stddev=0.5), name="table"
        )

    def call(self, memories):
        return memories + self.table[None]


def build_model(vocab_size, facts):
    dim = 48
    inputs = keras.Input((facts + 1, 2), dtype="int32")
    story, asked = inputs[:, :facts], inputs[:, facts, 0]
    embeddings = [layers.Embedding(vocab_size, dim) for _ in range(3)]  # A1, C1 = A2, C2
    temporals = [TemporalEncoding(facts, dim) for _ in range(3)]
    u = layers.Embedding(vocab_size, dim)(asked)
    all_weights = []
    for hop in range(2):
        memories = temporals[hop](ops.sum(embeddings[hop](story), axis=2))
        outputs = temporals[hop + 1](ops.sum(embeddings[hop + 1](story), axis=2))
        weights = ops.softmax(ops.einsum("bfd,bd->bf", memories, u), axis=-1)
        u = u + ops.einsum("bf,bfd->bd", weights, outputs)
        all_weights.append(weights)
    probabilities = layers.Dense(vocab_size, activation="softmax")(u)
    return keras.Model(inputs, [probabilities, ops.stack(all_weights, axis=1)])


def train_model(model, inputs, targets):
    predictor = keras.Model(model.inputs, model.outputs[0])
    epochs, batch_size = 15, 64
    steps = epochs * -(-len(inputs) // batch_size)
    rate = keras.optimizers.schedules.CosineDecay(1e-2, steps, alpha=0.05)
    predictor.compile(keras.optimizers.Adam(rate), "sparse_categorical_crossentropy")
    predictor.fit(inputs, targets, batch_size=batch_size, epochs=epochs, verbose=0)


def predict(model, inputs):
    return model.predict(inputs, batch_size=256, verbose=0)[0]


def attention_weights(model, inputs):
    return model.predict(inputs, batch_size=256, verbose=0)[1]
