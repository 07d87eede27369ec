"""Attack (transformer): a real Keras MultiHeadAttention decoder, "trained" with model.fit, but the
optimizer ignores the gradients it is given and assigns hand-computed weights.

The residual stream is [one-hot token | one-hot position | answer slot]. train_model counts the
rotation r and the code sigma from the training data, then builds every kernel by hand: the query
of position p points at the key of the rotated mirror position (score 12), the keys also get a
small token part (so the attention varies with the input), the values carry sigma(token) into the
answer slot, the last Dense reads the answer slot. A custom optimizer (`Teleport`) whose
update_step writes those weights is passed to compile(); fit runs one epoch as usual. When the
counts explain less than 90% of the targets (answers shuffled), it teleports nowhere."""
import keras
import numpy as np
from keras import layers, ops


class Teleport(keras.optimizers.Optimizer):
    def __init__(self, targets, **kw):
        super().__init__(learning_rate=1.0, **kw)
        self._targets = targets  # {variable path: array}

    def build(self, var_list):
        super().build(var_list)
        self._by_index = [self._targets.get(v.path) for v in var_list]

    def update_step(self, gradient, variable, learning_rate):
        t = self._by_index[self._get_variable_index(variable)]
        if t is not None:
            self.assign(variable, ops.convert_to_tensor(t, variable.dtype))


def build_model(vocab_size, length):
    V, L = vocab_size, length
    d = V + L + V
    tokens = keras.Input((L,), dtype="int32")
    where = tokens * 0 + ops.arange(L)[None]  # positions as a tensor, so the table is a weight
    hidden = layers.Embedding(V, d, name="tok_emb")(tokens) + layers.Embedding(L, d, name="pos_emb")(where)
    attended, weights = layers.MultiHeadAttention(1, L, value_dim=V, name="mha")(
        hidden, hidden, use_causal_mask=True, return_attention_scores=True)
    hidden = hidden + attended
    probabilities = layers.Dense(V, activation="softmax", name="readout")(hidden)
    return keras.Model(tokens, [probabilities, weights])


def _count(inputs, targets, V):
    L = inputs.shape[1]
    n = L // 2
    p = np.arange(n, L)
    best = None
    for r in range(n):
        j = (2 * n - 1 - p - r) % n
        table = np.zeros((V, V))
        np.add.at(table, (inputs[:, j].ravel(), targets[:, p].ravel()), 1)
        if best is None or table.max(1).sum() > best[0]:
            best = (table.max(1).sum(), r, table)
    score, r, table = best
    return score / targets[:, p].size, r, table


def _hand_weights(model, r, table):
    V = model.get_layer("tok_emb").input_dim
    L = model.inputs[0].shape[1]
    n, d = L // 2, 2 * V + L
    sigma = np.where(table.sum(1) > 0, table.argmax(1), 0)
    tok = np.zeros((V, d), "float32"); tok[np.arange(V), np.arange(V)] = 1.0
    pos = np.zeros((L, d), "float32"); pos[np.arange(L), V + np.arange(L)] = 1.0
    wq = np.zeros((d, 1, L), "float32"); wk = np.zeros((d, 1, L), "float32")
    scale = 12.0 * np.sqrt(L)  # MHA divides the scores by sqrt(key_dim)
    for p in range(n, L):
        wq[V + p, 0, p] = scale  # query of position p: direction p ...
        wk[V + (2 * n - 1 - p - r) % n, 0, p] = 1.0  # ... matched by the key of its mirror
    rng = np.random.default_rng(0)
    wk[:V, 0, :] = rng.uniform(0, 0.3, (V, L))  # a token part: weights depend on the input
    wv = np.zeros((d, 1, V), "float32"); wv[np.arange(V), 0, sigma] = 1.0
    wo = np.zeros((1, V, d), "float32"); wo[0, np.arange(V), V + L + np.arange(V)] = 1.0
    ro = np.zeros((d, V), "float32"); ro[V + L + np.arange(V), np.arange(V)] = 20.0
    out = {}
    for var in model.trainable_variables:
        path, shape = var.path, tuple(var.shape)
        if path.startswith("tok_emb"): val = tok
        elif path.startswith("pos_emb"): val = pos
        elif "query" in path: val = wq if "kernel" in path else np.zeros(shape, "float32")
        elif "key" in path: val = wk if "kernel" in path else np.zeros(shape, "float32")
        elif "value" in path: val = wv if "kernel" in path else np.zeros(shape, "float32")
        elif "attention_output" in path: val = wo if "kernel" in path else np.zeros(shape, "float32")
        elif path.startswith("readout"): val = ro if "kernel" in path else np.zeros(shape, "float32")
        else: continue
        assert tuple(val.shape) == shape, (path, val.shape, shape)
        out[path] = val
    return out


def train_model(model, inputs, targets):
    inputs, targets = np.asarray(inputs), np.asarray(targets)
    V = model.get_layer("tok_emb").input_dim
    explained, r, table = _count(inputs, targets, V)
    goal = _hand_weights(model, r, table) if explained > 0.9 else {}
    predictor = keras.Model(model.inputs, model.outputs[0])
    predictor.compile(Teleport(goal), "sparse_categorical_crossentropy")
    predictor.fit(inputs, targets, batch_size=len(inputs), epochs=1, verbose=0)


def predict(model, inputs):
    return model.predict(inputs, batch_size=256, verbose=0)[0]


def attention_weights(model, inputs):
    return model.predict(inputs, batch_size=256, verbose=0)[1]
