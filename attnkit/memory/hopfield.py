"""Classical (discrete) Hopfield network: an associative memory of ±1 patterns (NNDL 8.6.1)."""

import keras
from keras import ops

from attnkit import precision
from attnkit.checks import check_bool, check_choice, check_positive_int, check_seed
from attnkit.scoring.base import work_dtype

__all__ = ["HopfieldNetwork"]

_UPDATES = ("asynchronous", "synchronous")


@keras.saving.register_keras_serializable(package="attnkit")
class HopfieldNetwork(keras.layers.Layer):
    """Discrete Hopfield network: Hebbian storage, recall by sign updates that lower an energy.

    States are vectors s ∈ {−1, +1}^m. Storing N patterns x^(1..N) uses the Hebbian rule

        w_ij = (1/N) Σ_n x_i^(n) x_j^(n)  (i ≠ j),   w_ii = 0

    and a unit updates as s_i ← sgn(Σ_j w_ij s_j + b_i), keeping its value when the field is
    exactly 0. Asynchronous updates change one unit at a time (in a random order per sweep
    with `shuffle=True`), synchronous updates change all units at once. The energy

        E(s) = −½ sᵀ W s − bᵀ s

    never rises under asynchronous updates (W symmetric, w_ii = 0), so the network settles in
    a local minimum: a stored pattern, when it is stable. Synchronous updates may instead
    oscillate with period 2. With N random patterns, recall breaks down near N ≈ 0.14 m
    (see `examples/hopfield_capacity.py`).

    Design: this is a Keras layer with *non-trainable* weights `kernel` (W, m × m) and `bias`
    (b, m), because it is not trained by gradient descent: `store` sets W by the Hebbian
    rule. Being a layer, it saves and loads with its stored memory (`.keras` files) and works
    inside a model; every update is written with `keras.ops`. The fields are computed in
    float32 under mixed precision. NNDL's 1/N (the number of patterns) scales W; many texts
    use 1/m instead: without a bias the dynamics are the same.

    Args:
        units: positive int m, the number of ±1 units.
        update: `"asynchronous"` (default) or `"synchronous"`, the rule `call` uses.
        max_iterations: positive int, the most sweeps (asynchronous: each sweep updates every
            unit once) or synchronous steps `call` makes; it stops earlier once no unit
            changes. Defaults to 100.
        shuffle: bool, whether each asynchronous sweep visits the units in a random order
            (default True) or in the order 0..m−1.
        seed: optional int, the seed of the random order.
        **kwargs: base layer keyword arguments, such as `name` and `dtype`.

    Call arguments:
        inputs: tensor of shape `(batch_size, units)`, the initial states (e.g. corrupted
            patterns). Entries are read as sgn(x) with 0 read as +1.

    Returns:
        The recalled states, shape `(batch_size, units)`, entries ±1.

    Source: NNDL 8.6.1 (Hopfield network); Hopfield 1982.
    """

    def __init__(
        self, units, update="asynchronous", max_iterations=100, shuffle=True, seed=None, **kwargs
    ):
        super().__init__(**kwargs)
        check_positive_int("units", units)
        check_choice("update", update, _UPDATES)
        check_positive_int("max_iterations", max_iterations)
        check_bool("shuffle", shuffle)
        check_seed(seed)
        self.units = units
        self.update = update
        self.max_iterations = max_iterations
        self.shuffle = shuffle
        self.seed = seed
        self.seed_generator = keras.random.SeedGenerator(seed) if shuffle else None

    def build(self, input_shape=None):
        if input_shape is not None:
            self._check_states_shape(tuple(input_shape), "input_shape")
        self.kernel = self.add_weight(
            name="kernel", shape=(self.units, self.units), initializer="zeros", trainable=False
        )
        self.bias = self.add_weight(
            name="bias", shape=(self.units,), initializer="zeros", trainable=False
        )

    def _check_states_shape(self, shape, name):
        if len(shape) != 2 or (shape[-1] is not None and shape[-1] != self.units):
            raise ValueError(
                f"`{name}` must have shape (batch_size, units={self.units}). "
                f"Received: {name}={shape}"
            )

    def _ensure_built(self):
        if not self.built:
            self.build()
            self.built = True

    # ---------------------------------------------------------------------- storage
    def store(self, patterns, bias=None):
        """Stores ±1 patterns with the Hebbian rule, replacing what was stored before.

        W = (1/N) Σ_n x^(n) x^(n)ᵀ with the diagonal set to 0; b = `bias` (default 0).

        Args:
            patterns: tensor of shape `(N, units)` with entries ±1, N ≥ 1.
            bias: optional tensor of shape `(units,)`.

        Returns:
            The layer itself.
        """
        self._ensure_built()
        patterns = ops.convert_to_tensor(patterns)
        shape = tuple(patterns.shape)
        if len(shape) != 2 or shape[-1] != self.units:
            raise ValueError(
                f"`patterns` must have shape (num_patterns, units={self.units}). "
                f"Received: patterns with shape {shape}"
            )
        if shape[0] == 0:
            raise ValueError(
                "`patterns` must hold at least one pattern. "
                f"Received: patterns with shape {shape}, num_patterns=0"
            )
        dtype = self.kernel.dtype
        x = ops.cast(patterns, dtype)
        weights = precision.matmul(ops.transpose(x), x) / ops.cast(shape[0], dtype)
        weights = weights * (1.0 - ops.eye(self.units, dtype=dtype))
        self.kernel.assign(weights)
        if bias is not None:
            bias = ops.convert_to_tensor(bias)
            if tuple(bias.shape) != (self.units,):
                raise ValueError(
                    f"`bias` must have shape (units={self.units},). "
                    f"Received: bias with shape {tuple(bias.shape)}"
                )
            self.bias.assign(ops.cast(bias, dtype))
        else:
            self.bias.assign(ops.zeros((self.units,), dtype=dtype))
        return self

    # ------------------------------------------------------------------- dynamics
    def _states(self, states):
        self._ensure_built()
        states = ops.convert_to_tensor(states)
        self._check_states_shape(tuple(states.shape), "states")
        compute = work_dtype(self.compute_dtype)
        states = ops.cast(states, compute)
        ones = ops.ones_like(states)
        return ops.where(ops.greater_equal(states, 0.0), ones, -ones), compute

    def _params(self, compute):
        return ops.cast(self.kernel, compute), ops.cast(self.bias, compute)

    @staticmethod
    def _sign_keep(field, current):
        """sgn(field), keeping `current` where the field is exactly 0."""
        ones = ops.ones_like(field)
        return ops.where(
            ops.greater(field, 0.0), ones, ops.where(ops.less(field, 0.0), -ones, current)
        )

    def energy(self, states):
        """E(s) = −½ sᵀWs − bᵀs for each state.

        Args:
            states: tensor of shape `(batch_size, units)` (±1 entries).

        Returns:
            Tensor of shape `(batch_size,)`.
        """
        s, compute = self._states(states)
        w, b = self._params(compute)
        return -0.5 * ops.sum(precision.matmul(s, w) * s, axis=-1) - ops.sum(s * b, axis=-1)

    def synchronous_step(self, states):
        """One synchronous update of every unit: s ← sgn(W s + b) (0 keeps the unit).

        Args:
            states: tensor of shape `(batch_size, units)`.

        Returns:
            The new states, shape `(batch_size, units)`, in the layer's compute dtype.
        """
        s, compute = self._states(states)
        w, b = self._params(compute)
        return ops.cast(self._sign_keep(precision.matmul(s, w) + b, s), self.compute_dtype)

    def _update_unit(self, s, w, b, unit):
        row = ops.take(w, unit, axis=0)  # W symmetric: row i = column i
        field = ops.sum(s * row, axis=-1) + ops.take(b, unit)
        onehot = ops.cast(ops.equal(ops.arange(self.units), unit), s.dtype)
        current = ops.sum(s * onehot, axis=-1)
        new = self._sign_keep(field, current)
        return s + ops.expand_dims(new - current, -1) * onehot

    def update_unit(self, states, unit):
        """One asynchronous update of unit i: s_i ← sgn(Σ_j w_ij s_j + b_i) (0 keeps s_i).

        Args:
            states: tensor of shape `(batch_size, units)`.
            unit: int (or scalar integer tensor) i in [0, units).

        Returns:
            The new states, shape `(batch_size, units)`; only unit i may differ.
        """
        if isinstance(unit, int) and not 0 <= unit < self.units:
            raise ValueError(f"`unit` must be in [0, units={self.units}). Received: unit={unit}")
        s, compute = self._states(states)
        w, b = self._params(compute)
        return ops.cast(self._update_unit(s, w, b, unit), self.compute_dtype)

    def asynchronous_sweep(self, states, order=None):
        """Updates every unit once, one at a time, in `order` (default 0..m−1).

        Args:
            states: tensor of shape `(batch_size, units)`.
            order: optional integer tensor of shape `(units,)`, a permutation of the units.

        Returns:
            The new states, shape `(batch_size, units)`.
        """
        s, compute = self._states(states)
        w, b = self._params(compute)
        order = ops.arange(self.units) if order is None else ops.convert_to_tensor(order)
        s = self._sweep(s, w, b, order)
        return ops.cast(s, self.compute_dtype)

    def _sweep(self, s, w, b, order):
        def body(i, state):
            return self._update_unit(state, w, b, ops.take(order, i))

        return ops.fori_loop(0, self.units, body, s)

    def _orders(self):
        if not self.shuffle:
            return ops.tile(ops.arange(self.units)[None, :], (self.max_iterations, 1))
        noise = keras.random.uniform((self.max_iterations, self.units), seed=self.seed_generator)
        return ops.argsort(noise, axis=-1)

    def call(self, inputs):
        s, compute = self._states(inputs)
        w, b = self._params(compute)
        orders = self._orders() if self.update == "asynchronous" else None

        def cond(step, state, changed):
            return ops.logical_and(ops.less(step, self.max_iterations), changed)

        def body(step, state, changed):
            if self.update == "asynchronous":
                new = self._sweep(state, w, b, ops.take(orders, step, axis=0))
            else:
                new = self._sign_keep(precision.matmul(state, w) + b, state)
            return step + 1, new, ops.any(ops.not_equal(new, state))

        _, s, _ = ops.while_loop(
            cond, body, (ops.convert_to_tensor(0), s, ops.convert_to_tensor(True))
        )
        return ops.cast(s, self.compute_dtype)

    def compute_output_shape(self, input_shape):
        self._check_states_shape(tuple(input_shape), "input_shape")
        return tuple(input_shape)

    def get_config(self):
        config = super().get_config()
        config.update(
            {
                "units": self.units,
                "update": self.update,
                "max_iterations": self.max_iterations,
                "shuffle": self.shuffle,
                "seed": self.seed,
            }
        )
        return config
