"""The Transformer encoder block: Vaswani et al. 2017, section 3.1; NNDL 8.3."""

import keras

from attnkit.transformer.block import TransformerBlock, get_keras_mask

__all__ = ["TransformerEncoderBlock"]


@keras.saving.register_keras_serializable(package="attnkit")
class TransformerEncoderBlock(TransformerBlock):
    """One encoder block: multi-head self-attention, then a position-wise feed-forward network,
    each inside a residual connection with normalization and dropout.

    post-norm (`norm_first=False`, the original paper):
        H = N_1(X + D(MultiHead(X, X, X))),   Y = N_2(H + D(FFN(H)))
    pre-norm (`norm_first=True`):
        H = X + D(MultiHead(N_1(X), ·, ·)),   Y = H + D(FFN(N_2(H)))

    N is layer normalization (`normalization="layer"`) or RMSNorm (`"rms"`); FFN uses ReLU,
    GELU or SwiGLU (`activation`). The modern pre-norm block of LLaMA-style models is
    `norm_first=True, normalization="rms", activation="swiglu", use_bias=False`. A stack of
    pre-norm blocks is usually followed by one more normalization, which the block does not
    include. The attention is `attnkit.GroupedQueryAttention` (multi-head attention when
    `num_key_value_heads` is `None`), available as the sub-layer `self_attention`; the others
    are `self_attention_norm`, `feed_forward` (`attnkit.transformer.FeedForward`) and
    `feed_forward_norm`.

    Masks: the padding mask (`padding_mask`, or the Keras mask the input carries) hides the
    padded keys from every query, and padded queries attend to nothing (their attention output
    is the output bias); `attention_mask` is any mask `GroupedQueryAttention` takes, per head
    included. The output carries the input's Keras mask.

    Args:
        num_heads: positive int, the number of attention heads H.
        intermediate_dim: positive int, the feed-forward hidden size d_ff.
        num_key_value_heads: optional positive int dividing H (grouped-query attention).
        head_dim: optional positive int; defaults to d / H.
        dropout: float in [0, 1), the dropout on each sub-layer's output and on the
            feed-forward hidden layer.
        attention_dropout: float in [0, 1), the dropout on the attention weights.
        activation: `"relu"` (the default), `"gelu"` or `"swiglu"`.
        normalization: `"layer"` (the default) or `"rms"`.
        norm_first: bool, pre-norm when `True`; post-norm (the default) otherwise.
        epsilon: positive float, the normalizations' ε. Defaults to 1e-5.
        use_bias: bool, whether the attention and feed-forward maps have biases.
        sliding_window: optional positive int, the attention window |i − j| < w.
        use_rotary: bool, whether the self-attention uses rotary positions.
        rotary_max_wavelength: positive float, the rotary base.
        rotary_pairing: `"halves"` (the default) or `"adjacent"`, see
            `attnkit.RotaryEmbedding`.
        kernel_initializer: initializer of the kernels. Defaults to `"glorot_uniform"`.
        bias_initializer: initializer of the biases. Defaults to `"zeros"`.
        seed: optional int, the seed of the dropouts.
        **kwargs: base layer keyword arguments, such as `name` and `dtype`.

    Call arguments:
        inputs: tensor `(batch_size, T, d)`.
        padding_mask: optional boolean `(batch_size, T)`, `True` at real tokens; defaults to
            the Keras mask of `inputs`.
        attention_mask: optional boolean `(T, T)`, `(batch_size, T, T)` or
            `(batch_size, H, T, T)`.
        training: bool, whether dropout is applied.

    Returns:
        Tensor `(batch_size, T, d)`.

    Source: Vaswani et al. 2017, "Attention is all you need", sections 3.1 and 5.4; Xiong et
    al. 2020, "On Layer Normalization in the Transformer Architecture" (pre-norm); NNDL 8.3.
    """

    def build(self, inputs_shape):
        shape = self._check_features("inputs", inputs_shape)
        self.self_attention = self._attention("self_attention", shape[-1], True)
        self.self_attention.build(shape, shape)
        self.self_attention_norm = self._norm("self_attention_norm", shape)
        self._build_common(shape)

    def call(self, inputs, padding_mask=None, attention_mask=None, training=None):
        if padding_mask is None:
            padding_mask = get_keras_mask(inputs)

        def attend(h):
            return self.self_attention(
                h,
                h,
                query_mask=padding_mask,
                value_mask=padding_mask,
                attention_mask=attention_mask,
                training=training,
            )

        x, _ = self._residual(inputs, self.self_attention_norm, attend, training)
        return self._feed_forward_residual(x, training)

    def compute_output_shape(self, inputs_shape):
        return tuple(inputs_shape)
