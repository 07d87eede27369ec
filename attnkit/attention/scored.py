"""What the attention layers that own a score function share.

`HardAttention` and `MultiQueryAttention` each take a `score` (a layer, a name or a config),
build it, serialize it, pass the query's Keras mask on, and (the first) turn the scores into
masked weights through the one mask path. That lives here once. (`Attention` follows
`keras.layers.Attention`'s structure instead: its score is optional, see its docstring.)
"""

import keras

from attnkit.scoring.registry import resolve_score


class ScoredAttention(keras.layers.Layer):
    """Base of attention layers built on a score layer (not used on its own)."""

    def __init__(self, score="scaled_dot", **kwargs):
        super().__init__(**kwargs)
        self.score_layer = resolve_score(score, "score", dtype=self.dtype_policy)

    def _build_score(self, query_shape, value_shape, key_shape=None):
        """Checks (B, Tq, d_q), (B, Tk, d_v), (B, Tk, d_k) shapes and builds the score."""
        query_shape = tuple(query_shape)
        value_shape = tuple(value_shape)
        key_shape = value_shape if key_shape is None else tuple(key_shape)
        if len(value_shape) != len(query_shape) or len(key_shape) != len(query_shape):
            raise ValueError(
                "`query`, `value` and `key` must have the same rank. "
                f"Received: query_shape={query_shape}, value_shape={value_shape}, "
                f"key_shape={key_shape}"
            )
        check_same_positions(value_shape, key_shape)
        if not self.score_layer.built:
            self.score_layer.build(query_shape, key_shape)

    def _scores_and_mask(self, query, key, masks):
        """The scores (B, Tq, Tk) in the compute dtype and the keep-mask of `masks` (a
        `masking.Masks`), or None."""
        scores = keras.ops.cast(self.score_layer(query, key), self.compute_dtype)
        return scores, masks.keep(query, key)

    def compute_mask(self, query, query_mask=None, **kwargs):
        return query_mask

    def get_config(self):
        config = super().get_config()
        config["score"] = keras.saving.serialize_keras_object(self.score_layer)
        return config

    @classmethod
    def from_config(cls, config):
        config = dict(config)
        if isinstance(config.get("score"), dict):
            config["score"] = resolve_score(config["score"], "score")
        return super().from_config(config)


def check_same_positions(value_shape, key_shape):
    t_v, t_k = value_shape[-2], key_shape[-2]
    if t_v is not None and t_k is not None and t_v != t_k:
        raise ValueError(
            "`key` and `value` must have the same number of positions. "
            f"Received: value_shape={value_shape}, key_shape={key_shape}"
        )


def attention_output_spec(layer, query, value, key, return_attention_scores, weights_shape):
    """The symbolic result of a layer called as `layer(query, value, key=None, ...)`: its output
    (shaped by `layer.compute_output_shape`) and, with `return_attention_scores`, the weights,
    shaped `weights_shape(query_shape, key_shape)`."""
    key = value if key is None else key
    output = keras.KerasTensor(
        layer.compute_output_shape(query.shape, value.shape, key.shape),
        dtype=layer.compute_dtype,
    )
    if not return_attention_scores:
        return output
    shape = weights_shape(tuple(query.shape), tuple(key.shape))
    return output, keras.KerasTensor(shape, dtype=layer.compute_dtype)
