"""Lab: Luong attention — global attention with three scores, and local-p attention.

Blog "Luong 注意力" (the query is the CURRENT decoder state h_t, not s_{t-1}; three score
functions); Luong, Pham and Manning 2015, §3.1–3.2. With h_t the decoder state at output step t
and h̄_s the encoder states (keys = values), s = 0, ..., S-1:

    score(h_t, h̄_s) = h_tᵀ h̄_s                       "dot"
                    = h_tᵀ W_a h̄_s                    "general"   W_a (d_h, d_s)
                    = v_aᵀ tanh(W_aᵀ [h_t; h̄_s])      "concat"    W_a (d_h + d_s, units)
    a_t(s) = softmax_s(score(h_t, h̄_s))
    c_t    = Σ_s a_t(s) h̄_s
    h̃_t    = tanh(W_cᵀ [c_t; h_t])                   the attentional state, W_c (d_s + d_h, units)

Because the query is h_t, which does not depend on c_t, the attention of every output step can
be computed at once: the layer takes all decoder states (B, Tq, d_h) together.

Local-p attention looks only at a window around a predicted position. With S the source length:

    p_t    = S · sigmoid(v_pᵀ tanh(W_pᵀ h_t))         a real number in (0, S)
    a_t(s) = softmax over the window |s - p_t| <= D of score(h_t, h̄_s)
             × exp(-(s - p_t)² / (2σ²)),  σ = D / 2,  and 0 outside the window

Positions s count from 0. The Gaussian favours positions near p_t; the weights sum to less
than 1, as in the paper, and p_t is learned through the Gaussian factor.

Grade your work with `grader check luong`. The layers are called in float64 (and once in
float32); their outputs AND gradients (w.r.t. the decoder states, the encoder states and every
weight) are compared with the reference. `local_p_weights` is called with NumPy arrays.
Shapes vary: batch 1 and several, Tq != S, d_h != d_s, units != d. Keep the names and
signatures below; use `keras.ops` inside the layers.

Parts: global dot 2, global general 2, global concat 2, local_p_weights 2, LocalPAttention 2
— 10 points.
"""

import keras
from keras import ops

SCORES = ("dot", "general", "concat")


def attentional_state(context, query, W_c):
    """h̃ = tanh([c; h] @ W_c): context (B, Tq, d_s), query (B, Tq, d_h) -> (B, Tq, units).

    The context comes FIRST in the concatenation, [c_t; h_t], matching the rows of W_c
    (d_s + d_h, units).
    """
    return ops.tanh(ops.matmul(ops.concatenate([context, query], axis=-1), W_c))


class LuongAttention(keras.layers.Layer):
    """Luong global attention: every source position, scored by "dot", "general" or "concat".

    Returns the attentional states h̃_t = tanh(W_cᵀ [c_t; h_t]) of every decoder step. The
    weights are created in `build` (given) and set by the grader by name: `W_c` always, `W_a`
    for "general" and "concat", `v_a` for "concat".
    """

    def __init__(self, units=4, score="dot", **kwargs):
        super().__init__(**kwargs)
        if score not in SCORES:
            raise ValueError(f"`score` must be one of {SCORES}. Received: score={score!r}")
        self.units = units
        self.score = score

    def build(self, query_shape, encoder_states_shape):
        # Given: not part of the exercise. Keep the weights' names.
        d_h, d_s = query_shape[-1], encoder_states_shape[-1]
        if self.score == "general":
            self.W_a = self.add_weight(name="W_a", shape=(d_h, d_s))
        elif self.score == "concat":
            self.W_a = self.add_weight(name="W_a", shape=(d_h + d_s, self.units))
            self.v_a = self.add_weight(name="v_a", shape=(self.units,))
        self.W_c = self.add_weight(name="W_c", shape=(d_s + d_h, self.units))

    def scores(self, query, encoder_states):
        """query (B, Tq, d_h), encoder_states (B, S, d_s) -> scores (B, Tq, S)."""
        if self.score == "dot":
            return ops.matmul(query, ops.transpose(encoder_states, (0, 2, 1)))
        if self.score == "general":
            projected = ops.matmul(query, self.W_a)
            return ops.matmul(projected, ops.transpose(encoder_states, (0, 2, 1)))
        d_h = ops.shape(query)[-1]
        from_query = ops.matmul(query, self.W_a[:d_h])[:, :, None, :]
        from_source = ops.matmul(encoder_states, self.W_a[d_h:])[:, None, :, :]
        return ops.sum(ops.tanh(from_query + from_source) * self.v_a, axis=-1)

    def call(self, query, encoder_states):
        """query (B, Tq, d_h) = h_1..h_Tq, encoder_states (B, S, d_s) -> h̃ (B, Tq, units).

        scores -> softmax over the S source positions -> context c_t -> attentional state.
        The result keeps the dtype of the inputs.
        """
        weights = ops.softmax(self.scores(query, encoder_states), axis=-1)
        context = ops.matmul(weights, encoder_states)
        return attentional_state(context, query, self.W_c)


def local_p_weights(scores, positions, window):
    """Local-p alignment weights: (B, Tq, S) scores, (B, Tq) positions p_t -> (B, Tq, S).

    For source position s = 0, ..., S-1 and distance δ = s - p_t:
        a[b, t, s] = softmax over {s : |δ| <= D} of scores[b, t, :]  ×  exp(-δ² / (2σ²))
    with D = `window` (an int >= 1) and σ = D / 2; a = 0 where |δ| > D. The softmax runs over
    the window only (mask the scores outside it before the softmax); the grader's p_t always
    leave at least one position in the window. The grader checks the zeros outside the window
    as well as the values.
    """
    dtype = ops.convert_to_tensor(scores).dtype
    source = ops.arange(ops.shape(scores)[-1], dtype=dtype)
    distance = source[None, None, :] - ops.cast(positions, dtype)[:, :, None]
    inside = ops.abs(distance) <= window
    aligned = ops.softmax(ops.where(inside, scores, ops.cast(-1e9, dtype)), axis=-1)
    sigma = float(window)
    return aligned * ops.exp(-ops.square(distance) / (2.0 * sigma * sigma))


class LocalPAttention(keras.layers.Layer):
    """Luong local-p attention with the dot score, returning h̃_t = tanh(W_cᵀ [c_t; h_t]).

    p_t = S · sigmoid(v_pᵀ tanh(W_pᵀ h_t)) predicts where to look; `local_p_weights` gives the
    weights. Weights (given in `build`, set by name): `W_p` (d, units), `v_p` (units,),
    `W_c` (2d, units). Query and encoder states have the same size d (the dot score).
    """

    def __init__(self, units=4, window=2, **kwargs):
        super().__init__(**kwargs)
        self.units = units
        self.window = window

    def build(self, query_shape, encoder_states_shape):
        # Given: not part of the exercise. Keep the weights' names.
        d = query_shape[-1]
        self.W_p = self.add_weight(name="W_p", shape=(d, self.units))
        self.v_p = self.add_weight(name="v_p", shape=(self.units,))
        self.W_c = self.add_weight(name="W_c", shape=(encoder_states_shape[-1] + d, self.units))

    def positions(self, query, source_length):
        """p_t = S · sigmoid(v_pᵀ tanh(W_pᵀ h_t)): query (B, Tq, d) -> (B, Tq)."""
        hidden = ops.tanh(ops.matmul(query, self.W_p))
        return ops.cast(source_length, query.dtype) * ops.sigmoid(ops.sum(hidden * self.v_p, -1))

    def call(self, query, encoder_states):
        """query (B, Tq, d), encoder_states (B, S, d) -> h̃ (B, Tq, units).

        Dot scores, p_t from `positions` (S = encoder_states.shape[1]), `local_p_weights`
        with D = self.window, context, `attentional_state`.
        """
        scores = ops.matmul(query, ops.transpose(encoder_states, (0, 2, 1)))
        centres = self.positions(query, ops.shape(encoder_states)[1])
        weights = local_p_weights(scores, centres, self.window)
        context = ops.matmul(weights, encoder_states)
        return attentional_state(context, query, self.W_c)
