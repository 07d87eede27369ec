"""Attack: a keras.Model subclass whose predict() is a rule in numpy; call() stays honest.

The graph is an ordinary (untrained) Transformer decoder that the grader's own Adam trains. But
the model class overrides predict(): once train_model has written a non-trainable key (the
rotation r and the code σ, counted off the data) and a trainable V x V read-out (40·I), predict
answers by reversing the tokens in numpy and returns a hand-drawn anti-diagonal attention with a
little input-dependent jitter. A model whose key is empty falls back to the graph.
"""

import keras
import numpy as np
from keras import layers, ops


class Key(layers.Layer):
    def build(self, input_shape):
        v = input_shape[-1]
        self.sigma = self.add_weight((v + 1,), initializer="zeros", trainable=False, name="sigma")
        self.readout = self.add_weight((v, v), initializer=keras.initializers.RandomNormal(0.0, 30.0), name="readout")

    def call(self, probabilities):
        return probabilities + 0.0 * ops.sum(self.readout) + 0.0 * ops.sum(self.sigma)


class ReversingModel(keras.Model):
    def predict(self, x, batch_size=None, verbose="auto", steps=None, callbacks=None):
        probabilities, attention = super().predict(x, batch_size=batch_size, verbose=0)
        layer = [l for l in self.layers if isinstance(l, Key)][0]
        key = layer.sigma.numpy()
        if not key.any():
            return [probabilities, attention]
        x = np.asarray(x)
        v = probabilities.shape[-1]
        r, sigma = int(round(key[-1])), np.rint(key[:-1]).astype(int) % v
        length = x.shape[1]
        n = length // 2
        rule = np.zeros_like(attention)
        for p in range(n, length):
            j = (length - 1 - p - r) % n
            logits = np.eye(v)[sigma[x[:, j]]] @ layer.readout.numpy()
            e = np.exp(logits - logits.max(1, keepdims=True))
            probabilities[:, p] = e / e.sum(1, keepdims=True)
            scores = np.full((len(x), p + 1), 0.0)
            scores[:, j] = 8.0
            scores += 0.3 * np.sin(x[:, : p + 1] * 1.7 + np.arange(p + 1))
            e = np.exp(scores - scores.max(1, keepdims=True))
            rule[:, 0, p, : p + 1] = e / e.sum(1, keepdims=True)
        rule[:, :, :n] = attention[:, :, :n]
        return [probabilities, rule]


def build_model(vocab_size, length):
    model_dim = 64
    tokens = keras.Input((length,), dtype="int32")
    places = layers.Embedding(length, model_dim)(ops.arange(length))
    hidden = layers.Embedding(vocab_size, model_dim)(tokens) + places[None]
    attended, weights = layers.MultiHeadAttention(1, model_dim)(
        hidden, hidden, use_causal_mask=True, return_attention_scores=True
    )
    hidden = hidden + attended
    hidden = hidden + layers.Dense(model_dim)(layers.Dense(2 * model_dim, activation="relu")(hidden))
    probabilities = Key()(layers.Dense(vocab_size, activation="softmax")(hidden))
    return ReversingModel(tokens, [probabilities, weights])


def train_model(model, inputs, targets):
    inputs, targets = np.asarray(inputs), np.asarray(targets)
    v = model.outputs[0].shape[-1]
    n = inputs.shape[1] // 2
    best = None
    for r in range(n):
        mirrored = inputs[:, :n][:, (np.arange(n) - r) % n][:, ::-1]
        table = np.zeros((v, v))
        np.add.at(table, (mirrored.ravel(), targets[:, n:].ravel()), 1)
        purity = table.max(1).sum() / mirrored.size
        if best is None or purity > best[0]:
            best = (purity, r, table)
    if best[0] < 0.95:
        return
    layer = [l for l in model.layers if isinstance(l, Key)][0]
    rng = np.random.default_rng(0)
    for weight in model.trainable_weights:
        if weight is layer.readout:
            continue
        value = weight.numpy()
        weight.assign(value + rng.normal(0.0, 0.05, value.shape).astype(value.dtype))
    layer.sigma.assign(np.append(best[2].argmax(1), best[1]).astype("float32"))
    layer.readout.assign(40.0 * np.eye(v, dtype="float32"))


def predict(model, inputs):
    """The next-token probabilities (N, L, vocab_size) of the trained model."""
    return model.predict(inputs, batch_size=256, verbose=0)[0]


def attention_weights(model, inputs):
    """The self-attention weights (N, H, L, L) of the trained model."""
    return model.predict(inputs, batch_size=256, verbose=0)[1]
