"""Lab: additive attention — the score vᵀ tanh(W_q q + W_k k) and the pooling built on it.

NNDL (8.2); Bahdanau et al. 2015 ("concat"); d2l additive attention; slides "加性注意力". The
additive score is a one-hidden-layer network applied to every (query, key) pair:

    s(q, k) = vᵀ tanh(W_q q + W_k k),   W_q: (d_q, units), W_k: (d_k, units), v: (units,)

Query and key may have different sizes: each is projected to `units` first. Projecting every
query once and every key once, and only then adding the projections for all Tq × Tk pairs
(broadcasting), is much cheaper than running the network on each pair from scratch; the last
part of the lab counts the multiplications of both ways.

Grade your work with `grader check additive`. The layers are called in float64 (and once in
float32) with the grader's weights, set by name; outputs AND gradients (w.r.t. the queries,
keys, values and every weight) are compared with the reference. Shapes vary: batch 1 and
several, Tq != Tk, d_q != d_k, units = 1. Keep the names, the `build` methods and the
signatures below.

Parts: AdditiveScore 5, AdditiveAttention 3, additive_multiplications 2 — 10 points.
"""

import keras
from keras import ops


class AdditiveScore(keras.layers.Layer):
    """Additive score, NNDL (8.2): scores[b, i, j] = vᵀ tanh(W_q q_i + W_k k_j)."""

    def __init__(self, units, **kwargs):
        # Given: not part of the exercise.
        super().__init__(**kwargs)
        self.units = units

    def build(self, query_shape, key_shape):
        # Given: not part of the exercise. Keep the weights' names.
        self.query_kernel = self.add_weight(
            name="query_kernel", shape=(query_shape[-1], self.units)
        )
        self.key_kernel = self.add_weight(name="key_kernel", shape=(key_shape[-1], self.units))
        self.score_vector = self.add_weight(name="score_vector", shape=(self.units,))

    def call(self, query, key):
        """query (B, Tq, d_q), key (B, Tk, d_k) -> scores (B, Tq, Tk).

        scores[b, i, j] = Σ_u score_vector[u] tanh((query[b, i] @ query_kernel)[u]
        + (key[b, j] @ key_kernel)[u]). Project first, then add a (B, Tq, 1, units) and a
        (B, 1, Tk, units) tensor. Keep the dtype of the inputs.
        """
        projected_query = ops.matmul(query, self.query_kernel)  # (B, Tq, units)
        projected_key = ops.matmul(key, self.key_kernel)  # (B, Tk, units)
        features = ops.tanh(
            ops.expand_dims(projected_query, 2) + ops.expand_dims(projected_key, 1)
        )  # (B, Tq, Tk, units)
        return ops.sum(features * self.score_vector, axis=-1)


class AdditiveAttention(AdditiveScore):
    """Additive attention pooling: out_i = Σ_j softmax_j(s(q_i, k_j)) v_j.

    The scores are `AdditiveScore`'s (this class inherits its weights and its `call`, which
    you can reach as `super().call(query, key)`); the values may differ from the keys.
    """

    def build(self, query_shape, key_shape, value_shape):
        # Given: not part of the exercise.
        super().build(query_shape, key_shape)

    def call(self, query, key, value):
        """query (B, Tq, d_q), key (B, Tk, d_k), value (B, Tk, d_v) -> (B, Tq, d_v).

        The attention weights are the softmax of the additive scores over the keys (the
        last axis of the (B, Tq, Tk) scores); each output is the weighted sum of the values.
        """
        weights = ops.softmax(super().call(query, key), axis=-1)
        return ops.matmul(weights, value)


def additive_multiplications(tq, tk, d_q, d_k, units, project_first=True):
    """Multiplications to compute the (Tq, Tk) additive scores of one example.

    Count one multiplication per product of two numbers (a vector–matrix product of sizes d
    and (d, units) costs d·units; a dot product of two vectors of size units costs units;
    additions and tanh are free).

    - project_first=True (the way `AdditiveScore` does it): W_q q for each of the Tq
      queries, W_k k for each of the Tk keys, then vᵀ tanh(·) for each of the Tq·Tk pairs.
    - project_first=False (the network run on each pair from scratch): for each of the Tq·Tk
      pairs, W_q q, W_k k and vᵀ tanh(·).

    Return an int (or a number equal to one).
    """
    pairs = tq * tk
    if project_first:
        return tq * d_q * units + tk * d_k * units
    return pairs * (d_q * units + d_k * units + units)
