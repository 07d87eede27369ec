"""Lab: pointer networks — attention weights that point at input positions.

NNDL 8.2.1.5 "指针网络", equations (8.12)–(8.15); Vinyals, Fortunato and Jaitly 2015. For
problems whose output is a sequence of positions of the input (sorting, convex hulls, picking
words), the attention distribution over the N inputs IS the output. With e_1, ..., e_N the
encoder states of the inputs and d_m the decoder state at output step m:

    u_{m,j} = vᵀ tanh(W_1ᵀ e_j + W_2ᵀ d_m)                          the pointer scores (8.15)
    p(c_m = j | c_1, ..., c_{m-1}, x) = softmax_j(u_{m,j})            (8.14)
    p(c_1, ..., c_M | x) = Π_m p(c_m | c_1, ..., c_{m-1}, x)          (8.12)-(8.13)

When the output must be a permutation of the inputs (sorting), a position chosen at an earlier
step is masked out at the later steps: its score becomes -∞ and its probability 0.

In a full pointer network d_m depends on the input chosen at step m-1 (the decoder reads it),
so the scores of step m exist only after step m-1 is decided. Here the scores of all steps
are given at once, which keeps the masking logic the same and the code short.

Grade your work with `grader check pointer`. The layer is called in float64 (and once in
float32); its output AND gradients (w.r.t. both inputs and the weights `W_1`, `W_2`, `v`)
are compared with the reference. The functions are called with NumPy arrays (integers for
indices); return NumPy arrays or tensors. Shapes vary: batch 1 and several, M != N, d_e != d_d.
Keep the names and signatures below.

Parts: PointerScores 4, greedy_decode 4, sequence_log_likelihood 2 — 10 points.
"""

import keras
import numpy as np
from keras import ops


class PointerScores(keras.layers.Layer):
    """Pointer scores u_{m,j} = vᵀ tanh(W_1ᵀ e_j + W_2ᵀ d_m), NNDL (8.15).

    Weights (created in `build`, given; set by the grader by name): `W_1` (d_e, units)
    projects the encoder states, `W_2` (d_d, units) the decoder states, `v` (units,).
    """

    def __init__(self, units=4, **kwargs):
        super().__init__(**kwargs)
        self.units = units

    def build(self, encoder_states_shape, decoder_states_shape):
        # Given: not part of the exercise. Keep the weights' names.
        self.W_1 = self.add_weight(name="W_1", shape=(encoder_states_shape[-1], self.units))
        self.W_2 = self.add_weight(name="W_2", shape=(decoder_states_shape[-1], self.units))
        self.v = self.add_weight(name="v", shape=(self.units,))

    def call(self, encoder_states, decoder_states):
        """encoder_states (B, N, d_e), decoder_states (B, M, d_d) -> scores u (B, M, N).

        u[b, m, j] = v · tanh(encoder_states[b, j] @ W_1 + decoder_states[b, m] @ W_2): one
        row per output step m, one column per input position j. These are the raw scores
        (logits), no softmax. The result keeps the dtype of the inputs.
        """
        from_inputs = ops.matmul(encoder_states, self.W_1)[:, None, :, :]
        from_steps = ops.matmul(decoder_states, self.W_2)[:, :, None, :]
        return ops.sum(ops.tanh(from_inputs + from_steps) * self.v, axis=-1)


def greedy_decode(scores):
    """Greedy decoding with the chosen positions masked: (B, M, N) scores -> (B, M) indices.

    scores[b, m] are the pointer scores of output step m (M <= N). At step m = 0, 1, ...,
    choose the input position with the highest score AMONG THE POSITIONS NOT CHOSEN at
    earlier steps (set the scores of the chosen ones to -∞ first). Return integer indices in
    [0, N); no position appears twice in a row of the result, so with M = N each row is a
    permutation of 0, ..., N-1 (the grader checks this as well as the values).
    """
    scores = np.array(scores, dtype=np.float64)  # a copy: chosen positions get overwritten
    rows = np.arange(scores.shape[0])
    picks = []
    for m in range(scores.shape[1]):
        best = np.argmax(scores[:, m], axis=-1)  # (B,)
        picks.append(best)
        scores[rows, m, best] = -np.inf  # never again
    return np.stack(picks, axis=1)


def sequence_log_likelihood(scores, targets):
    """log p(c_1, ..., c_M | x) of given target positions: (B, M, N), (B, M) -> (B,).

    targets[b] holds M distinct positions c_1, ..., c_M in [0, N) (teacher forcing: the true
    outputs). log p = Σ_m log softmax(scores[b, m] with c_1, ..., c_{m-1} masked)[c_m]: the
    chain rule (8.12)-(8.13), with the positions chosen before step m excluded from its
    softmax. The grader includes scores near 1000: compute the log-softmax stably (subtract
    the maximum, or use a log-sum-exp).
    """
    scores = np.array(scores, dtype=np.float64)  # a copy: earlier targets get overwritten
    targets = np.asarray(targets)
    rows = np.arange(scores.shape[0])
    total = np.zeros(scores.shape[0])
    for m in range(scores.shape[1]):
        step = scores[:, m]
        shift = np.max(step, axis=-1)
        log_z = shift + np.log(np.sum(np.exp(step - shift[:, None]), axis=-1))
        total += step[rows, targets[:, m]] - log_z
        scores[rows, m + 1 :, targets[:, m]] = -np.inf  # c_m is excluded from later steps
    return total
