"""Recurrent cells as Keras computes them (GRU with reset_after, LSTM), in float64."""

import numpy as np

from grader.i18n import _
from grader.reference.attention import as64, sigmoid


def gru_step(x, h, kernel, recurrent_kernel, bias):
    """One step of a Keras GRU cell (reset_after=True, gates z, r, h in that order)."""
    x, h = as64(x), as64(h)
    kernel, recurrent_kernel, bias = as64(kernel), as64(recurrent_kernel), as64(bias)
    u = h.shape[-1]
    gx = x @ kernel + bias[0]
    gh = h @ recurrent_kernel + bias[1]
    z = sigmoid(gx[:u] + gh[:u])
    r = sigmoid(gx[u : 2 * u] + gh[u : 2 * u])
    candidate = np.tanh(gx[2 * u :] + r * gh[2 * u :])
    return z * h + (1.0 - z) * candidate


def lstm_step(x, h, c, kernel, recurrent_kernel, bias):
    """One step of a Keras LSTM cell (gates i, f, c, o in that order); returns (h, c)."""
    x, h, c = as64(x), as64(h), as64(c)
    u = h.shape[-1]
    g = x @ as64(kernel) + h @ as64(recurrent_kernel) + as64(bias)
    i = sigmoid(g[:u])
    f = sigmoid(g[u : 2 * u])
    c = f * c + i * np.tanh(g[2 * u : 3 * u])
    o = sigmoid(g[3 * u :])
    return o * np.tanh(c), c


def cell_weights(cell):
    """The kernel, recurrent kernel and bias of a Keras GRU/LSTM cell, as float64 arrays."""
    return as64(cell.kernel.numpy()), as64(cell.recurrent_kernel.numpy()), as64(cell.bias.numpy())


def gru_sequence(xs, weights, keep=None, h0=None, reverse=False):
    """Runs a GRU over the kept steps of one sequence xs (T, d); returns (outputs, h_last).

    Outputs at dropped steps are zeros (the masked outputs of a Keras RNN inside
    Bidirectional); with `reverse`, the sequence is read backwards and the outputs are
    given back in the original order.
    """
    xs = as64(xs)
    t_len = xs.shape[0]
    units = weights[1].shape[0]
    keep = np.ones(t_len, bool) if keep is None else np.asarray(keep, bool)
    h = np.zeros(units) if h0 is None else as64(h0)
    outputs = np.zeros((t_len, units))
    order = range(t_len - 1, -1, -1) if reverse else range(t_len)
    for t in order:
        if keep[t]:
            h = gru_step(xs[t], h, *weights)
            outputs[t] = h
    return outputs, h


# ---- parameter counts (exercise 8-1) --------------------------------------------------------
# Keyword arguments with defaults name the terms of a count that a known mistake gets wrong.

BLOCKS = {"lstm": 4, "gru": 3, "simple_rnn": 1}
KINDS = tuple(BLOCKS)


def param_count(
    kind,
    input_dim,
    units,
    reset_after=True,
    blocks=None,
    biases=None,
    recurrent=True,
    bias_shared=False,
):
    """Keras's count: blocks × (input weights + recurrent weights + biases), each block with
    one bias vector (two for a GRU with reset_after); `bias_shared`: the biases counted once for
    all the blocks (a known mistake)."""
    blocks = BLOCKS[kind] if blocks is None else blocks
    biases = (2 if kind == "gru" and reset_after else 1) if biases is None else biases
    weights = blocks * (input_dim * units + recurrent * units * units)
    return np.asarray(weights + (1 if bias_shared else blocks) * biases * units)


def param_count_coefficients(
    kind, input_dim, biases=None, input_weights=True, highest_first=True, biases_constant=False
):
    """(a, b, c) with count(units) = a·units² + b·units + c (GRU with reset_after);
    `biases_constant`: the biases put in c instead of b (a known mistake)."""
    blocks = BLOCKS[kind]
    biases = 1 + (kind == "gru") if biases is None else biases
    linear = blocks * (input_weights * input_dim + (0 if biases_constant else biases))
    constant = blocks * biases if biases_constant else 0.0
    coefficients = np.array([blocks, linear, constant], dtype=float)
    return coefficients if highest_first else coefficients[::-1]


def doubling_ratio(kind, input_dim, units, upside_down=False, difference=False, **terms):
    """count(2·units) / count(units), or its inverse, or count(2·units) - count(units); `terms`
    change the count (see `param_count`)."""
    big, small = (param_count(kind, input_dim, u, **terms) for u in (2 * units, units))
    if difference:
        return np.asarray(big - small, dtype=float)
    return np.asarray(small / big if upside_down else big / small, dtype=float)


def ratio_in_range(output):
    """What is wrong with a doubling ratio that is not a number in [2, 4] (None if it is)."""
    value = np.asarray(output, dtype=float)
    if value.shape != () or not 2.0 - 1e-9 <= float(value) <= 4.0 + 1e-9:
        return _(
            "the ratio is {ratio}, not a number in [2, 4]: doubling units doubles a count that "
            "is linear in units and quadruples one that is quadratic",
            ratio=value.tolist(),
        )
    return None
