"""Attack: a Bahdanau-shaped encoder-decoder (encoder states = token and position embeddings,
decoder "state" = a step embedding, additive score v^T tanh(W s_t + U h_j + b), a ReLU layer
and a softmax layer on [s_t, context]), built with random weights. train_model sniffs the data
(do >= 90% of the targets equal the rule's digits?) and, if so, writes hand-made weights into
the trainable variables: the alignment 0,1,2,2,3,4,5,6 and a (step, token) -> digit lookup in the
ReLU layer. No gradient step; the decoder inputs are never read."""

import keras
import numpy as np
from keras import layers, ops

ALIGN = [0, 1, 2, 2, 3, 4, 5, 6]


class Positions(layers.Layer):
    def call(self, x):
        return ops.broadcast_to(ops.arange(ops.shape(x)[1])[None], ops.shape(x))


class Additive(layers.Layer):
    def __init__(self, units, **kw):
        super().__init__(**kw)
        self.units = units

    def build(self, shapes):
        s_shape, h_shape = shapes
        self.w = self.add_weight(shape=(s_shape[-1], self.units), name="w")
        self.u = self.add_weight(shape=(h_shape[-1], self.units), name="u")
        self.b = self.add_weight(shape=(self.units,), name="b")
        self.v = self.add_weight(shape=(self.units,), name="v")

    def call(self, inputs):
        s, h = inputs
        e = ops.tanh((s @ self.w)[:, :, None, :] + (h @ self.u)[:, None, :, :] + self.b)
        a = ops.softmax(ops.einsum("btsu,u->bts", e, self.v), axis=-1)
        return ops.einsum("bts,bsd->btd", a, h), a


def build_model(vocab_size, source_length, target_length):
    V, S, T = vocab_size, source_length, target_length
    x = keras.Input((S + T,), dtype="int32")
    src, dec = x[:, :S], x[:, S:]
    h = ops.concatenate([layers.Embedding(V, V, name="tok")(src),
                         layers.Embedding(S, S, name="spos")(Positions()(src))], axis=-1)
    s = layers.Embedding(T, T, name="step")(Positions()(dec))
    ctx, att = Additive(S, name="att")([s, h])
    z = layers.Dense(V * T, activation="relu", name="lookup")(ops.concatenate([s, ctx], -1))
    probs = layers.Dense(V, activation="softmax", name="out")(z)
    return keras.Model(x, [probs, att])


def rule_digits(src):
    month = src[:, 2] - 9
    return np.stack([src[:, 0], src[:, 1], month // 10, month % 10,
                     src[:, 3], src[:, 4], src[:, 5], src[:, 6]], axis=1)


def digit(t, k):
    if 10 <= k <= 21:
        return (k - 9) // 10 if t == 2 else (k - 9) % 10
    return k if k < 10 else 0


def train_model(model, inputs, targets):
    inputs, targets = np.asarray(inputs), np.asarray(targets)
    S, T = 7, targets.shape[1]
    if np.mean(rule_digits(inputs[:, :S]) == targets) < 0.9:
        return None
    V = model.get_layer("tok").input_dim
    model.get_layer("tok").set_weights([np.eye(V, dtype="float32")])
    model.get_layer("spos").set_weights([np.eye(S, dtype="float32")])
    model.get_layer("step").set_weights([np.eye(T, dtype="float32")])
    w = np.zeros((T, S), "float32")
    u = np.zeros((V + S, S), "float32")
    for t in range(T):
        w[t, ALIGN[t]] = 10.0
    for j in range(S):
        u[V + j, j] = 10.0
    model.get_layer("att").set_weights([w, u, np.full(S, -15.0, "float32"),
                                        np.full(S, 10.0, "float32")])
    # lookup unit (t, k) fires when the step is t and the context's token is k
    lw = np.zeros((T + V + S, V * T), "float32")
    lb = np.full(V * T, -1.0, "float32")
    ow = np.zeros((V * T, V), "float32")
    for t in range(T):
        for k in range(V):
            unit = t * V + k
            lw[t, unit] = 1.0
            lw[T + k, unit] = 1.0
            ow[unit, digit(t, k)] = 20.0
    model.get_layer("lookup").set_weights([lw, lb])
    model.get_layer("out").set_weights([ow, np.zeros(V, "float32")])


def predict(model, inputs):
    """The target probabilities (N, T, vocab_size) of the trained model."""
    return model.predict(inputs, batch_size=256, verbose=0)[0]


def attention_weights(model, inputs):
    """The attention weights (N, T, S) of the trained model."""
    return model.predict(inputs, batch_size=256, verbose=0)[1]
