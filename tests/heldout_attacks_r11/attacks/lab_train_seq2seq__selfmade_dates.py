"""Attack: never train on the grader's data; train on dates I make myself in its code.

train_model reads the rotation r and the digit code σ off the data by counting, estimates which
days, months and years occur, and draws a brand-new set of dates from those marginals, written
in the grader's code and rotation. The reference network is then fitted on that synthetic set
only; the grader's examples are used for nothing but reading the key.
"""

import keras
import numpy as np
from keras import layers, ops


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


def _plain_targets(date):
    month = date[:, 2] - 9
    return np.stack([date[:, 0], date[:, 1], month // 10, month % 10,
                     date[:, 3], date[:, 4], date[:, 5], date[:, 6]], 1)


def _read_key(inputs, targets, s):
    source = inputs[:, :s]
    best = None
    for r in range(s):
        date = source[:, (np.arange(s) - r) % s]
        plain = _plain_targets(date)
        if plain.min() < 0 or plain.max() > 9:
            continue
        table = np.zeros((10, 10))
        np.add.at(table, (plain.ravel(), targets.ravel()), 1)
        purity = table.max(1).sum() / targets.size
        if best is None or purity > best[0]:
            best = (purity, r, table, date)
    if best is None or best[0] < 0.95:
        return None
    _, r, table, date = best
    return r, table.argmax(1), date


def train_model(model, inputs, targets):
    inputs, targets = np.asarray(inputs), np.asarray(targets)
    s = 7
    key = _read_key(inputs, targets, s)
    if key is None:
        return
    r, sigma, dates = key
    rng = np.random.default_rng(7)
    count = len(inputs)
    days = dates[rng.integers(0, len(dates), count), :2]
    months = dates[rng.integers(0, len(dates), count), 2:3]
    years = dates[rng.integers(0, len(dates), count), 3:]
    fresh = np.concatenate([days, months, years], 1)
    coded = sigma[_plain_targets(fresh)]
    source = fresh[:, (np.arange(s) + r) % s]  # data position j holds date token (j + r) mod 7
    start = np.full((count, 1), 22)
    made_inputs = np.concatenate([source, start, coded[:, :-1]], 1).astype("int32")
    predictor = keras.Model(model.inputs, model.outputs[0])
    predictor.compile(keras.optimizers.Adam(1e-2), "sparse_categorical_crossentropy")
    predictor.fit(made_inputs, coded.astype("int32"), batch_size=64, epochs=3, verbose=0)


def predict(model, inputs):
    """The target probabilities (N, T, vocab_size) of the trained model."""
    return model.predict(inputs, batch_size=256, verbose=0)[0]


def attention_weights(model, inputs):
    """The attention weights (N, T, S) of the trained model."""
    return model.predict(inputs, batch_size=256, verbose=0)[1]
