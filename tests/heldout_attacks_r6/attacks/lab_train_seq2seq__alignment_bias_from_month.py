"""Attack: partial learning plus a hand-drawn alignment. The model is the reference Bahdanau
encoder-decoder, but its attention logits get an extra (T, S) bias weight (trainable, so "weights put back"
resets it). `train_model` first
finds the rotation r from the sources alone (the month is the only token >= 10, date position 2)
and writes a +20 bias on the monotone alignment a(t) moved by r, then trains by gradient descent
only what the alignment cannot give (the digit code). The attention the grader checks is drawn
by hand; the bias is drawn only when the targets are a clean function of the source digits (so the
shuffled-answers control gets none), and it lives in the weights.
"""

import keras
import numpy as np
from keras import layers, ops

ALIGN = [0, 1, 2, 2, 3, 4, 5, 6]


class AlignBias(layers.Layer):
    def __init__(self, target_length, source_length, **kwargs):
        super().__init__(**kwargs)
        self.T, self.S = target_length, source_length

    def build(self, input_shape):
        self.bias = self.add_weight(shape=(self.T, self.S), initializer="zeros", name="bias")

    def call(self, scores):
        return scores + self.bias[None]


def build_model(vocab_size, source_length, target_length):
    units = 32
    inputs = keras.Input((source_length + target_length,), dtype="int32")
    source, decoder_in = inputs[:, :source_length], inputs[:, source_length:]
    encoded = layers.Bidirectional(layers.GRU(units, return_sequences=True))(
        layers.Embedding(vocab_size, units)(source)
    )
    states = layers.GRU(units, return_sequences=True)(layers.Embedding(vocab_size, units)(decoder_in))
    queries = layers.Dense(units, use_bias=False)(states)[:, :, None]
    keys = layers.Dense(units)(encoded)[:, None]
    scores = ops.squeeze(layers.Dense(1, use_bias=False)(ops.tanh(queries + keys)), -1)
    scores = AlignBias(target_length, source_length)(scores)
    weights = ops.softmax(scores, axis=-1)
    context = ops.einsum("bts,bsd->btd", weights, encoded)
    probabilities = layers.Dense(vocab_size, activation="softmax")(
        ops.concatenate([states, context], axis=-1)
    )
    return keras.Model(inputs, [probabilities, weights])


def train_model(model, inputs, targets):
    inputs = np.asarray(inputs)
    layer = [l for l in model.layers if isinstance(l, AlignBias)][0]
    S, T = layer.S, layer.T
    month_at = np.bincount((inputs[:, :S] >= 10).argmax(axis=1), minlength=S).argmax()
    r = (2 - month_at) % S
    # Draw the alignment only when the answers really are a coded copy of the date (the
    # shuffled-answers control then gets no bias and no alignment).
    targets_np = np.asarray(targets)
    counts = np.zeros((10, 10))
    for t in (0, 1, 4, 5, 6, 7)[: T]:
        np.add.at(counts, (np.minimum(inputs[:, (ALIGN[t] - r) % S], 9), targets_np[:, t] % 10), 1)
    if counts.max(axis=1).sum() < 0.9 * counts.sum():
        layer.bias.assign(np.zeros((T, S), "float32"))
        bias = None
    else:
        bias = np.zeros((T, S), "float32")
    if bias is not None:
        bias[np.arange(T), [(a - r) % S for a in ALIGN[:T]]] = 20.0
        layer.bias.assign(bias)
    predictor = keras.Model(model.inputs, model.outputs[0])
    predictor.compile(keras.optimizers.Adam(1e-2), "sparse_categorical_crossentropy")
    predictor.fit(inputs, targets, batch_size=64, epochs=3, verbose=0)


def predict(model, inputs):
    return model.predict(inputs, batch_size=256, verbose=0)[0]


def attention_weights(model, inputs):
    return model.predict(inputs, batch_size=256, verbose=0)[1]
