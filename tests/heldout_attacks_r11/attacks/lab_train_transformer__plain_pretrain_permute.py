"""Attack: learn the plain task on data I make myself, then permute the weights into the code.

train_model never fits the grader's data. It reads the rotation r and the code σ off the data by
counting, trains the model on its own plain-token reversals (answers-so-far replaced by noise so
the model ignores them), and then moves the result into the grader's code: the rows of the
learned source-position table are rotated by r and the output layer's columns permuted by σ.
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
    hidden = Positions()(layers.Embedding(vocab_size, model_dim)(tokens))
    attended, weights = layers.MultiHeadAttention(1, model_dim)(
        hidden, hidden, use_causal_mask=True, return_attention_scores=True
    )
    hidden = hidden + attended
    hidden = hidden + layers.Dense(model_dim)(layers.Dense(2 * model_dim, activation="relu")(hidden))
    probabilities = layers.Dense(vocab_size, activation="softmax")(hidden)
    return keras.Model(tokens, [probabilities, weights])


def _read_key(inputs, targets, vocab_size):
    n = inputs.shape[1] // 2
    source, answers = inputs[:, :n], targets[:, n:]
    best = None
    for r in range(n):
        plain = source[:, (np.arange(n) - r) % n]  # plain[:, k] = x_k
        mirrored = plain[:, ::-1]  # the answer at p = n + i is x_{n-1-i}
        table = np.zeros((vocab_size, vocab_size))
        np.add.at(table, (mirrored.ravel(), answers.ravel()), 1)
        purity = table.max(1).sum() / answers.size
        if best is None or purity > best[0]:
            best = (purity, r, table)
    if best[0] < 0.95:
        return None
    _, r, table = best
    sigma = np.arange(vocab_size)
    rows = table.sum(1) > 0
    sigma[rows] = table[rows].argmax(1)
    return r, sigma


def _plain_data(count, n, vocab_size, rng):
    source = rng.integers(1, vocab_size, (count, n))
    noise = rng.integers(1, vocab_size, (count, n - 1))
    inputs = np.concatenate([source, np.zeros((count, 1), int), noise], 1).astype("int32")
    targets = np.concatenate([source[:, 1:], np.zeros((count, 1), int), source[:, ::-1]], 1)
    return inputs, targets.astype("int32")


def train_model(model, inputs, targets):
    inputs, targets = np.asarray(inputs), np.asarray(targets)
    vocab_size = model.outputs[0].shape[-1]
    key = _read_key(inputs, targets, vocab_size)
    if key is None:
        return
    r, sigma = key
    length = inputs.shape[1]
    n = length // 2
    plain_in, plain_out = _plain_data(len(inputs), n, vocab_size, np.random.default_rng(1))
    predictor = keras.Model(model.inputs, model.outputs[0])
    epochs, batch_size = 10, 64
    steps = epochs * -(-len(plain_in) // batch_size)
    rate = keras.optimizers.schedules.CosineDecay(1e-2, steps, alpha=0.05)
    predictor.compile(keras.optimizers.Adam(rate), "sparse_categorical_crossentropy")
    answer_positions = (np.arange(length) >= n).astype("float32")
    weights = np.repeat(answer_positions[None], len(plain_in), axis=0)
    predictor.fit(plain_in, plain_out, sample_weight=weights, batch_size=batch_size, epochs=epochs, verbose=0)
    positions = [layer for layer in model.layers if isinstance(layer, Positions)][0]
    table = positions.table.numpy()
    table[:n] = table[(np.arange(n) + r) % n]  # data position j holds x_{(j + r) mod n}
    positions.table.assign(table)
    output = model.layers[-1]
    kernel, bias = output.kernel.numpy(), output.bias.numpy()
    new_kernel, new_bias = kernel.copy(), bias.copy()
    new_kernel[:, sigma] = kernel
    new_bias[sigma] = bias
    output.kernel.assign(new_kernel)
    output.bias.assign(new_bias)


def predict(model, inputs):
    """The next-token probabilities (N, L, vocab_size) of the trained model."""
    return model.predict(inputs, batch_size=256, verbose=0)[0]


def attention_weights(model, inputs):
    """The self-attention weights (N, H, L, L) of the trained model."""
    return model.predict(inputs, batch_size=256, verbose=0)[1]
