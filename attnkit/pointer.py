"""Pointer network: the attention distribution itself is the output, NNDL (8.12)-(8.15)."""

import dataclasses

import keras
from keras import ops

from attnkit import precision
from attnkit.attention import masking
from attnkit.checks import check_bool, check_positive_int, renamed_argument
from attnkit.scoring.additive import AdditiveScore

__all__ = ["PointerNetwork"]


def _check_inputs_shape(inputs_shape):
    inputs_shape = tuple(inputs_shape)
    if len(inputs_shape) != 3 or inputs_shape[-1] is None:
        raise ValueError(
            "`inputs` must have shape (batch_size, N, d) with a known d. "
            f"Received: inputs_shape={inputs_shape}"
        )
    return inputs_shape


@keras.saving.register_keras_serializable(package="attnkit")
class PointerNetwork(keras.layers.Layer):
    """Pointer network: an LSTM encoder-decoder whose outputs point at input positions.

    With e_n the encoder states of the inputs x_1, ..., x_N and d_m the decoder state at
    output step m (the decoder reads x_{c_{m-1}}, the input chosen at the previous step, and
    a learned start vector at m = 1; its initial state is the encoder's final state):

        s_{m,n} = vᵀ tanh(W e_n + U d_m)                          NNDL (8.15), AdditiveScore
        p(c_m = n | c_{1:m-1}, x_{1:N}) = softmax_n(s_{m,n})        NNDL (8.14)
        p(c_{1:M} | x_{1:N}) = Π_m p(c_m | c_{1:m-1}, x_{1:N})       NNDL (8.12)-(8.13)

    The softmax goes through `attnkit.attention.masking.masked_softmax` (float32 under mixed
    precision): padded inputs (`key_lengths`, `input_mask`) and, with `mask_chosen=True`,
    the positions already chosen at earlier steps get exactly zero probability, so the
    output is a permutation when M = N. A step whose every position is masked gives all-zero
    probabilities, never NaN. Train with a cross-entropy on the probabilities (not logits),
    e.g. `keras.losses.SparseCategoricalCrossentropy()`.

    Args:
        units: positive int, the size of the encoder and decoder LSTM states and of the
            additive score's hidden layer.
        mask_chosen: bool, whether positions chosen at earlier steps are masked out
            (teacher forcing: the true earlier targets; greedy decoding: the earlier
            argmaxes). Defaults to `True`.
        **kwargs: base layer keyword arguments, such as `name` and `dtype`.

    Call arguments:
        inputs: tensor `(batch_size, N, d)`, the input sequence x_1, ..., x_N.
        targets: optional integer tensor `(batch_size, M)`, the true output indices c_m in
            [0, N) for teacher forcing. Without it, the call decodes greedily for N steps
            (see `decode`).
        key_lengths: optional integer tensor `(batch_size,)`, the valid input lengths
            (formerly `input_lengths`, which still works with a DeprecationWarning).
        input_mask: optional boolean tensor `(batch_size, N)`, `False` for padded inputs.
        training: bool, passed to the LSTMs.

    Returns:
        The pointer distributions of shape `(batch_size, M, N)` (M = N when decoding):
        row m is p(c_m = · | c_{1:m-1}, x_{1:N}).

    Source: NNDL 8.2.1.5 "指针网络", (8.12)-(8.15); Vinyals, Fortunato and Jaitly 2015.
    """

    def __init__(self, units, mask_chosen=True, **kwargs):
        super().__init__(**kwargs)
        check_positive_int("units", units)
        self.units = units
        self.mask_chosen = check_bool("mask_chosen", mask_chosen)
        policy = self.dtype_policy
        self.encoder = keras.layers.LSTM(
            units,
            activation=precision.recurrent_tanh(policy),
            return_sequences=True,
            return_state=True,
            dtype=policy,
            name="encoder",
        )
        self.decoder = keras.layers.LSTM(
            units,
            activation=precision.recurrent_tanh(policy),
            return_sequences=True,
            return_state=True,
            dtype=policy,
            name="decoder",
        )
        self.score = AdditiveScore(units, dtype=policy, name="score")

    def build(self, inputs_shape, targets_shape=None):
        inputs_shape = _check_inputs_shape(inputs_shape)
        self.encoder.build(inputs_shape)
        self.decoder.build((inputs_shape[0], None, inputs_shape[-1]))
        states = (inputs_shape[0], None, self.units)
        self.score.build(states, states)
        self.start_input = self.add_weight(
            name="start_input", shape=(inputs_shape[-1],), initializer="random_normal"
        )

    # --------------------------------------------------------------- helpers
    def _encode(self, inputs, masks, training):
        inputs = ops.cast(inputs, self.compute_dtype)
        keep = masks.keep(inputs[:, :1], inputs)  # (B, 1, N) or None: the inputs the encoder reads
        encoder_mask = None if keep is None else keep[:, 0]
        states, h, c = self.encoder(inputs, mask=encoder_mask, training=training)
        return inputs, states, [h, c]

    def _start(self, inputs):
        start = ops.cast(self.start_input, self.compute_dtype)
        return ops.zeros_like(inputs[:, 0]) + start  # (B, d)

    # ---------------------------------------------------------- teacher forcing
    def call(
        self,
        inputs,
        targets=None,
        key_lengths=None,
        input_mask=None,
        training=None,
        input_lengths=None,
    ):
        key_lengths = renamed_argument("key_lengths", key_lengths, "input_lengths", input_lengths)
        if targets is None:
            return self.decode(inputs, key_lengths=key_lengths, input_mask=input_mask)[1]
        masks = masking.Masks(key_mask=input_mask, key_lengths=key_lengths)
        inputs, states, initial = self._encode(inputs, masks, training)
        targets = ops.cast(targets, "int32")
        # The decoder reads the start vector, then x_{c_1}, ..., x_{c_{M-1}}.
        index = ops.expand_dims(targets[:, :-1], -1) + ops.zeros_like(inputs[:, :1], "int32")
        chosen_inputs = ops.take_along_axis(inputs, index, axis=1)  # (B, M-1, d)
        decoder_inputs = ops.concatenate(
            [ops.expand_dims(self._start(inputs), 1), chosen_inputs], axis=1
        )
        decoder_states = self.decoder(decoder_inputs, initial_state=initial, training=training)[0]
        scores = self.score(decoder_states, states)  # (B, M, N)
        not_chosen = None
        if self.mask_chosen:
            one_hot = ops.one_hot(targets, ops.shape(inputs)[1], dtype="int32")  # (B, M, N)
            before = ops.cumsum(one_hot, axis=1) - one_hot  # chosen at steps < m
            not_chosen = ops.equal(before, 0)
        mask = dataclasses.replace(masks, attention_mask=not_chosen).keep(decoder_states, states)
        return masking.masked_softmax(ops.cast(scores, self.compute_dtype), mask)

    # --------------------------------------------------------- greedy decoding
    def decode(self, inputs, num_steps=None, key_lengths=None, input_mask=None, input_lengths=None):
        """Greedy decoding: at each step, points at the most probable input position.

        Args:
            inputs: tensor `(batch_size, N, d)`.
            num_steps: positive int M, the number of output steps. Defaults to N (which must
                then be known statically).
            key_lengths: optional integer tensor `(batch_size,)` (formerly `input_lengths`,
                which still works with a DeprecationWarning).
            input_mask: optional boolean tensor `(batch_size, N)`.

        Returns:
            A tuple `(indices, probabilities)`: int32 indices `(batch_size, M)` and the
            pointer distributions `(batch_size, M, N)`.
        """
        if num_steps is None:
            num_steps = tuple(inputs.shape)[1]
            if num_steps is None:
                raise ValueError(
                    "`num_steps` is needed when N is not known statically. "
                    f"Received: num_steps={num_steps!r}"
                )
        check_positive_int("num_steps", num_steps)
        key_lengths = renamed_argument("key_lengths", key_lengths, "input_lengths", input_lengths)
        if not self.built:
            self.build(tuple(inputs.shape))
        masks = masking.Masks(key_mask=input_mask, key_lengths=key_lengths)
        inputs, states, (h, c) = self._encode(inputs, masks, False)
        n = ops.shape(inputs)[1]
        batch = ops.shape(inputs)[0]
        chosen = ops.zeros((batch, n), "bool")
        probs = ops.zeros((batch, n), self.compute_dtype)
        index = ops.zeros((batch,), "int32")

        def step(carry, _):
            h, c, previous, chosen, _, _ = carry
            output, (h, c) = self.decoder.cell(previous, [h, c], training=False)
            scores = self.score(ops.expand_dims(output, 1), states)  # (B, 1, N)
            query = ops.expand_dims(output, 1)
            not_chosen = ops.expand_dims(ops.logical_not(chosen), 1) if self.mask_chosen else None
            mask = dataclasses.replace(masks, attention_mask=not_chosen).keep(query, states)
            p = masking.masked_softmax(ops.cast(scores, self.compute_dtype), mask)[:, 0]
            index = ops.cast(ops.argmax(p, axis=-1), "int32")
            chosen = ops.logical_or(chosen, ops.cast(ops.one_hot(index, n), "bool"))
            gather = ops.expand_dims(ops.expand_dims(index, -1), -1) + ops.zeros_like(
                inputs[:, :1], "int32"
            )
            previous = ops.take_along_axis(inputs, gather, axis=1)[:, 0]
            new = (h, c, previous, chosen, p, index)
            return new, new

        init = (h, c, self._start(inputs), chosen, probs, index)
        _, outputs = ops.scan(step, init, length=num_steps)
        return ops.transpose(outputs[5], (1, 0)), ops.transpose(outputs[4], (1, 0, 2))

    # ------------------------------------------------------------ shapes, config
    def compute_mask(self, inputs, *args, **kwargs):
        return None

    def compute_output_shape(self, inputs_shape, targets_shape=None):
        inputs_shape = _check_inputs_shape(inputs_shape)
        steps = inputs_shape[1] if targets_shape is None else tuple(targets_shape)[1]
        return (inputs_shape[0], steps, inputs_shape[1])

    def compute_output_spec(self, inputs, targets=None, *masks_and_training, **keywords):
        shape = self.compute_output_shape(inputs.shape, None if targets is None else targets.shape)
        return keras.KerasTensor(shape, dtype=self.compute_dtype)

    def get_config(self):
        config = super().get_config()
        config.update({"units": self.units, "mask_chosen": self.mask_chosen})
        return config
