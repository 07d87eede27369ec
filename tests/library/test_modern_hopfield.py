"""attnkit.memory.ModernHopfield: ξ ← X softmax(β Xᵀ ξ) against NumPy and against attention."""

import keras
import numpy as np
import pytest
import tensorflow as tf

import attnkit
from attnkit.memory import HopfieldNetwork, ModernHopfield
from grader.reference import attention as ref
from grader.reference import hopfield as hopfield_ref
from tests.support import layers


def _np(x):
    return keras.ops.convert_to_numpy(x)


def reference_update(xi, patterns, beta, iterations=1, keep=None):
    """ξ ← softmax(β ξ Xᵀ) X, `iterations` times, in float64; returns (ξ, last weights)."""
    single = np.ndim(xi) == 2
    states = np.asarray(xi, np.float64)[:, None] if single else np.asarray(xi, np.float64)
    for _ in range(iterations):
        states, weights = hopfield_ref.hopfield_attention(
            states, np.asarray(patterns, np.float64), beta, keep=keep, return_weights=True
        )
    return (states[:, 0], weights[:, 0]) if single else (states, weights)


# (batch, Tq or None, N, d)
SHAPES = [(1, None, 1, 1), (2, None, 5, 3), (3, 4, 6, 2), (2, 1, 3, 8)]


@pytest.mark.parametrize("iterations", [1, 3])
@pytest.mark.parametrize("beta", [0.25, 1.0, 8.0])
@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: "x".join(map(str, s)))
def test_matches_numpy(shape, beta, iterations, rng):
    b, tq, n, d = shape
    patterns = rng.normal(size=(b, n, d))
    xi = rng.normal(size=(b, d) if tq is None else (b, tq, d))
    layer = ModernHopfield(beta, num_iterations=iterations, dtype="float64")
    out, weights = layer(xi, patterns, return_attention_scores=True)
    expected, expected_weights = reference_update(xi, patterns, beta, iterations)
    np.testing.assert_allclose(_np(weights), expected_weights, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(_np(out), expected, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("kind", ["patterns_mask", "key_lengths"])
def test_padded_patterns_get_zero_weight(kind, rng):
    patterns = rng.normal(size=(3, 5, 4)).astype("float32")
    xi = rng.normal(size=(3, 2, 4)).astype("float32")
    if kind == "patterns_mask":
        keep = rng.random((3, 5)) > 0.3
        keep[2] = False
        kwargs = {"patterns_mask": keep}
    else:
        lengths = np.array([5, 2, 0], "int32")
        keep = ref.length_mask(lengths, 5)
        kwargs = {"key_lengths": lengths}
    out, weights = ModernHopfield(2.0)(xi, patterns, return_attention_scores=True, **kwargs)
    weights = _np(weights)
    assert np.all(weights[np.broadcast_to(~keep[:, None, :], weights.shape)] == 0.0)
    np.testing.assert_array_equal(_np(out)[2], 0.0)  # no pattern at all: zeros, not NaN
    expected, expected_weights = reference_update(xi, patterns, 2.0, keep=keep)
    np.testing.assert_allclose(weights, expected_weights, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(_np(out), expected, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("beta", [0.5, 1.0, 3.0])
def test_one_update_equals_key_value_attention(beta, rng):
    """Ramsauer et al. 2020: the update is attention with keys = values = stored patterns."""
    patterns = rng.normal(size=(2, 7, 4)).astype("float32")
    xi = rng.normal(size=(2, 3, 4)).astype("float32")
    hopfield = _np(ModernHopfield(beta)(xi, patterns))
    # Keras's own dot-product attention (softmax(q kᵀ) v) with q = β ξ, k = v = X:
    keras_attention = keras.layers.Attention(use_scale=False)
    np.testing.assert_allclose(
        hopfield, _np(keras_attention([beta * xi, patterns, patterns])), rtol=1e-5, atol=1e-6
    )
    # attnkit's key-value attention with a dot score, keys = values = patterns:
    ours = attnkit.Attention("dot")(beta * xi, patterns, key=patterns)
    np.testing.assert_allclose(hopfield, _np(ours), rtol=1e-5, atol=1e-6)
    # β = 1/√d is scaled dot-product attention:
    scaled = ModernHopfield(1 / np.sqrt(4))(xi, patterns)
    expected = _np(attnkit.Attention("scaled_dot")(xi, patterns))
    np.testing.assert_allclose(_np(scaled), expected, rtol=1e-5, atol=1e-6)


def test_retrieves_far_more_patterns_than_the_classical_network(rng):
    units, count = 64, 200  # 200 patterns = 3.1 m, the classical capacity is ≈ 0.14 m ≈ 9
    patterns = rng.choice([-1.0, 1.0], size=(count, units)).astype("float32")
    flips = rng.random(patterns.shape) < 0.1
    corrupted = np.where(flips, -patterns, patterns).astype("float32")
    modern = ModernHopfield(beta=1.0)(corrupted[None], patterns[None])
    modern_ok = np.all(np.sign(_np(modern)[0]) == patterns, axis=1)
    classical = HopfieldNetwork(units, seed=0).store(patterns)
    inputs = keras.Input((units,))
    recalled = keras.Model(inputs, classical(inputs)).predict_on_batch(corrupted)
    classical_ok = np.all(np.asarray(recalled) == patterns, axis=1)
    assert modern_ok.mean() == 1.0
    assert classical_ok.mean() < 0.05
    # Even at a tenth of the load the classical network loses patterns; the modern one not.
    few = patterns[:20]
    classical.store(few)
    few_ok = np.all(
        np.asarray(keras.Model(inputs, classical(inputs)).predict_on_batch(corrupted[:20])) == few,
        axis=1,
    )
    assert few_ok.mean() < 1.0


def test_gradients_flow_to_query_and_patterns(rng):
    patterns = tf.constant(rng.normal(size=(2, 5, 3)))
    xi = tf.constant(rng.normal(size=(2, 3)))
    upstream = rng.normal(size=(2, 3))
    layer = ModernHopfield(1.5, dtype="float64")
    with tf.GradientTape() as tape:
        tape.watch([patterns, xi])
        loss = tf.reduce_sum(layer(xi, patterns) * upstream)
    g_patterns, g_xi = (_np(g) for g in tape.gradient(loss, [patterns, xi]))

    def f(x_, p_):
        return float(np.sum(reference_update(x_, p_, 1.5)[0] * upstream))

    np.testing.assert_allclose(
        g_xi, layers.numeric_gradient(lambda v: f(v, _np(patterns)), _np(xi)), atol=1e-7
    )
    np.testing.assert_allclose(
        g_patterns, layers.numeric_gradient(lambda v: f(_np(xi), v), _np(patterns)), atol=1e-7
    )
    assert np.any(g_xi != 0) and np.any(g_patterns != 0)


# ------------------------------------------------------ precision, XLA, save / load
def test_mixed_precision(mixed_policy, rng):
    low = mixed_policy.split("_")[1]
    patterns = rng.choice([-1.0, 1.0], size=(2, 30, 64))  # ±1: exact in float16 and bfloat16
    xi = patterns[:, :4] * np.where(rng.random((2, 4, 64)) < 0.1, -1, 1)
    out, weights = ModernHopfield(1.0)(
        tf.cast(xi, low), tf.cast(patterns, low), return_attention_scores=True
    )
    assert keras.backend.standardize_dtype(out.dtype) == low
    out = _np(tf.cast(out, "float32"))
    assert np.all(np.isfinite(out)) and np.all(np.isfinite(_np(tf.cast(weights, "float32"))))
    expected, _ = reference_update(xi, patterns, 1.0)  # scores up to 64: exp would overflow
    np.testing.assert_allclose(out, expected, atol=1e-2)


def test_jit_compile_matches_eager(rng):
    layer = ModernHopfield(2.0, num_iterations=2)
    patterns = rng.normal(size=(2, 6, 4)).astype("float32")
    xi = rng.normal(size=(2, 3, 4)).astype("float32")
    lengths = np.array([6, 3], "int32")

    def run(x, p, n):
        return layer(x, p, key_lengths=n, return_attention_scores=True)

    eager = run(xi, patterns, lengths)
    compiled = tf.function(run, jit_compile=True)(xi, patterns, lengths)
    for e, c in zip(eager, compiled, strict=True):
        np.testing.assert_allclose(_np(c), _np(e), rtol=1e-5, atol=1e-6)


def test_keras_file_round_trip(rng, tmp_path):
    xi_in, x_in = keras.Input((3, 4)), keras.Input((6, 4))
    layer = ModernHopfield(0.7, num_iterations=2, name="hopfield")
    out, weights = layer(xi_in, x_in, return_attention_scores=True)
    assert tuple(out.shape) == (None, 3, 4) and tuple(weights.shape) == (None, 3, 6)
    model = keras.Model([xi_in, x_in], [out, weights])
    model.save(tmp_path / "modern.keras")
    loaded = keras.saving.load_model(tmp_path / "modern.keras")
    xi = rng.normal(size=(2, 3, 4)).astype("float32")
    patterns = rng.normal(size=(2, 6, 4)).astype("float32")
    expected = reference_update(xi, patterns, 0.7, iterations=2)
    for m in (model, loaded):
        for g, e in zip(m.predict([xi, patterns], verbose=0), expected, strict=True):
            np.testing.assert_allclose(g, e, rtol=1e-5, atol=1e-6)
    restored = loaded.get_layer("hopfield")
    assert restored.beta == 0.7 and restored.num_iterations == 2


def test_config_round_trip():
    layer = ModernHopfield(beta=3, num_iterations=4, name="h")
    config = layer.get_config()
    assert config["beta"] == 3.0 and config["num_iterations"] == 4
    assert ModernHopfield.from_config(config).get_config() == config


# --------------------------------------------------------------------------- errors
@pytest.mark.parametrize(
    ("kwargs", "fragment"),
    [
        ({"beta": 0}, "beta=0"),
        ({"beta": -1.0}, "beta=-1.0"),
        ({"beta": "high"}, "beta='high'"),
        ({"beta": float("inf")}, "beta=inf"),
        ({"beta": True}, "beta=True"),
        ({"num_iterations": 0}, "num_iterations=0"),
    ],
)
def test_constructor_errors(kwargs, fragment):
    with pytest.raises(ValueError, match="Received:") as info:
        ModernHopfield(**kwargs)
    assert fragment in str(info.value)


@pytest.mark.parametrize(
    ("query_shape", "patterns_shape", "fragment"),
    [
        ((2, 4), (2, 0, 4), "memory_size=0"),
        ((2, 3), (2, 5, 4), "patterns_shape=(2, 5, 4)"),
        ((4,), (2, 5, 4), "query_shape=(4,)"),
        ((2, 4), (2, 4), "patterns_shape=(2, 4)"),
    ],
)
def test_call_errors(query_shape, patterns_shape, fragment):
    with pytest.raises(ValueError, match="Received:") as info:
        ModernHopfield()(np.zeros(query_shape, "float32"), np.zeros(patterns_shape, "float32"))
    assert fragment in str(info.value)
