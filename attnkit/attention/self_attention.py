"""Self-attention, NNDL (8.16)-(8.22), and multi-head self-attention, NNDL 8.3."""

import math

import keras
from keras import ops

from attnkit import precision
from attnkit.attention import masking
from attnkit.attention.blockwise import attend_in_blocks
from attnkit.attention.dispatch import check_implementation, choose_implementation
from attnkit.attention.multi_head import MultiHeadAttention, clone_initializer
from attnkit.checks import (
    check_bool,
    check_optional_positive_int,
    check_positive_int,
    check_rank_3,
    check_rate,
    check_seed,
    get_initializer,
    renamed_argument,
)

try:
    # Keras keeps the mask of a tensor that cannot hold attributes (JAX) in a side table.
    from keras.src.backend import get_keras_mask as _get_keras_mask
except ImportError:  # pragma: no cover - older Keras 3

    def _get_keras_mask(x):
        return getattr(x, "_keras_mask", None)


__all__ = ["MultiHeadSelfAttention", "SelfAttention"]


class _PaddingMaskMixin:
    """Shared mask handling of the two self-attention layers.

    Keras fills a `mask` call argument from the input's Keras mask only when `inputs` is the
    only tensor argument; `__call__` also fills it when `key_lengths` is given as a tensor.
    `lengths`, the old name of `key_lengths`, still works, with a DeprecationWarning.
    """

    def __call__(self, inputs, *args, lengths=None, **kwargs):
        if lengths is not None:
            kwargs["key_lengths"] = renamed_argument(
                "key_lengths", kwargs.get("key_lengths"), "lengths", lengths
            )
        if not args and kwargs.get("mask") is None and kwargs.get("key_lengths") is not None:
            kwargs["mask"] = _get_keras_mask(inputs)
        return super().__call__(inputs, *args, **kwargs)

    @staticmethod
    def _padding_mask(inputs, mask, key_lengths):
        """(B, T) keep-mask of the real positions: the Keras mask AND `j < key_lengths[b]`."""
        length_mask = None
        if key_lengths is not None:
            length_mask = masking.length_mask(key_lengths, ops.shape(inputs)[-2])
        return masking.combine_masks(mask, length_mask)

    def compute_mask(self, inputs, mask=None, **kwargs):
        return mask


@keras.saving.register_keras_serializable(package="attnkit")
class SelfAttention(_PaddingMaskMixin, keras.layers.Layer):
    """Self-attention (query-key-value mode): every position attends to every position.

    Q = X W_q,  K = X W_k,  V = X W_v,  H = softmax(Q Kᵀ / √d_k) V

    NNDL writes the sequence as columns, Q = W_q X and H = V softmax(Kᵀ Q / √D_k) with a
    column-wise softmax (8.22); here the positions are rows (Keras's layout), so the
    kernels are the transposed matrices and the softmax runs over each row. The weights are
    `query_kernel (d, key_dim)`, `key_kernel (d, key_dim)` and `value_kernel (d, value_dim)`
    (with `query_bias`, `key_bias`, `value_bias` when `use_bias`; the key bias has no
    effect, since it adds q·b_k to every score of a row). There is no output projection
    (that is `MultiHeadSelfAttention`'s W^O).

    Padding (a Keras mask or `key_lengths`) masks both the keys and the queries: a padded
    position is attended to by nobody and its own output row is zero. All masks go through
    `attnkit.attention.attention_mask`; masked weights are exactly zero and a fully masked
    row gives zeros, never NaN. The softmax is computed in float32 under mixed precision.
    Self-attention ignores the order of the positions (permuting the inputs permutes the
    outputs); add `SinusoidalPositionEncoding` or `LearnedPositionEmbedding` first.

    Args:
        key_dim: positive int, D_k, the size of the queries and keys.
        value_dim: optional positive int, D_v, the size of the values and of the output;
            defaults to `key_dim`.
        use_causal_mask: bool, whether position i may only attend to positions j <= i
            (decoder self-attention). Defaults to `False`.
        dropout: float in [0, 1), dropout rate on the attention weights during training.
        use_bias: bool, whether the projections have biases. Defaults to `False` (the
            book's Q = W_q X).
        kernel_initializer: initializer of the kernels. Defaults to `"glorot_uniform"`.
        bias_initializer: initializer of the biases. Defaults to `"zeros"`.
        seed: optional int, the seed of the dropout.
        implementation: `"plain"` (forms the T × T weights) or `"blockwise"` (keys in blocks
            with an online softmax, recomputed in the backward pass: no T × T scores in either
            pass, same result; see `attnkit.attention.blockwise_attention`).
        block_size: positive int, keys per block of the `"blockwise"` path, or `None` (the
            default) for `attnkit.attention.blockwise.default_block_size(Tk)`.
        **kwargs: base layer keyword arguments, such as `name` and `dtype`.

    Call arguments:
        inputs: tensor of shape `(batch_size, T, d)`, the sequence X.
        mask: optional boolean tensor `(batch_size, T)`, `False` at padded positions. Filled
            in automatically from a Keras mask carried by `inputs` (e.g. after
            `Embedding(mask_zero=True)`).
        key_lengths: optional integer tensor `(batch_size,)`, the number of real positions of
            each sequence (the same as `mask[b, j] = j < key_lengths[b]`); formerly
            `lengths`, which still works with a DeprecationWarning.
        return_attention_scores: bool, whether to also return the attention weights.
        training: bool, whether dropout is applied.

    Returns:
        H of shape `(batch_size, T, value_dim)`, and, when `return_attention_scores=True`,
        also the attention weights α of shape `(batch_size, T, T)` (before dropout), row n
        holding α_nj. The output carries the input's Keras mask.

    Source: NNDL 8.3, equations (8.16)-(8.22); Vaswani et al. 2017.
    """

    def __init__(
        self,
        key_dim,
        value_dim=None,
        use_causal_mask=False,
        dropout=0.0,
        use_bias=False,
        kernel_initializer="glorot_uniform",
        bias_initializer="zeros",
        seed=None,
        implementation="plain",
        block_size=None,
        **kwargs,
    ):
        super().__init__(**kwargs)
        check_positive_int("key_dim", key_dim)
        self.key_dim = key_dim
        self.value_dim = check_optional_positive_int("value_dim", value_dim)
        self.use_causal_mask = check_bool("use_causal_mask", use_causal_mask)
        self.dropout = check_rate("dropout", dropout)
        self.use_bias = check_bool("use_bias", use_bias)
        self.kernel_initializer = get_initializer("kernel_initializer", kernel_initializer)
        self.bias_initializer = get_initializer("bias_initializer", bias_initializer)
        self.seed = check_seed(seed)
        self.seed_generator = keras.random.SeedGenerator(seed) if self.dropout > 0 else None
        self.implementation = check_implementation(
            implementation, ("plain", "blockwise"), self.dropout
        )
        check_optional_positive_int("block_size", block_size)
        self.block_size = block_size

    @property
    def _value_dim(self):
        return self.key_dim if self.value_dim is None else self.value_dim

    def build(self, input_shape):
        input_shape = tuple(input_shape)
        check_rank_3("inputs", input_shape)
        d = input_shape[-1]
        if d is None:
            raise ValueError(
                f"The last dimension of `inputs` must be known. Received: inputs_shape="
                f"{input_shape}"
            )
        self.query_kernel = self._kernel("query_kernel", (d, self.key_dim))
        self.key_kernel = self._kernel("key_kernel", (d, self.key_dim))
        self.value_kernel = self._kernel("value_kernel", (d, self._value_dim))
        self.query_bias = self.key_bias = self.value_bias = None
        if self.use_bias:
            self.query_bias = self._bias("query_bias", (self.key_dim,))
            self.key_bias = self._bias("key_bias", (self.key_dim,))
            self.value_bias = self._bias("value_bias", (self._value_dim,))

    def _kernel(self, name, shape):
        return self.add_weight(
            name=name, shape=shape, initializer=clone_initializer(self.kernel_initializer)
        )

    def _bias(self, name, shape):
        return self.add_weight(
            name=name, shape=shape, initializer=clone_initializer(self.bias_initializer)
        )

    @staticmethod
    def _project(x, kernel, bias):
        x = precision.matmul(x, ops.cast(kernel, x.dtype))
        return x if bias is None else x + ops.cast(bias, x.dtype)

    def call(
        self, inputs, mask=None, key_lengths=None, return_attention_scores=False, training=None
    ):
        q = self._project(inputs, self.query_kernel, self.query_bias)  # (8.16)
        k = self._project(inputs, self.key_kernel, self.key_bias)  # (8.17)
        v = self._project(inputs, self.value_kernel, self.value_bias)  # (8.18)
        padding = self._padding_mask(inputs, mask, key_lengths)
        masks = masking.Masks(padding, padding, use_causal_mask=self.use_causal_mask)
        if choose_implementation(self.implementation, return_attention_scores, False) != "plain":
            one_head = (ops.expand_dims(x, 2) for x in (q, k, v))
            return ops.squeeze(attend_in_blocks(*one_head, masks, self.block_size), 2)
        attention_mask = masks.keep(q, k)
        # (8.22), rows for columns: scale Q first, which keeps float16 products in range.
        scale = precision.constant(1.0 / math.sqrt(self.key_dim), q.dtype)
        scores = precision.matmul(q * scale, ops.swapaxes(k, -1, -2))
        weights = masking.masked_softmax(scores, attention_mask)
        pooled = weights
        if training and self.dropout > 0:
            pooled = keras.random.dropout(weights, rate=self.dropout, seed=self.seed_generator)
        output = precision.matmul(pooled, v)
        if return_attention_scores:
            return output, weights
        return output

    def compute_output_shape(self, input_shape):
        return (*tuple(input_shape)[:-1], self._value_dim)

    def compute_output_spec(
        self, inputs, mask=None, key_lengths=None, return_attention_scores=False, training=None
    ):
        output = keras.KerasTensor(
            self.compute_output_shape(inputs.shape), dtype=self.compute_dtype
        )
        if return_attention_scores:
            b, t = tuple(inputs.shape)[:2]
            return output, keras.KerasTensor((b, t, t), dtype=self.compute_dtype)
        return output

    def get_config(self):
        config = super().get_config()
        config.update(
            {
                "key_dim": self.key_dim,
                "value_dim": self.value_dim,
                "use_causal_mask": self.use_causal_mask,
                "dropout": self.dropout,
                "use_bias": self.use_bias,
                "kernel_initializer": keras.initializers.serialize(self.kernel_initializer),
                "bias_initializer": keras.initializers.serialize(self.bias_initializer),
                "implementation": self.implementation,
                "block_size": self.block_size,
                "seed": self.seed,
            }
        )
        return config


@keras.saving.register_keras_serializable(package="attnkit")
class MultiHeadSelfAttention(_PaddingMaskMixin, keras.layers.Layer):
    """Multi-head self-attention: self-attention in several projection spaces at once.

    head_h = softmax((X W_h^Q)(X W_h^K)ᵀ / √d_k) (X W_h^V),
    MultiHeadSelf(X) = [head_1; ...; head_H] W^O

    `MultiHeadAttention(query=X, value=X)`: every head projects the same sequence with its
    own W^Q, W^K, W^V, so the heads can capture different kinds of interaction between the
    positions; the concatenated heads are projected by W^O. The weights live in the
    sublayer `attention` (a `MultiHeadAttention`, with the names and shapes of
    `keras.layers.MultiHeadAttention`'s). Padding (a Keras mask or `key_lengths`) masks both
    keys and queries; a padded position's weights are zero and its output is the output
    bias. Masks go through `attnkit.attention.attention_mask`; the softmax is computed in
    float32 under mixed precision.

    Args:
        num_heads: positive int, the number of heads H.
        key_dim: positive int, the size of each head's queries and keys.
        value_dim: optional positive int, the size of each head's values; defaults to
            `key_dim`.
        output_dim: optional positive int, the size of the output; defaults to the input's
            feature size d (so that a residual connection X + MultiHeadSelf(X) fits).
        dropout: float in [0, 1), dropout rate on the attention weights during training.
        use_causal_mask: bool, whether position i may only attend to positions j <= i.
        use_bias: bool, whether the projections have biases. Defaults to `True`.
        kernel_initializer: initializer of the kernels. Defaults to `"glorot_uniform"`.
        bias_initializer: initializer of the biases. Defaults to `"zeros"`.
        seed: optional int, the seed of the dropout.
        implementation: `"auto"`, `"plain"`, `"blockwise"` (memory-efficient: no T × T
            scores in either pass) or `"fused"`; see `MultiHeadAttention`.
        block_size: positive int, keys per block of the `"blockwise"` path, or `None` (the
            default) for `attnkit.attention.blockwise.default_block_size(Tk)`.
        **kwargs: base layer keyword arguments, such as `name` and `dtype`.

    Call arguments:
        inputs: tensor of shape `(batch_size, T, d)`.
        mask: optional boolean tensor `(batch_size, T)`, `False` at padded positions. Filled
            in automatically from a Keras mask carried by `inputs`.
        key_lengths: optional integer tensor `(batch_size,)`, the number of real positions
            (formerly `lengths`, which still works with a DeprecationWarning).
        return_attention_scores: bool, whether to also return the attention weights.
        training: bool, whether dropout is applied.

    Returns:
        The output of shape `(batch_size, T, output_dim)`, and, when
        `return_attention_scores=True`, also the attention weights of shape
        `(batch_size, num_heads, T, T)`. The output carries the input's Keras mask.

    Source: NNDL 8.3 (multi-head self-attention) and 15.6.3; Vaswani et al. 2017.
    """

    def __init__(
        self,
        num_heads,
        key_dim,
        value_dim=None,
        output_dim=None,
        dropout=0.0,
        use_causal_mask=False,
        use_bias=True,
        kernel_initializer="glorot_uniform",
        bias_initializer="zeros",
        seed=None,
        implementation="auto",
        block_size=None,
        **kwargs,
    ):
        super().__init__(**kwargs)
        self.use_causal_mask = check_bool("use_causal_mask", use_causal_mask)
        self.attention = MultiHeadAttention(
            num_heads=num_heads,
            key_dim=key_dim,
            value_dim=value_dim,
            output_dim=output_dim,
            dropout=dropout,
            use_bias=use_bias,
            kernel_initializer=kernel_initializer,
            bias_initializer=bias_initializer,
            seed=seed,
            implementation=implementation,
            block_size=block_size,
            dtype=self.dtype_policy,
            name="attention",
        )

    def build(self, input_shape):
        input_shape = tuple(input_shape)
        check_rank_3("inputs", input_shape)
        self.attention.build(input_shape, input_shape)

    def call(
        self, inputs, mask=None, key_lengths=None, return_attention_scores=False, training=None
    ):
        padding = self._padding_mask(inputs, mask, key_lengths)
        return self.attention(
            inputs,
            inputs,
            query_mask=padding,
            value_mask=padding,
            use_causal_mask=self.use_causal_mask,
            return_attention_scores=return_attention_scores,
            training=training,
        )

    def compute_output_shape(self, input_shape):
        return self.attention.compute_output_shape(input_shape, input_shape)

    def compute_output_spec(
        self, inputs, mask=None, key_lengths=None, return_attention_scores=False, training=None
    ):
        return self.attention.compute_output_spec(
            inputs, inputs, return_attention_scores=return_attention_scores
        )

    def get_config(self):
        config = super().get_config()
        attention = self.attention.get_config()
        for name in (
            "num_heads",
            "key_dim",
            "value_dim",
            "dropout",
            "use_bias",
            "kernel_initializer",
            "bias_initializer",
            "seed",
            "implementation",
            "block_size",
        ):
            config[name] = attention[name]
        config["output_dim"] = self.attention.output_dim
        config["use_causal_mask"] = self.use_causal_mask
        return config
