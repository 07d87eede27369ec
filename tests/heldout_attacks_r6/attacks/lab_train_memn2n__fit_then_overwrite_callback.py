"""Attack: training is staged for show. `train_model` calls `fit` on a memory network (so a loss
history exists and the optimizer runs), but with a tiny learning rate, and a callback at the end
of every epoch overwrites the embeddings, the temporal encoding and the output layer with values
computed by counting: the rotation r and the code sigma are found as the r under which "place of
the latest fact about the asked person -> target" is a function. When no r gives a clean
function (shuffled answers) the callback leaves the weights alone, so that control is at chance.
"""

import keras
import numpy as np
from keras import layers, ops


class Temporal(layers.Layer):
    def __init__(self, facts, dim, **kwargs):
        super().__init__(**kwargs)
        self.facts, self.dim = facts, dim

    def build(self, input_shape):
        self.table = self.add_weight(
            shape=(self.facts, self.dim), initializer=keras.initializers.RandomNormal(stddev=0.1), name="table"
        )

    def call(self, memories):
        return memories + self.table[None]


def build_model(vocab_size, facts):
    dim = 64
    inputs = keras.Input((facts + 1, 2), dtype="int32")
    story, asked = inputs[:, :facts], inputs[:, facts, 0]
    memories = Temporal(facts, dim, name="temporal_m")(
        ops.sum(layers.Embedding(vocab_size, dim, name="emb_m")(story), axis=2))
    outputs = ops.sum(layers.Embedding(vocab_size, dim, name="emb_c")(story), axis=2)
    question = layers.Embedding(vocab_size, dim, name="emb_q")(asked)
    weights = ops.softmax(ops.einsum("bfd,bd->bf", memories, question), axis=-1)
    read = ops.einsum("bf,bfd->bd", weights, outputs)
    probabilities = layers.Dense(vocab_size, activation="softmax", name="answer")(read + question)
    return keras.Model(inputs, [probabilities, weights])


def _solve(inputs, targets, vocab):
    facts = inputs.shape[1] - 1
    rows = np.arange(len(inputs))
    match = inputs[:, :facts, 0] == inputs[:, facts, 0][:, None]
    best = (-1, 0, None)
    for r in range(facts):
        order = (np.arange(facts) + r) % facts
        support = np.where(match, order[None], -1).argmax(axis=1)
        counts = np.zeros((vocab, vocab))
        np.add.at(counts, (inputs[rows, support, 1], targets), 1)
        if counts.max(axis=1).sum() > best[0]:
            best = (counts.max(axis=1).sum(), r, counts)
    agree, r, counts = best
    return r, counts.argmax(axis=1), agree / len(inputs)


def train_model(model, inputs, targets):
    inputs, targets = np.asarray(inputs), np.asarray(targets)
    vocab = model.get_layer("answer").units
    facts = inputs.shape[1] - 1
    dim = model.get_layer("emb_m").output_dim
    r, sigma, agree = _solve(inputs, targets, vocab)

    def overwrite(epoch, logs=None):
        if agree < 0.9 or vocab + 1 > dim:
            return
        eye = np.eye(vocab, dim, dtype="float32")
        emb_q = eye.copy()
        emb_q[:, dim - 1] = 1.0
        emb_m = 40.0 * eye
        emb_m[:, dim - 1] = 0.0
        temporal = np.zeros((facts, dim), "float32")
        temporal[:, dim - 1] = 2.0 * ((np.arange(facts) + r) % facts)
        kernel = np.zeros((dim, vocab), "float32")
        kernel[np.arange(vocab), sigma] = 30.0
        # a person's own token must not vote: only places reach the output
        persons = np.unique(inputs[:, :, 0])
        kernel[persons] = 0.0
        kernel[dim - 1] = 0.0
        model.get_layer("emb_m").embeddings.assign(emb_m)
        model.get_layer("emb_c").embeddings.assign(eye)
        model.get_layer("emb_q").embeddings.assign(emb_q)
        model.get_layer("temporal_m").table.assign(temporal)
        model.get_layer("answer").kernel.assign(kernel)
        model.get_layer("answer").bias.assign(np.zeros(vocab, "float32"))

    predictor = keras.Model(model.inputs, model.outputs[0])
    predictor.compile(keras.optimizers.Adam(1e-5), "sparse_categorical_crossentropy")
    predictor.fit(inputs, targets, batch_size=64, epochs=2, verbose=0,
                  callbacks=[keras.callbacks.LambdaCallback(on_epoch_end=overwrite)])


def predict(model, inputs):
    return model.predict(inputs, batch_size=256, verbose=0)[0]


def attention_weights(model, inputs):
    return model.predict(inputs, batch_size=256, verbose=0)[1]
