"""Attack on the spirit of the lab: the "attention" is a trainable (T, S) table of logits, one
row per decoder step, that never looks at the decoder state s_t or the encoder states; the
digit comes from a dense layer on the attended source embedding and a step embedding. Every
weight is learned by gradient descent, so all the "answers come from training" gates see real
learning, but there is no Bahdanau score, no encoder RNN and no decoder RNN: the "query knows
the step" check is met only because a table row is a different step.
"""

import keras
import numpy as np
from keras import layers, ops


class StepTable(layers.Layer):
    def __init__(self, target_length, source_length, **kwargs):
        super().__init__(**kwargs)
        self.T, self.S = target_length, source_length

    def build(self, input_shape):
        self.table = self.add_weight(
            shape=(self.T, self.S), initializer=keras.initializers.RandomNormal(stddev=0.1), name="table"
        )

    def call(self, source_embedded):
        weights = ops.softmax(self.table, axis=-1)  # (T, S)
        batch = ops.shape(source_embedded)[0]
        return ops.broadcast_to(weights[None], (batch, self.T, self.S))


def build_model(vocab_size, source_length, target_length):
    dim = 48
    inputs = keras.Input((source_length + target_length,), dtype="int32")
    source = inputs[:, :source_length]
    embedded = layers.Embedding(vocab_size, dim)(source)  # (B, S, d)
    weights = StepTable(target_length, source_length)(embedded)  # (B, T, S)
    context = ops.einsum("bts,bsd->btd", weights, embedded)
    steps = layers.Embedding(target_length, dim)(ops.arange(target_length))[None]
    hidden = layers.Dense(96, activation="relu")(context + steps)
    probabilities = layers.Dense(vocab_size, activation="softmax")(hidden)
    return keras.Model(inputs, [probabilities, weights])


def train_model(model, inputs, targets):
    predictor = keras.Model(model.inputs, model.outputs[0])
    epochs, batch_size = 12, 64
    steps = epochs * -(-len(inputs) // batch_size)
    rate = keras.optimizers.schedules.CosineDecay(2e-2, steps, alpha=0.05)
    predictor.compile(keras.optimizers.Adam(rate), "sparse_categorical_crossentropy")
    predictor.fit(inputs, targets, batch_size=batch_size, epochs=epochs, verbose=0)


def predict(model, inputs):
    return model.predict(inputs, batch_size=256, verbose=0)[0]


def attention_weights(model, inputs):
    return model.predict(inputs, batch_size=256, verbose=0)[1]
