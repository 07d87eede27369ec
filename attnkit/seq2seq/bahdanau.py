"""Bahdanau attention decoder: the query is the previous decoder state s_{t-1}."""

import keras
from keras import ops

from attnkit import precision
from attnkit.attention import masking
from attnkit.checks import check_positive_int, renamed_argument
from attnkit.scoring.additive import AdditiveScore

__all__ = ["BahdanauDecoder"]


def _check_shapes(inputs_shape, encoder_outputs_shape):
    inputs_shape = tuple(inputs_shape)
    encoder_outputs_shape = tuple(encoder_outputs_shape)
    if len(inputs_shape) != 2:
        raise ValueError(
            "`inputs` must be token ids of shape (batch_size, T_out). "
            f"Received: inputs_shape={inputs_shape}"
        )
    if len(encoder_outputs_shape) != 3 or encoder_outputs_shape[-1] is None:
        raise ValueError(
            "`encoder_outputs` must have shape (batch_size, T_in, d_enc) with a known d_enc. "
            f"Received: encoder_outputs_shape={encoder_outputs_shape}"
        )
    return inputs_shape, encoder_outputs_shape


@keras.saving.register_keras_serializable(package="attnkit")
class BahdanauDecoder(keras.layers.Layer):
    """GRU decoder with Bahdanau (additive) attention over the encoder states.

    At each output step t, with s_{t-1} the previous decoder state, h_j the encoder states
    (keys = values) and y_{t-1} the previous target token:

        e_tj = vᵀ tanh(W_q s_{t-1} + W_k h_j)          (AdditiveScore)
        α_tj = softmax_j(e_tj)  over the valid source positions
        c_t  = Σ_j α_tj h_j
        s_t  = GRU([embed(y_{t-1}); c_t], s_{t-1})
        logits_t = W_o [s_t; c_t] + b_o

    Padded source positions (from `encoder_outputs_mask`, a Keras mask carried by
    `encoder_outputs`, or from `key_lengths`, d2l's valid lengths) get exactly zero
    weight; an example with no valid source position gets a zero context, never NaN. The
    softmax goes through `attnkit.attention.masking.masked_softmax` (float32 under mixed
    precision). `call` is teacher forcing (the true previous tokens are fed in); `decode` is
    greedy decoding (the decoder's own argmax is fed back). The steps run in
    `keras.ops.scan`, so the target length may be unknown until run time.

    Args:
        vocab_size: positive int, the size of the target vocabulary (embedding rows and
            output logits).
        embedding_dim: positive int, the size of the target token embeddings.
        units: positive int, the size of the GRU state s_t.
        attention_units: positive int, the hidden size of the additive score. Defaults to
            `units`.
        **kwargs: base layer keyword arguments, such as `name` and `dtype`.

    Call arguments:
        inputs: integer tensor `(batch_size, T_out)`, the decoder input tokens (the target
            shifted right, starting with a begin-of-sequence token).
        encoder_outputs: tensor `(batch_size, T_in, d_enc)`, the encoder states h_j.
        initial_state: optional tensor `(batch_size, units)`, s_0, e.g. the encoder's final
            state. Defaults to zeros.
        encoder_outputs_mask: optional boolean tensor `(batch_size, T_in)`, `False` for
            padded source positions. Filled in from a Keras mask carried by
            `encoder_outputs`.
        key_lengths: optional integer tensor `(batch_size,)`, the valid source lengths
            (formerly `source_lengths`, which still works with a DeprecationWarning).
        return_attention_scores: bool, whether to also return the attention history.
        return_state: bool, whether to also return the final decoder state.
        training: bool, passed to the sublayers.

    Returns:
        The logits of shape `(batch_size, T_out, vocab_size)`; then, when
        `return_attention_scores=True`, the attention history α of shape
        `(batch_size, T_out, T_in)` (row t: the weights used to produce output t, ready for
        `attnkit.viz.plot_attention`); then, when `return_state=True`, the final state
        `(batch_size, units)`.

    Source: Bahdanau et al. 2015; slides "Bahdanau 注意力" (the previous decoder state is
    the query, encoder states are keys and values, valid lengths mask the padding); blog
    "Bahdanau 注意力" e_ij = score(s_{i-1}, h_j).
    """

    def __init__(self, vocab_size, embedding_dim, units, attention_units=None, **kwargs):
        super().__init__(**kwargs)
        check_positive_int("vocab_size", vocab_size)
        check_positive_int("embedding_dim", embedding_dim)
        check_positive_int("units", units)
        if attention_units is not None:
            check_positive_int("attention_units", attention_units)
        self.vocab_size = vocab_size
        self.embedding_dim = embedding_dim
        self.units = units
        self.attention_units = attention_units
        policy = self.dtype_policy
        self.embedding = keras.layers.Embedding(
            vocab_size, embedding_dim, dtype=policy, name="embedding"
        )
        self.score = AdditiveScore(attention_units or units, dtype=policy, name="score")
        self.cell = keras.layers.GRUCell(
            units, activation=precision.recurrent_tanh(policy), dtype=policy, name="cell"
        )
        self.output_projection = precision.Dense(vocab_size, dtype=policy, name="output_projection")

    def build(self, inputs_shape, encoder_outputs_shape):
        inputs_shape, encoder_outputs_shape = _check_shapes(inputs_shape, encoder_outputs_shape)
        batch, d_enc = inputs_shape[0], encoder_outputs_shape[-1]
        self.embedding.build(inputs_shape)
        self.score.build((batch, 1, self.units), encoder_outputs_shape)
        self.cell.build((batch, self.embedding_dim + d_enc))
        self.output_projection.build((batch, self.units + d_enc))

    # ------------------------------------------------------------------ one step
    def _source_mask(self, encoder_outputs, encoder_outputs_mask, key_lengths, source_lengths):
        """(B, 1, T_in) boolean mask of the valid source positions, or None."""
        key_lengths = renamed_argument("key_lengths", key_lengths, "source_lengths", source_lengths)
        masks = masking.Masks(key_mask=encoder_outputs_mask, key_lengths=key_lengths)
        return masks.keep(encoder_outputs[:, :1], encoder_outputs)

    def _step(self, state, embedded, encoder_outputs, mask, training):
        """One decoder step: (s_{t-1}, embed(y_{t-1})) -> (s_t, logits_t, α_t)."""
        scores = self.score(ops.expand_dims(state, 1), encoder_outputs)  # (B, 1, T_in)
        alpha = masking.masked_softmax(ops.cast(scores, self.compute_dtype), mask)
        context = ops.squeeze(precision.matmul(alpha, encoder_outputs), 1)  # (B, d_enc)
        step_input = ops.concatenate([embedded, context], axis=-1)
        new_state, _ = self.cell(step_input, [state], training=training)
        logits = self.output_projection(ops.concatenate([new_state, context], axis=-1))
        return new_state, logits, ops.squeeze(alpha, 1)

    def _initial_state(self, encoder_outputs, initial_state):
        if initial_state is None:
            return ops.zeros((ops.shape(encoder_outputs)[0], self.units), self.compute_dtype)
        return ops.cast(initial_state, self.compute_dtype)

    # ---------------------------------------------------------- teacher forcing
    def call(
        self,
        inputs,
        encoder_outputs,
        initial_state=None,
        encoder_outputs_mask=None,
        key_lengths=None,
        return_attention_scores=False,
        return_state=False,
        training=None,
        source_lengths=None,
    ):
        encoder_outputs = ops.cast(encoder_outputs, self.compute_dtype)
        mask = self._source_mask(encoder_outputs, encoder_outputs_mask, key_lengths, source_lengths)
        state = self._initial_state(encoder_outputs, initial_state)
        embedded = ops.transpose(self.embedding(inputs), (1, 0, 2))  # (T_out, B, E)
        batch = ops.shape(encoder_outputs)[0]

        def step(carry, embedded_t):
            new = self._step(carry[0], embedded_t, encoder_outputs, mask, training)
            # The TensorFlow `ops.scan` stacks outputs with the carry's structure, so the
            # per-step outputs travel in the carry.
            return new, new

        init = (
            state,
            ops.zeros((batch, self.vocab_size), self.compute_dtype),
            ops.zeros((batch, ops.shape(encoder_outputs)[1]), self.compute_dtype),
        )
        last, (_, logits, alphas) = ops.scan(step, init, embedded)
        outputs = [ops.transpose(logits, (1, 0, 2))]
        if return_attention_scores:
            outputs.append(ops.transpose(alphas, (1, 0, 2)))
        if return_state:
            outputs.append(last[0])
        return outputs[0] if len(outputs) == 1 else tuple(outputs)

    # --------------------------------------------------------- greedy decoding
    def decode(
        self,
        encoder_outputs,
        start_token,
        max_length,
        initial_state=None,
        encoder_outputs_mask=None,
        key_lengths=None,
        end_token=None,
        source_lengths=None,
    ):
        """Greedy decoding: feeds the decoder its own argmax for `max_length` steps.

        Args:
            encoder_outputs: tensor `(batch_size, T_in, d_enc)`.
            start_token: int, the begin-of-sequence token fed at the first step.
            max_length: positive int, the number of steps.
            initial_state: optional tensor `(batch_size, units)`; defaults to zeros.
            encoder_outputs_mask: optional boolean tensor `(batch_size, T_in)`.
            key_lengths: optional integer tensor `(batch_size,)` (formerly `source_lengths`,
                which still works with a DeprecationWarning).
            end_token: optional int, the end-of-sequence token: once an example has produced
                it, its later tokens are `end_token` and its later attention rows are zero.

        Returns:
            A tuple `(tokens, attention)`: int32 tokens `(batch_size, max_length)` and the
            attention history `(batch_size, max_length, T_in)`.
        """
        check_positive_int("max_length", max_length)
        if not self.built:
            self.build((None, None), tuple(encoder_outputs.shape))
        encoder_outputs = ops.cast(encoder_outputs, self.compute_dtype)
        mask = self._source_mask(encoder_outputs, encoder_outputs_mask, key_lengths, source_lengths)
        batch = ops.shape(encoder_outputs)[0]
        state = self._initial_state(encoder_outputs, initial_state)
        tokens = ops.full((batch,), start_token, dtype="int32")
        done = ops.zeros((batch,), dtype="bool")
        alpha0 = ops.zeros((batch, ops.shape(encoder_outputs)[1]), self.compute_dtype)

        def step(carry, _):
            state, previous, alpha, done = carry
            state, logits, alpha = self._step(
                state, self.embedding(previous), encoder_outputs, mask, False
            )
            token = ops.cast(ops.argmax(logits, axis=-1), "int32")
            if end_token is not None:
                token = ops.where(done, end_token, token)
                alpha = ops.where(ops.expand_dims(done, -1), ops.zeros_like(alpha), alpha)
                done = ops.logical_or(done, ops.equal(token, end_token))
            new = (state, token, alpha, done)
            return new, new

        _, (_, tokens, alphas, _) = ops.scan(step, (state, tokens, alpha0, done), length=max_length)
        return ops.transpose(tokens, (1, 0)), ops.transpose(alphas, (1, 0, 2))

    # ------------------------------------------------------------ shapes, config
    def compute_mask(self, inputs, *args, **kwargs):
        return None

    def compute_output_shape(self, inputs_shape, encoder_outputs_shape):
        inputs_shape, _ = _check_shapes(inputs_shape, encoder_outputs_shape)
        return (*inputs_shape, self.vocab_size)

    def compute_output_spec(
        self,
        inputs,
        encoder_outputs,
        initial_state=None,
        encoder_outputs_mask=None,
        key_lengths=None,
        return_attention_scores=False,
        return_state=False,
        training=None,
        source_lengths=None,
    ):
        shape = self.compute_output_shape(inputs.shape, encoder_outputs.shape)
        outputs = [keras.KerasTensor(shape, dtype=self.compute_dtype)]
        if return_attention_scores:
            outputs.append(
                keras.KerasTensor((*shape[:2], encoder_outputs.shape[1]), dtype=self.compute_dtype)
            )
        if return_state:
            outputs.append(keras.KerasTensor((shape[0], self.units), dtype=self.compute_dtype))
        return outputs[0] if len(outputs) == 1 else tuple(outputs)

    def get_config(self):
        config = super().get_config()
        config.update(
            {
                "vocab_size": self.vocab_size,
                "embedding_dim": self.embedding_dim,
                "units": self.units,
                "attention_units": self.attention_units,
            }
        )
        return config
