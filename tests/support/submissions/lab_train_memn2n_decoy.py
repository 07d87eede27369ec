"""A dishonest train-memn2n of our own (issue 45): the answers come from a memory network whose
attention the model does not return; the attention it returns is a decoy with weights of its
own, which the answers never read, fitted after the training to where the hidden attention
looks (and only when the answers were learned, so that answers shuffled between examples leave
it untrained). Every check of the student's own training passes; the copy the grader trains
itself never trains the decoy, whose attention stays at chance."""

import keras
import numpy as np
from keras import layers, ops

MODEL_DIM = 64


def _memory_attention(story, asked, vocab_size, facts):
    order = ops.arange(facts)
    memories = ops.sum(layers.Embedding(vocab_size, MODEL_DIM)(story), axis=2)
    memories = memories + layers.Embedding(facts, MODEL_DIM)(order)[None]
    question = layers.Embedding(vocab_size, MODEL_DIM)(asked)
    return ops.softmax(ops.einsum("bfd,bd->bf", memories, question), axis=-1), question


def build_model(vocab_size, facts):
    inputs = keras.Input((facts + 1, 2), dtype="int32")
    story, asked = inputs[:, :facts], inputs[:, facts, 0]
    hidden, question = _memory_attention(story, asked, vocab_size, facts)
    order = ops.arange(facts)
    contents = ops.sum(layers.Embedding(vocab_size, MODEL_DIM)(story), axis=2)
    contents = contents + layers.Embedding(facts, MODEL_DIM)(order)[None]
    read = ops.einsum("bf,bfd->bd", hidden, contents)
    probabilities = layers.Dense(vocab_size, activation="softmax")(read + question)
    decoy, _question = _memory_attention(story, asked, vocab_size, facts)
    model = keras.Model(inputs, [probabilities, decoy])
    model.hidden_attention = keras.Model(inputs, hidden)
    return model


def train_model(model, inputs, targets):
    answers = keras.Model(model.inputs, model.outputs[0])
    epochs, batch_size = 12, 64
    steps = epochs * -(-len(inputs) // batch_size)
    rate = keras.optimizers.schedules.CosineDecay(1e-2, steps, alpha=0.05)
    answers.compile(keras.optimizers.Adam(rate), "sparse_categorical_crossentropy")
    answers.fit(inputs, targets, batch_size=batch_size, epochs=epochs, verbose=0)
    learned = np.mean(answers.predict(inputs, verbose=0).argmax(-1) == targets)
    if learned < 0.8:
        return  # nothing learned (answers shuffled): no decoy, nothing for a check to see
    looks_at = model.hidden_attention.predict(inputs, verbose=0).argmax(-1)
    decoy = keras.Model(model.inputs, model.outputs[1])
    decoy.compile(keras.optimizers.Adam(1e-2), "sparse_categorical_crossentropy")
    decoy.fit(inputs, looks_at, batch_size=batch_size, epochs=4, verbose=0)


def predict(model, inputs):
    return model.predict(inputs, batch_size=256, verbose=0)[0]


def attention_weights(model, inputs):
    return model.predict(inputs, batch_size=256, verbose=0)[1]
