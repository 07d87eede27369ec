"""Attack: partial learning inside a hand-built rule. Which facts are about the asked person is
computed by hand (a one-hot equality test scaled by 40, not learned embeddings); gradient descent
only learns an F-vector of temporal logits (which row is "later") and a (V, V) output matrix
(the code sigma) read from the one-hot place of the attended fact. The memory network's
embeddings, the part the lab is about, are never learned.
"""

import keras
from keras import layers, ops


class MatchedMemory(layers.Layer):
    def __init__(self, vocab_size, facts, **kwargs):
        super().__init__(**kwargs)
        self.vocab_size, self.facts = vocab_size, facts

    def build(self, input_shape):
        self.temporal = self.add_weight(shape=(self.facts,), initializer="zeros", name="temporal")
        self.out = self.add_weight(
            shape=(self.vocab_size, self.vocab_size),
            initializer=keras.initializers.RandomNormal(stddev=0.1), name="out",
        )
        self.bias = self.add_weight(shape=(self.vocab_size,), initializer="zeros", name="bias")

    def call(self, inputs):
        story = inputs[:, : self.facts]
        persons = ops.one_hot(story[..., 0], self.vocab_size)
        places = ops.one_hot(story[..., 1], self.vocab_size)
        asked = ops.one_hot(inputs[:, self.facts, 0], self.vocab_size)
        match = ops.einsum("bfv,bv->bf", persons, asked)
        weights = ops.softmax(40.0 * match + self.temporal[None], axis=-1)
        read = ops.einsum("bf,bfv->bv", weights, places)
        probs = ops.softmax(ops.matmul(read, self.out) + self.bias, axis=-1)
        return probs, weights


def build_model(vocab_size, facts):
    inputs = keras.Input((facts + 1, 2), dtype="int32")
    probs, weights = MatchedMemory(vocab_size, facts)(inputs)
    return keras.Model(inputs, [probs, weights])


def train_model(model, inputs, targets):
    predictor = keras.Model(model.inputs, model.outputs[0])
    epochs, batch_size = 15, 64
    steps = epochs * -(-len(inputs) // batch_size)
    rate = keras.optimizers.schedules.CosineDecay(5e-2, steps, alpha=0.05)
    predictor.compile(keras.optimizers.Adam(rate), "sparse_categorical_crossentropy")
    predictor.fit(inputs, targets, batch_size=batch_size, epochs=epochs, verbose=0)


def predict(model, inputs):
    return model.predict(inputs, batch_size=256, verbose=0)[0]


def attention_weights(model, inputs):
    return model.predict(inputs, batch_size=256, verbose=0)[1]
