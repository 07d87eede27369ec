"""Grouped-query attention: Ainslie et al. 2023, "GQA"; multi-query attention: Shazeer 2019.

Multi-head attention with fewer key/value heads than query heads: the H query heads are split
into H_kv groups and the heads of a group share one key and one value head. H_kv = H is
multi-head attention, H_kv = 1 multi-query attention; in between, the key/value cache of
decoding is H / H_kv times smaller for nearly the quality of multi-head attention.
"""

import math

import keras
from keras import ops

from attnkit import precision
from attnkit.alibi import AlibiBias
from attnkit.attention import masking
from attnkit.attention.kv_cache import empty_cache, write_cache
from attnkit.attention.scored import check_same_positions
from attnkit.checks import (
    check_bool,
    check_optional_positive_int,
    check_positive_int,
    check_positive_number,
    check_rank_3,
    check_rate,
    check_seed,
    get_initializer,
)
from attnkit.rotary import PAIRINGS, RotaryEmbedding

__all__ = ["GroupedQueryAttention", "position_mask"]

_MASK_SHAPES = "(Tq, Tk), (batch_size, Tq, Tk) or (batch_size, num_heads, Tq, Tk)"


def _clone(initializer):
    # An unseeded Keras initializer draws the same values at every call: one copy per weight.
    return initializer.__class__.from_config(initializer.get_config())


def position_mask(
    query_length, key_length, query_start=0, causal=False, sliding_window=None, written=None
):
    """The `(Tq, Tk)` keep-mask that depends only on the positions of queries and keys.

    Query i is at position p_i = `query_start` + i, key j at position j.

    - `causal`: keep j ≤ p_i;
    - `sliding_window` w: keep |p_i − j| < w (with `causal`: the w most recent keys,
      p_i − w < j ≤ p_i);
    - `written` n: keep j < n (the positions of a cache written so far).

    Returns:
        A boolean tensor `(Tq, Tk)`, or `None` when none of the three is asked for.
    """
    if not causal and sliding_window is None and written is None:
        return None
    queries = ops.arange(query_length, dtype="int32") + ops.cast(query_start, "int32")
    keys = ops.arange(key_length, dtype="int32")
    offset = queries[:, None] - keys[None, :]  # p_i − j
    keep = ops.ones_like(offset, dtype="bool")
    if causal:
        keep = ops.logical_and(keep, offset >= 0)
    if sliding_window is not None:
        keep = ops.logical_and(keep, ops.abs(offset) < sliding_window)
    if written is not None:
        keep = ops.logical_and(keep, keys[None, :] < ops.cast(written, "int32"))
    return keep


@keras.saving.register_keras_serializable(package="attnkit")
class GroupedQueryAttention(keras.layers.Layer):
    """Multi-head attention whose query heads share key/value heads in groups.

    head_h = softmax((Q W_h^Q)(K W_g(h)^K)ᵀ / √d_head + B_h + M) (V W_g(h)^V),
    g(h) = ⌊h / (H / H_kv)⌋,    output = [head_1; …; head_H] W^O

    Query head h uses key/value head g(h): heads 0 … r − 1 share the first (r = H / H_kv), as
    `repeat_interleave` of the key/value heads does in PyTorch and keras-hub. M is the mask
    (0 where kept, −∞ where not: masked keys get exactly zero weight, a fully masked row zero
    weights and a zero head output) and B_h the optional ALiBi bias. With rotary positions, the
    projected queries and keys are rotated by their positions before the product.

    The weights have the names, shapes and order of `attnkit.MultiHeadAttention`'s with
    `num_heads=H_kv` for the keys and values: `query_kernel (d_q, H, d_head)`,
    `query_bias (H, d_head)`, `key_kernel (d_k, H_kv, d_head)`, `key_bias`,
    `value_kernel (d_v, H_kv, d_head)`, `value_bias`, `output_kernel (H, d_head, d_out)`,
    `output_bias (d_out,)`; with H_kv = H, `set_weights(multi_head.get_weights())` makes the
    two layers compute the same function.

    Masks: `query_mask`, `value_mask`, `key_lengths`, `attention_mask` and `use_causal_mask`
    as in `attnkit.MultiHeadAttention`; `attention_mask` may also be per head,
    `(batch_size or 1, num_heads or 1, Tq, Tk)`; `sliding_window` keeps only keys within that
    distance of the query. Softmax in float32 under mixed precision; float64 stays float64.

    Incremental decoding: pass `cache` (from `empty_cache`, shape
    `(batch_size, 2, max_length, H_kv, d_head)`) and `cache_update_index` (the position of the
    first query). The new positions' keys and values (projected from `key`/`value`) are
    written into the cache at that index, the queries attend over the cache's written positions
    (with causal, window and ALiBi positions counted from the index), and the call returns the
    updated cache too. With `cache_update_index=None` the cache is read as it is (e.g. the
    encoder's keys and values in cross-attention) and `key`/`value` are not used. A
    `value_mask` then covers the cache's `max_length` positions.

    Args:
        num_query_heads: positive int, the number of query heads H.
        num_key_value_heads: positive int H_kv dividing H.
        head_dim: positive int, the size d_head of each head's queries, keys and values.
        output_dim: optional positive int; defaults to the query's feature size.
        dropout: float in [0, 1), dropout rate on the attention weights during training.
        use_bias: bool, whether the four projections have biases. Defaults to `True`.
        sliding_window: optional positive int w: query i attends only to keys j with
            |i − j| < w (the w most recent keys with a causal mask).
        use_rotary: bool, whether queries and keys get rotary positions
            (`attnkit.RotaryEmbedding`). Defaults to `False`.
        rotary_max_wavelength: positive float, the rotary base. Defaults to 10000.
        rotary_pairing: `"halves"` or `"adjacent"`, see `attnkit.RotaryEmbedding`.
        use_alibi: bool, whether the scores get ALiBi's causal bias (`attnkit.AlibiBias`).
        kernel_initializer: initializer of the kernels. Defaults to `"glorot_uniform"`.
        bias_initializer: initializer of the biases. Defaults to `"zeros"`.
        seed: optional int, the seed of the dropout.
        **kwargs: base layer keyword arguments, such as `name` and `dtype`.

    Call arguments:
        query: tensor `(batch_size, Tq, d_q)`.
        value: tensor `(batch_size, Tk, d_v)`.
        key: optional tensor `(batch_size, Tk, d_k)`; defaults to `value`.
        query_mask: optional boolean `(batch_size, Tq)`; filled from `query`'s Keras mask.
        value_mask: optional boolean `(batch_size, Tk)`, the key padding mask; filled from
            `value`'s Keras mask.
        key_lengths: optional integer `(batch_size,)`, the number of valid keys.
        attention_mask: optional boolean of shape `(Tq, Tk)`, `(batch_size, Tq, Tk)` or
            `(batch_size, num_heads, Tq, Tk)` (the batch and head axes may be 1).
        use_causal_mask: bool, whether query i may only attend to keys j ≤ i.
        return_attention_scores: bool, whether to also return the attention weights.
        cache: optional tensor `(batch_size, 2, max_length, H_kv, d_head)`.
        cache_update_index: optional int or scalar integer tensor, see above.
        training: bool, whether dropout is applied.

    Returns:
        The output `(batch_size, Tq, d_out)`; then, when `return_attention_scores`, the
        weights `(batch_size, H, Tq, Tk)` (Tk the cache length with a cache); then, with a
        `cache`, the updated cache.

    Source: Ainslie et al. 2023, "GQA: Training Generalized Multi-Query Transformer Models
    from Multi-Head Checkpoints"; Shazeer 2019, "Fast Transformer Decoding: One Write-Head is
    All You Need"; Vaswani et al. 2017, section 3.2.2; NNDL 8.3.
    """

    def __init__(
        self,
        num_query_heads,
        num_key_value_heads,
        head_dim,
        output_dim=None,
        dropout=0.0,
        use_bias=True,
        sliding_window=None,
        use_rotary=False,
        rotary_max_wavelength=10000.0,
        rotary_pairing="halves",
        use_alibi=False,
        kernel_initializer="glorot_uniform",
        bias_initializer="zeros",
        seed=None,
        **kwargs,
    ):
        super().__init__(**kwargs)
        self.num_query_heads = check_positive_int("num_query_heads", num_query_heads)
        self.num_key_value_heads = check_positive_int("num_key_value_heads", num_key_value_heads)
        if num_query_heads % num_key_value_heads:
            raise ValueError(
                "`num_key_value_heads` must divide `num_query_heads`. Received: "
                f"num_query_heads={num_query_heads}, num_key_value_heads={num_key_value_heads}"
            )
        self.head_dim = check_positive_int("head_dim", head_dim)
        self.output_dim = check_optional_positive_int("output_dim", output_dim)
        self.dropout = check_rate("dropout", dropout)
        self.use_bias = check_bool("use_bias", use_bias)
        self.sliding_window = check_optional_positive_int("sliding_window", sliding_window)
        self.use_rotary = check_bool("use_rotary", use_rotary)
        self.rotary_max_wavelength = check_positive_number(
            "rotary_max_wavelength", rotary_max_wavelength
        )
        if rotary_pairing not in PAIRINGS:
            raise ValueError(
                f"`rotary_pairing` must be one of {PAIRINGS}. "
                f"Received: rotary_pairing={rotary_pairing!r}"
            )
        self.rotary_pairing = rotary_pairing
        self.use_alibi = check_bool("use_alibi", use_alibi)
        self.kernel_initializer = get_initializer("kernel_initializer", kernel_initializer)
        self.bias_initializer = get_initializer("bias_initializer", bias_initializer)
        self.seed = check_seed(seed)
        self.seed_generator = keras.random.SeedGenerator(seed) if self.dropout > 0 else None
        self.rotary = None
        if use_rotary:
            self.rotary = RotaryEmbedding(
                rotary_max_wavelength, pairing=rotary_pairing, dtype=self.dtype_policy
            )
        self.alibi = AlibiBias(dtype=self.dtype_policy) if use_alibi else None

    def _output_dim(self, query_shape):
        return query_shape[-1] if self.output_dim is None else self.output_dim

    def _projection(self, name, shape):
        kernel = self.add_weight(
            name=f"{name}_kernel", shape=shape, initializer=_clone(self.kernel_initializer)
        )
        bias = None
        if self.use_bias:
            bias = self.add_weight(
                name=f"{name}_bias", shape=shape[1:], initializer=_clone(self.bias_initializer)
            )
        return kernel, bias

    def build(self, query_shape, value_shape, key_shape=None):
        query_shape = tuple(query_shape)
        value_shape = tuple(value_shape)
        key_shape = value_shape if key_shape is None else tuple(key_shape)
        for name, shape in (("query", query_shape), ("value", value_shape), ("key", key_shape)):
            check_rank_3(name, shape)
            if shape[-1] is None:
                raise ValueError(
                    f"The last dimension of `{name}` must be known. Received: {name}_shape={shape}"
                )
        check_same_positions(value_shape, key_shape)
        if self.use_rotary and self.head_dim % 2:
            raise ValueError(
                "Rotary positions turn pairs of features: `head_dim` must be even. "
                f"Received: head_dim={self.head_dim}"
            )
        heads, groups, size = self.num_query_heads, self.num_key_value_heads, self.head_dim
        self.query_kernel, self.query_bias = self._projection(
            "query", (query_shape[-1], heads, size)
        )
        self.key_kernel, self.key_bias = self._projection("key", (key_shape[-1], groups, size))
        self.value_kernel, self.value_bias = self._projection(
            "value", (value_shape[-1], groups, size)
        )
        out_dim = self._output_dim(query_shape)
        self.output_kernel = self.add_weight(
            name="output_kernel",
            shape=(heads, size, out_dim),
            initializer=_clone(self.kernel_initializer),
        )
        self.output_bias = None
        if self.use_bias:
            self.output_bias = self.add_weight(
                name="output_bias", shape=(out_dim,), initializer=_clone(self.bias_initializer)
            )

    def empty_cache(self, batch_size, max_length):
        """A cache of zeros for this layer, `(batch_size, 2, max_length, H_kv, d_head)`."""
        return empty_cache(
            batch_size, max_length, self.num_key_value_heads, self.head_dim, self.compute_dtype
        )

    @staticmethod
    def _project(x, kernel, bias):
        x = ops.einsum("btd,dhk->bthk", x, ops.cast(kernel, x.dtype))
        if bias is not None:
            x = x + ops.cast(bias, x.dtype)
        return x

    def _rotate(self, x, start):
        if self.rotary is None:
            return x
        return self.rotary(x, start_index=start)

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
        cache=None,
        cache_update_index=None,
        training=None,
    ):
        if key is None:
            key = value
        per_head_mask = self._check_attention_mask(attention_mask)
        if per_head_mask is not None:
            attention_mask = None
        start = 0 if cache_update_index is None else cache_update_index
        q = self._rotate(self._project(query, self.query_kernel, self.query_bias), start)
        written = None
        if cache is not None and cache_update_index is None:
            k, v = cache[:, 0], cache[:, 1]
        else:
            k = self._rotate(self._project(key, self.key_kernel, self.key_bias), start)
            v = self._project(value, self.value_kernel, self.value_bias)
            if cache is not None:
                cache = write_cache(cache, k, v, cache_update_index)
                k, v = cache[:, 0], cache[:, 1]
                written = start + ops.shape(query)[1]
        t_q, t_k = ops.shape(q)[1], ops.shape(k)[1]
        masks = masking.Masks(query_mask, value_mask, key_lengths, attention_mask, False)
        mask = masks.keep(q, k)  # (B or 1, Tq, Tk) or None
        if mask is not None:
            mask = ops.expand_dims(mask, -3)  # every head
        positions = position_mask(
            t_q, t_k, start, use_causal_mask, self.sliding_window, written
        )  # (Tq, Tk) or None
        mask = masking.combine_masks(mask, positions, per_head_mask)
        heads, weights = self._attend(q, k, v, mask, start, training)
        output = ops.einsum("bqhd,hdo->bqo", heads, ops.cast(self.output_kernel, heads.dtype))
        if self.output_bias is not None:
            output = output + ops.cast(self.output_bias, output.dtype)
        results = (output,)
        if return_attention_scores:
            results += (weights,)
        if cache is not None:
            results += (cache,)
        return results[0] if len(results) == 1 else results

    def _check_attention_mask(self, attention_mask):
        """The per-head `(B, H, Tq, Tk)` mask (None for other ranks), or a ValueError."""
        if attention_mask is None:
            return None
        attention_mask = ops.convert_to_tensor(attention_mask)
        shape = tuple(attention_mask.shape)
        if len(shape) in (2, 3):
            return None
        if len(shape) != 4 or shape[1] not in (None, 1, self.num_query_heads):
            raise ValueError(
                f"`attention_mask` must have shape {_MASK_SHAPES} (with "
                f"num_heads={self.num_query_heads} or 1). Received: attention_mask with shape "
                f"{shape}"
            )
        return ops.cast(attention_mask, "bool")

    def _attend(self, q, k, v, mask, start, training):
        """The heads' outputs `(B, Tq, H, d_head)` and their weights `(B, H, Tq, Tk)`."""
        batch, t_q, t_k = ops.shape(q)[0], ops.shape(q)[1], ops.shape(k)[1]
        heads, groups = self.num_query_heads, self.num_key_value_heads
        per_group = heads // groups
        # The query is scaled before the product, which keeps float16 products in range.
        q = q * precision.constant(1.0 / math.sqrt(self.head_dim), q.dtype)
        q = ops.reshape(q, (batch, t_q, groups, per_group, self.head_dim))
        scores = ops.einsum("bqgrd,bkgd->bgrqk", q, ops.cast(k, q.dtype))
        scores = ops.reshape(scores, (batch, heads, t_q, t_k))
        if self.alibi is not None:
            scores = self.alibi(scores, query_start=start)
        weights = masking.masked_softmax(scores, mask)
        pooled = weights
        if training and self.dropout > 0:
            pooled = keras.random.dropout(weights, rate=self.dropout, seed=self.seed_generator)
        pooled = ops.reshape(pooled, (batch, groups, per_group, t_q, t_k))
        output = ops.einsum("bgrqk,bkgd->bqgrd", pooled, ops.cast(v, pooled.dtype))
        return ops.reshape(output, (batch, t_q, heads, self.head_dim)), weights

    def compute_mask(self, query, query_mask=None, **kwargs):
        return query_mask

    def get_config(self):
        config = super().get_config()
        config.update(
            {
                "num_query_heads": self.num_query_heads,
                "num_key_value_heads": self.num_key_value_heads,
                "head_dim": self.head_dim,
                "output_dim": self.output_dim,
                "dropout": self.dropout,
                "use_bias": self.use_bias,
                "sliding_window": self.sliding_window,
                "use_rotary": self.use_rotary,
                "rotary_max_wavelength": self.rotary_max_wavelength,
                "rotary_pairing": self.rotary_pairing,
                "use_alibi": self.use_alibi,
                "kernel_initializer": keras.initializers.serialize(self.kernel_initializer),
                "bias_initializer": keras.initializers.serialize(self.bias_initializer),
                "seed": self.seed,
            }
        )
        return config
