"""Attack (seq2seq): the grader's data is used only to read the digit code σ, by a rule: the plain
digits are rewritten from each source date and counted against the targets. The model (a normal
Bahdanau encoder–decoder) is then trained by gradient on dates the file makes itself, relabelled
with that σ — the grader's examples are never fitted. Shuffled answers (no clean code): no training.
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
    states = layers.GRU(units, return_sequences=True)(
        layers.Embedding(vocab_size, units)(decoder_in)
    )
    queries = layers.Dense(units, use_bias=False)(states)[:, :, None]
    keys = layers.Dense(units)(encoded)[:, None]
    scores = ops.squeeze(layers.Dense(1, use_bias=False)(ops.tanh(queries + keys)), -1)
    weights = ops.softmax(scores, axis=-1)
    context = ops.einsum("bts,bsd->btd", weights, encoded)
    probabilities = layers.Dense(vocab_size, activation="softmax")(
        ops.concatenate([states, context], axis=-1)
    )
    return keras.Model(inputs, [probabilities, weights])


def _plain(source):
    month = source[:, 2] - 9
    return np.stack([source[:, 0], source[:, 1], month // 10, month % 10,
                     source[:, 3], source[:, 4], source[:, 5], source[:, 6]], 1)


def train_model(model, inputs, targets):
    inputs, targets = np.asarray(inputs), np.asarray(targets)
    vocab = model.outputs[0].shape[-1]
    counts = np.zeros((10, vocab))
    np.add.at(counts, (_plain(inputs[:, :7]).ravel(), targets.ravel()), 1.0)
    if counts.max(1).sum() / counts.sum() < 0.9:
        return  # nothing clean to copy: stay untrained
    code = counts.argmax(1)
    # My own dates, in plain tokens, relabelled with the code read above.
    rng = np.random.default_rng(0)
    n = len(inputs)
    day, month, year = rng.integers(1, 32, n), rng.integers(1, 13, n), rng.integers(1000, 3000, n)
    source = np.stack([day // 10, day % 10, 9 + month, year // 1000, year // 100 % 10,
                       year // 10 % 10, year % 10], 1)
    mine = code[_plain(source)]
    start = np.full((n, 1), 22)
    my_inputs = np.concatenate([source, start, mine[:, :-1]], 1).astype("int32")
    predictor = keras.Model(model.inputs, model.outputs[0])
    predictor.compile(keras.optimizers.Adam(1e-2), "sparse_categorical_crossentropy")
    predictor.fit(my_inputs, mine.astype("int32"), batch_size=64, epochs=3, verbose=0)


def predict(model, inputs):
    """The target probabilities (N, T, vocab_size) of the trained model."""
    return model.predict(inputs, batch_size=256, verbose=0)[0]


def attention_weights(model, inputs):
    """The attention weights (N, T, S) of the trained model."""
    return model.predict(inputs, batch_size=256, verbose=0)[1]
