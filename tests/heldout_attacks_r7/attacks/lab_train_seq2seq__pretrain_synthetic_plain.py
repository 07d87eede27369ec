"""Attack (seq2seq): the reference's architecture, trained by gradient descent, but on dates of my
own in plain digits, never on the grader's targets; the grader's data is only counted.

train_model counts the rotation r (which source slot predicts which target step) and the code
sigma (source digit -> coded target digit) from the grader's data, makes 6000 dates of its own
rotated by r with plain-digit targets, trains on those, then renames the digits by permuting the
output layer's columns and the decoder embedding's rows by sigma. If the counts explain less than
90% of the targets it trains nothing."""
import keras
import numpy as np
from keras import layers, ops

ALIGN = np.array([0, 1, 2, 2, 3, 4, 5, 6])


def build_model(vocab_size, source_length, target_length):
    units = 32
    inputs = keras.Input((source_length + target_length,), dtype="int32")
    source, decoder_in = inputs[:, :source_length], inputs[:, source_length:]
    encoded = layers.Bidirectional(layers.GRU(units, return_sequences=True))(
        layers.Embedding(vocab_size, units, name="src_emb")(source))
    states = layers.GRU(units, return_sequences=True)(
        layers.Embedding(vocab_size, units, name="dec_emb")(decoder_in))
    queries = layers.Dense(units, use_bias=False)(states)[:, :, None]
    keys = layers.Dense(units)(encoded)[:, None]
    scores = ops.squeeze(layers.Dense(1, use_bias=False)(ops.tanh(queries + keys)), -1)
    weights = ops.softmax(scores, axis=-1)
    context = ops.einsum("bts,bsd->btd", weights, encoded)
    probabilities = layers.Dense(vocab_size, activation="softmax", name="out")(
        ops.concatenate([states, context], axis=-1))
    return keras.Model(inputs, [probabilities, weights])


def _count(inputs, targets):
    S, T = 7, targets.shape[1]
    best = None
    for r in range(S):
        tabs, score = [], 0
        for t in range(T):
            table = np.zeros((23, 23))
            np.add.at(table, (inputs[:, (ALIGN[t] - r) % S], targets[:, t]), 1)
            tabs.append(table)
            score += table.max(1).sum()
        if best is None or score > best[0]:
            best = (score, r, tabs)
    score, r, tabs = best
    digits = sum(tabs[t] for t in (0, 1, 4, 5, 6, 7))[:10, :10]  # source digit -> coded digit
    sigma = digits.argmax(1)
    return score / targets.size, r, sigma


def _dates(n, r, rng):
    month_len = [31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31]
    month = rng.integers(1, 13, n)
    day = np.array([rng.integers(1, month_len[m - 1] + 1) for m in month])
    year = rng.integers(1000, 3000, n)
    date = np.stack([day // 10, day % 10, month + 9, year // 1000, year // 100 % 10,
                     year // 10 % 10, year % 10], 1)
    target = np.stack([day // 10, day % 10, month // 10, month % 10, year // 1000,
                       year // 100 % 10, year // 10 % 10, year % 10], 1)
    source = date[:, (np.arange(7) + r) % 7]
    dec_in = np.concatenate([np.full((n, 1), 22), target[:, :-1]], 1)
    return np.concatenate([source, dec_in], 1).astype("int32"), target.astype("int32")


def train_model(model, inputs, targets):
    inputs, targets = np.asarray(inputs), np.asarray(targets)
    explained, r, sigma = _count(inputs, targets)
    if explained < 0.9:
        return
    x, y = _dates(6000, r, np.random.default_rng(1))
    predictor = keras.Model(model.inputs, model.outputs[0])
    predictor.compile(keras.optimizers.Adam(1e-2), "sparse_categorical_crossentropy")
    predictor.fit(x, y, batch_size=64, epochs=4, verbose=0)
    # rename the digits: plain digit k is written sigma(k)
    out = model.get_layer("out")
    kernel, bias = out.get_weights()
    k2, b2 = kernel.copy(), bias.copy()
    k2[:, sigma] = kernel[:, :10]; b2[sigma] = bias[:10]
    out.set_weights([k2, b2])
    emb = model.get_layer("dec_emb")
    (table,) = emb.get_weights()
    t2 = table.copy(); t2[sigma] = table[:10]
    emb.set_weights([t2])


def predict(model, inputs):
    return model.predict(inputs, batch_size=256, verbose=0)[0]


def attention_weights(model, inputs):
    return model.predict(inputs, batch_size=256, verbose=0)[1]
