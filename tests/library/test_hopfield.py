"""attnkit.memory.HopfieldNetwork: Hebbian storage, updates and energy against NumPy."""

import keras
import numpy as np
import pytest
import tensorflow as tf

from attnkit.memory import HopfieldNetwork
from grader.reference import hopfield as hopfield_ref


def _np(x):
    return keras.ops.convert_to_numpy(x)


def _patterns(rng, count, units):
    return rng.choice([-1.0, 1.0], size=(count, units))


def _flip(rng, patterns, fraction):
    flips = rng.random(patterns.shape) < fraction
    return np.where(flips, -patterns, patterns)


def _network(units, w, b, dtype="float64", **kwargs):
    net = HopfieldNetwork(units, dtype=dtype, **kwargs)
    net.build((None, units))
    net.kernel.assign(w)
    net.bias.assign(b)
    return net


def _random_network(rng, units):
    """A random symmetric W with zero diagonal and a random bias: any such network."""
    a = rng.normal(size=(units, units))
    w = (a + a.T) / 2
    np.fill_diagonal(w, 0.0)
    return w, rng.normal(scale=0.5, size=units)


# ------------------------------------------------------------------------ storage
@pytest.mark.parametrize(("count", "units"), [(1, 1), (1, 4), (3, 7), (6, 12)])
def test_hebbian_storage_matches_numpy(count, units, rng):
    patterns = _patterns(rng, count, units)
    net = HopfieldNetwork(units, dtype="float64").store(patterns)
    np.testing.assert_allclose(_np(net.kernel), hopfield_ref.hebbian(patterns), rtol=1e-12)
    np.testing.assert_array_equal(np.diag(_np(net.kernel)), 0.0)
    np.testing.assert_array_equal(_np(net.bias), 0.0)
    bias = rng.normal(size=units)
    net.store(patterns, bias=bias)
    np.testing.assert_allclose(_np(net.bias), bias)


@pytest.mark.parametrize("units", [1, 5, 16])
def test_energy_matches_numpy(units, rng):
    w, b = _random_network(rng, units)
    net = _network(units, w, b)
    states = _patterns(rng, 4, units)
    expected = [hopfield_ref.energy(s, w, b) for s in states]
    np.testing.assert_allclose(_np(net.energy(states)), expected, rtol=1e-12, atol=1e-12)


# ------------------------------------------------------------------------ updates
@pytest.mark.parametrize("units", [1, 4, 9])
def test_update_rules_match_numpy(units, rng):
    w, b = _random_network(rng, units)
    w = np.round(w)  # integer weights and zero bias on some units: exact zero fields occur
    b[: units // 2] = 0.0
    net = _network(units, w, b)
    states = _patterns(rng, 8, units)
    fields = states @ w.T + b
    expected_sync = np.array(
        [
            [hopfield_ref.sign_keep(fields[n, i], states[n, i]) for i in range(units)]
            for n in range(8)
        ]
    )
    np.testing.assert_array_equal(_np(net.synchronous_step(states)), expected_sync)
    for unit in range(units):
        expected = states.copy()
        expected[:, unit] = expected_sync[:, unit]
        np.testing.assert_array_equal(_np(net.update_unit(states, unit)), expected)
    order = rng.permutation(units)
    expected = states.copy()
    for unit in order:  # one sweep, in order, each unit seeing the latest state
        for n in range(8):
            field = sum(w[unit, j] * expected[n, j] for j in range(units)) + b[unit]
            expected[n, unit] = hopfield_ref.sign_keep(field, expected[n, unit])
    np.testing.assert_array_equal(_np(net.asynchronous_sweep(states, order)), expected)


def test_energy_never_rises_under_asynchronous_updates(rng):
    """Over many random networks (random symmetric W, w_ii = 0, random b; and Hebbian ones)."""
    synchronous_rises = 0
    for trial in range(50):
        units = int(rng.integers(2, 13))
        if trial % 3 == 0:
            w, b = (
                hopfield_ref.hebbian(_patterns(rng, int(rng.integers(1, 5)), units)),
                np.zeros(units),
            )
        else:
            w, b = _random_network(rng, units)
        net = _network(units, w, b)
        states = _patterns(rng, 8, units)
        energies = hopfield_ref.energies(states, w, b)
        for unit in rng.integers(0, units, size=2 * units):
            states = _np(net.update_unit(states, int(unit)))
            new = hopfield_ref.energies(states, w, b)
            assert np.all(new <= energies + 1e-12), (trial, unit, new - energies)
            energies = new
        # The property is not automatic: synchronous updates of the same kind of network
        # can raise the energy.
        start = _patterns(rng, 8, units)
        after = _np(net.synchronous_step(start))
        rises = hopfield_ref.energies(after, w, b) > hopfield_ref.energies(start, w, b) + 1e-9
        synchronous_rises += int(np.sum(rises))
    assert synchronous_rises > 0


def test_recall_ends_in_a_local_energy_minimum(rng):
    w, b = _random_network(rng, 10)
    net = _network(10, w, b, seed=3)
    final = _np(net(_patterns(rng, 5, 10)))
    # A fixed point of every single-unit update: no flip lowers the energy.
    np.testing.assert_array_equal(_np(net.synchronous_step(final)), final)
    for s in final:
        e = hopfield_ref.energy(s, w, b)
        for i in range(10):
            flipped = s.copy()
            flipped[i] = -flipped[i]
            assert hopfield_ref.energy(flipped, w, b) >= e - 1e-12


@pytest.mark.parametrize("update", ["asynchronous", "synchronous"])
@pytest.mark.parametrize("shuffle", [True, False])
def test_recall_from_corrupted_patterns(update, shuffle, rng):
    patterns = _patterns(rng, 5, 100)
    net = HopfieldNetwork(100, update=update, shuffle=shuffle, seed=0).store(patterns)
    corrupted = _flip(rng, patterns, 0.1)
    assert np.all(np.sum(corrupted != patterns, axis=1) > 0)
    np.testing.assert_array_equal(_np(net(corrupted)), patterns)


def test_synchronous_updates_can_oscillate_where_asynchronous_converge():
    # W = [[0, 1], [1, 0]] from s = (+1, -1): synchronous updates swap the two units forever
    # (a 2-cycle); asynchronous updates reach (+1, +1) or (-1, -1), both minima.
    w, b = np.array([[0.0, 1.0], [1.0, 0.0]]), np.zeros(2)
    start = np.array([[1.0, -1.0]])
    sync = _network(2, w, b, update="synchronous", max_iterations=5)
    np.testing.assert_array_equal(_np(sync(start)), [[-1.0, 1.0]])  # odd number of steps
    asynchronous = _network(2, w, b, shuffle=False)
    np.testing.assert_array_equal(_np(asynchronous(start)), [[-1.0, -1.0]])  # unit 0 first


def test_inputs_are_read_as_signs(rng):
    patterns = _patterns(rng, 2, 20)
    net = HopfieldNetwork(20, seed=1).store(patterns)
    scaled = patterns * rng.uniform(0.1, 3.0, size=patterns.shape)
    np.testing.assert_array_equal(_np(net(scaled.astype("float32"))), patterns)


# ------------------------------------------------------ precision, XLA, save / load
def test_mixed_precision(mixed_policy, rng):
    low = mixed_policy.split("_")[1]
    patterns = _patterns(rng, 4, 64)
    net = HopfieldNetwork(64, seed=0).store(patterns)
    assert keras.backend.standardize_dtype(net.kernel.dtype) == "float32"
    out = net(tf.cast(_flip(rng, patterns, 0.1), low))
    assert keras.backend.standardize_dtype(out.dtype) == low
    np.testing.assert_array_equal(_np(tf.cast(out, "float32")), patterns)
    energy = _np(net.energy(patterns))
    assert np.all(np.isfinite(energy))
    expected = hopfield_ref.energies(patterns, hopfield_ref.hebbian(patterns), np.zeros(64))
    np.testing.assert_allclose(energy, expected, rtol=1e-5)


@pytest.mark.parametrize("update", ["asynchronous", "synchronous"])
def test_jit_compile_matches_eager(update, rng):
    w, b = _random_network(rng, 12)
    net = _network(
        12, w.astype("float32"), b.astype("float32"), "float32", update=update, shuffle=False
    )
    states = _patterns(rng, 5, 12).astype("float32")
    eager = _np(net(states))
    compiled = _np(tf.function(net, jit_compile=True)(states))
    np.testing.assert_array_equal(compiled, eager)
    if update == "asynchronous":  # converged: a fixed point
        np.testing.assert_array_equal(_np(net.synchronous_step(eager)), eager)


def test_keras_file_round_trip_keeps_the_stored_memory(rng, tmp_path):
    patterns = _patterns(rng, 3, 32)
    inputs = keras.Input((32,))
    net = HopfieldNetwork(32, update="asynchronous", max_iterations=20, seed=4, name="hop")
    model = keras.Model(inputs, net(inputs))
    net.store(patterns, bias=np.zeros(32))
    assert not net.trainable_weights  # not trained by gradient
    model.save(tmp_path / "hopfield.keras")
    loaded = keras.saving.load_model(tmp_path / "hopfield.keras")
    restored = loaded.get_layer("hop")
    np.testing.assert_allclose(_np(restored.kernel), hopfield_ref.hebbian(patterns), rtol=1e-6)
    corrupted = _flip(rng, patterns, 0.1).astype("float32")
    np.testing.assert_array_equal(loaded.predict(corrupted, verbose=0), patterns)
    assert restored.get_config() == net.get_config()


def test_config_round_trip():
    net = HopfieldNetwork(7, update="synchronous", max_iterations=9, shuffle=False, seed=2)
    config = net.get_config()
    assert {k: config[k] for k in ("units", "update", "max_iterations", "shuffle", "seed")} == {
        "units": 7,
        "update": "synchronous",
        "max_iterations": 9,
        "shuffle": False,
        "seed": 2,
    }
    assert HopfieldNetwork.from_config(config).get_config() == config


# --------------------------------------------------------------------------- errors
@pytest.mark.parametrize(
    ("kwargs", "fragment"),
    [
        ({"units": 0}, "units=0"),
        ({"update": "parallel"}, "update='parallel'"),
        ({"max_iterations": 0}, "max_iterations=0"),
        ({"shuffle": "yes"}, "shuffle='yes'"),
        ({"seed": 1.5}, "seed=1.5"),
    ],
)
def test_constructor_errors(kwargs, fragment):
    with pytest.raises(ValueError, match="Received:") as info:
        HopfieldNetwork(**{"units": 4, **kwargs})
    assert fragment in str(info.value)


@pytest.mark.parametrize(
    ("call", "fragment"),
    [
        (lambda net: net.store(np.ones((2, 5))), "patterns with shape (2, 5)"),
        (lambda net: net.store(np.ones((0, 4))), "num_patterns=0"),
        (lambda net: net.store(np.ones(4)), "patterns with shape (4,)"),
        (lambda net: net.store(np.ones((2, 4)), bias=np.ones(3)), "bias with shape (3,)"),
        (lambda net: net(np.ones((2, 5), "float32")), "(2, 5)"),
        (lambda net: net.energy(np.ones((2, 3))), "states=(2, 3)"),
        (lambda net: net.update_unit(np.ones((2, 4)), 4), "unit=4"),
    ],
)
def test_call_errors(call, fragment):
    with pytest.raises(ValueError, match="Received:") as info:
        call(HopfieldNetwork(4))
    assert fragment in str(info.value)
