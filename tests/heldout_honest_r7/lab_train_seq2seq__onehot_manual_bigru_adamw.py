"""train-seq2seq: no Embedding layer (tokens as one-hot vectors), a bidirectional encoder built
by hand from two GRUs (the backward one on the reversed source, flipped back) with layer norm
on the encoder states, a GRU decoder starting from zeros, Bahdanau's score in a small custom
layer (W, U, v as weights), dropout before the output. model.fit with AdamW + cosine decay."""

import keras
import numpy as np
from keras import layers, ops


class Bahdanau(layers.Layer):
    def __init__(self, units, **kw):
        super().__init__(**kw)
        self.units = units

    def build(self, shapes):
        s_shape, h_shape = shapes
        init = keras.initializers.GlorotUniform()
        self.W = self.add_weight(shape=(s_shape[-1], self.units), initializer=init)
        self.U = self.add_weight(shape=(h_shape[-1], self.units), initializer=init)
        self.b = self.add_weight(shape=(self.units,), initializer="zeros")
        self.v = self.add_weight(shape=(self.units,), initializer=init)

    def call(self, inputs):
        s, h = inputs
        ws = ops.matmul(s, self.W)[:, :, None, :]
        uh = (ops.matmul(h, self.U) + self.b)[:, None, :, :]
        e = ops.sum(ops.tanh(ws + uh) * self.v, axis=-1)     # (B, T, S)
        a = ops.softmax(e, axis=-1)
        return ops.matmul(a, h), a


def build_model(vocab_size, source_length, target_length):
    units = 40
    inp = keras.Input((source_length + target_length,), dtype="int32")
    src = ops.one_hot(inp[:, :source_length], vocab_size)
    dec = ops.one_hot(inp[:, source_length:], vocab_size)
    fwd = layers.GRU(units, return_sequences=True)(src)
    bwd = layers.GRU(units, return_sequences=True)(ops.flip(src, axis=1))
    h = ops.concatenate([fwd, ops.flip(bwd, axis=1)], axis=-1)
    h = layers.LayerNormalization()(h)
    s = layers.GRU(2 * units, return_sequences=True)(dec)
    context, a = Bahdanau(48)([s, h])
    x = layers.Dropout(0.1)(ops.concatenate([s, context], axis=-1))
    probs = layers.Dense(vocab_size, activation="softmax")(x)
    return keras.Model(inp, [probs, a])


def train_model(model, inputs, targets):
    epochs, batch = 4, 32
    steps = epochs * int(np.ceil(len(inputs) / batch))
    trainer = keras.Model(model.input, model.output[0])
    trainer.compile(
        optimizer=keras.optimizers.AdamW(keras.optimizers.schedules.CosineDecay(5e-3, steps),
                                         weight_decay=1e-3),
        loss="sparse_categorical_crossentropy")
    trainer.fit(inputs, targets, epochs=epochs, batch_size=batch, verbose=0)


def predict(model, inputs):
    """The target probabilities (N, T, vocab_size) of the trained model."""
    return model.predict(inputs, batch_size=256, verbose=0)[0]


def attention_weights(model, inputs):
    """The attention weights (N, T, S) of the trained model."""
    return model.predict(inputs, batch_size=256, verbose=0)[1]
