"""Soft attention and key-value attention over any score function: NNDL (8.6)-(8.10)."""

import keras
from keras import ops

from attnkit import precision
from attnkit.attention import masking
from attnkit.attention.scored import check_same_positions
from attnkit.checks import check_bool, check_rate, check_seed
from attnkit.scoring.registry import resolve_score

__all__ = ["Attention"]

try:
    # Keras keeps the mask of a tensor that cannot hold attributes (JAX) in a side table.
    from keras.src.backend import get_keras_mask as _get_keras_mask
    from keras.src.backend import set_keras_mask as _set_keras_mask
except ImportError:  # pragma: no cover - older Keras 3

    def _get_keras_mask(x):
        return getattr(x, "_keras_mask", None)

    def _set_keras_mask(x, mask):
        if hasattr(x, "_keras_mask"):
            x._keras_mask = mask


SCORE_MODES = ("dot", "concat")


def _is_shape(value):
    """Whether `value` is one shape (ints and Nones), not a list of shapes."""
    return isinstance(value, (tuple, list)) and all(d is None or isinstance(d, int) for d in value)


def _and(*masks):
    """Logical AND of the masks given (each cast to bool), or None."""
    return masking.combine_masks(*(None if m is None else ops.convert_to_tensor(m) for m in masks))


def _renamed_shape(inputs_shape, kwargs):
    """`inputs_shape`, or the `input_shape` in `kwargs` (Keras's name); refuses the rest."""
    if "input_shape" in kwargs:
        if inputs_shape is not None:
            raise ValueError(
                "Give the shapes once, as `inputs_shape` or `input_shape`. Received: both"
            )
        inputs_shape = kwargs.pop("input_shape")
    if kwargs or inputs_shape is None:
        raise ValueError(
            "`build` takes `inputs_shape` (or Keras's `input_shape`), then optionally "
            f"`value_shape` and `key_shape`. Received: {sorted(kwargs) or 'no inputs_shape'}"
        )
    return inputs_shape


@keras.saving.register_keras_serializable(package="attnkit")
class Attention(keras.layers.Layer):
    """Attention pooling over a score function: soft attention and key-value attention.

    α = softmax_j(s(q, k_j)),  att((K, V), q) = Σ_j α_j v_j

    With `key=None` the keys are the values (soft attention, NNDL (8.6)-(8.7):
    att(X, q) = Σ_n α_n x_n); with a separate `key` it is key-value attention
    (NNDL (8.9)-(8.10)). A drop-in for `keras.layers.Attention`: the same arguments, weights
    (`scale`, `concat_score_weight`), list-style call `layer([query, value, key],
    mask=[query_mask, value_mask])` and hook `_calculate_scores(query, key)`. The score is

    - `score_mode="dot"` (Luong's dot, NNDL (8.3)): s(q, k) = qᵀk, times the learned scalar
      `scale` when `use_scale` (initialised to 1);
    - `score_mode="concat"`: s(q, k) = c Σ_d tanh(a (q + k))_d with the learned scalars
      c = `concat_score_weight` and a = `scale` (when `use_scale`; else a = 1);
    - attnkit's extra: any score layer given as `score` (e.g. `AdditiveScore(units=16)`,
      the book's additive score vᵀ tanh(W_q q + W_k k) with its own weights, or
      `"scaled_dot"`, `"bilinear"`, `"cosine"`), times `scale` when `use_scale`.

    Every key mask (a Keras mask carried by `value`, `value_mask`, `key_lengths`,
    `attention_mask`, the causal mask) goes through `attnkit.attention.masking`: masked keys
    get exactly zero weight, and a query with no key left gets zero weights and a zero
    output, never NaN. A masked query (its Keras mask or `query_mask`) is attended as usual
    and its output set to zero, as in Keras. The softmax is computed in float32 under mixed
    precision. Differences from Keras's layer: `docs/keras_differences.md`.

    Args:
        use_scale: bool, whether the scores are multiplied by a learned scalar `scale`.
            Defaults to `False`. (attnkit's former first argument, `score`, is still taken
            here when it is not a bool.)
        score_mode: `"dot"` (the default) or `"concat"`; see above. Ignored when `score` is
            given.
        dropout: float in [0, 1), dropout rate applied to the attention weights during
            training. Defaults to 0.
        seed: optional int, the seed of the dropout.
        score: optional score layer (attnkit's extra): a layer instance, a name accepted by
            `attnkit.scoring.get_score` or a layer config dict. Replaces `score_mode`.
        **kwargs: base layer keyword arguments, such as `name` and `dtype`.

    Call arguments:
        inputs: the query, a tensor `(batch_size, Tq, d_q)`, or the list
            `[query, value]` or `[query, value, key]` (Keras's form).
        value: tensor `(batch_size, Tk, d_v)`, when `inputs` is the query alone.
        key: optional tensor `(batch_size, Tk, d_k)`; defaults to `value`.
        mask: optional list `[query_mask, value_mask]` (Keras's form), each a boolean
            tensor `(batch_size, Tq)` / `(batch_size, Tk)` or None; filled in from the Keras
            masks of a list `inputs`.
        query_mask: optional boolean tensor `(batch_size, Tq)`: `False` queries give a zero
            output. Filled in from a Keras mask carried by the query.
        value_mask: optional boolean tensor `(batch_size, Tk)`, the key padding mask
            (`False` keys get zero weight). Filled in from a Keras mask carried by `value`.
        key_lengths: optional integer tensor `(batch_size,)`, the number of valid keys.
        attention_mask: optional boolean tensor `(batch_size, Tq, Tk)` or `(Tq, Tk)`.
        return_attention_scores: bool, whether to also return the attention weights.
        training: bool, whether dropout is applied.
        use_causal_mask: bool, whether query i may only attend to keys j <= i.

    Returns:
        The attention output of shape `(batch_size, Tq, d_v)`, and, when
        `return_attention_scores=True`, also the attention weights α of shape
        `(batch_size, Tq, Tk)` (after dropout, as Keras's). The output carries the query's
        mask. Inputs of higher rank `(batch_size, ..., T, d)` attend over the axis before
        the features.

    Source: NNDL (8.6)-(8.7) (soft attention) and (8.9)-(8.10) (key-value attention);
    Luong et al. 2015 (dot and concat scores).
    """

    def __init__(
        self,
        use_scale=False,
        score_mode="dot",
        dropout=0.0,
        seed=None,
        score=None,
        **kwargs,
    ):
        super().__init__(**kwargs)
        if not isinstance(use_scale, bool):
            # attnkit's former signature: Attention(score, dropout, seed).
            if score is not None:
                raise ValueError(
                    "`use_scale` must be a bool. Received: "
                    f"use_scale={use_scale!r}, score={score!r}"
                )
            score, use_scale = use_scale, False
        self.use_scale = check_bool("use_scale", use_scale)
        if not (isinstance(score_mode, str) and score_mode in SCORE_MODES):
            raise ValueError(
                "Invalid value for argument score_mode. Expected one of {'dot', 'concat'}. "
                f"Received: score_mode={score_mode!r}"
            )
        self.score_mode = score_mode
        self.dropout = check_rate("dropout", dropout)
        self.seed = check_seed(seed)
        self.seed_generator = keras.random.SeedGenerator(seed) if self.dropout > 0 else None
        self.score_layer = (
            None if score is None else resolve_score(score, "score", dtype=self.dtype_policy)
        )
        self.supports_masking = True
        self.scale = None
        self.concat_score_weight = None

    # ------------------------------------------------------------------ building
    def _shapes(self, inputs_shape, value_shape=None, key_shape=None):
        """(query_shape, value_shape, key_shape) from either form of the shapes."""
        if not _is_shape(inputs_shape):
            self._validate_inputs(list(inputs_shape))
            inputs_shape, value_shape, *rest = inputs_shape
            key_shape = rest[0] if rest else None
        if value_shape is None:
            raise ValueError(
                f"{type(self).__name__} layer must be called on a list of inputs, "
                "[query, value] or [query, value, key], or as layer(query, value): it needs "
                f"the value's shape. Received: inputs_shape={inputs_shape}"
            )
        query_shape, value_shape = tuple(inputs_shape), tuple(value_shape)
        key_shape = value_shape if key_shape is None else tuple(key_shape)
        return query_shape, value_shape, key_shape

    def build(self, inputs_shape=None, value_shape=None, key_shape=None, **kwargs):
        # `input_shape` is Keras's name for the list of shapes (`build(input_shape=[...])`); it
        # cannot be a named parameter, since Keras matches them with the call's arguments.
        inputs_shape = _renamed_shape(inputs_shape, kwargs)
        query_shape, value_shape, key_shape = self._shapes(inputs_shape, value_shape, key_shape)
        if len(value_shape) != len(query_shape) or len(key_shape) != len(query_shape):
            raise ValueError(
                "`query`, `value` and `key` must have the same rank. "
                f"Received: query_shape={query_shape}, value_shape={value_shape}, "
                f"key_shape={key_shape}"
            )
        check_same_positions(value_shape, key_shape)
        if self.score_layer is not None and not self.score_layer.built:
            self.score_layer.build(query_shape, key_shape)
        self._build_score_weights(query_shape)

    def _build_score_weights(self, query_shape):
        if self.use_scale:
            self.scale = self.add_weight(
                name="scale", shape=(), initializer="ones", dtype=self.dtype
            )
        if self.score_layer is None and self.score_mode == "concat":
            self.concat_score_weight = self.add_weight(
                name="concat_score_weight", shape=(), initializer="ones", dtype=self.dtype
            )

    # ------------------------------------------------------------------ the call
    def _calculate_scores(self, query, key):
        """The scores s(q_i, k_j) of every query with every key, `(batch_size, Tq, Tk)`: the
        hook a subclass overrides for another score (Keras's hook, same signature)."""
        dtype = query.dtype
        if self.score_layer is not None:
            scores = ops.cast(self.score_layer(query, key), dtype)
            if self.scale is not None:
                scores = scores * ops.cast(self.scale, dtype)
            return scores
        key = ops.cast(key, dtype)
        if self.score_mode == "dot":
            scores = precision.matmul(query, ops.swapaxes(key, -2, -1))
            if self.scale is not None:
                scores = scores * ops.cast(self.scale, dtype)
            return scores
        # Every query with every key: (..., Tq, 1, d) + (..., 1, Tk, d).
        pairs = ops.expand_dims(query, -2) + ops.expand_dims(key, -3)
        if self.scale is not None:
            pairs = pairs * ops.cast(self.scale, dtype)
        return ops.cast(self.concat_score_weight, dtype) * ops.sum(precision.tanh(pairs), -1)

    def _calculate_score_mask(self, scores, v_mask, use_causal_mask):
        """The keep-mask of the keys for `scores` `(..., Tq, Tk)`: the value mask
        `(batch_size, Tk)` as `(batch_size, 1, Tk)`, and with `use_causal_mask` the causal
        mask `(1, Tq, Tk)`; None when there is neither."""
        if v_mask is not None:
            v_mask = ops.expand_dims(ops.cast(v_mask, "bool"), -2)
        if not use_causal_mask:
            return v_mask
        causal = ops.expand_dims(
            masking.causal_mask(ops.shape(scores)[-2], ops.shape(scores)[-1]), 0
        )
        return masking.combine_masks(v_mask, causal)

    def _validate_inputs(self, inputs, mask=None):
        """Keras's checks of a list-style call: 2 or 3 inputs, a mask list of 2 or 3."""
        name = type(self).__name__
        if not isinstance(inputs, (list, tuple)):
            raise ValueError(
                f"{name} layer must be called on a list of inputs, [query, value] or "
                f"[query, value, key], or as layer(query, value). Received: inputs={inputs}"
            )
        if not 2 <= len(inputs) <= 3:
            raise ValueError(
                f"{name} layer takes a list of inputs of length 2 or 3, [query, value] or "
                f"[query, value, key]. Received: length {len(inputs)}"
            )
        if mask is not None:
            if not isinstance(mask, (list, tuple)):
                raise ValueError(
                    f"{name} layer mask must be a list, [query_mask, value_mask]. "
                    f"Received: mask={mask}"
                )
            if not 2 <= len(mask) <= 3:
                raise ValueError(
                    f"{name} layer takes a mask list of length 2 or 3, [query_mask, "
                    f"value_mask]. Received: length {len(mask)}"
                )

    def _unpack(self, inputs, value, key, mask, query_mask, value_mask):
        """query, value, key, query_mask, value_mask from either form of the call."""
        if isinstance(inputs, (list, tuple)):
            if value is not None or key is not None:
                raise ValueError(
                    f"{type(self).__name__} takes the value and key either in the list "
                    "`inputs` or as arguments, not both. Received: a list of "
                    f"{len(inputs)} inputs and value={'set' if value is not None else None}"
                )
            self._validate_inputs(inputs, mask)
            query, value, *rest = inputs
            key = rest[0] if rest else None
        else:
            query = inputs
            if value is None:
                self._validate_inputs(inputs)
            if mask is not None:
                self._validate_inputs([query, value], mask)
        if mask is not None:
            query_mask = _and(query_mask, mask[0])
            value_mask = _and(value_mask, *mask[1:])
        if query_mask is None:
            query_mask = _get_keras_mask(query)
        return query, value, value if key is None else key, query_mask, value_mask

    def call(
        self,
        inputs,
        value=None,
        key=None,
        mask=None,
        query_mask=None,
        value_mask=None,
        key_lengths=None,
        attention_mask=None,
        return_attention_scores=False,
        training=None,
        use_causal_mask=False,
    ):
        if isinstance(value, (list, tuple)) and isinstance(inputs, (list, tuple)):
            mask, value = value, None  # layer([q, v], [q_mask, v_mask]), Keras's positions
        query, value, key, query_mask, value_mask = self._unpack(
            inputs, value, key, mask, query_mask, value_mask
        )
        scores = self._calculate_scores(query, key)
        scores = ops.cast(scores, self.compute_dtype)
        if len(query.shape) == 3:
            keep = masking.attention_mask(
                query,
                key,
                key_mask=value_mask,
                key_lengths=key_lengths,
                attention_mask=attention_mask,
                use_causal_mask=use_causal_mask,
            )
        else:
            keep = self._calculate_score_mask(scores, value_mask, use_causal_mask)
            keep = _and(keep, attention_mask)
        weights = masking.masked_softmax(scores, keep)
        if training and self.dropout > 0:
            weights = keras.random.dropout(weights, rate=self.dropout, seed=self.seed_generator)
        output = precision.matmul(weights, ops.cast(value, weights.dtype))
        if query_mask is not None:
            query_mask = ops.cast(query_mask, "bool")
            output = ops.where(ops.expand_dims(query_mask, -1), output, ops.zeros_like(output))
            _set_keras_mask(output, query_mask)
        if return_attention_scores:
            return output, weights
        return output

    def compute_mask(self, inputs, mask=None, **kwargs):
        """The query's mask: `mask[0]` of a mask list, or the mask given."""
        if isinstance(inputs, (list, tuple)):
            self._validate_inputs(inputs, mask)
        if mask is None:
            return None
        if isinstance(mask, (list, tuple)):
            return None if mask[0] is None else ops.convert_to_tensor(mask[0])
        return mask

    def compute_output_shape(self, input_shape, value_shape=None, key_shape=None):
        query_shape, value_shape, _ = self._shapes(input_shape, value_shape, key_shape)
        return (*query_shape[:-1], value_shape[-1])

    def compute_output_spec(
        self,
        inputs,
        value=None,
        key=None,
        mask=None,
        query_mask=None,
        value_mask=None,
        key_lengths=None,
        attention_mask=None,
        return_attention_scores=False,
        training=None,
        use_causal_mask=False,
    ):
        if isinstance(value, (list, tuple)) and isinstance(inputs, (list, tuple)):
            mask, value = value, None
        query, value, key, _, _ = self._unpack(inputs, value, key, mask, None, None)
        output = keras.KerasTensor(
            self.compute_output_shape(query.shape, value.shape, key.shape),
            dtype=self.compute_dtype,
        )
        if not return_attention_scores:
            return output
        weights_shape = (*query.shape[:-1], key.shape[-2])
        return output, keras.KerasTensor(weights_shape, dtype=self.compute_dtype)

    def get_config(self):
        config = super().get_config()
        config.update(
            {
                "use_scale": self.use_scale,
                "score_mode": self.score_mode,
                "dropout": self.dropout,
                "seed": self.seed,
                "score": (
                    None
                    if self.score_layer is None
                    else keras.saving.serialize_keras_object(self.score_layer)
                ),
            }
        )
        return config

    @classmethod
    def from_config(cls, config):
        config = dict(config)
        if isinstance(config.get("score"), dict):
            config["score"] = resolve_score(config["score"], "score")
        return super().from_config(config)
