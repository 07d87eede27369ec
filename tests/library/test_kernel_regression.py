"""Nadaraya-Watson layers against the textbook kernel-regression formulas in float64 NumPy."""

import keras
import numpy as np
import pytest
import tensorflow as tf

from attnkit.kernel_regression import NadarayaWatson, ParametricNadarayaWatson
from grader.reference import attention as ref
from grader.reference import kernel_regression as kernel_regression_ref
from tests.support import layers

KERNELS = ["gaussian", "boxcar", "epanechnikov"]

# (batch, Tq, Tk, value dims, query as (B, Tq, 1), key as (B, Tk, 1))
SHAPES = [
    (1, 1, 1, (), False, False),
    (2, 3, 5, (), True, False),
    (3, 4, 2, (3,), False, True),
    (2, 6, 7, (1,), True, True),
]


def _np(x):
    return keras.ops.convert_to_numpy(x)


def _data(rng, b, tq, tk, vdims, q3=False, k3=False, dtype="float32"):
    x = rng.uniform(-2, 2, (b, tq)).astype(dtype)
    x_i = rng.uniform(-2, 2, (b, tk)).astype(dtype)
    y_i = rng.normal(size=(b, tk, *vdims)).astype(dtype)
    return (x[..., None] if q3 else x), (x_i[..., None] if k3 else x_i), y_i, x, x_i


def _flat(x):
    return x[..., 0] if x.ndim == 3 else x


# -------------------------------------------------------------------------- numerics
@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: "x".join(map(str, s[:3])) + str(s[3:]))
@pytest.mark.parametrize("bandwidth", [0.4, 1.0, 2.5])
@pytest.mark.parametrize("kernel", KERNELS)
def test_nadaraya_watson_matches_numpy(kernel, bandwidth, shape, rng):
    b, tq, tk, vdims, q3, k3 = shape
    query, key, value, x, x_i = _data(rng, b, tq, tk, vdims, q3, k3)
    layer = NadarayaWatson(kernel, bandwidth)
    out, weights = layer(query, key, value, return_attention_scores=True)
    expected_out, expected_weights = kernel_regression_ref.nadaraya_watson(
        x, x_i, value, kernel, bandwidth
    )
    np.testing.assert_allclose(_np(weights), expected_weights, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(_np(out), expected_out, rtol=1e-5, atol=1e-5)
    assert _np(out).shape == expected_out.shape
    np.testing.assert_allclose(_np(layer(query, key, value)), expected_out, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: "x".join(map(str, s[:3])) + str(s[3:]))
@pytest.mark.parametrize("w", [0.3, 1.0, -2.0])
def test_parametric_matches_numpy(w, shape, rng):
    b, tq, tk, vdims, q3, k3 = shape
    query, key, value, x, x_i = _data(rng, b, tq, tk, vdims, q3, k3)
    layer = ParametricNadarayaWatson()
    layer.build(query.shape, key.shape, value.shape)
    layer.w.assign(w)
    out, weights = layer(query, key, value, return_attention_scores=True)
    expected_out, expected_weights = kernel_regression_ref.parametric_nadaraya_watson(
        x, x_i, value, w
    )
    np.testing.assert_allclose(_np(weights), expected_weights, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(_np(out), expected_out, rtol=1e-5, atol=1e-5)


def test_default_gaussian_equals_parametric_with_w_one(rng):
    # Bandwidth 1 and w = 1 are the same kernel: softmax(-(x - x_i)²/2).
    query, key, value, x, x_i = _data(rng, 2, 4, 6, ())
    np.testing.assert_allclose(
        _np(NadarayaWatson()(query, key, value)),
        _np(ParametricNadarayaWatson()(query, key, value)),
        rtol=1e-6,
    )


MASK_KINDS = ["key_mask", "key_lengths", "leave_one_out", "query_mask"]


def _masks(kind, rng, b, tq, tk):
    kwargs, keep = {}, np.ones((b, tq, tk), bool)
    if kind == "key_mask":
        kwargs["key_mask"] = rng.random((b, tk)) > 0.3
        keep &= kwargs["key_mask"][:, None, :]
    elif kind == "key_lengths":
        kwargs["key_lengths"] = np.array([tk - 2, 0, tk][:b], "int32")
        keep &= ref.length_mask(kwargs["key_lengths"], tk)[:, None, :]
    elif kind == "leave_one_out":
        kwargs["attention_mask"] = ~np.eye(tq, tk, dtype=bool)
        keep &= kwargs["attention_mask"][None]
    else:
        kwargs["query_mask"] = np.array([[True, False, True, True, False]] * b)[:, :tq]
        keep &= kwargs["query_mask"][:, :, None]
    return kwargs, keep


@pytest.mark.parametrize("kind", MASK_KINDS)
@pytest.mark.parametrize("kernel", [*KERNELS, "parametric"])
def test_masks_match_numpy(kernel, kind, rng):
    query, key, value, x, x_i = _data(rng, 3, 5, 5, (2,))
    kwargs, keep = _masks(kind, rng, 3, 5, 5)
    if kernel == "parametric":
        layer = ParametricNadarayaWatson(w_initializer=keras.initializers.Constant(1.7))
        expected = kernel_regression_ref.parametric_nadaraya_watson(x, x_i, value, 1.7, keep)
    else:
        layer = NadarayaWatson(kernel, 1.5)
        expected = kernel_regression_ref.nadaraya_watson(x, x_i, value, kernel, 1.5, keep)
    out, weights = layer(query, key, value, return_attention_scores=True, **kwargs)
    assert np.all(_np(weights)[~keep] == 0.0)
    np.testing.assert_allclose(_np(weights), expected[1], rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(_np(out), expected[0], rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("kernel", ["boxcar", "epanechnikov"])
def test_compact_support_without_neighbours_gives_zeros_not_nan(kernel):
    # Query 10 is farther than h = 1 from every training point; query 0.5 is not.
    x = tf.constant([[10.0, 0.5]])
    x_i = tf.constant([[0.0, 1.0, 1.2, 3.0]])
    y_i = tf.constant([[1.0, 2.0, 3.0, 4.0]])
    layer = NadarayaWatson(kernel, 1.0)
    with tf.GradientTape() as tape:
        tape.watch([x, x_i, y_i])
        out, weights = layer(x, x_i, y_i, return_attention_scores=True)
        total = tf.reduce_sum(out) + tf.reduce_sum(weights**2)
    grads = tape.gradient(total, [x, x_i, y_i], unconnected_gradients="zero")
    np.testing.assert_array_equal(_np(weights)[0, 0], 0.0)
    assert _np(out)[0, 0] == 0.0
    expected_out, expected_weights = kernel_regression_ref.nadaraya_watson(
        _np(x), _np(x_i), _np(y_i), kernel, 1.0
    )
    np.testing.assert_allclose(_np(weights), expected_weights, rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(_np(out), expected_out, rtol=1e-6)
    assert expected_weights[0, 1, 3] == 0.0  # x_i = 3 is outside the support of 0.5
    for g in grads:
        assert np.all(np.isfinite(_np(g)))


@pytest.mark.parametrize("kernel", [*KERNELS, "parametric"])
def test_fully_masked_rows_give_zeros(kernel, rng):
    query, key, value, _, _ = _data(rng, 2, 3, 4, (2,))
    layer = ParametricNadarayaWatson() if kernel == "parametric" else NadarayaWatson(kernel)
    out, weights = layer(
        query, key, value, key_lengths=np.array([0, 4], "int32"), return_attention_scores=True
    )
    np.testing.assert_array_equal(_np(out)[0], 0.0)
    np.testing.assert_array_equal(_np(weights)[0], 0.0)
    assert np.all(np.isfinite(_np(out)))


def test_parametric_gradient_matches_finite_differences(rng):
    query, key, value, x, x_i = _data(rng, 2, 3, 5, (), dtype="float64")
    layer = ParametricNadarayaWatson(dtype="float64")
    layer.build(query.shape, key.shape, value.shape)
    layer.w.assign(0.8)
    keep = rng.random((2, 3, 5)) > 0.2
    upstream = rng.normal(size=(2, 3))

    def loss(w, x_):
        return float(
            np.sum(
                kernel_regression_ref.parametric_nadaraya_watson(x_, x_i, value, w, keep)[0]
                * upstream
            )
        )

    x_t = tf.constant(query)
    with tf.GradientTape() as tape:
        tape.watch(x_t)
        total = tf.reduce_sum(layer(x_t, key, value, attention_mask=keep) * upstream)
    grad_x, grad_w = tape.gradient(total, [x_t, layer.w])
    np.testing.assert_allclose(
        _np(grad_w), layers.numeric_gradient(lambda w: loss(float(w), x), np.array(0.8)), rtol=1e-6
    )
    np.testing.assert_allclose(
        _np(grad_x), layers.numeric_gradient(lambda q: loss(0.8, q), x), rtol=1e-6, atol=1e-9
    )


def test_parametric_learns_w_inside_model_fit(rng):
    # Leave-one-out training on y = sin(3x): the best width is much narrower than w = 1.
    keras.utils.set_random_seed(0)
    x = np.sort(rng.uniform(0, 3, 40)).astype("float32")[None]
    y = np.sin(3 * x)
    inputs = [keras.Input((40,)) for _ in range(3)]
    layer = ParametricNadarayaWatson()
    model = keras.Model(inputs, layer(*inputs, attention_mask=~np.eye(40, dtype=bool)))
    model.compile(optimizer=keras.optimizers.Adam(0.2), loss="mse")
    losses = model.fit([x, x, y], y, epochs=40, verbose=0).history["loss"]
    assert losses[-1] < 0.5 * losses[0]
    assert float(_np(layer.w)) > 2.0


# -------------------------------------------------------------- precision and XLA
@pytest.mark.parametrize("kernel", [*KERNELS, "parametric"])
def test_mixed_precision(kernel, mixed_policy, rng):
    low = mixed_policy.split("_")[1]
    _, _, value, x, x_i = _data(rng, 2, 4, 6, (3,))
    value = value * 100.0  # large values, still finite in float16
    # Keras casts the layer's inputs to `low`: the reference gets them rounded the same way.
    x, x_i, value = (_np(tf.cast(tf.cast(a, low), "float32")) for a in (x, x_i, value))
    if kernel == "parametric":
        layer = ParametricNadarayaWatson()
        expected = kernel_regression_ref.parametric_nadaraya_watson(x, x_i, value, 1.0)
    else:
        layer = NadarayaWatson(kernel, 0.05 if kernel == "gaussian" else 1.0)
        expected = kernel_regression_ref.nadaraya_watson(x, x_i, value, kernel, layer.bandwidth)
    out, weights = layer(x, x_i, value, return_attention_scores=True)
    assert keras.backend.standardize_dtype(out.dtype) == low
    out, weights = _np(tf.cast(out, "float64")), _np(tf.cast(weights, "float64"))
    assert np.all(np.isfinite(out)) and np.all(np.isfinite(weights))
    # Only the final cast rounds a weight; in bfloat16 that alone is up to 2^-9 ≈ 2e-3 below 1.
    np.testing.assert_allclose(weights, expected[1], atol=2e-3 if low == "float16" else 4e-3)
    np.testing.assert_allclose(out, expected[0], rtol=1e-2, atol=0.5)


@pytest.mark.parametrize("kernel", [*KERNELS, "parametric"])
def test_jit_compile_matches_eager(kernel, rng):
    query, key, value, _, _ = _data(rng, 2, 4, 6, (3,))
    layer = ParametricNadarayaWatson() if kernel == "parametric" else NadarayaWatson(kernel)
    lengths = np.array([4, 0], "int32")

    def run(q, k, v, n):
        return layer(q, k, v, key_lengths=n, return_attention_scores=True)

    eager = run(query, key, value, lengths)
    compiled = tf.function(run, jit_compile=True)(query, key, value, lengths)
    for e, c in zip(eager, compiled, strict=True):
        assert np.all(np.isfinite(_np(c)))
        np.testing.assert_allclose(_np(c), _np(e), rtol=1e-5, atol=1e-6)
    assert np.any(_np(eager[1]) > 0)


# ------------------------------------------------------------ save / load and config
@pytest.mark.parametrize("kernel", [*KERNELS, "parametric"])
def test_keras_file_round_trip(kernel, rng, tmp_path):
    query, key, value, _, _ = _data(rng, 2, 4, 6, (3,))
    q_in, k_in, v_in = keras.Input((4,)), keras.Input((6,)), keras.Input((6, 3))
    if kernel == "parametric":
        layer = ParametricNadarayaWatson(w_initializer=keras.initializers.Constant(2.5))
    else:
        layer = NadarayaWatson(kernel, 1.3)
    out, weights = layer(q_in, k_in, v_in, return_attention_scores=True)
    assert tuple(out.shape) == (None, 4, 3) and tuple(weights.shape) == (None, 4, 6)
    model = keras.Model([q_in, k_in, v_in], [out, weights])
    if kernel == "parametric":
        layer.w.assign(1.9)  # a trained value, not the initializer's
    model.save(tmp_path / "model.keras")
    loaded = keras.saving.load_model(tmp_path / "model.keras")
    expected = model.predict([query, key, value], verbose=0)
    for got, want in zip(loaded.predict([query, key, value], verbose=0), expected, strict=True):
        np.testing.assert_allclose(got, want, rtol=1e-6)
    restored = next(lay for lay in loaded.layers if isinstance(lay, type(layer)))
    assert restored.get_config() == layer.get_config()


@pytest.mark.parametrize(
    "layer",
    [
        NadarayaWatson("epanechnikov", 0.7, name="nw"),
        ParametricNadarayaWatson(w_initializer="zeros", name="pnw"),
    ],
    ids=["non_parametric", "parametric"],
)
def test_config_round_trip(layer, rng):
    query, key, value, _, _ = _data(rng, 2, 3, 5, ())
    layer(query, key, value)
    config = layer.get_config()
    clone = type(layer).from_config(config)
    assert clone.get_config() == config
    clone(query, key, value)
    clone.set_weights(layer.get_weights())
    np.testing.assert_allclose(_np(clone(query, key, value)), _np(layer(query, key, value)))


# --------------------------------------------------------------------------- errors
@pytest.mark.parametrize(
    ("kwargs", "fragment"),
    [
        ({"kernel": "triangle"}, "kernel='triangle'"),
        ({"kernel": 3}, "kernel=3"),
        ({"bandwidth": 0}, "bandwidth=0"),
        ({"bandwidth": -1.0}, "bandwidth=-1.0"),
        ({"bandwidth": "wide"}, "bandwidth='wide'"),
        ({"bandwidth": True}, "bandwidth=True"),
        ({"bandwidth": float("inf")}, "bandwidth=inf"),
    ],
)
def test_constructor_errors(kwargs, fragment):
    with pytest.raises(ValueError, match="Received:") as info:
        NadarayaWatson(**kwargs)
    assert fragment in str(info.value)


def test_parametric_constructor_error():
    with pytest.raises(ValueError, match="Received: w_initializer=42"):
        ParametricNadarayaWatson(w_initializer=42)


@pytest.mark.parametrize(
    ("shapes", "fragment"),
    [
        (((2, 3, 2), (2, 5), (2, 5)), "query_shape=(2, 3, 2)"),
        (((2, 3), (2, 5, 1, 1), (2, 5)), "key_shape=(2, 5, 1, 1)"),
        (((2, 3), (2, 5), (2, 4)), "value_shape=(2, 4)"),
        (((2, 3), (2, 5), (2, 5, 1, 1)), "value_shape=(2, 5, 1, 1)"),
    ],
)
@pytest.mark.parametrize("cls", [NadarayaWatson, ParametricNadarayaWatson])
def test_shape_errors(cls, shapes, fragment):
    arrays = [np.zeros(s, "float32") for s in shapes]
    with pytest.raises(ValueError, match="Received:") as info:
        cls()(*arrays)
    assert fragment in str(info.value)
