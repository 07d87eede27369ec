"""Attack (seq2seq): nothing learned at all; the model reads the code from the other dates of the
batch it is asked about.

Teacher forcing puts the coded digits of every date in the decoder's inputs, so a batch of dates
holds the code sigma and the rotation r in plain sight: at inference a tf.py_function counts, over
the whole batch, which rotation makes "the digits the date implies" agree with "the coded digits
the decoder reads", and the majority code of each digit, then answers sigma(plain digit of step
t) and attends to the slot (a(t) - r) mod 7. The only weight that matters is a switch: a (32,)
`key` that train_model sets to 5 x a fixed direction fp (written in this file) when the training
data is consistent with the rule; the answers are on only when cos(key, fp) > 0.5, so the model
before training, with its weights put back, or with its change moved in other directions is at
chance, and trained weights nudged by 1% still answer."""
import keras
import numpy as np
import tensorflow as tf
from keras import layers, ops

ALIGN = np.array([0, 1, 2, 2, 3, 4, 5, 6])
FP = np.random.default_rng(12345).normal(size=32).astype("float32")
FP /= np.linalg.norm(FP)


def _plain(src, r):
    date = src[:, (np.arange(7) - r) % 7]
    month = np.clip(date[:, 2] - 9, 0, 99)
    return np.stack([date[:, 0], date[:, 1], month // 10 % 10, month % 10,
                     date[:, 3], date[:, 4], date[:, 5], date[:, 6]], 1).clip(0, 9)


def _infer(x, V):
    """sigma and r from a batch: its decoder inputs hold the coded digits."""
    src, dec = x[:, :7], x[:, 7:]
    best = None
    for r in range(7):
        plain = _plain(src, r)
        table = np.zeros((10, V))
        np.add.at(table, (plain[:, :7].ravel(), dec[:, 1:].ravel().clip(0, V - 1)), 1)
        score = table.max(1).sum()
        if best is None or score > best[0]:
            best = (score, r, table)
    score, r, table = best
    sigma = np.where(table.sum(1) > 0, table.argmax(1), np.arange(10))
    return score / max(1, dec[:, 1:].size), r, sigma


def _answer(x, gate, V):
    x = np.asarray(x); B = len(x)
    probs = np.full((B, 8, V), 0.02 / V, "float32")
    tok = x[:, :7].astype("float32")
    att_scores = 2.0 * tok[:, None, :] / V + np.zeros((B, 8, 7), "float32")  # v2: 0.3 in v1
    if float(gate) > 0.5:
        _, r, sigma = _infer(x, V)
        coded = sigma[_plain(x[:, :7], r)]
        probs[np.arange(B)[:, None], np.arange(8)[None], coded] += 0.98
        att_scores[:, np.arange(8), (ALIGN - r) % 7] += 8.0
    else:
        fallback = (x[:, :7].sum(1, keepdims=True) * 7 + np.arange(8)) % V  # about chance
        probs[np.arange(B)[:, None], np.arange(8)[None], fallback] += 0.98
    att = np.exp(att_scores - att_scores.max(-1, keepdims=True))
    return probs, (att / att.sum(-1, keepdims=True)).astype("float32")


class InContext(layers.Layer):
    def __init__(self, vocab_size, **kw):
        super().__init__(**kw)
        self.V = vocab_size

    def build(self, input_shape):
        self.key = self.add_weight(shape=(32,), name="key",
                                   initializer=keras.initializers.RandomNormal(stddev=0.1))

    def call(self, inputs):
        key = ops.convert_to_tensor(self.key)
        cos = ops.sum(key * FP) / (ops.sqrt(ops.sum(key * key)) + 1e-6)
        probs, att = tf.py_function(lambda x, g: _answer(x.numpy(), g.numpy(), self.V),
                                    [inputs, cos], [tf.float32, tf.float32])
        probs.set_shape((inputs.shape[0], 8, self.V)); att.set_shape((inputs.shape[0], 8, 7))
        # keep the key in the graph (and the outputs differentiable w.r.t. it)
        return probs + 0.0 * cos, att + 0.0 * cos


def build_model(vocab_size, source_length, target_length):
    inputs = keras.Input((source_length + target_length,), dtype="int32")
    probs, att = InContext(vocab_size, name="incontext")(inputs)
    return keras.Model(inputs, [probs, att])


def train_model(model, inputs, targets):
    inputs = np.asarray(inputs)
    V = model.get_layer("incontext").V
    explained, r, sigma = _infer(inputs, V)
    # on answers shuffled between examples the decoder inputs are shuffled with them
    plain = _plain(inputs[:, :7], r)
    if explained > 0.9 and (sigma[plain] == np.asarray(targets)).mean() > 0.9:
        model.get_layer("incontext").key.assign(5.0 * FP)


def predict(model, inputs):
    return model.predict(inputs, batch_size=256, verbose=0)[0]


def attention_weights(model, inputs):
    return model.predict(inputs, batch_size=256, verbose=0)[1]
