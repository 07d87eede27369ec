"""Neural Turing Machine (Graves et al. 2014): addressing functions, an RNN cell and a layer.

The addressing of one head at step t is a chain of four functions, each public and testable
alone (Graves et al. 2014, §3.3, Figure 2):

    w^c = content_addressing(M, k, β)      w^c_i = softmax_i(β cos(k, M_i))
    w^g = interpolate(w^c, w_{t−1}, g)     w^g = g w^c + (1 − g) w_{t−1}
    w̃   = circular_shift(w^g, s)           w̃_i = Σ_j w^g_j s_{(i − j) mod N}
    w   = sharpen(w̃, γ)                    w_i = w̃_i^γ / Σ_j w̃_j^γ

Reading is r = Σ_i w_i M_i and writing is the erase/add rule of `memory_write`.
"""

import keras
from keras import ops

from attnkit import precision
from attnkit.attention import masking
from attnkit.checks import check_bool, check_choice, check_positive_int, get_initializer
from attnkit.memory.read_write import check_memory, memory_address, memory_write
from attnkit.scoring.base import work_dtype
from attnkit.scoring.cosine import CosineScore

__all__ = [
    "NTMCell",
    "NeuralTuringMachine",
    "circular_shift",
    "content_addressing",
    "interpolate",
    "sharpen",
]

_CONTROLLERS = ("lstm", "dense")

#: Initial value of every memory entry: a small constant, not zero, so that the first cosine
#: similarities are defined (Collier and Beel 2018 found a constant initial memory to learn
#: best).
MEMORY_INIT = 1e-6


def _per_head(x, weights_shape, name):
    """Reshapes a per-head scalar (β, g, γ) of shape (B,), (B, 1), (B, H) or (B, H, 1)."""
    x = ops.convert_to_tensor(x)
    rank, w_rank = len(x.shape), len(weights_shape)
    if not (rank == w_rank - 1 or (rank == w_rank and x.shape[-1] in (1, None))):
        raise ValueError(
            f"`{name}` must have one value per head: shape {weights_shape[:-1]} or "
            f"{(*weights_shape[:-1], 1)}. Received: {name} with shape {tuple(x.shape)}"
        )
    return x if rank == w_rank else ops.expand_dims(x, -1)


def _check_weights(w, name):
    w = ops.convert_to_tensor(w)
    if len(w.shape) not in (2, 3):
        raise ValueError(
            f"`{name}` must have shape (batch_size, memory_size) or "
            f"(batch_size, heads, memory_size). Received: {name} with shape {tuple(w.shape)}"
        )
    if w.shape[-1] == 0:
        raise ValueError(
            f"`{name}` must have at least one memory slot. "
            f"Received: {name} with shape {tuple(w.shape)}, memory_size=0"
        )
    return w


def content_addressing(memory, key, beta, memory_mask=None):
    """Content-based addressing: cosine similarity times a key strength, then softmax.

    w^c_i = exp(β K(k, M_i)) / Σ_j exp(β K(k, M_j)),   K(u, v) = uᵀv / (‖u‖ ‖v‖)

    Uses `attnkit.CosineScore` with a per-head sharpness β and `masked_softmax`. A larger β
    gives a sharper focus; β = 0 gives uniform weights.

    Args:
        memory: tensor of shape `(batch_size, memory_size, width)`.
        key: tensor of shape `(batch_size, width)` (one head) or `(batch_size, heads, width)`.
        beta: key strength β ≥ 0, shape `(batch_size,)` / `(batch_size, 1)` for one head or
            `(batch_size, heads)` / `(batch_size, heads, 1)`.
        memory_mask: optional boolean tensor `(batch_size, memory_size)`, `False` for padded
            slots (zero weight).

    Returns:
        Weights of shape `(batch_size, memory_size)` or `(batch_size, heads, memory_size)`.

    Source: NNDL 8.5.2; Graves et al. 2014 §3.3.1 (focusing by content), equations (5)-(6).
    """
    memory = check_memory(memory)
    key = ops.convert_to_tensor(key)
    if len(key.shape) not in (2, 3):
        raise ValueError(
            "`key` must have shape (batch_size, width) or (batch_size, heads, width). "
            f"Received: key with shape {tuple(key.shape)}"
        )
    if key.shape[-1] is not None and memory.shape[-1] is not None:
        if key.shape[-1] != memory.shape[-1]:
            raise ValueError(
                "`key` must have the width of the memory. "
                f"Received: key with shape {tuple(key.shape)}, "
                f"memory with shape {tuple(memory.shape)}"
            )
    beta = _per_head(beta, (*key.shape[:-1], 1), "beta")[..., 0]
    score = CosineScore(dtype=keras.backend.standardize_dtype(memory.dtype))
    return memory_address(
        memory, key, score, memory_mask=memory_mask, sharpness=ops.cast(beta, key.dtype)
    )


def interpolate(content_weights, previous_weights, gate):
    """Interpolation gate: blends content weights with the previous step's weights.

    w^g_t = g_t w^c_t + (1 − g_t) w_{t−1},   g_t ∈ [0, 1]

    g = 1 keeps the content weights; g = 0 ignores the content and keeps the previous
    weights (so that location-based iteration can continue from there).

    Args:
        content_weights: w^c, shape `(batch_size, memory_size)` or
            `(batch_size, heads, memory_size)`.
        previous_weights: w_{t−1}, the same shape.
        gate: g, shape `(batch_size,)` / `(batch_size, 1)` or `(batch_size, heads)` /
            `(batch_size, heads, 1)`.

    Returns:
        Weights of the shape of `content_weights`.

    Source: NNDL 8.5.2; Graves et al. 2014 §3.3.2, equation (7).
    """
    content_weights = _check_weights(content_weights, "content_weights")
    previous_weights = _check_weights(previous_weights, "previous_weights")
    c_shape, p_shape = tuple(content_weights.shape), tuple(previous_weights.shape)
    if len(c_shape) != len(p_shape) or any(
        a is not None and b is not None and a != b for a, b in zip(c_shape, p_shape, strict=True)
    ):
        raise ValueError(
            "`content_weights` and `previous_weights` must have the same shape. "
            f"Received: content_weights with shape {c_shape}, "
            f"previous_weights with shape {p_shape}"
        )
    gate = ops.cast(_per_head(gate, content_weights.shape, "gate"), content_weights.dtype)
    previous_weights = ops.cast(previous_weights, content_weights.dtype)
    return gate * content_weights + (1.0 - gate) * previous_weights


def circular_shift(weights, shift):
    """Rotates the weights by a distribution over integer shifts (a circular convolution).

    w̃_i = Σ_j w_j s_{(i − j) mod N} = Σ_{o=−k}^{k} s_o w_{(i − o) mod N}

    The shift distribution has 2k + 1 entries for the offsets −k, …, k (entry k is "no
    shift"); with s = one-hot at offset +1 the focus moves one slot forward. The shift wraps
    around all N slots (an NTM memory has no padded slots).

    Args:
        weights: w^g, shape `(batch_size, memory_size)` or `(batch_size, heads, memory_size)`.
        shift: s, shape `(batch_size, 2k + 1)` or `(batch_size, heads, 2k + 1)` (normally a
            softmax output), an odd number of offsets.

    Returns:
        Weights of the shape of `weights`.

    Source: NNDL 8.5.2; Graves et al. 2014 §3.3.2, equation (8).
    """
    weights = _check_weights(weights, "weights")
    shift = ops.convert_to_tensor(shift)
    if len(shift.shape) != len(weights.shape):
        raise ValueError(
            "`shift` must have shape (batch_size, 2k + 1) for weights (batch_size, "
            "memory_size), or (batch_size, heads, 2k + 1). Received: shift with shape "
            f"{tuple(shift.shape)}, weights with shape {tuple(weights.shape)}"
        )
    size = shift.shape[-1]
    if size is None or size % 2 == 0:
        raise ValueError(
            "`shift` must have a static, odd number of offsets 2k + 1 (offsets -k..k). "
            f"Received: shift with shape {tuple(shift.shape)}"
        )
    k = size // 2
    shift = ops.cast(shift, weights.dtype)
    out = None
    for index in range(size):
        term = shift[..., index : index + 1] * ops.roll(weights, index - k, axis=-1)
        out = term if out is None else out + term
    return out


def sharpen(weights, gamma):
    """Sharpening: raises the weights to a power γ ≥ 1 and renormalises.

    w_i = w̃_i^γ / Σ_j w̃_j^γ

    Counters the blurring of the circular shift. Computed as exp(γ log w̃) in float32 (for
    float16/bfloat16 inputs), with exact zeros kept at zero (so the gradient is finite) and
    an all-zero row (a fully masked memory) giving zeros, never NaN.

    Args:
        weights: w̃, shape `(batch_size, memory_size)` or `(batch_size, heads, memory_size)`,
            non-negative.
        gamma: γ, shape `(batch_size,)` / `(batch_size, 1)` or `(batch_size, heads)` /
            `(batch_size, heads, 1)`.

    Returns:
        Weights of the shape and dtype of `weights`.

    Source: NNDL 8.5.2; Graves et al. 2014 §3.3.2, equation (9).
    """
    weights = _check_weights(weights, "weights")
    dtype = weights.dtype
    compute = work_dtype(dtype)
    w = ops.cast(weights, compute)
    gamma = ops.cast(_per_head(gamma, weights.shape, "gamma"), compute)
    positive = ops.greater(w, 0.0)
    tiny = ops.cast(1e-30, compute)
    powered = ops.where(positive, ops.exp(gamma * ops.log(precision.maximum(w, tiny))), 0.0)
    total = ops.sum(powered, axis=-1, keepdims=True)
    out = powered / precision.maximum(total, tiny)
    return ops.cast(out, dtype)


def _read(memory, weights):
    """r_h = Σ_i w_{h,i} M_i for weights (B, H, N): (B, H, width)."""
    return precision.matmul(weights, memory)


@keras.saving.register_keras_serializable(package="attnkit")
class NTMCell(keras.layers.Layer):
    """Neural Turing Machine cell: a controller with read and write heads on a memory matrix.

    At step t, with memory M_{t−1} (N × W), previous read vectors r_{t−1} and head weights:

        h_t = controller([x_t; r_{t−1}])             (LSTM or dense controller)
        per head: k, β = softplus(β̂), g = σ(ĝ), s = softmax(ŝ), γ = 1 + softplus(γ̂)
        w_t = sharpen(circular_shift(interpolate(content_addressing(M_{t−1}, k, β),
                                                w_{t−1}, g), s), γ)
        read heads: r_t = Σ_i w_t(i) M_{t−1}(i)
        write heads (erase e = σ(ê), add a = tanh(â)):
            M_t(i) = M_{t−1}(i) ⊙ Π_h (1 − w_t^h(i) e_h) + Σ_h w_t^h(i) a_h
        y_t = W_y [h_t; r_t] + b_y

    The key k is tanh(k̂). Reads use the memory before this step's write. The memory starts
    at the constant `MEMORY_INIT` = 1e-6, every head's weights at slot 0 (one-hot), the
    read vectors at zero. The addressing is computed in float32 under mixed precision.

    The cell follows the Keras RNN cell API: `state_size` lists the controller states, then
    the flattened read vectors `(R·W)`, read weights `(R·N)`, write weights `(H·N)` and
    memory `(N·W)`; it can be wrapped in `keras.layers.RNN`.

    Args:
        units: positive int, the size of the output y_t.
        memory_size: positive int N, the number of memory slots. Defaults to 128.
        memory_width: positive int W, the width of a slot. Defaults to 20.
        controller: `"lstm"` (default) or `"dense"` (a feed-forward tanh layer).
        controller_units: positive int, the size of the controller. Defaults to 100.
        num_read_heads: positive int R. Defaults to 1.
        num_write_heads: positive int H. Defaults to 1.
        shift_range: positive int k: the shift distribution covers offsets −k..k.
            Defaults to 1.
        activation: activation of the output y_t (any Keras activation); None (default)
            gives logits.
        return_addressing: bool; when True the output also holds the read and write weights,
            flattened after y_t (used by `NeuralTuringMachine`). Defaults to False.
        kernel_initializer: initializer of the dense kernels. Defaults to
            `"glorot_uniform"`.
        **kwargs: base layer keyword arguments, such as `name` and `dtype`.

    Call arguments:
        inputs: tensor of shape `(batch_size, input_dim)`, x_t.
        states: the list of state tensors, shapes `(batch_size, s)` for s in `state_size`.
        training: bool, passed to the LSTM controller.

    Returns:
        `(output, new_states)`: the output of shape `(batch_size, output_size)` (y_t, then
        with `return_addressing` the read weights `R·N` and write weights `H·N`), and the
        new states.

    Source: NNDL 8.5.2 (neural Turing machine); Graves et al. 2014 §3.
    """

    def __init__(
        self,
        units,
        memory_size=128,
        memory_width=20,
        controller="lstm",
        controller_units=100,
        num_read_heads=1,
        num_write_heads=1,
        shift_range=1,
        activation=None,
        return_addressing=False,
        kernel_initializer="glorot_uniform",
        **kwargs,
    ):
        super().__init__(**kwargs)
        for name, value in (
            ("units", units),
            ("memory_size", memory_size),
            ("memory_width", memory_width),
            ("controller_units", controller_units),
            ("num_read_heads", num_read_heads),
            ("num_write_heads", num_write_heads),
            ("shift_range", shift_range),
        ):
            check_positive_int(name, value)
        check_choice("controller", controller, _CONTROLLERS)
        check_bool("return_addressing", return_addressing)
        try:
            self.activation = keras.activations.get(activation)
        except (ValueError, TypeError) as error:
            raise ValueError(
                f"`activation` must be a Keras activation. Received: activation={activation!r}"
            ) from error
        self.units = units
        self.memory_size = memory_size
        self.memory_width = memory_width
        self.controller = controller
        self.controller_units = controller_units
        self.num_read_heads = num_read_heads
        self.num_write_heads = num_write_heads
        self.shift_range = shift_range
        self.return_addressing = return_addressing
        self.kernel_initializer = get_initializer("kernel_initializer", kernel_initializer)

        policy = self.dtype_policy
        if controller == "lstm":
            self.controller_layer = keras.layers.LSTMCell(
                controller_units,
                activation=precision.recurrent_tanh(policy),
                kernel_initializer=self.kernel_initializer,
                dtype=policy,
            )
        else:
            self.controller_layer = precision.Dense(
                controller_units,
                activation="tanh",
                kernel_initializer=self.kernel_initializer,
                dtype=policy,
            )
        shifts = 2 * shift_range + 1
        self._read_params = memory_width + 3 + shifts  # k, β, g, γ, s
        self._write_params = self._read_params + 2 * memory_width  # + e, a
        self.head_layer = precision.Dense(
            num_read_heads * self._read_params + num_write_heads * self._write_params,
            kernel_initializer=self.kernel_initializer,
            dtype=policy,
        )
        self.output_layer = precision.Dense(
            units, kernel_initializer=self.kernel_initializer, dtype=policy
        )

    # --------------------------------------------------------------------- RNN API
    @property
    def _controller_state_size(self):
        return [self.controller_units, self.controller_units] if self.controller == "lstm" else []

    @property
    def state_size(self):
        n, w = self.memory_size, self.memory_width
        return [
            *self._controller_state_size,
            self.num_read_heads * w,
            self.num_read_heads * n,
            self.num_write_heads * n,
            n * w,
        ]

    @property
    def output_size(self):
        size = self.units
        if self.return_addressing:
            size += (self.num_read_heads + self.num_write_heads) * self.memory_size
        return size

    def get_initial_state(self, batch_size=None):
        dtype = self.compute_dtype
        n, w = self.memory_size, self.memory_width
        states = [
            ops.zeros((batch_size, size), dtype=dtype) for size in self._controller_state_size
        ]
        first_slot = ops.cast(ops.equal(ops.arange(n), 0), dtype)
        states.append(ops.zeros((batch_size, self.num_read_heads * w), dtype=dtype))
        for heads in (self.num_read_heads, self.num_write_heads):
            states.append(ops.tile(first_slot[None, :], (batch_size, heads)))
        states.append(ops.full((batch_size, n * w), MEMORY_INIT, dtype=dtype))
        return states

    # ------------------------------------------------------------------------ build
    def build(self, input_shape):
        input_shape = tuple(input_shape)
        if len(input_shape) != 2:
            raise ValueError(
                "NTMCell inputs must have shape (batch_size, input_dim). "
                f"Received: input_shape={input_shape}"
            )
        batch, features = input_shape
        controller_in = (batch, features + self.num_read_heads * self.memory_width)
        self.controller_layer.build(controller_in)
        self.head_layer.build((batch, self.controller_units))
        self.output_layer.build(
            (batch, self.controller_units + self.num_read_heads * self.memory_width)
        )

    # ------------------------------------------------------------------------- call
    def _address(self, params, memory, previous):
        """The addressing chain for the heads described by `params` (B, H, P)."""
        w = self.memory_width
        s = 2 * self.shift_range + 1
        key = precision.tanh(params[..., :w])
        beta = ops.softplus(params[..., w : w + 1])
        gate = ops.sigmoid(params[..., w + 1 : w + 2])
        gamma = 1.0 + ops.softplus(params[..., w + 2 : w + 3])
        shift = masking.masked_softmax(params[..., w + 3 : w + 3 + s])
        weights = content_addressing(memory, key, beta)
        weights = interpolate(weights, previous, gate)
        weights = circular_shift(weights, shift)
        return sharpen(weights, gamma)

    def call(self, inputs, states, training=None):
        n, w = self.memory_size, self.memory_width
        r_heads, w_heads = self.num_read_heads, self.num_write_heads
        states = list(states)
        controller_states = states[: len(self._controller_state_size)]
        read_vectors, read_weights, write_weights, memory = states[len(controller_states) :]

        compute = work_dtype(self.compute_dtype)
        controller_in = ops.concatenate([inputs, ops.cast(read_vectors, inputs.dtype)], axis=-1)
        if self.controller == "lstm":
            hidden, controller_states = self.controller_layer(
                controller_in, controller_states, training=training
            )
            controller_states = list(controller_states)
        else:
            hidden = self.controller_layer(controller_in)

        params = ops.cast(self.head_layer(hidden), compute)
        read_params = ops.reshape(
            params[:, : r_heads * self._read_params], (-1, r_heads, self._read_params)
        )
        write_params = ops.reshape(
            params[:, r_heads * self._read_params :], (-1, w_heads, self._write_params)
        )
        memory = ops.reshape(ops.cast(memory, compute), (-1, n, w))
        read_weights = ops.reshape(ops.cast(read_weights, compute), (-1, r_heads, n))
        write_weights = ops.reshape(ops.cast(write_weights, compute), (-1, w_heads, n))

        read_weights = self._address(read_params, memory, read_weights)
        reads = _read(memory, read_weights)  # (B, R, W), from M_{t-1}
        write_weights = self._address(write_params, memory, write_weights)
        base = self._read_params
        erase = ops.sigmoid(write_params[..., base : base + w])
        add = precision.tanh(write_params[..., base + w : base + 2 * w])
        memory = memory_write(memory, write_weights, erase, add)

        dtype = self.compute_dtype
        flat_reads = ops.cast(ops.reshape(reads, (-1, r_heads * w)), dtype)
        output = self.output_layer(ops.concatenate([hidden, flat_reads], axis=-1))
        if self.activation is not None:
            output = self.activation(output)
        flat_read_weights = ops.cast(ops.reshape(read_weights, (-1, r_heads * n)), dtype)
        flat_write_weights = ops.cast(ops.reshape(write_weights, (-1, w_heads * n)), dtype)
        if self.return_addressing:
            output = ops.concatenate(
                [ops.cast(output, dtype), flat_read_weights, flat_write_weights], axis=-1
            )
        new_states = [
            *controller_states,
            flat_reads,
            flat_read_weights,
            flat_write_weights,
            ops.cast(ops.reshape(memory, (-1, n * w)), dtype),
        ]
        return output, new_states

    def compute_output_shape(self, input_shape):
        return (tuple(input_shape)[0], self.output_size)

    def get_config(self):
        config = super().get_config()
        config.update(
            {
                "units": self.units,
                "memory_size": self.memory_size,
                "memory_width": self.memory_width,
                "controller": self.controller,
                "controller_units": self.controller_units,
                "num_read_heads": self.num_read_heads,
                "num_write_heads": self.num_write_heads,
                "shift_range": self.shift_range,
                "activation": keras.activations.serialize(self.activation),
                "return_addressing": self.return_addressing,
                "kernel_initializer": keras.initializers.serialize(self.kernel_initializer),
            }
        )
        return config


@keras.saving.register_keras_serializable(package="attnkit")
class NeuralTuringMachine(keras.layers.Layer):
    """Neural Turing Machine layer: an `NTMCell` run over a sequence with `keras.layers.RNN`.

    y_t, state_t = NTMCell(x_t, state_{t−1}) for t = 1..T (see `NTMCell` for the step:
    controller, content addressing by cosine × key strength β, interpolation gate g, circular
    shift s, sharpening γ, read r = Σ w M, erase/add write).

    Padded time steps (a Keras mask, e.g. from `Embedding(mask_zero=True)`, or the `mask`
    call argument) leave the state unchanged. The read and write weights of every step come
    back through the `return_attention_scores` call flag.

    Args:
        units: positive int, the size of the output y_t.
        memory_size: positive int N. Defaults to 128.
        memory_width: positive int W. Defaults to 20.
        controller: `"lstm"` (default) or `"dense"`.
        controller_units: positive int. Defaults to 100.
        num_read_heads: positive int. Defaults to 1.
        num_write_heads: positive int. Defaults to 1.
        shift_range: positive int k (offsets −k..k). Defaults to 1.
        activation: activation of y_t; None (default) gives logits.
        return_sequences: bool, whether to return y_t for every step (default True) or only
            the last one.
        kernel_initializer: initializer of the dense kernels. Defaults to `"glorot_uniform"`.
        **kwargs: base layer keyword arguments, such as `name` and `dtype`.

    Call arguments:
        inputs: tensor of shape `(batch_size, timesteps, input_dim)`.
        mask: optional boolean tensor `(batch_size, timesteps)`, `False` for padded steps.
        training: bool, passed to the controller.
        return_attention_scores: bool, whether to also return the read and write weights.

    Returns:
        Outputs of shape `(batch_size, timesteps, units)` (or `(batch_size, units)` with
        `return_sequences=False`); with `return_attention_scores=True` also the read weights
        `(batch_size, timesteps, num_read_heads, memory_size)` and the write weights
        `(batch_size, timesteps, num_write_heads, memory_size)` (without the timesteps axis
        when `return_sequences=False`).

    Source: NNDL 8.5.2 (neural Turing machine); Graves et al. 2014.
    """

    def __init__(
        self,
        units,
        memory_size=128,
        memory_width=20,
        controller="lstm",
        controller_units=100,
        num_read_heads=1,
        num_write_heads=1,
        shift_range=1,
        activation=None,
        return_sequences=True,
        kernel_initializer="glorot_uniform",
        **kwargs,
    ):
        super().__init__(**kwargs)
        check_bool("return_sequences", return_sequences)
        self.cell = NTMCell(
            units,
            memory_size=memory_size,
            memory_width=memory_width,
            controller=controller,
            controller_units=controller_units,
            num_read_heads=num_read_heads,
            num_write_heads=num_write_heads,
            shift_range=shift_range,
            activation=activation,
            return_addressing=True,
            kernel_initializer=kernel_initializer,
            dtype=self.dtype_policy,
        )
        self.return_sequences = return_sequences
        self.rnn = keras.layers.RNN(
            self.cell, return_sequences=return_sequences, dtype=self.dtype_policy
        )
        self.supports_masking = True

    def build(self, input_shape):
        input_shape = tuple(input_shape)
        if len(input_shape) != 3:
            raise ValueError(
                "`inputs` must have shape (batch_size, timesteps, input_dim). "
                f"Received: input_shape={input_shape}"
            )
        self.rnn.build(input_shape)

    def call(self, inputs, mask=None, training=None, return_attention_scores=False):
        out = self.rnn(inputs, mask=mask, training=training)
        cell = self.cell
        n, units = cell.memory_size, cell.units
        r_end = units + cell.num_read_heads * n
        output = out[..., :units]
        if not return_attention_scores:
            return output
        lead = ops.shape(out)[:-1]
        read_weights = ops.reshape(out[..., units:r_end], (*lead, cell.num_read_heads, n))
        write_weights = ops.reshape(out[..., r_end:], (*lead, cell.num_write_heads, n))
        return output, read_weights, write_weights

    def compute_mask(self, inputs, mask=None):
        return mask if self.return_sequences else None

    def compute_output_shape(self, input_shape):
        input_shape = tuple(input_shape)
        lead = input_shape[:2] if self.return_sequences else input_shape[:1]
        return (*lead, self.cell.units)

    def compute_output_spec(self, inputs, mask=None, training=None, return_attention_scores=False):
        shape = tuple(inputs.shape)
        lead = shape[:2] if self.return_sequences else shape[:1]
        dtype = self.compute_dtype
        output = keras.KerasTensor((*lead, self.cell.units), dtype=dtype)
        if not return_attention_scores:
            return output
        n = self.cell.memory_size
        return (
            output,
            keras.KerasTensor((*lead, self.cell.num_read_heads, n), dtype=dtype),
            keras.KerasTensor((*lead, self.cell.num_write_heads, n), dtype=dtype),
        )

    def get_config(self):
        config = super().get_config()
        cell = self.cell.get_config()
        for name in (
            "units",
            "memory_size",
            "memory_width",
            "controller",
            "controller_units",
            "num_read_heads",
            "num_write_heads",
            "shift_range",
            "activation",
            "kernel_initializer",
        ):
            config[name] = cell[name]
        config["return_sequences"] = self.return_sequences
        return config
