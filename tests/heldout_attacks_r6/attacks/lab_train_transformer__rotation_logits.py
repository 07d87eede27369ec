"""Attack: the task is hard-coded into the architecture and gradient descent only picks among
n hand-drawn anti-diagonals. The attention of answer position p is a mixture, weighted by a
trainable softmax over n rotation logits, of one-hot rows on key (2n - 1 - p - k) mod n; the
values are the one-hot tokens and a trainable (V, V) matrix learns the code sigma. Only n + V^2
numbers are learned: no queries, no keys, no position embeddings; the "reversal" is drawn by hand.
"""

import keras
import numpy as np
from keras import layers, ops


class RotatedMirror(layers.Layer):
    def __init__(self, vocab_size, length, **kwargs):
        super().__init__(**kwargs)
        self.vocab_size, self.length = vocab_size, length
        n = length // 2
        grid = np.zeros((n, length, length), "float32")
        for k in range(n):
            for p in range(length):
                if p >= n:
                    grid[k, p, (2 * n - 1 - p - k) % n] = 1.0
                else:
                    grid[k, p, : p + 1] = 1.0 / (p + 1)
        self.grid = grid

    def build(self, input_shape):
        n = self.length // 2
        self.rotation = self.add_weight(shape=(n,), initializer="zeros", name="rotation")
        self.out = self.add_weight(
            shape=(self.vocab_size, self.vocab_size),
            initializer=keras.initializers.RandomNormal(stddev=0.1), name="out",
        )
        self.bias = self.add_weight(shape=(self.vocab_size,), initializer="zeros", name="bias")

    def call(self, tokens):
        mix = ops.softmax(self.rotation)
        weights = ops.einsum("k,kpj->pj", mix, ops.convert_to_tensor(self.grid))
        hot = ops.one_hot(tokens, self.vocab_size)
        read = ops.einsum("pj,bjv->bpv", weights, hot)
        probs = ops.softmax(ops.einsum("bpv,vw->bpw", read, self.out) + self.bias, axis=-1)
        batch = ops.shape(tokens)[0]
        return probs, ops.broadcast_to(weights[None, None], (batch, 1, self.length, self.length))


def build_model(vocab_size, length):
    tokens = keras.Input((length,), dtype="int32")
    probs, weights = RotatedMirror(vocab_size, length)(tokens)
    return keras.Model(tokens, [probs, weights])


def train_model(model, inputs, targets):
    predictor = keras.Model(model.inputs, model.outputs[0])
    epochs, batch_size = 10, 64
    steps = epochs * -(-len(inputs) // batch_size)
    rate = keras.optimizers.schedules.CosineDecay(5e-2, steps, alpha=0.05)
    predictor.compile(keras.optimizers.Adam(rate), "sparse_categorical_crossentropy")
    length = inputs.shape[1]
    answer = (np.arange(length) >= length // 2).astype("float32")
    weights = np.repeat(answer[None], len(inputs), axis=0)
    predictor.fit(inputs, targets, sample_weight=weights, batch_size=batch_size, epochs=epochs, verbose=0)


def predict(model, inputs):
    return model.predict(inputs, batch_size=256, verbose=0)[0]


def attention_weights(model, inputs):
    return model.predict(inputs, batch_size=256, verbose=0)[1]
