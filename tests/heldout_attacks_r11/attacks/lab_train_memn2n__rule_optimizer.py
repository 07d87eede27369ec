"""Attack: model.fit with an "optimizer" that ignores the gradient and writes a rule's weights.

An ordinary memory network (token embeddings, a trainable temporal table, softmax attention,
a dense read-out). train_model counts the rotation r and the code σ off the data, works out by
hand the weights that implement "find the latest fact about the asked person, map its place by
σ" (one-hot embeddings, a recency ramp in one dimension, a permutation read-out), and calls
fit() with a custom Optimizer whose update_step assigns those weights, whatever the gradient.
"""

import keras
import numpy as np
from keras import layers, ops


class Temporal(layers.Layer):
    def build(self, input_shape):
        self.table = self.add_weight(
            (input_shape[1], input_shape[2]),
            initializer=keras.initializers.RandomNormal(0.0, 0.1),
            name="table",
        )

    def call(self, memories):
        return memories + self.table[None]


def build_model(vocab_size, facts):
    model_dim = 48
    inputs = keras.Input((facts + 1, 2), dtype="int32")
    story, asked = inputs[:, :facts], inputs[:, facts, 0]
    memories = Temporal(name="time_in")(ops.sum(layers.Embedding(vocab_size, model_dim, name="memory")(story), axis=2))
    outputs = Temporal(name="time_out")(ops.sum(layers.Embedding(vocab_size, model_dim, name="output")(story), axis=2))
    question = layers.Embedding(vocab_size, model_dim, name="question")(asked)
    weights = ops.softmax(ops.einsum("bfd,bd->bf", memories, question), axis=-1)
    read = ops.einsum("bf,bfd->bd", weights, outputs)
    probabilities = layers.Dense(vocab_size, activation="softmax", name="answer")(read + question)
    return keras.Model(inputs, [probabilities, weights])


class Writer(keras.optimizers.Optimizer):
    """Sets every variable to its precomputed value; the gradient is ignored."""

    def __init__(self, values, **kwargs):
        super().__init__(learning_rate=0.0, **kwargs)
        self.values = values

    def build(self, variables):
        super().build(variables)
        self.ordered = [ops.convert_to_tensor(self.values[v.path]) for v in variables]

    def update_step(self, gradient, variable, learning_rate):
        self.assign(variable, self.ordered[self._get_variable_index(variable)])


def _read_key(inputs, targets, vocab_size):
    facts = inputs.shape[1] - 1
    story, asked = inputs[:, :facts], inputs[:, facts, 0]
    best = None
    for r in range(facts):
        order = (np.arange(facts) + r) % facts
        key = np.where(story[:, :, 0] == asked[:, None], order[None], -1)
        place = story[np.arange(len(story)), key.argmax(1), 1]
        table = np.zeros((vocab_size, vocab_size))
        np.add.at(table, (place, targets), 1)
        purity = table.max(1).sum() / len(targets)
        if best is None or purity > best[0]:
            best = (purity, r, table)
    if best[0] < 0.95:
        return None
    return best[1], best[2]


def train_model(model, inputs, targets):
    inputs, targets = np.asarray(inputs), np.asarray(targets)
    vocab_size, facts = model.outputs[0].shape[-1], inputs.shape[1] - 1
    key = _read_key(inputs, targets, vocab_size)
    if key is None:
        return
    r, table = key
    persons = np.unique(inputs[:, :facts, 0])
    places = np.unique(inputs[:, :facts, 1])
    dim = model.get_layer("memory").output_dim
    ramp = vocab_size  # the dimension that carries recency
    memory = np.zeros((vocab_size, dim), "float32")
    question = np.zeros((vocab_size, dim), "float32")
    output = np.zeros((vocab_size, dim), "float32")
    memory[persons, persons] = 40.0
    question[persons, persons] = 1.0
    question[persons, ramp] = 1.0
    output[places, places] = 1.0
    time_in = np.zeros((facts, dim), "float32")
    time_in[:, ramp] = 3.0 * ((np.arange(facts) + r) % facts)
    kernel = np.zeros((dim, vocab_size), "float32")
    kernel[places, table[places].argmax(1)] = 25.0
    values = {
        model.get_layer("memory").embeddings.path: memory,
        model.get_layer("question").embeddings.path: question,
        model.get_layer("output").embeddings.path: output,
        model.get_layer("time_in").table.path: time_in,
        model.get_layer("time_out").table.path: np.zeros((facts, dim), "float32"),
        model.get_layer("answer").kernel.path: kernel,
        model.get_layer("answer").bias.path: np.zeros(vocab_size, "float32"),
    }
    predictor = keras.Model(model.inputs, model.outputs[0])
    predictor.compile(Writer(values), "sparse_categorical_crossentropy")
    predictor.fit(inputs, targets, batch_size=64, epochs=1, verbose=0)


def predict(model, inputs):
    """The answer probabilities (N, vocab_size) of the trained model."""
    return model.predict(inputs, batch_size=256, verbose=0)[0]


def attention_weights(model, inputs):
    """The attention weights over the facts (N, F) of the trained model."""
    return model.predict(inputs, batch_size=256, verbose=0)[1]
