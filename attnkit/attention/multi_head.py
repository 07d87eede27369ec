"""Multi-head attention: Vaswani et al. 2017, the MultiHead formula of the chapter's notes."""

import math
import string

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
from attnkit.checks import (
    check_bool,
    check_optional_positive_int,
    check_rate,
    check_seed,
    get_initializer,
)

__all__ = ["MultiHeadAttention", "multi_head_scaled_dot_attention"]

try:
    # Keras keeps the mask of a tensor that cannot hold attributes (JAX) in a side table.
    from keras.src.backend import set_keras_mask as _set_keras_mask
except ImportError:  # pragma: no cover - older Keras 3

    def _set_keras_mask(x, mask):
        if hasattr(x, "_keras_mask"):
            x._keras_mask = mask


def clone_initializer(initializer):
    """A fresh copy of `initializer`, so that two weights of one shape get different values.

    An unseeded Keras 3 initializer draws its seed once, when it is made: calling the same
    instance twice gives the same values (the query and key kernels would start equal).
    `keras.layers.MultiHeadAttention` clones its initializers for the same reason.
    """
    return initializer.__class__.from_config(initializer.get_config())


def _check_dimension(name, value, optional=False):
    """A head size or count: a positive Python int (bool refused), or None when optional."""
    if optional and value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        expected = "a positive integer or `None`" if optional else "a positive integer"
        raise ValueError(f"argument `{name}` must be {expected}. Received: {name}={value!r}")
    return value


def _to_axes(name, value):
    """`attention_axes` or `output_shape` as a tuple of ints (an int is one axis/size)."""
    if value is None:
        return None
    if isinstance(value, int) and not isinstance(value, bool):
        return (value,)
    if isinstance(value, (list, tuple)) and all(
        isinstance(v, int) and not isinstance(v, bool) for v in value
    ):
        return tuple(value)
    raise ValueError(
        f"Invalid `{name}`: it must be an int, or a list or tuple of ints. Received: "
        f"{name}={value!r}"
    )


# ------------------------------------------------------------- the attention proper
def _expand_mask(mask, scores_rank, num_attention_axes=1):
    """A keep-mask without a head axis (or with one) made of the scores' rank: the missing
    axes (the heads, then leading batch axes) are inserted before the query axes."""
    axis = -2 * num_attention_axes - 1
    while len(mask.shape) < scores_rank:
        mask = ops.expand_dims(mask, axis)
    return mask


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
        mask: optional boolean tensor, `True` where a key is kept: `(Tq, Tk)` or
            `(batch_size, Tq, Tk)` (the same for every head, as returned by
            `attnkit.attention.attention_mask`), or `(batch_size, num_heads, Tq, Tk)` (one
            per head); any axis may be 1 to broadcast.
        dropout: float, dropout rate applied to the attention weights when `training`.
        seed_generator: a `keras.random.SeedGenerator` for the dropout.
        training: bool, whether the dropout is applied.

    Returns:
        A tuple `(output, weights)`: the heads' outputs of shape
        `(batch_size, Tq, num_heads, d_v)` and the attention weights of shape
        `(batch_size, num_heads, Tq, Tk)` (before dropout). Masked keys get weight 0 and a
        fully masked row gives zero weights and a zero output.
    """
    if mask is not None and len(mask.shape) not in (2, 3, 4):
        raise ValueError(
            "`mask` must have shape (Tq, Tk), (batch_size, Tq, Tk) or "
            f"(batch_size, num_heads, Tq, Tk). Received: mask with shape {tuple(mask.shape)}"
        )
    scores = _scaled_scores(query, key, "bqhd,bkhd->bhqk")
    if mask is not None:
        mask = _expand_mask(mask, 4)
    weights = masking.masked_softmax(scores, mask)
    pooled = weights
    if training and dropout > 0:
        pooled = keras.random.dropout(weights, rate=dropout, seed=seed_generator)
    output = ops.einsum("bhqk,bkhd->bqhd", pooled, ops.cast(value, pooled.dtype))
    return output, weights


def _scaled_scores(query, key, equation):
    """Q Kᵀ / √d_k by `equation` (query first), the query scaled before the product, which
    keeps float16 products in range."""
    d_k = query.shape[-1]
    if d_k is None:
        scale = ops.cast(ops.rsqrt(ops.cast(ops.shape(query)[-1], "float32")), query.dtype)
    else:
        scale = precision.constant(1.0 / math.sqrt(d_k), query.dtype)
    return ops.einsum(equation, query * scale, ops.cast(key, query.dtype))


def fused_attention(query, key, value, mask=None, flash_attention=None):
    """`keras.ops.dot_product_attention` (a fused kernel on JAX and PyTorch GPUs), with
    attnkit's convention that a query whose keys are all masked gets a zero output.

    It computes in float32 on JAX and PyTorch, which is why `dispatch.choose_implementation`
    sends float64 inputs to the plain path instead."""
    if mask is None:
        return ops.dot_product_attention(query, key, value, flash_attention=flash_attention)
    mask = _expand_mask(mask, 4)  # (B or 1, H or 1, Tq, Tk)
    output = ops.dot_product_attention(
        query, key, value, mask=mask, flash_attention=flash_attention
    )
    kept = ops.any(mask, axis=-1)  # (B or 1, H or 1, Tq)
    kept = ops.expand_dims(ops.transpose(kept, (0, 2, 1)), -1)  # (B or 1, Tq, H or 1, 1)
    return ops.where(kept, output, ops.zeros_like(output))


# -------------------------------------------------------------- einsum equations
def _letters(start, count):
    return string.ascii_lowercase[start : start + count]


def projection_equation(free, bound, out):
    """The `EinsumDense` equation of a projection and its bias axes: `free` axes kept (batch
    and positions), `bound` axes summed over, `out` axes made; e.g. (2, 1, 2) gives
    `"abc,cde->abde"` (x W over the features into heads × head size)."""
    free_axes = _letters(0, free)
    bound_axes = _letters(free, bound)
    out_axes = _letters(free + bound, out)
    equation = f"{free_axes}{bound_axes},{bound_axes}{out_axes}->{free_axes}{out_axes}"
    return equation, out_axes


def attention_equations(rank, attention_axes):
    """The two einsum equations of attention over `attention_axes` of projected tensors of
    `rank` (batch, positions..., heads, features), and the rank of the scores.

    The scores keep the batch-like axes (every axis but the attention axes and the features,
    the heads included), then the query's attention axes, then the key's:
    `query, key -> scores` and `scores, value -> output`.
    """
    query_axes = _letters(0, rank)
    key_axes = list(query_axes)
    fresh = rank
    for axis in attention_axes:
        key_axes[axis] = string.ascii_lowercase[fresh]
        fresh += 1
    key_axes = "".join(key_axes)
    batch_like = [a for a in range(rank - 1) if a not in attention_axes]
    scores_axes = (
        "".join(query_axes[a] for a in batch_like)
        + "".join(query_axes[a] for a in attention_axes)
        + "".join(key_axes[a] for a in attention_axes)
    )
    dot_equation = f"{query_axes},{key_axes}->{scores_axes}"
    combine_equation = f"{scores_axes},{key_axes}->{query_axes}"
    return dot_equation, combine_equation, len(scores_axes)


# ------------------------------------------------------------------------- the layer
class _Projection(keras.layers.EinsumDense):
    """`keras.layers.EinsumDense` whose bias is added by plain broadcasting.

    On TensorFlow, `keras.ops.add(x, bias)` takes a bias that squeezes to one axis for a
    channel bias and, when that axis's size equals `x.shape[1]`, adds it along axis 1
    (`BiasAdd`, "NCHW"): a `(num_heads, 1)` bias of a projection with `key_dim=1` lands on
    the positions when there are as many positions as heads (Keras 3.15.1's
    `MultiHeadAttention` does this). Only the float call is changed; the quantized calls
    are EinsumDense's, which is why quantizing is allowed (EinsumDense refuses subclasses by
    default).
    """

    def quantize(self, mode=None, type_check=True, config=None):
        super().quantize(mode, type_check=False, config=config)

    def call(self, inputs, training=None):
        x = ops.einsum(self.equation, inputs, self.kernel)
        if self.bias is not None:
            x = x + ops.cast(self.bias, x.dtype)
        if self.activation is not None:
            x = self.activation(x)
        return x


_SUBLAYER_ARGUMENTS = (
    "kernel_regularizer",
    "bias_regularizer",
    "activity_regularizer",
    "kernel_constraint",
    "bias_constraint",
)


@keras.saving.register_keras_serializable(package="attnkit")
class MultiHeadAttention(keras.layers.Layer):
    """Multi-head scaled dot-product attention with learned projections.

    head_h = softmax((Q W_h^Q)(K W_h^K)ᵀ / √d_k) (V W_h^V),  h = 1..H
    MultiHead(Q, K, V) = [head_1; ...; head_H] W^O

    Each head attends in its own projection space (its own W^Q, W^K, W^V, with biases
    when `use_bias`); the heads' outputs are concatenated and projected by W^O. A drop-in for
    `keras.layers.MultiHeadAttention`: the same arguments, call signature and sub-layers, four
    `keras.layers.EinsumDense` projections named `query`, `key`, `value` and
    `attention_output` (and `gate` with `use_gate`, built between `key` and `value`), so that
    `get_weights()`/`set_weights`, `.keras` files, `quantize("int8")`, LoRA and per-sub-layer
    dtype policies carry over either way. Their weights, in order:

    - `query/kernel (d_q, H, key_dim)`, `query/bias (H, key_dim)`,
    - `key/kernel (d_k, H, key_dim)`, `key/bias (H, key_dim)`,
    - `value/kernel (d_v, H, value_dim)`, `value/bias (H, value_dim)`,
    - `attention_output/kernel (H, value_dim, *output_shape)`,
      `attention_output/bias (*output_shape,)`.

    (`layer.query_kernel`, `layer.output_bias`, ... name them too.) The key bias changes
    nothing (it adds q·b_k to every score of a row, which the softmax ignores, so its
    gradient is zero); it is there to match Keras's layer.

    Every mask (Keras masks carried by the inputs, `query_mask`, `value_mask`, `key_mask`,
    `key_lengths`, `attention_mask`, the causal mask and the sliding window) is combined into
    one keep-mask; masked keys get exactly zero weight, and a query with no key left gets zero
    weights in every head, so its output is the output bias (zero when `use_bias=False`),
    never NaN, as in Keras 3.15. The softmax is computed in float32 under mixed precision;
    float64 stays float64 on every path. Differences from Keras's layer:
    `docs/keras_differences.md`.

    Args:
        num_heads: positive int, the number of heads H.
        key_dim: positive int, the size of each head's projected queries and keys, d_k.
        value_dim: optional positive int, the size of each head's projected values;
            defaults to `key_dim`.
        dropout: float in [0, 1), dropout rate on the attention weights during training.
        use_bias: bool, whether the projections have biases. Defaults to `True`.
        output_shape: optional int or tuple of ints, the shape of each output position
            (besides the batch and position axes); defaults to the query's feature size.
        attention_axes: optional int or tuple of ints, the axes of the inputs attended over;
            `None` (the default) attends over every axis but the batch and the features,
            e.g. `(1, 2)` attends over both image axes of `(B, H, W, C)` inputs.
        sliding_window: optional positive int w: query i sees only keys j with
            |i - j| < w (with `use_causal_mask`, the w - 1 keys before it and itself).
        flash_attention: optional bool. `True` sends the standard case (rank-3 inputs, no
            per-head mask) to `keras.ops.dot_product_attention(flash_attention=True)`, which
            cannot return the weights nor apply dropout; `False` never takes the fused path;
            `None` (the default) reads `keras.config.is_flash_attention_enabled()`.
        kernel_initializer: initializer of the kernels. Defaults to `"glorot_uniform"`.
        bias_initializer: initializer of the biases. Defaults to `"zeros"`.
        kernel_regularizer, bias_regularizer, activity_regularizer: optional regularizers of
            the projections' kernels, biases and outputs.
        kernel_constraint, bias_constraint: optional constraints of the kernels and biases.
        use_gate: bool, whether the heads' outputs are multiplied by a sigmoid gate computed
            from the query (`gate` sub-layer, Qiu et al. 2025, "Gated Attention") before W^O.
        seed: optional int, the seed of the dropout.
        implementation: how the heads attend (attnkit's extra; same result on every path):
            `"plain"` forms the (B, H, Tq, Tk) weights through `_compute_attention`;
            `"blockwise"` walks over blocks of `block_size` keys with an online softmax and
            recomputes them in the backward pass, so neither pass holds the Tq × Tk scores
            (`attnkit.attention.blockwise_attention`); `"fused"` calls
            `keras.ops.dot_product_attention`; `"auto"` (the default), when neither the
            weights nor dropout are asked for, is `"fused"` on a JAX or PyTorch GPU,
            `"blockwise"` in a compiled call with at least 256 keys, else `"plain"`
            (`attnkit.attention.dispatch.choose_implementation`). Inputs above rank 3, a
            per-head mask, a sliding window or a subclass's `_compute_attention` always take
            the plain path. Float64 inputs never take `"fused"`.
        block_size: positive int, keys per block of the `"blockwise"` path, or `None` (the
            default) for `attnkit.attention.blockwise.default_block_size(Tk)`.
        **kwargs: base layer keyword arguments, such as `name` and `dtype`; and
            `output_dim`, the former name of an int `output_shape` (give one or the other).

    Call arguments:
        query: tensor `(batch_size, Tq, d_q)`, or `(batch_size, *positions, d_q)`.
        value: tensor `(batch_size, Tk, d_v)` (the same rank as `query`).
        key: optional tensor `(batch_size, Tk, d_k)`; defaults to `value`.
        query_mask: optional boolean `(batch_size, Tq)`; `False` rows get zero weights.
            Filled in from a Keras mask carried by `query`.
        value_mask: optional boolean `(batch_size, Tk)`, the key padding mask. Filled in
            from a Keras mask carried by `value`.
        key_mask: optional boolean `(batch_size, Tk)`, combined with `value_mask`. Filled in
            from a Keras mask carried by `key`.
        attention_mask: optional boolean `(Tq, Tk)`, `(batch_size, Tq, Tk)` or, one per
            head, `(batch_size, num_heads, Tq, Tk)`, `True` where query i may see key j.
        return_attention_scores: bool, whether to also return the attention weights.
        training: bool, whether dropout is applied.
        use_causal_mask: bool, whether query i may only attend to keys j <= i.
        key_lengths: optional integer tensor `(batch_size,)`, the number of valid keys
            (attnkit's extra).

    Returns:
        The output of shape `(batch_size, Tq, *output_shape)`, and, when
        `return_attention_scores=True`, also the attention weights of shape
        `(batch_size, num_heads, Tq, Tk)` (before dropout; with `attention_axes`, the batch
        and non-attended axes, the heads, then the query's and the key's attended axes).
        The output carries the query's Keras mask.

    Source: Vaswani et al. 2017, "Attention is all you need", section 3.2.2; NNDL 8.3
    (multi-head self-attention).
    """

    def __init__(
        self,
        num_heads,
        key_dim,
        value_dim=None,
        dropout=0.0,
        use_bias=True,
        output_shape=None,
        attention_axes=None,
        sliding_window=None,
        flash_attention=None,
        kernel_initializer="glorot_uniform",
        bias_initializer="zeros",
        kernel_regularizer=None,
        bias_regularizer=None,
        activity_regularizer=None,
        kernel_constraint=None,
        bias_constraint=None,
        use_gate=False,
        seed=None,
        implementation="auto",
        block_size=None,
        **kwargs,
    ):
        # The former name of an int `output_shape`; not in the config, which has output_shape.
        output_dim = kwargs.pop("output_dim", None)
        super().__init__(**kwargs)
        self.supports_masking = True
        self.num_heads = _check_dimension("num_heads", num_heads)
        self.key_dim = _check_dimension("key_dim", key_dim)
        self.value_dim = _check_dimension("value_dim", value_dim, optional=True) or key_dim
        self.dropout = check_rate("dropout", dropout)
        self.use_bias = check_bool("use_bias", use_bias)
        output_dim = check_optional_positive_int("output_dim", output_dim)
        if output_dim is not None:
            if output_shape is not None:
                raise ValueError(
                    "`output_dim` is the former name of `output_shape`: give only "
                    f"`output_shape`. Received: output_shape={output_shape!r}, "
                    f"output_dim={output_dim!r}"
                )
            output_shape = output_dim
        self._output_shape = _to_axes("output_shape", output_shape) or None
        if self._output_shape is not None and any(size <= 0 for size in self._output_shape):
            raise ValueError(
                f"Invalid `output_shape`: its sizes must be positive. Received: "
                f"output_shape={output_shape!r}"
            )
        self.attention_axes = _to_axes("attention_axes", attention_axes)
        self.sliding_window = check_optional_positive_int("sliding_window", sliding_window)
        if flash_attention is None:
            flash_attention = keras.config.is_flash_attention_enabled()
        self._flash_attention = flash_attention
        if flash_attention and self.dropout > 0:
            raise ValueError(
                "Dropout is not supported when flash attention is enabled (the fused kernel "
                f"never forms the weights). Received: dropout={dropout}, flash_attention=True"
            )
        self.kernel_initializer = get_initializer("kernel_initializer", kernel_initializer)
        self.bias_initializer = get_initializer("bias_initializer", bias_initializer)
        self.kernel_regularizer = keras.regularizers.get(kernel_regularizer)
        self.bias_regularizer = keras.regularizers.get(bias_regularizer)
        self.activity_regularizer_of_projections = keras.regularizers.get(activity_regularizer)
        self.kernel_constraint = keras.constraints.get(kernel_constraint)
        self.bias_constraint = keras.constraints.get(bias_constraint)
        self.use_gate = check_bool("use_gate", use_gate)
        self.seed = check_seed(seed)
        self.seed_generator = keras.random.SeedGenerator(seed) if self.dropout > 0 else None
        self.implementation = check_implementation(implementation, IMPLEMENTATIONS, self.dropout)
        self.block_size = check_optional_positive_int("block_size", block_size)
        self._axes = None  # attention axes of the inputs, resolved at build

    # Keras's layer keeps these under underscored names; Keras's tests and subclasses read them.
    @property
    def _num_heads(self):
        return self.num_heads

    @property
    def _key_dim(self):
        return self.key_dim

    @property
    def _value_dim(self):
        return self.value_dim

    @property
    def _dropout(self):
        return self.dropout

    @property
    def _sliding_window(self):
        return self.sliding_window

    @property
    def _attention_axes(self):
        return self.attention_axes if self._axes is None else self._axes

    @property
    def output_dim(self):
        """The output size when `output_shape` is one int (or was left out: None)."""
        if self._output_shape is not None and len(self._output_shape) == 1:
            return self._output_shape[0]
        return None

    # ---------------------------------------------------------------- sub-layers
    @property
    def query_dense(self):
        return self._query_dense

    @property
    def key_dense(self):
        return self._key_dense

    @property
    def value_dense(self):
        return self._value_dense

    @property
    def output_dense(self):
        return self._output_dense

    @property
    def gate_dense(self):
        return self._gate_dense if self.use_gate else None

    query_kernel = property(lambda self: self._query_dense.kernel)
    key_kernel = property(lambda self: self._key_dense.kernel)
    value_kernel = property(lambda self: self._value_dense.kernel)
    output_kernel = property(lambda self: self._output_dense.kernel)
    query_bias = property(lambda self: self._query_dense.bias if self.use_bias else None)
    key_bias = property(lambda self: self._key_dense.bias if self.use_bias else None)
    value_bias = property(lambda self: self._value_dense.bias if self.use_bias else None)
    output_bias = property(lambda self: self._output_dense.bias if self.use_bias else None)

    def _dense(self, name, input_rank, bound, out_shape, activation=None):
        """An EinsumDense from the last `bound` axes of an input of `input_rank` to
        `out_shape`, with fresh copies of the initializers (see `clone_initializer`)."""
        equation, bias_axes = projection_equation(input_rank - bound, bound, len(out_shape))
        return _Projection(
            equation,
            output_shape=[None] * (input_rank - bound - 1) + list(out_shape),
            bias_axes=bias_axes if self.use_bias else None,
            activation=activation,
            kernel_initializer=clone_initializer(self.kernel_initializer),
            bias_initializer=clone_initializer(self.bias_initializer),
            kernel_regularizer=self.kernel_regularizer,
            bias_regularizer=self.bias_regularizer,
            activity_regularizer=self.activity_regularizer_of_projections,
            kernel_constraint=self.kernel_constraint,
            bias_constraint=self.bias_constraint,
            dtype=self.dtype_policy,
            name=name,
        )

    def _resolve_axes(self, rank):
        """The attention axes of inputs of `rank`, as non-negative ints in [1, rank - 2]."""
        if self.attention_axes is None:
            return tuple(range(1, rank - 1))
        axes = tuple(axis % rank if axis < 0 else axis for axis in self.attention_axes)
        if any(not 1 <= axis <= rank - 2 for axis in axes) or len(set(axes)) != len(axes):
            raise ValueError(
                "`attention_axes` must name distinct axes of the inputs other than the batch "
                f"(0) and the features ({rank - 1}). Received: "
                f"attention_axes={self.attention_axes} for inputs of rank {rank}"
            )
        return axes

    def _check_shapes(self, query_shape, value_shape, key_shape):
        """Refuses the shapes that `build` and `call` would refuse; returns them as tuples."""
        query_shape = tuple(query_shape)
        value_shape = tuple(value_shape)
        key_shape = value_shape if key_shape is None else tuple(key_shape)
        if value_shape[1:-1] != key_shape[1:-1]:
            raise ValueError(
                "`value` and `key` must be equal in every dimension but the last (the "
                f"features). Received: value_shape={value_shape} and key_shape={key_shape}"
            )
        for name, shape in (("query", query_shape), ("value", value_shape), ("key", key_shape)):
            if len(shape) < 3:
                raise ValueError(
                    f"`{name}` must have shape (batch_size, positions..., features). "
                    f"Received: {name}_shape={shape}"
                )
            if shape[-1] is None:
                raise ValueError(
                    f"The last dimension of `{name}` must be known. Received: {name}_shape={shape}"
                )
        if len(value_shape) != len(query_shape):
            raise ValueError(
                "`query` and `value` must have the same rank. Received: "
                f"query_shape={query_shape}, value_shape={value_shape}"
            )
        self._resolve_axes(len(query_shape))
        return query_shape, value_shape, key_shape

    def build(self, query_shape, value_shape, key_shape=None):
        query_shape, value_shape, key_shape = self._check_shapes(
            query_shape, value_shape, key_shape
        )
        rank = len(query_shape)
        heads = self.num_heads
        self._axes = self._resolve_axes(rank)
        self._query_dense = self._dense("query", rank, 1, (heads, self.key_dim))
        self._query_dense.build(query_shape)
        self._key_dense = self._dense("key", rank, 1, (heads, self.key_dim))
        self._key_dense.build(key_shape)
        if self.use_gate:
            self._gate_dense = self._dense(
                "gate", rank, 1, (heads, self.value_dim), activation="sigmoid"
            )
            self._gate_dense.build(query_shape)
        self._value_dense = self._dense("value", rank, 1, (heads, self.value_dim))
        self._value_dense.build(value_shape)
        output_shape = self._output_shape or (query_shape[-1],)
        self._output_dense = self._dense("attention_output", rank + 1, 2, output_shape)
        self._output_dense.build((*query_shape[:-1], heads, self.value_dim))
        # The heads' axis goes in before the features, so the attended axes keep their index.
        self._dot_equation, self._combine_equation, _ = attention_equations(rank + 1, self._axes)

    # ------------------------------------------------------------------ the call
    def call(
        self,
        query,
        value,
        key=None,
        query_mask=None,
        value_mask=None,
        key_mask=None,
        attention_mask=None,
        return_attention_scores=False,
        training=None,
        use_causal_mask=False,
        key_lengths=None,
    ):
        if key is None:
            key = value
        # The masks came in as arguments; the projections must not see them again.
        for tensor in (query, value, key):
            _set_keras_mask(tensor, None)
        if attention_mask is not None:
            attention_mask = ops.convert_to_tensor(attention_mask)
        rank_3 = len(query.shape) == 3  # higher ranks take masks of their own rank
        if rank_3 and attention_mask is not None and len(attention_mask.shape) not in (2, 3, 4):
            raise ValueError(
                "`attention_mask` must have shape (Tq, Tk), (batch_size, Tq, Tk) or, one per "
                "head, (batch_size, num_heads, Tq, Tk). Received: attention_mask with shape "
                f"{tuple(attention_mask.shape)}"
            )
        gate = self._gate_dense(query) if self.use_gate else None
        q = self._query_dense(query)
        k = self._key_dense(key)
        v = self._value_dense(value)
        weights = None
        path = self._choose_path(q, k, attention_mask, return_attention_scores, training)
        if path == "plain":
            mask = self._compute_attention_mask(
                query,
                value,
                query_mask=query_mask,
                value_mask=value_mask,
                key_mask=key_mask,
                attention_mask=attention_mask,
                use_causal_mask=use_causal_mask,
                key_lengths=key_lengths,
            )
            heads, weights = self._compute_attention(
                q, k, v, mask, training, return_attention_scores
            )
        else:
            masks = masking.Masks(
                query_mask,
                masking.combine_masks(value_mask, key_mask),
                key_lengths,
                attention_mask,
                use_causal_mask,
            )
            if path == "blockwise":
                heads = attend_in_blocks(q, k, v, masks, self.block_size)
            else:
                heads = fused_attention(q, k, v, masks.keep(q, k), self._flash_attention)
        if gate is not None:
            heads = heads * ops.cast(gate, heads.dtype)
        output = self._output_dense(heads)
        if query_mask is not None:
            _set_keras_mask(output, query_mask)
        if return_attention_scores:
            return output, weights
        return output

    def _check_scores_without_flash(self, return_attention_scores):
        """Flash attention never forms the weights, so it cannot return them."""
        if self._flash_attention and return_attention_scores:
            raise ValueError(
                # Keras's wording, which code written for Keras's layer may match.
                "Returning attention scores is not supported when flash attention is "
                "enabled. Please disable flash attention to access attention scores. "
                "Received: return_attention_scores=True, flash_attention=True"
            )

    def _choose_path(self, q, k, attention_mask, return_attention_scores, training):
        """ "plain", "blockwise" or "fused" for this call (see `implementation`)."""
        self._check_scores_without_flash(return_attention_scores)
        standard = (
            len(q.shape) == 4
            and self._axes == (1,)
            and self.sliding_window is None
            and (attention_mask is None or len(attention_mask.shape) <= 3)
            and type(self)._compute_attention is MultiHeadAttention._compute_attention
        )
        if not standard:
            return "plain"
        implementation = self.implementation
        if implementation == "auto" and self._flash_attention:
            implementation = "fused"
        path = choose_implementation(
            implementation,
            return_attention_scores,
            bool(training) and self.dropout > 0,
            key=k,
        )
        if path == "fused" and self._flash_attention is False and self.implementation == "auto":
            return "plain"
        return path

    def _compute_attention_mask(
        self,
        query,
        value,
        query_mask=None,
        value_mask=None,
        key_mask=None,
        attention_mask=None,
        use_causal_mask=False,
        key_lengths=None,
    ):
        """Every mask of one call as one boolean keep-mask, broadcastable to the scores
        without their head axis (or with it, when `attention_mask` has one), or None.

        Args:
            query: the query (before its projection); only its shape is used.
            value: the value (before its projection); only its shape is used.
            query_mask, value_mask, key_mask, attention_mask, use_causal_mask, key_lengths:
                as in `call`.
        """
        key_mask = masking.combine_masks(value_mask, key_mask)
        per_head = attention_mask is not None and len(attention_mask.shape) == 4
        if len(query.shape) == 3:
            mask = masking.attention_mask(
                query,
                value,
                query_mask=query_mask,
                key_mask=key_mask,
                key_lengths=key_lengths,
                attention_mask=None if per_head else attention_mask,
                use_causal_mask=use_causal_mask,
            )
        else:
            parts = []
            if query_mask is not None:
                parts.append(ops.expand_dims(ops.cast(query_mask, "bool"), -1))
            if key_mask is not None:
                parts.append(ops.expand_dims(key_mask, -2))
            if key_lengths is not None:
                lengths = masking.length_mask(key_lengths, ops.shape(value)[self._axes[0]])
                parts.append(ops.expand_dims(lengths, -2))
            if use_causal_mask:
                parts.append(self._compute_causal_mask(query, value))
            if attention_mask is not None and not per_head:
                parts.append(attention_mask)
            mask = masking.combine_masks(*parts)
        if self.sliding_window is not None:
            mask = masking.combine_masks(mask, self._compute_sliding_window_mask(query, value))
        if per_head:
            if mask is not None:
                mask = _expand_mask(mask, len(attention_mask.shape), len(self._axes))
            mask = masking.combine_masks(mask, attention_mask)
        return mask

    def _attended_lengths(self, query, value):
        axis = self._attention_axes[0] if self._axes is not None else 1
        return ops.shape(query)[axis], ops.shape(value)[axis]

    def _compute_causal_mask(self, query, value=None):
        """The causal keep-mask `(1, Tq, Tk)` of the first attended axis (query i sees keys
        j <= i, top-left aligned)."""
        value = query if value is None else value
        return ops.expand_dims(masking.causal_mask(*self._attended_lengths(query, value)), 0)

    def _compute_sliding_window_mask(self, query, value=None):
        """The band keep-mask `(1, Tq, Tk)`: query i sees keys j with |i - j| < w."""
        value = query if value is None else value
        tq, tk = self._attended_lengths(query, value)
        rows = ops.expand_dims(ops.arange(tq, dtype="int32"), -1)
        cols = ops.expand_dims(ops.arange(tk, dtype="int32"), 0)
        return ops.expand_dims(ops.less(ops.abs(rows - cols), self.sliding_window), 0)

    def _masked_softmax(self, scores, mask=None):
        """The softmax of `scores` over the key's attended axes (the last ones), masked keys
        given exactly zero weight (`attnkit.attention.masked_softmax`)."""
        num_axes = len(self._attention_axes)
        if mask is not None:
            mask = _expand_mask(ops.cast(mask, "bool"), len(scores.shape), num_axes)
        if num_axes == 1 and len(scores.shape) <= 5:
            return masking.masked_softmax(scores, mask)
        # Several attended axes: one softmax over all of their positions at once, on a
        # (rows, keys) matrix (TensorFlow's softmax also refuses more than 5 axes).
        shape = ops.shape(scores)
        key_sizes = scores.shape[-num_axes:]
        if None in key_sizes:
            keys = ops.prod(ops.stack([ops.shape(scores)[a] for a in range(-num_axes, 0)]))
        else:
            keys = math.prod(key_sizes)
        flat = (-1, keys)
        if mask is not None:
            mask = ops.reshape(ops.broadcast_to(mask, shape), flat)
        return ops.reshape(masking.masked_softmax(ops.reshape(scores, flat), mask), shape)

    def _compute_attention(
        self,
        query,
        key,
        value,
        attention_mask=None,
        training=None,
        return_attention_scores=False,
        use_causal_mask=False,
    ):
        """Scaled dot-product attention of the projected heads: the hook a subclass
        overrides to attend otherwise (Keras's hook, same signature).

        Args:
            query: projected queries `(batch_size, Tq, num_heads, key_dim)`.
            key: projected keys `(batch_size, Tk, num_heads, key_dim)`.
            value: projected values `(batch_size, Tk, num_heads, value_dim)`.
            attention_mask: optional boolean keep-mask, as `_compute_attention_mask` makes
                it.
            training: bool, whether dropout is applied.
            return_attention_scores: bool, whether the weights are asked for.
            use_causal_mask: bool, whether to add the causal mask to `attention_mask`.

        Returns:
            A tuple `(heads, weights)`: `(batch_size, Tq, num_heads, value_dim)` and the
            weights `(batch_size, num_heads, Tq, Tk)` before dropout.
        """
        self._check_scores_without_flash(return_attention_scores)
        if use_causal_mask:
            causal = self._compute_causal_mask(query, key)
            if attention_mask is not None:
                causal = _expand_mask(causal, len(attention_mask.shape), len(self._axes))
            attention_mask = masking.combine_masks(attention_mask, causal)
        scores = _scaled_scores(query, key, self._dot_equation)
        weights = self._masked_softmax(scores, attention_mask)
        pooled = weights
        if training and self.dropout > 0:
            pooled = keras.random.dropout(weights, rate=self.dropout, seed=self.seed_generator)
        heads = ops.einsum(self._combine_equation, pooled, ops.cast(value, pooled.dtype))
        return heads, weights

    def compute_mask(self, query, value=None, key=None, query_mask=None, **kwargs):
        return query_mask

    def compute_output_shape(self, query_shape, value_shape, key_shape=None):
        query_shape, _, _ = self._check_shapes(query_shape, value_shape, key_shape)
        return (*query_shape[:-1], *(self._output_shape or query_shape[-1:]))

    def compute_output_spec(
        self,
        query,
        value,
        key=None,
        query_mask=None,
        value_mask=None,
        key_mask=None,
        attention_mask=None,
        return_attention_scores=False,
        training=None,
        use_causal_mask=False,
        key_lengths=None,
    ):
        key_shape = None if key is None else key.shape
        output = keras.KerasTensor(
            self.compute_output_shape(query.shape, value.shape, key_shape),
            dtype=self.compute_dtype,
        )
        if not return_attention_scores:
            return output
        query_shape, value_shape = tuple(query.shape), tuple(value.shape)
        axes = self._resolve_axes(len(query_shape))
        batch_like = [query_shape[a] for a in range(len(query_shape) - 1) if a not in axes]
        scores_shape = (
            *batch_like,
            self.num_heads,
            *(query_shape[a] for a in axes),
            *(value_shape[a] for a in axes),
        )
        return output, keras.KerasTensor(scores_shape, dtype=self.compute_dtype)

    def get_config(self):
        config = super().get_config()
        config.update(
            {
                "num_heads": self.num_heads,
                "key_dim": self.key_dim,
                "value_dim": self.value_dim,
                "dropout": self.dropout,
                "use_bias": self.use_bias,
                "use_gate": self.use_gate,
                "output_shape": self._output_shape,
                "attention_axes": self.attention_axes,
                "sliding_window": self.sliding_window,
                "flash_attention": self._flash_attention,
                "kernel_initializer": keras.initializers.serialize(self.kernel_initializer),
                "bias_initializer": keras.initializers.serialize(self.bias_initializer),
                "kernel_regularizer": keras.regularizers.serialize(self.kernel_regularizer),
                "bias_regularizer": keras.regularizers.serialize(self.bias_regularizer),
                "activity_regularizer": keras.regularizers.serialize(
                    self.activity_regularizer_of_projections
                ),
                "kernel_constraint": keras.constraints.serialize(self.kernel_constraint),
                "bias_constraint": keras.constraints.serialize(self.bias_constraint),
                "seed": self.seed,
                "implementation": self.implementation,
                "block_size": self.block_size,
            }
        )
        return config
