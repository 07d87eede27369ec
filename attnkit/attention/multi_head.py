"""Multi-head attention: Vaswani et al. 2017, the MultiHead formula of the chapter's notes."""

import math

import keras
from keras import ops

from attnkit import precision
from attnkit.attention import masking
from attnkit.attention.blockwise import attend_in_blocks
from attnkit.attention.dispatch import (
    IMPLEMENTATIONS,
    check_implementation,
    choose_implementation,
)
from attnkit.attention.scored import attention_output_spec, check_same_positions
from attnkit.checks import (
    check_bool,
    check_optional_positive_int,
    check_positive_int,
    check_rank_3,
    check_rate,
    check_seed,
    get_initializer,
)

__all__ = ["MultiHeadAttention", "multi_head_scaled_dot_attention"]


def clone_initializer(initializer):
    """A fresh copy of `initializer`, so that two weights of one shape get different values.

    An unseeded Keras 3 initializer draws its seed once, when it is made: calling the same
    instance twice gives the same values (the query and key kernels would start equal).
    `keras.layers.MultiHeadAttention` clones its initializers for the same reason.
    """
    return initializer.__class__.from_config(initializer.get_config())


# ------------------------------------------------------------- the attention proper
def multi_head_scaled_dot_attention(
    query, key, value, mask=None, dropout=0.0, seed_generator=None, training=False
):
    """Scaled dot-product attention of every head at once: softmax(Q Kᵀ / √d_k) V.

    This is the plain path of `MultiHeadAttention` after the projections, the only one that
    forms the weights; `attnkit.attention.blockwise.attend_in_blocks` and `fused_attention`
    give the same output (the choice among them: `attnkit.attention.dispatch`).

    Args:
        query: tensor `(batch_size, Tq, num_heads, d_k)`, the projected queries.
        key: tensor `(batch_size, Tk, num_heads, d_k)`, the projected keys.
        value: tensor `(batch_size, Tk, num_heads, d_v)`, the projected values.
        mask: optional boolean tensor broadcastable to `(batch_size, Tq, Tk)` (as returned by
            `attnkit.attention.attention_mask`), `True` where a key is kept; the same for
            every head.
        dropout: float, dropout rate applied to the attention weights when `training`.
        seed_generator: a `keras.random.SeedGenerator` for the dropout.
        training: bool, whether the dropout is applied.

    Returns:
        A tuple `(output, weights)`: the heads' outputs of shape
        `(batch_size, Tq, num_heads, d_v)` and the attention weights of shape
        `(batch_size, num_heads, Tq, Tk)` (before dropout). Masked keys get weight 0 and a
        fully masked row gives zero weights and a zero output.
    """
    d_k = query.shape[-1]
    if d_k is None:
        scale = ops.cast(ops.rsqrt(ops.cast(ops.shape(query)[-1], "float32")), query.dtype)
    else:
        scale = precision.constant(1.0 / math.sqrt(d_k), query.dtype)
    # The query is scaled before the product, which keeps float16 products in range.
    query = query * scale
    scores = ops.einsum("bqhd,bkhd->bhqk", query, key)
    if mask is not None:
        mask = ops.expand_dims(mask, -3)  # (B, 1, Tq, Tk) or (1, Tq, Tk): every head
    weights = masking.masked_softmax(scores, mask)
    pooled = weights
    if training and dropout > 0:
        pooled = keras.random.dropout(weights, rate=dropout, seed=seed_generator)
    output = ops.einsum("bhqk,bkhd->bqhd", pooled, ops.cast(value, pooled.dtype))
    return output, weights


def fused_attention(query, key, value, mask=None):
    """`keras.ops.dot_product_attention` (a fused kernel on JAX and PyTorch GPUs), with
    attnkit's convention that a query whose keys are all masked gets a zero output.

    It computes in float32 on JAX and PyTorch, which is why `dispatch.choose_implementation`
    sends float64 inputs to the plain path instead."""
    if mask is None:
        return ops.dot_product_attention(query, key, value)
    while len(mask.shape) < 3:
        mask = ops.expand_dims(mask, 0)
    mask = ops.expand_dims(mask, -3)  # every head
    output = ops.dot_product_attention(query, key, value, mask=mask)
    kept = ops.any(mask, axis=-1)  # (B or 1, 1, Tq)
    kept = ops.expand_dims(ops.transpose(kept, (0, 2, 1)), -1)  # (B or 1, Tq, 1, 1)
    return ops.where(kept, output, ops.zeros_like(output))


@keras.saving.register_keras_serializable(package="attnkit")
class MultiHeadAttention(keras.layers.Layer):
    """Multi-head scaled dot-product attention with learned projections.

    head_h = softmax((Q W_h^Q)(K W_h^K)ᵀ / √d_k) (V W_h^V),  h = 1..H
    MultiHead(Q, K, V) = [head_1; ...; head_H] W^O

    Each head attends in its own projection space (its own W^Q, W^K, W^V, with biases
    when `use_bias`); the heads' outputs are concatenated and projected by W^O. The weights
    have the names, shapes and order of `keras.layers.MultiHeadAttention`'s (whose
    `get_weights()` can be loaded with `set_weights`):

    - `query_kernel (d_q, H, key_dim)`, `query_bias (H, key_dim)`,
    - `key_kernel (d_k, H, key_dim)`, `key_bias (H, key_dim)`,
    - `value_kernel (d_v, H, value_dim)`, `value_bias (H, value_dim)`,
    - `output_kernel (H, value_dim, output_dim)`, `output_bias (output_dim,)`.

    The key bias changes nothing (it adds q·b_k to every score of a row, which the softmax
    ignores, so its gradient is zero); it is there to match Keras's layer.

    All masks go through `attnkit.attention.attention_mask` (one block of keys at a time on
    the blockwise path), the same for every head; masked keys get exactly zero weight. A fully
    masked query row gets zero weights in every head, so its heads' outputs are zero and its
    output is the output bias (zero when `use_bias=False`), never NaN, as in
    `keras.layers.MultiHeadAttention` (Keras 3.15 also gives such a row zero weights). The
    softmax is computed in float32 under mixed precision; float64 stays float64 on every path.

    Args:
        num_heads: positive int, the number of heads H.
        key_dim: positive int, the size of each head's projected queries and keys, d_k.
        value_dim: optional positive int, the size of each head's projected values;
            defaults to `key_dim`.
        output_dim: optional positive int, the size of the output; defaults to the query's
            feature size.
        dropout: float in [0, 1), dropout rate on the attention weights during training.
        use_bias: bool, whether the four projections have biases. Defaults to `True`.
        kernel_initializer: initializer of the four kernels. Defaults to
            `"glorot_uniform"`.
        bias_initializer: initializer of the four biases. Defaults to `"zeros"`.
        seed: optional int, the seed of the dropout.
        implementation: how the heads attend, all with the same result: `"plain"` forms the
            (B, H, Tq, Tk) weights; `"blockwise"` walks over blocks of `block_size` keys with
            an online softmax and recomputes them in the backward pass, so neither pass holds
            the Tq × Tk scores (`attnkit.attention.blockwise_attention`); `"fused"` calls
            `keras.ops.dot_product_attention` (a fused kernel on JAX and PyTorch GPUs);
            `"auto"` (the default), when neither the weights nor dropout are asked for, is
            `"fused"` on a JAX or PyTorch GPU, `"blockwise"` in a compiled call (tf.function,
            XLA, jax.jit) with at least 256 keys, else `"plain"`: see
            `attnkit.attention.dispatch.choose_implementation`. Only `"plain"` can return the
            weights or apply dropout. Float64 inputs never take `"fused"` (the backends'
            kernels compute in float32): they take `"plain"` instead.
        block_size: positive int, keys per block of the `"blockwise"` path, or `None` (the
            default) for `attnkit.attention.blockwise.default_block_size(Tk)`.
        **kwargs: base layer keyword arguments, such as `name` and `dtype`.

    Call arguments:
        query: tensor of shape `(batch_size, Tq, d_q)`.
        value: tensor of shape `(batch_size, Tk, d_v)`.
        key: optional tensor of shape `(batch_size, Tk, d_k)`; defaults to `value`.
        query_mask: optional boolean tensor `(batch_size, Tq)`; `False` rows get zero
            weights. Filled in automatically from a Keras mask carried by `query`.
        value_mask: optional boolean tensor `(batch_size, Tk)`, the key padding mask. Filled
            in automatically from a Keras mask carried by `value`.
        key_lengths: optional integer tensor `(batch_size,)`, the number of valid keys.
        attention_mask: optional boolean tensor `(batch_size, Tq, Tk)` or `(Tq, Tk)`.
        use_causal_mask: bool, whether query i may only attend to keys j <= i.
        return_attention_scores: bool, whether to also return the attention weights.
        training: bool, whether dropout is applied.

    Returns:
        The output of shape `(batch_size, Tq, output_dim)`, and, when
        `return_attention_scores=True`, also the attention weights of shape
        `(batch_size, num_heads, Tq, Tk)` (before dropout). The output carries the query's
        Keras mask.

    Source: Vaswani et al. 2017, "Attention is all you need", section 3.2.2; NNDL 8.3
    (multi-head self-attention).
    """

    def __init__(
        self,
        num_heads,
        key_dim,
        value_dim=None,
        output_dim=None,
        dropout=0.0,
        use_bias=True,
        kernel_initializer="glorot_uniform",
        bias_initializer="zeros",
        seed=None,
        implementation="auto",
        block_size=None,
        **kwargs,
    ):
        super().__init__(**kwargs)
        check_positive_int("num_heads", num_heads)
        check_positive_int("key_dim", key_dim)
        self.num_heads = num_heads
        self.key_dim = key_dim
        self.value_dim = check_optional_positive_int("value_dim", value_dim)
        self.output_dim = check_optional_positive_int("output_dim", output_dim)
        self.dropout = check_rate("dropout", dropout)
        self.use_bias = check_bool("use_bias", use_bias)
        self.kernel_initializer = get_initializer("kernel_initializer", kernel_initializer)
        self.bias_initializer = get_initializer("bias_initializer", bias_initializer)
        self.seed = check_seed(seed)
        self.seed_generator = keras.random.SeedGenerator(seed) if self.dropout > 0 else None
        self.implementation = check_implementation(implementation, IMPLEMENTATIONS, self.dropout)
        check_optional_positive_int("block_size", block_size)
        self.block_size = block_size

    @property
    def _value_dim(self):
        return self.key_dim if self.value_dim is None else self.value_dim

    def _output_dim(self, query_shape):
        return query_shape[-1] if self.output_dim is None else self.output_dim

    def _add_projection(self, name, shape):
        kernel = self.add_weight(
            name=f"{name}_kernel",
            shape=shape,
            initializer=clone_initializer(self.kernel_initializer),
        )
        bias = None
        if self.use_bias:
            bias = self.add_weight(
                name=f"{name}_bias",
                shape=shape[1:],
                initializer=clone_initializer(self.bias_initializer),
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
        heads = self.num_heads
        self.query_kernel, self.query_bias = self._add_projection(
            "query", (query_shape[-1], heads, self.key_dim)
        )
        self.key_kernel, self.key_bias = self._add_projection(
            "key", (key_shape[-1], heads, self.key_dim)
        )
        self.value_kernel, self.value_bias = self._add_projection(
            "value", (value_shape[-1], heads, self._value_dim)
        )
        output_kernel_shape = (heads, self._value_dim, self._output_dim(query_shape))
        self.output_kernel = self.add_weight(
            name="output_kernel",
            shape=output_kernel_shape,
            initializer=clone_initializer(self.kernel_initializer),
        )
        self.output_bias = None
        if self.use_bias:
            self.output_bias = self.add_weight(
                name="output_bias",
                shape=output_kernel_shape[-1:],
                initializer=clone_initializer(self.bias_initializer),
            )

    @staticmethod
    def _project(x, kernel, bias):
        # x W + b: (B, T, d) x (d, H, d_head) -> (B, T, H, d_head)
        x = ops.einsum("btd,dhk->bthk", x, ops.cast(kernel, x.dtype))
        if bias is not None:
            x = x + ops.cast(bias, x.dtype)
        return x

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
        training=None,
    ):
        if key is None:
            key = value
        masks = masking.Masks(query_mask, value_mask, key_lengths, attention_mask, use_causal_mask)
        q = self._project(query, self.query_kernel, self.query_bias)
        k = self._project(key, self.key_kernel, self.key_bias)
        v = self._project(value, self.value_kernel, self.value_bias)
        path = choose_implementation(
            self.implementation,
            return_attention_scores,
            bool(training) and self.dropout > 0,
            key=k,
        )
        heads, weights = self._attend(path, q, k, v, masks, training)
        # [head_1; ...; head_H] W^O, written without the concatenation.
        output = ops.einsum("bqhv,hvo->bqo", heads, ops.cast(self.output_kernel, heads.dtype))
        if self.output_bias is not None:
            output = output + ops.cast(self.output_bias, output.dtype)
        if return_attention_scores:
            return output, weights
        return output

    def _attend(self, path, q, k, v, masks, training):
        """The heads' outputs `(B, Tq, H, d_v)` and, on the plain path, their weights."""
        if path == "blockwise":
            return attend_in_blocks(q, k, v, masks, self.block_size), None
        mask = masks.keep(q, k)  # the whole (B, Tq, Tk) mask: only for the paths that use it
        if path == "fused":
            return fused_attention(q, k, v, mask), None
        return multi_head_scaled_dot_attention(
            q,
            k,
            v,
            mask,
            dropout=self.dropout,
            seed_generator=self.seed_generator,
            training=training,
        )

    def compute_mask(self, query, query_mask=None, **kwargs):
        return query_mask

    def compute_output_shape(self, query_shape, value_shape, key_shape=None):
        query_shape = tuple(query_shape)
        return (*query_shape[:-1], self._output_dim(query_shape))

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
        training=None,
    ):
        return attention_output_spec(
            self,
            query,
            value,
            key,
            return_attention_scores,
            lambda q, k: (q[0], self.num_heads, q[1], k[-2]),
        )

    def get_config(self):
        config = super().get_config()
        config.update(
            {
                "num_heads": self.num_heads,
                "key_dim": self.key_dim,
                "value_dim": self.value_dim,
                "output_dim": self.output_dim,
                "dropout": self.dropout,
                "use_bias": self.use_bias,
                "kernel_initializer": keras.initializers.serialize(self.kernel_initializer),
                "bias_initializer": keras.initializers.serialize(self.bias_initializer),
                "seed": self.seed,
                "implementation": self.implementation,
                "block_size": self.block_size,
            }
        )
        return config
