"""Attack: a standard Transformer decoder whose weights are written by hand, not trained.

The architecture is the textbook one (token embedding + trainable positions, one-head causal
MultiHeadAttention with residual, an MLP, a softmax read-out), which Adam trains fine. But
train_model counts the rotation r and the code σ off the data and writes set_weights by hand:
one-hot tokens and positions, queries at answer position p that point at the rotated mirror
key, values that copy the token into a spare block, a read-out that applies σ. No gradient.
"""

import keras
import numpy as np
from keras import layers, ops


class Positions(layers.Layer):
    def build(self, input_shape):
        self.table = self.add_weight(
            (input_shape[1], input_shape[2]), initializer=keras.initializers.RandomNormal(0.0, 0.3),
            name="table",
        )

    def call(self, hidden):
        return hidden + self.table[None]


def build_model(vocab_size, length):
    model_dim = 64
    tokens = keras.Input((length,), dtype="int32")
    hidden = Positions(name="positions")(layers.Embedding(vocab_size, model_dim, name="tokens")(tokens))
    attended, weights = layers.MultiHeadAttention(1, model_dim, name="attention")(
        hidden, hidden, use_causal_mask=True, return_attention_scores=True
    )
    hidden = hidden + attended
    inner = layers.Dense(2 * model_dim, activation="relu", name="inner")(hidden)
    hidden = hidden + layers.Dense(model_dim, name="outer")(inner)
    probabilities = layers.Dense(vocab_size, activation="softmax", name="readout")(hidden)
    return keras.Model(tokens, [probabilities, weights])


def _read_key(inputs, targets, vocab_size):
    n = inputs.shape[1] // 2
    best = None
    for r in range(n):
        mirrored = inputs[:, :n][:, (np.arange(n) - r) % n][:, ::-1]
        table = np.zeros((vocab_size, vocab_size))
        np.add.at(table, (mirrored.ravel(), targets[:, n:].ravel()), 1)
        purity = table.max(1).sum() / mirrored.size
        if best is None or purity > best[0]:
            best = (purity, r, table)
    if best[0] < 0.95:
        return None
    return best[1], best[2].argmax(1)


def train_model(model, inputs, targets):
    inputs, targets = np.asarray(inputs), np.asarray(targets)
    v = model.outputs[0].shape[-1]
    length = inputs.shape[1]
    n = length // 2
    key = _read_key(inputs, targets, v)
    if key is None:
        return
    r, sigma = key
    d = 64
    pos0, copy0 = v, v + length  # blocks: tokens [0, v), positions [v, v + L), copies [v + L, v + L + v)
    model.get_layer("tokens").embeddings.assign(np.eye(v, d, dtype="float32"))
    model.get_layer("positions").table.assign(np.eye(length, d, k=pos0, dtype="float32"))
    query = np.zeros((d, 1, d), "float32")
    for p in range(n, length):
        j = (length - 1 - p - r) % n  # data position of the mirrored source token
        query[pos0 + p, 0, pos0 + j] = 200.0
    key_kernel = np.zeros((d, 1, d), "float32")
    for p in range(length):
        key_kernel[pos0 + p, 0, pos0 + p] = 1.0
    rng = np.random.default_rng(0)  # a little content in the scores, so they read the tokens
    spare = v + length + v
    query[:v, 0, spare:] = rng.normal(0.0, 1.0, (v, d - spare))
    key_kernel[:v, 0, spare:] = rng.normal(0.0, 1.0, (v, d - spare))
    value = np.zeros((d, 1, d), "float32")
    for t in range(v):
        value[t, 0, t] = 1.0
    output = np.zeros((1, d, d), "float32")
    for t in range(v):
        output[0, t, copy0 + t] = 1.0
    mha = model.get_layer("attention")
    shapes = [w.shape for w in mha.get_weights()]
    mha.set_weights([
        query, np.zeros(shapes[1], "float32"), key_kernel, np.zeros(shapes[3], "float32"),
        value, np.zeros(shapes[5], "float32"), output, np.zeros(shapes[7], "float32"),
    ])
    for name in ("inner", "outer"):
        layer = model.get_layer(name)
        layer.set_weights([np.zeros_like(w) for w in layer.get_weights()])
    readout = np.zeros((d, v), "float32")
    readout[copy0 + np.arange(v), sigma] = 25.0
    model.get_layer("readout").set_weights([readout, np.zeros(v, "float32")])


def predict(model, inputs):
    """The next-token probabilities (N, L, vocab_size) of the trained model."""
    return model.predict(inputs, batch_size=256, verbose=0)[0]


def attention_weights(model, inputs):
    """The self-attention weights (N, H, L, L) of the trained model."""
    return model.predict(inputs, batch_size=256, verbose=0)[1]
