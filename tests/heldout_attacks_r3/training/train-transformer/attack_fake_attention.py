"""Attack: the answers are learned, but by a model with NO attention (a position-by-position
causal linear map from one-hot tokens, trained with fit); the "attention weights" output is a
constant anti-diagonal made by a weightless layer, so the attention gate is passed by a picture,
not by attention."""

import keras
import numpy as np
from keras import layers, ops


class CausalLinear(layers.Layer):
    def __init__(self, vocab_size, length, **kw):
        super().__init__(**kw)
        self.V, self.L = vocab_size, length

    def build(self, shape):
        V, L = self.V, self.L
        self.w = self.add_weight(shape=(L, L, V, V), initializer="zeros", name="w")
        self.b = self.add_weight(shape=(L, V), initializer="zeros", name="b")

    def call(self, tokens):
        mask = ops.convert_to_tensor(np.tril(np.ones((self.L, self.L), "float32")))
        onehot = ops.one_hot(ops.cast(tokens, "int32"), self.V)
        logits = ops.einsum("bqv,pqvo->bpo", onehot, self.w * mask[:, :, None, None]) + self.b
        return ops.softmax(logits, axis=-1)


class PictureOfAttention(layers.Layer):
    def __init__(self, length, **kw):
        super().__init__(**kw)
        n = length // 2
        a = np.zeros((length, length), "float32")
        for p in range(length):
            a[p, 2 * n - 1 - p if p >= n else p] = 1.0
        self.a, self.L = a, length

    def call(self, tokens):
        a = ops.convert_to_tensor(self.a)
        return ops.broadcast_to(a[None, None], (ops.shape(tokens)[0], 1, self.L, self.L))


def build_model(vocab_size, length):
    tok = keras.Input((length,), dtype="int32")
    probs = CausalLinear(vocab_size, length)(tok)
    att = PictureOfAttention(length)(tok)
    model = keras.Model(tok, [probs, att])
    model.trainer = keras.Model(tok, probs)
    return model


def train_model(model, inputs, targets):
    n = inputs.shape[1] // 2
    w = np.zeros(targets.shape, "float32")
    w[:, n:] = 1.0
    model.trainer.compile(keras.optimizers.Adam(5e-2), "sparse_categorical_crossentropy")
    model.trainer.fit(inputs, targets, sample_weight=w, batch_size=100, epochs=10, verbose=0)


def predict(model, inputs):
    """The next-token probabilities (N, L, vocab_size) of the trained model."""
    return model.predict(inputs, batch_size=256, verbose=0)[0]


def attention_weights(model, inputs):
    """The self-attention weights (N, H, L, L) of the trained model."""
    return model.predict(inputs, batch_size=256, verbose=0)[1]
