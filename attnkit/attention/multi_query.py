"""Multi-query attention: several queries over the same keys and values, NNDL (8.11)."""

import keras
from keras import ops

from attnkit.attention import masking
from attnkit.attention.scored import ScoredAttention, attention_output_spec, check_same_positions

__all__ = ["MultiQueryAttention"]


@keras.saving.register_keras_serializable(package="attnkit")
class MultiQueryAttention(ScoredAttention):
    """Multi-query attention: M queries attend in parallel, their outputs are concatenated.

    att((K, V), Q) = att((K, V), q_1) ⊕ att((K, V), q_2) ⊕ ... ⊕ att((K, V), q_M),
    att((K, V), q_m) = Σ_j softmax_j(s(q_m, k_j)) v_j

    Shape choice: the M queries of a position are a separate axis of the query, which has
    shape `(batch_size, Tq, M, d_q)` (Tq positions, e.g. decoding steps, each asking M
    questions). Every query attends over the same keys and values with the same score
    function and no projections (NNDL's multi-head attention in its original sense; the
    projected version is `MultiHeadAttention`). The M outputs of a position are
    concatenated, query 1's first: the output has shape `(batch_size, Tq, M * d_v)`.

    All masks are per position and go through `attnkit.attention.attention_mask`; they apply
    to all M queries of a position alike. Masked keys get exactly zero weight; a fully
    masked row gives zero weights and a zero output, never NaN. The softmax is computed in
    float32 under mixed precision.

    Args:
        score: the score function: a layer instance, a name accepted by
            `attnkit.scoring.get_score` (`"dot"`, `"scaled_dot"`, `"bilinear"`, `"cosine"`)
            or a layer config dict. Defaults to `"scaled_dot"`.
        **kwargs: base layer keyword arguments, such as `name` and `dtype`.

    Call arguments:
        query: tensor of shape `(batch_size, Tq, M, d_q)`, M queries per position.
        value: tensor of shape `(batch_size, Tk, d_v)`.
        key: optional tensor of shape `(batch_size, Tk, d_k)`; defaults to `value`.
        query_mask: optional boolean tensor `(batch_size, Tq)`; `False` positions get zero
            weights for all their queries.
        value_mask: optional boolean tensor `(batch_size, Tk)`, the key padding mask. Filled
            in automatically from a Keras mask carried by `value`.
        key_lengths: optional integer tensor `(batch_size,)`, the number of valid keys.
        attention_mask: optional boolean tensor `(batch_size, Tq, Tk)` or `(Tq, Tk)`.
        use_causal_mask: bool, whether position i may only attend to keys j <= i.
        return_attention_scores: bool, whether to also return the attention weights.

    Returns:
        The concatenated outputs of shape `(batch_size, Tq, M * d_v)`, and, when
        `return_attention_scores=True`, also the attention weights of shape
        `(batch_size, Tq, M, Tk)`.

    Source: NNDL 8.2.1.3, equation (8.11) ("multi-head attention": several queries).
    """

    def __init__(self, score="scaled_dot", **kwargs):
        super().__init__(score, **kwargs)

    def build(self, query_shape, value_shape, key_shape=None):
        query_shape = tuple(query_shape)
        value_shape = tuple(value_shape)
        key_shape = value_shape if key_shape is None else tuple(key_shape)
        if len(query_shape) != 4:
            raise ValueError(
                "`query` must have shape (batch_size, Tq, M, d_q). "
                f"Received: query_shape={query_shape}"
            )
        if len(value_shape) != 3 or len(key_shape) != 3:
            raise ValueError(
                "`value` and `key` must have shape (batch_size, Tk, d). "
                f"Received: value_shape={value_shape}, key_shape={key_shape}"
            )
        check_same_positions(value_shape, key_shape)
        if not self.score_layer.built:
            # The score sees the M queries of every position as Tq * M queries.
            flat = None if None in query_shape[1:3] else query_shape[1] * query_shape[2]
            self.score_layer.build((query_shape[0], flat, query_shape[-1]), key_shape)

    def call(
        self,
        query,
        value,
        key=None,
        query_mask=None,
        value_mask=None,
        key_lengths=None,
        attention_mask=None,
        use_causal_mask=False,
        return_attention_scores=False,
    ):
        if key is None:
            key = value
        batch, t_q, m = ops.shape(query)[0], ops.shape(query)[1], ops.shape(query)[2]
        t_k = ops.shape(key)[1]
        # (B, Tq, M, d) -> (B, Tq*M, d): query m of position i is row i*M + m.
        flat_query = ops.reshape(query, (batch, -1, ops.shape(query)[-1]))
        scores = ops.cast(self.score_layer(flat_query, key), self.compute_dtype)
        scores = ops.reshape(scores, (batch, t_q, m, t_k))
        masks = masking.Masks(query_mask, value_mask, key_lengths, attention_mask, use_causal_mask)
        mask = masks.keep(query, key)  # per position: the M queries of a position alike
        if mask is not None:
            mask = ops.expand_dims(mask, -2)  # the same mask for the M queries
        weights = masking.masked_softmax(scores, mask)
        outputs = ops.einsum("bqmk,bkd->bqmd", weights, ops.cast(value, weights.dtype))
        output = ops.reshape(outputs, (batch, t_q, -1))  # q_1's output first
        if return_attention_scores:
            return output, weights
        return output

    def compute_output_shape(self, query_shape, value_shape, key_shape=None):
        query_shape = tuple(query_shape)
        m, d_v = query_shape[2], tuple(value_shape)[-1]
        return (*query_shape[:2], None if m is None or d_v is None else m * d_v)

    def compute_output_spec(
        self,
        query,
        value,
        key=None,
        query_mask=None,
        value_mask=None,
        key_lengths=None,
        attention_mask=None,
        use_causal_mask=False,
        return_attention_scores=False,
    ):
        return attention_output_spec(
            self, query, value, key, return_attention_scores, lambda q, k: (*q[:3], k[-2])
        )
