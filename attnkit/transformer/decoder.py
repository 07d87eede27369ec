"""The Transformer decoder block: Vaswani et al. 2017, section 3.1; NNDL 8.3."""

import keras

from attnkit.transformer.block import TransformerBlock, get_keras_mask

__all__ = ["TransformerDecoderBlock"]


@keras.saving.register_keras_serializable(package="attnkit")
class TransformerDecoderBlock(TransformerBlock):
    """One decoder block: causal self-attention, cross-attention over the encoder's output (when
    there is one), then a feed-forward network, each inside a residual connection.

    post-norm (`norm_first=False`, the original paper):
        H = N_1(X + D(MaskedMultiHead(X, X, X)))
        G = N_2(H + D(MultiHead(H, E, E)))            (only with an encoder sequence E)
        Y = N_3(G + D(FFN(G)))
    pre-norm (`norm_first=True`): x ← x + D(F(N(x))) for each of the three sub-layers.

    Built without an encoder sequence, the block has no cross-attention: the block of a
    decoder-only language model (GPT; with `norm_first=True, normalization="rms",
    activation="swiglu"` and rotary positions, LLaMA's). Options and the feed-forward network
    as in `attnkit.TransformerEncoderBlock`; sub-layers `self_attention`,
    `self_attention_norm`, `cross_attention`, `cross_attention_norm`, `feed_forward`,
    `feed_forward_norm`. The rotary positions and the sliding window apply to the
    self-attention only.

    Masks: the self-attention is causal (`use_causal_mask=True`, the default) and also takes
    `decoder_padding_mask` (or the Keras mask of `decoder_sequence`) and
    `decoder_attention_mask`; the cross-attention takes `encoder_padding_mask` (or the Keras
    mask of `encoder_sequence`) and `encoder_attention_mask`. Per-head masks
    `(batch_size, H, Tq, Tk)` are accepted as in `attnkit.GroupedQueryAttention`.

    Incremental decoding: `empty_cache(batch_size, max_length)` gives a self-attention cache;
    calling the block with `self_attention_cache` and `self_attention_cache_update_index` (the
    position of the first token of `decoder_sequence`, usually one token per step) returns
    `(output, updated_cache)`; the outputs of the steps equal those of one causal pass over the
    whole sequence. Only the self-attention is cached (the cross-attention's keys and values
    are recomputed from `encoder_sequence` at each step), and a cached call takes no
    `decoder_padding_mask`: pad on the right, past the tokens generated.

    Args: as `attnkit.TransformerEncoderBlock`.

    Call arguments:
        decoder_sequence: tensor `(batch_size, T, d)`.
        encoder_sequence: optional tensor `(batch_size, S, d_e)`, required when the block
            was built with one.
        decoder_padding_mask: optional boolean `(batch_size, T)`.
        encoder_padding_mask: optional boolean `(batch_size, S)`.
        decoder_attention_mask: optional boolean `(T, T)`, `(batch_size, T, T)` or
            `(batch_size, H, T, T)` (T the cache length with a cache).
        encoder_attention_mask: optional boolean `(T, S)`, `(batch_size, T, S)` or
            `(batch_size, H, T, S)`.
        use_causal_mask: bool, whether the self-attention is causal. Defaults to `True`.
        self_attention_cache: optional tensor `(batch_size, 2, max_length, H_kv, d_head)`.
        self_attention_cache_update_index: int or scalar integer tensor, the position of the
            first token of `decoder_sequence` (required with a cache).
        training: bool, whether dropout is applied.

    Returns:
        Tensor `(batch_size, T, d)`; with a cache, the tuple `(output, updated_cache)`.

    Source: Vaswani et al. 2017, "Attention is all you need", sections 3.1 and 3.2.3; NNDL
    8.3.
    """

    def build(self, decoder_sequence_shape, encoder_sequence_shape=None):
        shape = self._check_features("decoder_sequence", decoder_sequence_shape)
        self.self_attention = self._attention("self_attention", shape[-1], True)
        self.self_attention.build(shape, shape)
        self.self_attention_norm = self._norm("self_attention_norm", shape)
        self.cross_attention = None
        if encoder_sequence_shape is not None:
            encoder_shape = tuple(encoder_sequence_shape)
            if len(encoder_shape) != 3 or encoder_shape[-1] is None:
                raise ValueError(
                    "`encoder_sequence` must have shape (batch_size, S, d_e) with a known d_e. "
                    f"Received: encoder_sequence_shape={encoder_shape}"
                )
            self.cross_attention = self._attention("cross_attention", shape[-1], False)
            self.cross_attention.build(shape, encoder_shape)
            self.cross_attention_norm = self._norm("cross_attention_norm", shape)
        self._build_common(shape)

    def empty_cache(self, batch_size, max_length):
        """A self-attention cache of zeros, `(batch_size, 2, max_length, H_kv, d_head)`, for a
        built block (its head size may depend on the input's)."""
        if not self.built:
            raise ValueError(
                "Build the block (or call it once) before asking for its cache: d_head may "
                f"depend on the input size. Received: a block not built, {self.name}"
            )
        return self.self_attention.empty_cache(batch_size, max_length)

    def call(
        self,
        decoder_sequence,
        encoder_sequence=None,
        decoder_padding_mask=None,
        encoder_padding_mask=None,
        decoder_attention_mask=None,
        encoder_attention_mask=None,
        use_causal_mask=True,
        self_attention_cache=None,
        self_attention_cache_update_index=None,
        training=None,
    ):
        if (encoder_sequence is None) != (self.cross_attention is None):
            raise ValueError(
                "A decoder block built with an encoder sequence must be called with one, and "
                "one built without it, without. Received: encoder_sequence="
                f"{None if encoder_sequence is None else tuple(encoder_sequence.shape)}, "
                f"built with cross-attention: {self.cross_attention is not None}"
            )
        cached = self_attention_cache is not None
        if cached and self_attention_cache_update_index is None:
            raise ValueError(
                "`self_attention_cache` needs `self_attention_cache_update_index`, the position "
                "of the first token. Received: self_attention_cache_update_index=None"
            )
        if decoder_padding_mask is None and not cached:
            decoder_padding_mask = get_keras_mask(decoder_sequence)
        elif decoder_padding_mask is not None and cached:
            raise ValueError(
                "A cached call takes no `decoder_padding_mask` (its keys are the cache's). "
                "Received: decoder_padding_mask with shape "
                f"{tuple(decoder_padding_mask.shape)}"
            )
        if encoder_sequence is not None and encoder_padding_mask is None:
            encoder_padding_mask = get_keras_mask(encoder_sequence)

        def attend_to_self(h):
            return self.self_attention(
                h,
                h,
                query_mask=decoder_padding_mask,
                value_mask=decoder_padding_mask,
                attention_mask=decoder_attention_mask,
                use_causal_mask=use_causal_mask,
                cache=self_attention_cache,
                cache_update_index=self_attention_cache_update_index,
                training=training,
            )

        x, cache = self._residual(
            decoder_sequence, self.self_attention_norm, attend_to_self, training
        )
        if self.cross_attention is not None:

            def attend_to_encoder(h):
                return self.cross_attention(
                    h,
                    encoder_sequence,
                    query_mask=decoder_padding_mask,
                    value_mask=encoder_padding_mask,
                    attention_mask=encoder_attention_mask,
                    training=training,
                )

            x, _ = self._residual(x, self.cross_attention_norm, attend_to_encoder, training)
        x = self._feed_forward_residual(x, training)
        return (x, cache) if cached else x

    def compute_output_shape(self, decoder_sequence_shape, encoder_sequence_shape=None):
        return tuple(decoder_sequence_shape)
