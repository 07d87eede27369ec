"""Exercise 8-6 — the Hopfield network: Hebbian storage, energy, and dynamics that never raise it.

NNDL §8.6.1 (Hopfield network; Hopfield 1982). The book's exercise 8-6 asks you to prove that the
energy of a Hopfield network never increases as it runs. Here the proof becomes code that the
grader tests on many random trajectories.

A Hopfield network has M units with states s_i ∈ {−1, +1}, symmetric weights W with a zero
diagonal, and biases b. It stores N patterns x^(1), …, x^(N) with the Hebbian rule

    w_ij = (1/N) Σ_n x_i^(n) x_j^(n)  for i ≠ j,      w_ii = 0

(NNDL's convention, also attnkit's: divide by N, the NUMBER OF PATTERNS; many texts divide by
M, the number of units instead, which scales W but changes no update). Its energy is

    E(s) = −½ sᵀ W s − bᵀ s = −½ Σ_i Σ_j w_ij s_i s_j − Σ_i b_i s_i

and an asynchronous update changes ONE unit at a time:

    s_i ← sgn(h_i),   h_i = Σ_j w_ij s_j + b_i   (the field of unit i),

and s_i is KEPT as it is when the field h_i is exactly 0 (the tie rule).

The book asks for a proof that E never rises under these updates. Hint: write ΔE when only
unit i changes, by Δs_i, and use that W is symmetric with w_ii = 0. The grader checks the
consequence on every trajectory your code produces.

Grade your work with `grader check 8-6`. Values are compared with the reference over many random
networks (Hebbian ones, random symmetric ones with integer weights where fields of exactly 0
happen, and real-valued ones), single states and batches. On every trajectory your dynamics
produce, the grader also recomputes the energy of each state itself and checks that it never
rises. Use NumPy (or keras.ops); no gradients are checked here. Do not change the arguments you
are given (work on a copy).

Parts: hebbian_weights 2, energy 2, async_update 2, async_trajectory 3, recall 1 — 10 points.
"""

import numpy as np


def hebbian_weights(patterns):
    """Hebbian storage: W = (1/N) Σ_n x^(n) x^(n)ᵀ with the diagonal set to 0.

    Args:
        patterns: N patterns of M units each, shape (N, M), entries ±1.

    Returns:
        W, shape (M, M): symmetric, zero diagonal, divided by N (the number of patterns).
    """
    x = np.asarray(patterns, dtype=np.float64)
    coupling = x.T @ x / x.shape[0]
    np.fill_diagonal(coupling, 0.0)
    return coupling


def energy(W, state, bias=None):
    """Energy of a state: E(s) = −½ sᵀ W s − bᵀ s (b = 0 when bias is None).

    Args:
        W: (M, M).
        state: one state, shape (M,), or a batch of states, shape (B, M).
        bias: b, shape (M,), or None.

    Returns:
        A number for one state, shape (B,) for a batch: one energy per state.
    """
    s = np.asarray(state, dtype=np.float64)
    quadratic = np.einsum("...i,ij,...j->...", s, np.asarray(W, dtype=np.float64), s)
    linear = 0.0 if bias is None else s @ np.asarray(bias, dtype=np.float64)
    return -0.5 * quadratic - linear


def async_update(W, state, order, bias=None):
    """Asynchronous updates, one unit at a time, in the given order.

    For each unit i in `order`, in turn: h = Σ_j w_ij s_j + b_i, computed from the CURRENT
    state (which already holds the units updated before it), then s_i ← +1 if h > 0, −1 if
    h < 0, unchanged if h = 0 exactly.

    `order` is usually a permutation of 0..M−1 (one sweep) but may be any sequence of unit
    indices: several sweeps one after the other, or units repeated or left out.

    Args:
        W: (M, M), symmetric with a zero diagonal.
        state: shape (M,) or a batch (B, M), entries ±1; each batch row is updated on its own.
        order: 1-D integer array of unit indices.
        bias: b, shape (M,), or None.

    Returns:
        The new state(s), the shape of `state`, entries ±1.
    """
    weights = np.asarray(W, dtype=np.float64)
    current = np.array(state, dtype=np.float64)
    offsets = np.zeros(weights.shape[0]) if bias is None else np.asarray(bias, np.float64)
    for unit in np.asarray(order, dtype=int).reshape(-1):
        field = current @ weights[unit] + offsets[unit]
        current[..., unit] = np.where(field > 0, 1.0, np.where(field < 0, -1.0, current[..., unit]))
    return current


def async_trajectory(W, state, order, bias=None):
    """Every state the asynchronous dynamics pass through: after each single-unit update.

    trajectory[0] = state; trajectory[t] = the state after updating unit order[t − 1] (from
    trajectory[t − 1], by the rule of `async_update`).

    The grader computes E(trajectory[t]) itself for every t and checks that it never rises.

    Args:
        W, state, order, bias: as in `async_update`; K = len(order).

    Returns:
        Shape (K + 1, M) for one state, (K + 1, B, M) for a batch.
    """
    visited = [np.array(state, dtype=np.float64)]
    for unit in np.asarray(order, dtype=int).reshape(-1):
        visited.append(async_update(W, visited[-1], [unit], bias))
    return np.stack(visited)


def recall(W, state, sweeps):
    """Recall: `sweeps` asynchronous sweeps, each over the units in the order 0, 1, …, M−1.

    Starting from a probe (a stored pattern with some units flipped, say), the network settles
    in a local minimum of the energy: with few stored patterns, the pattern itself.

    Args:
        W: (M, M); no bias.
        state: the probe, shape (M,) or a batch (B, M).
        sweeps: int ≥ 1.

    Returns:
        The state after the sweeps, the shape of `state`.
    """
    settled = np.array(state, dtype=np.float64)
    for _ in range(int(sweeps)):
        settled = async_update(W, settled, np.arange(settled.shape[-1]))
    return settled
