"""Lab: Bahdanau attention — one decoder step whose query is the PREVIOUS decoder state.

Slides "Bahdanau 注意力" (the decoder's previous hidden state is the query, the encoder states
are the keys and the values, the valid source lengths mask the padding); blog "Bahdanau 注意力",
e_ij = score(s_{i-1}, h_j); Bahdanau, Cho and Bengio 2015. At output step t the decoder has
its previous state s_{t-1} and the encoder states h_1, ..., h_T of the source sentence:

    e_tj = vᵀ tanh(W_sᵀ s_{t-1} + W_hᵀ h_j)      additive score, one per source position j
    α_tj = softmax_j(e_tj)                       over the VALID source positions j < length
    c_t  = Σ_j α_tj h_j                          the context, fed into the step that makes s_t

The new state s_t is computed FROM c_t, so c_t cannot use s_t: the query is s_{t-1}. (Luong
attention, the next lab, uses the current state h_t instead.) Source sentences in a batch have
different lengths and are padded to the same T; padded positions must get exactly zero weight.

Grade your work with `grader check bahdanau`. The layer is called in float64 (and once in
float32); its output AND gradients (w.r.t. the previous state, the encoder states and the
weights `W_s`, `W_h`, `v`) are compared with the reference. `alignment` is called with NumPy
arrays (return NumPy arrays or tensors). Shapes vary: batch 1 and several, d_s != d_h, T = 1,
a length of 1. Keep the names and signatures below; use `keras.ops` in the layer.

Parts: step without padding 3, step with padded sources 3, alignment 3 — 9 points.
"""

import keras
from keras import ops


def additive_scores(queries, keys, W_s, W_h, v):
    """Additive scores for every (query, key) pair: (B, Tq, d_s), (B, T, d_h) -> (B, Tq, T).

    e[b, i, j] = v · tanh(queries[b, i] @ W_s + keys[b, j] @ W_h), with W_s of shape
    (d_s, units), W_h of shape (d_h, units) and v of shape (units,). Project the queries and
    the keys first (one matrix product each), then add every projected query to every
    projected key by broadcasting: (B, Tq, 1, units) + (B, 1, T, units).
    """
    projected_queries = ops.matmul(queries, W_s)[:, :, None, :]
    projected_keys = ops.matmul(keys, W_h)[:, None, :, :]
    return ops.sum(ops.tanh(projected_queries + projected_keys) * v, axis=-1)


def masked_softmax(scores, lengths):
    """Softmax over the last axis that ignores padded positions: (B, Tq, T), (B,) -> (B, Tq, T).

    Position j of example b is valid when j < lengths[b] (1 <= lengths[b] <= T); invalid
    positions get weight exactly 0 and the valid ones sum to 1. Replace the scores of the
    invalid positions by a very negative number (e.g. -1e9) BEFORE the softmax. `lengths` may
    arrive as whole numbers in a float array.
    """
    positions = ops.arange(ops.shape(scores)[-1])
    valid = positions[None, None, :] < ops.cast(lengths, "int32")[:, None, None]
    filled = ops.where(valid, scores, ops.cast(-1e9, scores.dtype))
    return ops.softmax(filled, axis=-1)


class BahdanauAttentionStep(keras.layers.Layer):
    """One decoder step of Bahdanau attention: (s_{t-1}, h_1..h_T, lengths) -> context c_t.

    e_j = vᵀ tanh(W_sᵀ s_{t-1} + W_hᵀ h_j), α = softmax over the valid positions j < length,
    c_t = Σ_j α_j h_j. The weights `W_s` (d_s, units), `W_h` (d_h, units) and `v` (units,)
    are created in `build` (given); the grader sets them by name.
    """

    def __init__(self, units=8, **kwargs):
        super().__init__(**kwargs)
        self.units = units

    def build(self, previous_state_shape, encoder_states_shape):
        # Given: not part of the exercise. Keep the weights' names.
        self.W_s = self.add_weight(name="W_s", shape=(previous_state_shape[-1], self.units))
        self.W_h = self.add_weight(name="W_h", shape=(encoder_states_shape[-1], self.units))
        self.v = self.add_weight(name="v", shape=(self.units,))

    def call(self, previous_state, encoder_states, source_lengths):
        """previous_state (B, d_s), encoder_states (B, T, d_h), source_lengths (B,) -> (B, d_h).

        previous_state is s_{t-1}, the query; encoder_states are the keys AND the values;
        source_lengths[b] is the number of real (unpadded) source positions of example b,
        1 <= length <= T (the grader passes it as a float array of whole numbers). Returns the
        context c_t. Use `additive_scores` (with one query: Tq = 1) and `masked_softmax`.
        The result keeps the dtype of the inputs.
        """
        scores = additive_scores(
            previous_state[:, None, :], encoder_states, self.W_s, self.W_h, self.v
        )  # (B, 1, T)
        weights = masked_softmax(scores, source_lengths)
        return ops.matmul(weights, encoder_states)[:, 0, :]


def alignment(decoder_states, encoder_states, source_lengths, W_s, W_h, v):
    """The attention weights of a whole output sentence: the alignment matrix of the paper.

    decoder_states (B, T_out + 1, d_s) holds s_0, s_1, ..., s_{T_out} (s_0 is the initial
    state), encoder_states (B, T_in, d_h), source_lengths (B,) integers, W_s, W_h, v as in the
    layer. Returns α of shape (B, T_out, T_in): row t - 1 (t = 1, ..., T_out) holds the
    weights α_tj that produced output t, computed with the query s_{t-1}. Every row sums to 1
    over the valid source positions and is 0 on the padding (the grader checks this too).
    This matrix is the heatmap of Bahdanau et al.'s figure 3.
    """
    queries = decoder_states[:, 1:, :]
    scores = additive_scores(queries, encoder_states, W_s, W_h, v)
    return masked_softmax(scores, source_lengths)
