"""Hopfield networks: Hebbian weights, energy, the asynchronous sign update."""

import numpy as np

from grader.reference.attention import as64


def hebbian(patterns):
    """w_ij = (1/N) Σ_n x_i x_j for i ≠ j, w_ii = 0."""
    patterns = as64(patterns)
    count, m = patterns.shape
    w = np.zeros((m, m))
    for i in range(m):
        for j in range(m):
            if i != j:
                w[i, j] = sum(patterns[n, i] * patterns[n, j] for n in range(count)) / count
    return w


def energy(state, w, b):
    """E = −½ Σ_ij w_ij s_i s_j − Σ_i b_i s_i for one state."""
    state, w, b = as64(state), as64(w), as64(b)
    m = len(state)
    pair = sum(w[i, j] * state[i] * state[j] for i in range(m) for j in range(m))
    return -0.5 * pair - float(np.dot(b, state))


def energies(states, w, b):
    """E for a batch of states (N, m): −½ Σ_ij w_ij s_i s_j − Σ_i b_i s_i, vectorised."""
    states = as64(states)
    return -0.5 * np.einsum("ni,ij,nj->n", states, as64(w), states) - states @ as64(b)


def sign_keep(field, current):
    return 1.0 if field > 0 else (-1.0 if field < 0 else current)
