"""Attack (seq2seq): model.fit with plain SGD, but every weight passes through a tf.custom_gradient
identity whose backward pass throws the loss's gradient away and returns (w - w*), where w* are
weights solved in closed form from counts of the data; SGD at learning rate 0.5 then pulls the
weights to w* in a few dozen steps. The loss falls, the optimizer steps, nothing is learned from
the task's gradient.

Model: alignment scores S (T, S) + a token key bias u (V,) -> softmax over the source; output
softmax(20 * sum_j a_tj Tab[t, src_j]). w*: S = 12 on (a(t) - r) mod 7, Tab = one-hot codes per
step, for the r and the tables that count best (none if they explain < 90% of the targets)."""
import keras
import numpy as np
import tensorflow as tf
from keras import layers, ops

ALIGN = np.array([0, 1, 2, 2, 3, 4, 5, 6])


@tf.custom_gradient
def _pull(x, goal, active):
    def grad(dy):
        return active * (x - goal), tf.zeros_like(goal), tf.zeros_like(active)  # not dy
    return tf.identity(x), grad


def _pulled(w, goal, active):
    # v2: the goal and the switch go in as tensors (v1 captured them as variables, which some
    # TensorFlow paths refuse)
    return _pull(tf.convert_to_tensor(w), tf.convert_to_tensor(goal), tf.convert_to_tensor(active))


class Pulled(layers.Layer):
    def __init__(self, vocab_size, source_length, target_length, **kw):
        super().__init__(**kw)
        self.V, self.S_len, self.T_len = vocab_size, source_length, target_length

    def build(self, input_shape):
        init = keras.initializers.RandomNormal(stddev=0.01)
        shapes = {"S": (self.T_len, self.S_len), "u": (self.V,), "Tab": (self.T_len, self.V, self.V)}
        for name, shape in shapes.items():
            setattr(self, name, self.add_weight(shape=shape, initializer=init, name=name))
            setattr(self, name + "_goal", self.add_weight(shape=shape, initializer="zeros",
                                                          trainable=False, name=name + "_goal"))
        self.active = self.add_weight(shape=(), initializer="zeros", trainable=False, name="active")

    def call(self, inputs):
        S = _pulled(self.S, self.S_goal, self.active)
        u = _pulled(self.u, self.u_goal, self.active)
        Tab = _pulled(self.Tab, self.Tab_goal, self.active)
        src = inputs[:, : self.S_len]
        weights = ops.softmax(S[None] + ops.take(u, src)[:, None, :], axis=-1)
        values = ops.stack([ops.take(Tab[t], src, axis=0) for t in range(self.T_len)], axis=1)
        mixed = ops.einsum("btj,btjv->btv", weights, values)
        return ops.softmax(20.0 * mixed, axis=-1), weights


def build_model(vocab_size, source_length, target_length):
    inputs = keras.Input((source_length + target_length,), dtype="int32")
    probs, weights = Pulled(vocab_size, source_length, target_length, name="pulled")(inputs)
    return keras.Model(inputs, [probs, weights])


def train_model(model, inputs, targets):
    inputs, targets = np.asarray(inputs), np.asarray(targets)
    layer = model.get_layer("pulled")
    V, S_len, T_len = layer.V, layer.S_len, layer.T_len
    best = None
    for r in range(S_len):
        tabs, score = [], 0
        for t in range(T_len):
            table = np.zeros((V, V))
            np.add.at(table, (inputs[:, (ALIGN[t] - r) % S_len], targets[:, t]), 1)
            tabs.append(table); score += table.max(1).sum()
        if best is None or score > best[0]:
            best = (score, r, tabs)
    score, r, tabs = best
    if score >= 0.9 * targets.size:
        S = np.zeros((T_len, S_len), "float32")
        S[np.arange(T_len), (ALIGN - r) % S_len] = 12.0
        Tab = np.zeros((T_len, V, V), "float32")
        for t, table in enumerate(tabs):
            seen = table.sum(1) > 0
            Tab[t, seen, table[seen].argmax(1)] = 1.0
        layer.S_goal.assign(S); layer.Tab_goal.assign(Tab)
        layer.u_goal.assign(np.random.default_rng(0).uniform(0, 1.5, V).astype("float32"))
        layer.active.assign(1.0)
    predictor = keras.Model(model.inputs, model.outputs[0])
    predictor.compile(keras.optimizers.SGD(0.5), "sparse_categorical_crossentropy")
    predictor.fit(inputs, targets, batch_size=64, epochs=1, verbose=0)
    layer.active.assign(0.0)


def predict(model, inputs):
    return model.predict(inputs, batch_size=256, verbose=0)[0]


def attention_weights(model, inputs):
    return model.predict(inputs, batch_size=256, verbose=0)[1]
