"""Luong attention: global, local-m and local-p alignment; h̃_t = tanh(W_c[c_t; h_t])."""

import keras
from keras import ops

from attnkit import precision
from attnkit.attention import masking
from attnkit.checks import check_choice, check_positive_int
from attnkit.scoring.additive import AdditiveScore
from attnkit.scoring.base import work_dtype
from attnkit.scoring.bilinear import BilinearScore
from attnkit.scoring.dot import DotScore
from attnkit.scoring.location import LocationScore

__all__ = ["LuongAttention"]

SCORES = ("dot", "general", "concat", "location")
MODES = ("global", "local-m", "local-p")


def _check_shapes(query_shape, value_shape):
    query_shape, value_shape = tuple(query_shape), tuple(value_shape)
    if len(query_shape) != 3 or len(value_shape) != 3:
        raise ValueError(
            "`query` must have shape (batch_size, Tq, d_h) and `value` (batch_size, Tk, d_s). "
            f"Received: query_shape={query_shape}, value_shape={value_shape}"
        )
    return query_shape, value_shape


@keras.saving.register_keras_serializable(package="attnkit")
class LuongAttention(keras.layers.Layer):
    """Luong attention: global or local alignment and the attentional state h̃_t.

    With h_t the current decoder state (the query) and h̄_s the encoder states (keys =
    values), s = 0, ..., S-1:

        a_t(s) = softmax_s(score(h_t, h̄_s))   over the allowed source positions
        c_t    = Σ_s a_t(s) h̄_s
        h̃_t    = tanh(W_c [c_t; h_t])

    Scores: `"dot"` h_tᵀh̄_s (`DotScore`), `"general"` h_tᵀW_a h̄_s (`BilinearScore`),
    `"concat"` v_aᵀ tanh(W_a[h_t; h̄_s]) (`AdditiveScore(units)`), `"location"` W_a h_t
    (`LocationScore(max_length)`, ignores the content of h̄_s).

    Modes:

    - `"global"`: every valid source position.
    - `"local-m"` (monotonic): only the window |s - p_t| ≤ D around p_t = t, the query's own
      time step (`query_positions`, by default 0, 1, ..., Tq-1).
    - `"local-p"` (predictive): p_t = S · sigmoid(v_pᵀ tanh(W_p h_t)), S the source length
      (the number of valid source positions of the example), and the softmax over the
      window |s - p_t| ≤ D is multiplied by a Gaussian centred at p_t:
      a_t(s) = softmax(score)(s) · exp(-(s - p_t)²/2σ²), σ = D/2. These weights sum to less
      than 1, as in the paper; p_t is differentiable through the Gaussian factor.

    Positions count from 0, so p_t ∈ (0, S) in local-p. Padded source positions (Keras mask
    of `value`, `value_mask` or `key_lengths`) and positions outside the window get exactly
    zero weight; a query whose window holds no valid position gets zero weights and a zero
    context, never NaN. The softmax goes through `attnkit.attention.masking.masked_softmax`,
    in float32 under mixed precision, and so do the positions and the Gaussian.

    Args:
        units: positive int, the size of h̃_t (the output of W_c); also the hidden size of
            the `"concat"` score and of W_p in `"local-p"`.
        score: one of `"dot"` (default), `"general"`, `"concat"`, `"location"`. `"dot"`
            needs d_h == d_s.
        mode: one of `"global"` (default), `"local-m"`, `"local-p"`.
        window: positive int D, the half-width of the local window (σ = D/2). Defaults to
            10, the paper's value. Unused in `"global"` mode.
        max_length: positive int, the largest source length; required by the
            `"location"` score, ignored otherwise.
        **kwargs: base layer keyword arguments, such as `name` and `dtype`.

    Call arguments:
        query: tensor `(batch_size, Tq, d_h)`, the decoder states h_t.
        value: tensor `(batch_size, Tk, d_s)`, the encoder states h̄_s.
        query_mask: optional boolean tensor `(batch_size, Tq)`; `False` rows get zero
            weights. Filled in from a Keras mask carried by `query`.
        value_mask: optional boolean tensor `(batch_size, Tk)`, `False` for padded source
            positions. Filled in from a Keras mask carried by `value`.
        key_lengths: optional integer tensor `(batch_size,)`, the valid source lengths.
        query_positions: optional tensor `(Tq,)` or `(batch_size, Tq)`, the time step t of
            each query for `"local-m"` (e.g. the step index when decoding one step at a
            time). Defaults to 0, ..., Tq-1.
        return_attention_scores: bool, whether to also return the weights a_t.
        return_positions: bool, whether to also return the window centres p_t (only in
            the local modes).

    Returns:
        h̃_t of shape `(batch_size, Tq, units)`; then, when `return_attention_scores=True`,
        the weights of shape `(batch_size, Tq, Tk)`; then, when `return_positions=True`,
        p_t of shape `(batch_size, Tq)` (float).

    Source: Luong, Pham and Manning 2015, §3.1 (global attention, the score functions,
    h̃_t = tanh(W_c[c_t; h_t])) and §3.2 (local-m, local-p and the Gaussian with σ = D/2);
    blog "Luong 注意力" (the query is the current state h_t, not s_{t-1}).
    """

    def __init__(self, units, score="dot", mode="global", window=10, max_length=None, **kwargs):
        super().__init__(**kwargs)
        check_positive_int("units", units)
        check_choice("score", score, SCORES)
        check_choice("mode", mode, MODES)
        check_positive_int("window", window)
        if max_length is not None:
            check_positive_int("max_length", max_length)
        elif score == "location":
            raise ValueError(
                "The 'location' score needs `max_length`, the largest source length. "
                f"Received: max_length={max_length!r}"
            )
        self.units = units
        self.score = score
        self.mode = mode
        self.window = window
        self.max_length = max_length
        policy = self.dtype_policy
        if score == "dot":
            self.score_layer = DotScore(dtype=policy, name="score")
        elif score == "general":
            self.score_layer = BilinearScore(dtype=policy, name="score")
        elif score == "concat":
            self.score_layer = AdditiveScore(units, dtype=policy, name="score")
        else:
            self.score_layer = LocationScore(max_length, dtype=policy, name="score")
        self.combine = precision.Dense(
            units, activation="tanh", use_bias=False, dtype=policy, name="combine"
        )
        if mode == "local-p":
            self.position_hidden = precision.Dense(
                units, activation="tanh", use_bias=False, dtype=policy, name="position_hidden"
            )
            self.position_output = precision.Dense(
                1, use_bias=False, dtype=policy, name="position_output"
            )

    def build(self, query_shape, value_shape):
        query_shape, value_shape = _check_shapes(query_shape, value_shape)
        self.score_layer.build(query_shape, value_shape)
        self.combine.build((*query_shape[:-1], value_shape[-1] + query_shape[-1]))
        if self.mode == "local-p":
            self.position_hidden.build(query_shape)
            self.position_output.build((*query_shape[:-1], self.units))

    def _centres(self, query, value, value_mask, key_lengths, query_positions, dtype):
        """The window centres p_t, shape (B, Tq), in `dtype`."""
        batch_ones = ops.ones((ops.shape(query)[0], 1), dtype)
        if self.mode == "local-m":
            if query_positions is None:
                positions = ops.arange(ops.shape(query)[1], dtype=dtype)
            else:
                positions = ops.cast(query_positions, dtype)
            if len(positions.shape) == 1:
                positions = ops.expand_dims(positions, 0)
            return positions * batch_ones
        # local-p: S is the number of valid source positions of each example.
        key_keep = masking.attention_mask(
            query, value, key_mask=value_mask, key_lengths=key_lengths
        )
        if key_keep is None:
            length = ops.cast(ops.shape(value)[1], dtype) * batch_ones
        else:
            length = ops.sum(ops.cast(key_keep, dtype), axis=-1)  # (B, 1)
        logit = ops.squeeze(self.position_output(self.position_hidden(query)), -1)
        return length * ops.sigmoid(ops.cast(logit, dtype))

    def call(
        self,
        query,
        value,
        query_mask=None,
        value_mask=None,
        key_lengths=None,
        query_positions=None,
        return_attention_scores=False,
        return_positions=False,
    ):
        if return_positions and self.mode == "global":
            raise ValueError(
                "`return_positions=True` needs a local mode ('local-m' or 'local-p'); global "
                f"attention has no window centre. Received: mode={self.mode!r}"
            )
        value = ops.cast(value, self.compute_dtype)
        query = ops.cast(query, self.compute_dtype)
        dtype = work_dtype(self.compute_dtype)
        scores = ops.cast(self.score_layer(query, value), dtype)  # (B, Tq, Tk)
        centres = inside = None
        if self.mode != "global":
            centres = self._centres(query, value, value_mask, key_lengths, query_positions, dtype)
            source = ops.arange(ops.shape(value)[1], dtype=dtype)  # s = 0, ..., Tk-1
            distance = ops.expand_dims(source, 0) - ops.expand_dims(centres, -1)  # (B,Tq,Tk)
            inside = ops.less_equal(ops.abs(distance), float(self.window))
        mask = masking.Masks(query_mask, value_mask, key_lengths, inside).keep(query, value)
        weights = masking.masked_softmax(scores, mask)
        if self.mode == "local-p":
            sigma = self.window / 2.0
            weights = weights * ops.exp(-ops.square(distance) / (2.0 * sigma * sigma))
        weights = ops.cast(weights, self.compute_dtype)
        context = precision.matmul(weights, value)
        output = self.combine(ops.concatenate([context, query], axis=-1))
        outputs = [output]
        if return_attention_scores:
            outputs.append(weights)
        if return_positions:
            outputs.append(centres)
        return outputs[0] if len(outputs) == 1 else tuple(outputs)

    def compute_mask(self, query, previous_mask=None, **kwargs):
        return previous_mask  # h̃_t carries the query's Keras mask

    def compute_output_shape(self, query_shape, value_shape):
        query_shape, _ = _check_shapes(query_shape, value_shape)
        return (*query_shape[:-1], self.units)

    def compute_output_spec(
        self,
        query,
        value,
        query_mask=None,
        value_mask=None,
        key_lengths=None,
        query_positions=None,
        return_attention_scores=False,
        return_positions=False,
    ):
        shape = self.compute_output_shape(query.shape, value.shape)
        outputs = [keras.KerasTensor(shape, dtype=self.compute_dtype)]
        if return_attention_scores:
            outputs.append(keras.KerasTensor((*shape[:2], value.shape[1]), self.compute_dtype))
        if return_positions:
            outputs.append(keras.KerasTensor(shape[:2], dtype=work_dtype(self.compute_dtype)))
        return outputs[0] if len(outputs) == 1 else tuple(outputs)

    def get_config(self):
        config = super().get_config()
        config.update(
            {
                "units": self.units,
                "score": self.score,
                "mode": self.mode,
                "window": self.window,
                "max_length": self.max_length,
            }
        )
        return config
