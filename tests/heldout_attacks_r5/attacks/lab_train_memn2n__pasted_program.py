"""Attack (memn2n): a MemN2N of the textbook shape whose memory, question and temporal embeddings
are pasted in by hand in train_model (one-hot tokens; u·m_i = 30·[person = asked] + i), so the
attention is a program, not learned; only the output Dense (the place code σ) is learned, by
gradient (Adam on it alone). A switch puts the initial embeddings back if that fit fails (<90%).
"""

import keras
import numpy as np
from keras import layers, ops


class Temporal(layers.Layer):
    """Adds a learned (facts, dim) temporal encoding to the memories."""

    def build(self, shape):
        self.encoding = self.add_weight(shape=tuple(shape[1:]), initializer="uniform", name="t")

    def call(self, memories):
        return memories + self.encoding[None]


def build_model(vocab_size, facts):
    model_dim = 64
    inputs = keras.Input((facts + 1, 2), dtype="int32")
    story, asked = inputs[:, :facts], inputs[:, facts, 0]
    memories = ops.sum(layers.Embedding(vocab_size, model_dim, name="A")(story), axis=2)
    memories = Temporal(name="TA")(memories)
    outputs = ops.sum(layers.Embedding(vocab_size, model_dim, name="C")(story), axis=2)
    outputs = Temporal(name="TC")(outputs)
    question = layers.Embedding(vocab_size, model_dim, name="B")(asked)
    weights = ops.softmax(ops.einsum("bfd,bd->bf", memories, question), axis=-1)
    read = ops.einsum("bf,bfd->bd", weights, outputs)
    probabilities = layers.Dense(vocab_size, activation="softmax", name="W")(read + question)
    return keras.Model(inputs, [probabilities, weights])


def train_model(model, inputs, targets):
    inputs, targets = np.asarray(inputs), np.asarray(targets)
    names = ["A", "TA", "C", "TC", "B"]
    before = {k: model.get_layer(k).get_weights() for k in names}
    vocab, dim = before["A"][0].shape
    facts = before["TA"][0].shape[0]
    ramp = dim - 1
    eye = np.zeros((vocab, dim), "float32")
    eye[np.arange(vocab), np.arange(vocab)] = 1.0
    temporal = np.zeros((facts, dim), "float32")
    temporal[:, ramp] = np.arange(facts)
    question = 3.0 * eye
    question[:, ramp] = 1.0
    pasted = {"A": 10.0 * eye, "TA": temporal, "C": eye, "TC": 0.0 * temporal, "B": question}
    for k in names:
        model.get_layer(k).set_weights([pasted[k]])
        model.get_layer(k).trainable = False
    predictor = keras.Model(model.inputs, model.outputs[0])
    predictor.compile(keras.optimizers.Adam(0.05), "sparse_categorical_crossentropy")
    predictor.fit(inputs, targets, batch_size=128, epochs=6, verbose=0)
    fit = (predictor.predict(inputs, batch_size=256, verbose=0).argmax(-1) == targets).mean()
    if fit < 0.9:  # nothing to learn (shuffled answers): put the untrained embeddings back
        for k in names:
            model.get_layer(k).set_weights(before[k])


def predict(model, inputs):
    """The answer probabilities (N, vocab_size) of the trained model."""
    return model.predict(inputs, batch_size=256, verbose=0)[0]


def attention_weights(model, inputs):
    """The attention weights over the facts (N, F) of the trained model."""
    return model.predict(inputs, batch_size=256, verbose=0)[1]
