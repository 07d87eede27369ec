"""HONEST (unusual embeddings): Bahdanau's encoder-decoder (BiGRU encoder, GRU decoder over the
teacher-forced inputs, additive score v^T tanh(W s_t + U h_j), prediction from s_t and the
context) with FROZEN one-hot embeddings (a non-trainable identity table) for both the source
and the decoder's inputs; model.fit with Adam.
"""

import keras
import numpy as np
from keras import layers, ops


def build_model(vocab_size, source_length, target_length):
    x = keras.Input((source_length + target_length,), dtype="int32")
    onehot = layers.Embedding(vocab_size, vocab_size, trainable=False,
                              embeddings_initializer=keras.initializers.Identity())
    h = layers.Bidirectional(layers.GRU(32, return_sequences=True))(onehot(x[:, :source_length]))
    s = layers.GRU(64, return_sequences=True)(onehot(x[:, source_length:]))
    e = layers.Dense(1, use_bias=False)(
        ops.tanh(layers.Dense(32)(s)[:, :, None, :] + layers.Dense(32, use_bias=False)(h)[:, None, :, :]))
    att = ops.softmax(e[..., 0], axis=-1)
    ctx = ops.einsum("bts,bsd->btd", att, h)
    z = layers.Dense(64, activation="tanh")(ops.concatenate([s, ctx], axis=-1))
    probs = layers.Dense(vocab_size, activation="softmax")(z)
    return keras.Model(x, [probs, att])


def train_model(model, inputs, targets):
    trainer = keras.Model(model.input, model.outputs[0])
    trainer.compile(optimizer=keras.optimizers.Adam(1e-2), loss="sparse_categorical_crossentropy")
    trainer.fit(inputs, targets, batch_size=64, epochs=15, verbose=0)


def predict(model, inputs):
    return model.predict(inputs, batch_size=256, verbose=0)[0]


def attention_weights(model, inputs):
    return model.predict(inputs, batch_size=256, verbose=0)[1]
