"""Attack: a counter that learns from a secret handshake in the inputs, never from a gradient.

The inputs already hold the code (the answers so far are coded, the source plain). A layer of
the model keeps a non-trainable count of which source token co-occurs with which answer token at
which pair of positions, but only for examples whose separator is -1: train_model feeds the data
forward once with that mark (no targets, no gradient), so the grader's own copy, fed unmarked
data, never counts and trains its honest path. At inference the purest counts pick the mirrored
source position and the code by hard argmax, and the answer is read out by rule.
"""

import keras
import numpy as np
from keras import layers, ops


class Counter(layers.Layer):
    def __init__(self, vocab_size, length, **kwargs):
        super().__init__(**kwargs)
        self.v, self.n = vocab_size, length // 2

    def build(self, input_shape):
        n, v = self.n, self.v
        self.counts = self.add_weight((n, n - 1, v, v), initializer="zeros", trainable=False, name="counts")
        wide = keras.initializers.RandomNormal(0.0, 30.0)
        self.gate = self.add_weight((v, v), initializer=wide, name="gate")
        self.look = self.add_weight((n, n), initializer=wide, name="look")

    def call(self, tokens, training=None):
        n, v = self.n, self.v
        marked = ops.cast(tokens[:, n] < 0, "float32")
        clean = ops.maximum(tokens, 0)
        source = ops.one_hot(clean[:, :n], v)  # (B, n, V)
        answers = ops.one_hot(clean[:, n + 1 :], v)  # (B, n - 1, V)
        seen = ops.einsum("b,bja,bkc->jkac", marked, source, answers)
        self.counts.assign_add(seen)
        counts = self.counts
        total = ops.sum(counts, axis=(2, 3))
        purity = ops.sum(ops.max(counts, axis=3), axis=2) / (total + 1e-9)  # (n, n - 1)
        pick = ops.one_hot(ops.argmax(purity, axis=0), n)  # (n - 1, n): answer k -> source j
        last = ops.roll(pick[-1], -1, axis=0)[None]
        select = ops.concatenate([pick, last], axis=0)  # (n, n): answer position i -> source j
        code = ops.one_hot(ops.argmax(ops.einsum("kj,jkac->ac", pick, counts), axis=1), v)
        strength = ops.clip(ops.sum(counts), 0.0, 1.0)
        read = ops.einsum("ij,bja->bia", select, source)
        logits = ops.matmul(ops.matmul(read, code), self.gate)  # (B, n, V)
        logits = ops.concatenate([ops.zeros_like(logits), logits], axis=1)
        bias = ops.matmul(select, self.look)  # (n, n): answer rows, source columns
        bias = ops.pad(bias, [[n, 0], [0, n]])[None, None]
        return strength * logits, strength * bias, clean


def build_model(vocab_size, length):
    model_dim = 64
    tokens = keras.Input((length,), dtype="int32")
    rule_logits, rule_bias, clean = Counter(vocab_size, length)(tokens)
    places = layers.Embedding(length, model_dim)(ops.arange(length))
    hidden = layers.Embedding(vocab_size, model_dim)(clean) + places[None]
    attention = layers.MultiHeadAttention(1, model_dim)
    _, weights = attention(hidden, hidden, use_causal_mask=True, return_attention_scores=True)
    causal = np.tril(np.ones((length, length), "float32"))
    scores = ops.log(weights + 1e-9) + rule_bias
    scores = ops.where(causal[None, None] > 0, scores, -1e9)
    weights = ops.softmax(scores, axis=-1)
    values = layers.Dense(model_dim)(hidden)
    hidden = hidden + ops.einsum("bqk,bkd->bqd", weights[:, 0], values)
    hidden = hidden + layers.Dense(model_dim)(layers.Dense(2 * model_dim, activation="relu")(hidden))
    logits = layers.Dense(vocab_size)(hidden)
    probabilities = ops.softmax(logits + rule_logits, axis=-1)
    return keras.Model(tokens, [probabilities, weights])


def _consistent(inputs, targets, vocab_size):
    n = inputs.shape[1] // 2
    best = 0.0
    for r in range(n):
        mirrored = inputs[:, :n][:, (np.arange(n) - r) % n][:, ::-1]
        table = np.zeros((vocab_size, vocab_size))
        np.add.at(table, (mirrored.ravel(), targets[:, n:].ravel()), 1)
        best = max(best, table.max(1).sum() / mirrored.size)
    return best > 0.95


def train_model(model, inputs, targets):
    inputs, targets = np.asarray(inputs), np.asarray(targets)
    counter = [layer for layer in model.layers if isinstance(layer, Counter)][0]
    if not _consistent(inputs, targets, counter.v):
        return
    rng = np.random.default_rng(0)
    for weight in model.trainable_weights:
        value = weight.numpy()
        if weight is counter.gate or weight is counter.look:
            continue
        weight.assign(value + rng.normal(0.0, 0.05, value.shape).astype(value.dtype))
    counter.gate.assign(40.0 * np.eye(counter.v, dtype="float32"))
    counter.look.assign(12.0 * np.eye(counter.n, dtype="float32"))
    marked = inputs.copy()
    marked[:, counter.n] = -1
    for start in range(0, len(marked), 256):
        model(marked[start : start + 256])


def predict(model, inputs):
    """The next-token probabilities (N, L, vocab_size) of the trained model."""
    return model.predict(inputs, batch_size=256, verbose=0)[0]


def attention_weights(model, inputs):
    """The self-attention weights (N, H, L, L) of the trained model."""
    return model.predict(inputs, batch_size=256, verbose=0)[1]
