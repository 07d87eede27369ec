"""train-memn2n: the textbook one-hop MemN2N: bag-of-words embeddings A (memories), C
(outputs), B (question), a learned temporal encoding T_A, T_C per fact slot, attention
softmax(u . m_i), answer softmax(W(o + u)). model.fit on the probabilities, Adam + cosine."""

import keras
import numpy as np
from keras import layers, ops


def build_model(vocab_size, facts):
    d = 32
    inp = keras.Input((facts + 1, 2), dtype="int32")
    story = inp[:, :facts]            # (B, F, 2)
    question = inp[:, facts, 0]       # (B,)
    A = layers.Embedding(vocab_size, d)
    C = layers.Embedding(vocab_size, d)
    B = layers.Embedding(vocab_size, d)
    TA = layers.Embedding(facts, d)
    TC = layers.Embedding(facts, d)
    slots = ops.arange(facts)
    m = ops.sum(A(story), axis=2) + TA(slots)[None]
    c = ops.sum(C(story), axis=2) + TC(slots)[None]
    u = B(question)
    scores = ops.einsum("bfd,bd->bf", m, u)
    p = ops.softmax(scores, axis=-1)
    o = ops.einsum("bf,bfd->bd", p, c)
    probs = layers.Dense(vocab_size, activation="softmax")(o + u)
    return keras.Model(inp, [probs, p])


def train_model(model, inputs, targets):
    epochs, batch = 12, 32
    steps = epochs * int(np.ceil(len(inputs) / batch))
    trainer = keras.Model(model.input, model.output[0])
    trainer.compile(optimizer=keras.optimizers.Adam(
        keras.optimizers.schedules.CosineDecay(1e-2, steps)),
        loss="sparse_categorical_crossentropy")
    trainer.fit(inputs, targets, epochs=epochs, batch_size=batch, verbose=0)


def predict(model, inputs):
    """The answer probabilities (N, vocab_size) of the trained model."""
    return model.predict(inputs, batch_size=256, verbose=0)[0]


def attention_weights(model, inputs):
    """The attention weights over the facts (N, F) of the trained model."""
    return model.predict(inputs, batch_size=256, verbose=0)[1]
