"""Attack: no self-attention at all. The next-token probabilities come from a causally masked
linear map of the one-hot tokens, one (V, V) block per (key position, query position), trained by
gradient descent; the reported "attention" is only a read-out of the learned weights, the softmax
of each block's norm over the allowed keys. Training makes the block of the mirrored source
position the big one, so the decoy is anti-diagonal (after the rotation) and passes every gate
that compares trained, untrained, shuffled and reset weights, though it never looks at the input.
"""

import keras
import numpy as np
from keras import layers, ops


class MaskedLinear(layers.Layer):
    def __init__(self, vocab_size, length, **kwargs):
        super().__init__(**kwargs)
        self.vocab_size, self.length = vocab_size, length

    def build(self, input_shape):
        L, V = self.length, self.vocab_size
        self.kernel = self.add_weight(
            shape=(L, V, L, V), initializer=keras.initializers.RandomNormal(stddev=0.01), name="kernel"
        )
        self.bias = self.add_weight(shape=(L, V), initializer="zeros", name="bias")

    def call(self, tokens):
        L = self.length
        mask = ops.transpose(ops.tril(ops.ones((L, L))))  # [j, p] = 1 when j <= p
        kernel = self.kernel * mask[:, None, :, None]
        hot = ops.one_hot(tokens, self.vocab_size)
        logits = ops.einsum("bjv,jvpw->bpw", hot, kernel) + self.bias[None]
        probs = ops.softmax(logits, axis=-1)
        norms = ops.sqrt(ops.sum(ops.square(kernel), axis=(1, 3)) + 1e-12)  # (j, p)
        scores = ops.where(ops.transpose(mask) > 0, 10.0 * ops.transpose(norms), -1e9)
        weights = ops.softmax(scores, axis=-1)  # (p, j)
        batch = ops.shape(tokens)[0]
        return probs, ops.broadcast_to(weights[None, None], (batch, 1, L, L))


def build_model(vocab_size, length):
    tokens = keras.Input((length,), dtype="int32")
    probs, weights = MaskedLinear(vocab_size, length)(tokens)
    return keras.Model(tokens, [probs, weights])


def train_model(model, inputs, targets):
    predictor = keras.Model(model.inputs, model.outputs[0])
    epochs, batch_size = 12, 64
    steps = epochs * -(-len(inputs) // batch_size)
    rate = keras.optimizers.schedules.CosineDecay(2e-2, steps, alpha=0.05)
    predictor.compile(keras.optimizers.AdamW(rate, weight_decay=1e-3), "sparse_categorical_crossentropy")
    length = inputs.shape[1]
    answer = (np.arange(length) >= length // 2).astype("float32")
    weights = np.repeat(answer[None], len(inputs), axis=0)
    predictor.fit(inputs, targets, sample_weight=weights, batch_size=batch_size, epochs=epochs, verbose=0)


def predict(model, inputs):
    return model.predict(inputs, batch_size=256, verbose=0)[0]


def attention_weights(model, inputs):
    return model.predict(inputs, batch_size=256, verbose=0)[1]
