"""train-memn2n: three hops with layer-wise tying (one A and one C shared by every hop, and a
linear map H between hops: u_{k+1} = H u_k + o_k), sentence embedding with a role vector per
word slot (who / where, like MemN2N's position encoding), temporal encoding from fixed
sinusoids of the slot index through a learned Dense, dropout on the memories. Trained with
model.fit, Nadam, ReduceLROnPlateau on the training loss."""

import keras
import numpy as np
from keras import layers, ops


def sine_table(n, d):
    pos = np.arange(n)[:, None]
    i = np.arange(d)[None, :]
    ang = pos / np.power(30.0, (2 * (i // 2)) / d)
    return np.where(i % 2 == 0, np.sin(ang), np.cos(ang)).astype("float32")


def build_model(vocab_size, facts):
    d, hops = 32, 3
    inp = keras.Input((facts + 1, 2), dtype="int32")
    story = inp[:, :facts]
    question = inp[:, facts, 0]
    A = layers.Embedding(vocab_size, d)
    C = layers.Embedding(vocab_size, d)
    B = layers.Embedding(vocab_size, d)
    role = ops.convert_to_tensor(np.array([[1.0], [0.5]], dtype="float32"))  # (2, 1)
    role_a = layers.Dense(d, use_bias=False)
    sine = ops.convert_to_tensor(sine_table(facts, 16))
    time_a = layers.Dense(d)(sine)      # learned projection of the fixed sinusoids, (F, d)
    time_c = layers.Dense(d)(sine)
    m = ops.sum(A(story) * (1.0 + role_a(role))[None, None], axis=2) + time_a[None]
    c = ops.sum(C(story), axis=2) + time_c[None]
    m = layers.Dropout(0.1)(m)
    H = layers.Dense(d, use_bias=False)
    u = B(question)
    att = []
    for _ in range(hops):
        p = ops.softmax(ops.einsum("bfd,bd->bf", m, u), axis=-1)
        o = ops.einsum("bf,bfd->bd", p, c)
        u = H(u) + o
        att.append(p)
    probs = layers.Dense(vocab_size, activation="softmax")(u)
    return keras.Model(inp, [probs, ops.stack(att, axis=1)])


def train_model(model, inputs, targets):
    trainer = keras.Model(model.input, model.output[0])
    trainer.compile(optimizer=keras.optimizers.Nadam(5e-3),
                    loss="sparse_categorical_crossentropy")
    trainer.fit(inputs, targets, epochs=15, batch_size=32, verbose=0,
                callbacks=[keras.callbacks.ReduceLROnPlateau(monitor="loss", factor=0.5,
                                                             patience=1, min_lr=1e-4)])


def predict(model, inputs):
    """The answer probabilities (N, vocab_size) of the trained model."""
    return model.predict(inputs, batch_size=256, verbose=0)[0]


def attention_weights(model, inputs):
    """The attention weights over the facts (N, hops, F) of the trained model."""
    return model.predict(inputs, batch_size=256, verbose=0)[1]
