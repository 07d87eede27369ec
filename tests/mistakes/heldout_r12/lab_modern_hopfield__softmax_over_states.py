"""Lab: modern Hopfield networks — one update of the state is one step of attention.

NNDL 8.6 (Hopfield networks as associative memory); Ramsauer et al. 2020, "Hopfield Networks
is All You Need", equation (3). A modern (continuous) Hopfield network stores N patterns
x_1, ..., x_N of size d as the columns of X (d, N). A state ξ (a query, e.g. a corrupted
pattern) is updated by

    ξ_new = X softmax(β Xᵀ ξ)

the softmax running over the N patterns. β > 0 is the inverse temperature: for small β the
weights are nearly uniform and ξ_new is close to the mean of the patterns; for large β they
are nearly one-hot and ξ_new is the stored pattern most similar to ξ, so a corrupted pattern
is retrieved in ONE update (the classical Hopfield network of exercise 8-6 needs many
asynchronous updates and stores only about 0.14 d patterns).

Written with rows instead of columns (Q = ξᵀ, K = V = Xᵀ) the update is key–value attention:
softmax(β Q Kᵀ) V, with the stored patterns as both keys and values and β as the score
scale; β = 1/√d is exactly the Transformer's scaled dot-product attention.

Grade your work with `grader check modern-hopfield`. The functions are called with NumPy
float64 arrays (return NumPy arrays or tensors); the layer is called in float64 (and once in
float32) and its output AND gradients (w.r.t. the queries and the patterns) are compared with
the reference. Many β and pattern sets, one state or several, d != N. Keep the names and
signatures below.

Parts: hopfield_update 4, retrieve 2, HopfieldAttention 4 — 10 points.
"""

import keras
import numpy as np
from keras import ops


def hopfield_update(X, xi, beta=1.0):
    """One update ξ_new = X softmax(β Xᵀ ξ): X (d, N), ξ (d,) or (d, M) -> the shape of ξ.

    The columns of X are the stored patterns. ξ is one state (d,) or M states as the columns
    of a (d, M) array, each updated on its own: the softmax runs over the N patterns (axis 0
    of Xᵀξ), never over the states. β can be large (the grader uses up to 1000): use a
    numerically stable softmax (subtract the maximum).
    """
    X = np.asarray(X, dtype=np.float64)
    scores = beta * (X.T @ np.asarray(xi, dtype=np.float64))
    weights = np.exp(scores - scores.max(axis=-1, keepdims=True))
    weights /= weights.sum(axis=-1, keepdims=True)
    return X @ weights


def retrieve(X, xi, beta=1.0, steps=1):
    """Retrieval: apply the update `steps` times, each to the result of the previous one.

    X (d, N) stored patterns, ξ (d,) or (d, M) the starting states (e.g. corrupted copies of
    stored patterns), `steps` >= 1. Returns the final state, of the shape of ξ. With a large
    β one step is enough: the result is (to 1%) the stored pattern closest to ξ. The grader
    checks the values and this retrieval property; its cases start from stored patterns with
    some signs flipped.
    """
    state = np.asarray(xi, dtype=np.float64)
    for _ in range(steps):
        state = hopfield_update(X, state, beta)
    return state


class HopfieldAttention(keras.layers.Layer):
    """The Hopfield update in the row convention of attention layers: softmax(β Q Pᵀ) P.

    queries Q are the states ξ as rows; the stored patterns P are both the keys and the
    values. `beta` is a constructor argument (no weights).
    """

    def __init__(self, beta=1.0, **kwargs):
        super().__init__(**kwargs)
        self.beta = beta

    def call(self, queries, patterns):
        """queries (B, M, d), patterns (B, N, d) -> (B, M, d).

        output[b, m] = Σ_n softmax_n(β queries[b, m] · patterns[b, n]) patterns[b, n], that is
        hopfield_update(patterns[b].T, queries[b].T, β).T for every example b. The result
        keeps the dtype of the inputs; gradients reach the queries and the patterns (which
        are keys and values at once).
        """
        scores = self.beta * ops.matmul(queries, ops.transpose(patterns, (0, 2, 1)))
        return ops.matmul(ops.softmax(scores, axis=-1), patterns)
