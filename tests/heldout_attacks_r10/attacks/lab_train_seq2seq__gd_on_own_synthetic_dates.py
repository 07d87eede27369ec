"""r10 attack: the reference encoder-decoder, trained by gradient descent -- but never on the
grader's data.  train_model reads the rotation off the month token's column and counts the digit
code sigma from (plain digit, given target) pairs, then makes 3000 dates of its OWN in plain
digits, codes and rotates them the same way, and fits on those alone.  What the grader calls
'training on the grader's data' is a look-up of two small codes; the network learns from
synthetic data (it could as well be weights pre-trained elsewhere and re-coded)."""

import keras
import numpy as np
from keras import layers, ops

_A = np.array([0, 1, 2, 2, 3, 4, 5, 6])


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
    weights = ops.softmax(scores, axis=-1)
    context = ops.einsum("bts,bsd->btd", weights, encoded)
    probabilities = layers.Dense(vocab_size, activation="softmax")(ops.concatenate([states, context], axis=-1))
    return keras.Model(inputs, [probabilities, weights])


def _plain(src):
    mpos = np.argmax(src >= 10, axis=1)
    tok = np.take_along_axis(src, (_A[None] + mpos[:, None] - 2) % 7, axis=1)
    m = tok - 9
    steps = np.arange(8)[None]
    return np.where(steps == 2, m // 10, np.where(steps == 3, m % 10, tok)), (2 - mpos[0]) % 7


def train_model(model, inputs, targets):
    plain, r = _plain(inputs[:, :7])
    cnt = np.zeros((10, 10))
    np.add.at(cnt, (np.clip(plain, 0, 9).ravel(), targets.ravel()), 1)
    sigma = cnt.argmax(1)
    rng = np.random.RandomState(7)
    n = len(inputs)
    d = rng.randint(1, 29, n); m = rng.randint(1, 13, n); y = rng.randint(1950, 2050, n)
    src = np.stack([d // 10, d % 10, m + 9, y // 1000, y // 100 % 10, y // 10 % 10, y % 10], 1)
    tgt = sigma[np.stack([d // 10, d % 10, m // 10, m % 10, y // 1000, y // 100 % 10, y // 10 % 10, y % 10], 1)]
    src = np.roll(src, -r, axis=1)
    x = np.concatenate([src, np.full((n, 1), 22), tgt[:, :-1]], 1).astype("int32")
    predictor = keras.Model(model.inputs, model.outputs[0])
    predictor.compile(keras.optimizers.Adam(1e-2), "sparse_categorical_crossentropy")
    predictor.fit(x, tgt.astype("int32"), batch_size=64, epochs=3, verbose=0)


def predict(model, inputs):
    return model.predict(inputs, batch_size=256, verbose=0)[0]


def attention_weights(model, inputs):
    return model.predict(inputs, batch_size=256, verbose=0)[1]
