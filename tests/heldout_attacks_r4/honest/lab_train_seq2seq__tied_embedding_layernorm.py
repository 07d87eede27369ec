"""train-seq2seq (honest): one embedding shared by the encoder and the decoder (tied), a
bidirectional GRU encoder followed by LayerNormalization, a GRU decoder over its teacher-forced
inputs, Bahdanau's additive attention with the decoder state as query, output from [state,
context]; RMSprop with gradient clipping instead of Adam, 6 epochs."""

import keras
import numpy as np
from keras import layers, ops


class Additive(layers.Layer):
    def __init__(self, units, **kw):
        super().__init__(**kw)
        self.W = layers.Dense(units, use_bias=False)
        self.U = layers.Dense(units)
        self.v = layers.Dense(1, use_bias=False)

    def call(self, s, h):
        e = self.v(ops.tanh(self.W(s)[:, :, None] + self.U(h)[:, None]))[..., 0]   # (B, T, S)
        a = ops.softmax(e, axis=-1)
        return ops.einsum("bts,bsd->btd", a, h), a


def build_model(vocab_size, source_length, target_length):
    S, T, d = source_length, target_length, 48
    x = keras.Input((S + T,), dtype="int32")
    emb = layers.Embedding(vocab_size, d)
    h = layers.Bidirectional(layers.GRU(d, return_sequences=True))(emb(x[:, :S]))
    h = layers.LayerNormalization()(h)
    s = layers.GRU(2 * d, return_sequences=True)(emb(x[:, S:]))
    ctx, a = Additive(d, name="additive")(s, h)
    z = layers.Dense(2 * d, activation="tanh")(ops.concatenate([s, ctx], axis=-1))
    p = layers.Dense(vocab_size, activation="softmax")(z)
    return keras.Model(x, [p, a])


def train_model(model, inputs, targets):
    opt = keras.optimizers.RMSprop(2e-3, clipnorm=1.0)
    model.compile(optimizer=opt, loss=["sparse_categorical_crossentropy", None])
    model.fit(inputs, [targets, np.zeros(targets.shape + (inputs.shape[1] - targets.shape[1],), "float32")],
              batch_size=32, epochs=6, verbose=0)


def predict(model, inputs):
    return model.predict(inputs, batch_size=256, verbose=0)[0]


def attention_weights(model, inputs):
    return model.predict(inputs, batch_size=256, verbose=0)[1]
