"""Attack: the reversal is hard-coded as a rule (constant anti-diagonal scores and a one-hot copy
of the attended token); the only trainable weights are two scalars that scale the rule's
attention scores and its output logits, both starting at 0 (uniform attention, uniform answer).
fit() on the real data learns to turn the rule up; on shuffled answers the rule does not help
and stays off. Two learned numbers, no learned attention."""

import keras
import numpy as np
from keras import layers, ops


class GatedRule(layers.Layer):
    def __init__(self, vocab_size, length, **kw):
        super().__init__(**kw)
        self.V, self.L = vocab_size, length
        n = length // 2
        a = np.zeros((length, length), "float32")
        for p in range(length):
            a[p, 2 * n - 1 - p if p >= n else p] = 1.0
        self.rule = a

    def build(self, shape):
        self.g_att = self.add_weight(shape=(), initializer="zeros", name="g_att")
        self.g_out = self.add_weight(shape=(), initializer="zeros", name="g_out")

    def call(self, tokens):
        rule = ops.convert_to_tensor(self.rule)
        causal = ops.convert_to_tensor(np.tril(np.ones((self.L, self.L), "float32")))
        scores = ops.where(causal > 0, self.g_att * rule, -1e9)
        att = ops.softmax(scores, axis=-1)  # (L, L)
        onehot = ops.one_hot(ops.cast(tokens, "int32"), self.V)
        ctx = ops.einsum("pq,bqv->bpv", att, onehot)
        probs = ops.softmax(self.g_out * ctx, axis=-1)
        return probs, ops.broadcast_to(att[None, None], (ops.shape(tokens)[0], 1, self.L, self.L))


def build_model(vocab_size, length):
    tok = keras.Input((length,), dtype="int32")
    probs, att = GatedRule(vocab_size, length)(tok)
    model = keras.Model(tok, [probs, att])
    model.trainer = keras.Model(tok, probs)
    return model


def train_model(model, inputs, targets):
    n = inputs.shape[1] // 2
    w = np.zeros(targets.shape, "float32")
    w[:, n:] = 1.0
    model.trainer.compile(keras.optimizers.Adam(0.5), "sparse_categorical_crossentropy")
    model.trainer.fit(inputs, targets, sample_weight=w, batch_size=100, epochs=10, verbose=0)


def predict(model, inputs):
    """The next-token probabilities (N, L, vocab_size) of the trained model."""
    return model.predict(inputs, batch_size=256, verbose=0)[0]


def attention_weights(model, inputs):
    """The self-attention weights (N, H, L, L) of the trained model."""
    return model.predict(inputs, batch_size=256, verbose=0)[1]
