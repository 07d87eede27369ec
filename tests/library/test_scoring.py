"""attnkit.scoring against independent NumPy references."""

import keras
import numpy as np
import pytest
import tensorflow as tf

import attnkit
from attnkit.scoring import get_score
from grader.reference import attention as ref
from tests.support import layers
from tests.support.score_cases import CASE_IDS, CASES, MAX_KEYS, built_score, shapes_for

CASE_SHAPES = [
    pytest.param(case, shape, id=f"{case.id}-{'x'.join(map(str, shape))}")
    for case in CASES
    for shape in shapes_for(case)
]


def _inputs(rng, b, tq, tk, dq, dk, dtype="float32"):
    q = rng.normal(size=(b, tq, dq)).astype(dtype)
    k = rng.normal(size=(b, tk, dk)).astype(dtype)
    return q, k


@pytest.mark.parametrize(("case", "shape"), CASE_SHAPES)
def test_scores_match_numpy(case, shape, rng):
    b, tq, tk, dq, dk = shape
    layer, weights = built_score(case, rng, dq, dk)
    q, k = _inputs(rng, *shape)
    got = keras.ops.convert_to_numpy(layer(q, k))
    np.testing.assert_allclose(got, case.reference(q, k, weights), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("case", CASES, ids=CASE_IDS)
def test_scores_match_numpy_in_float64(case, rng):
    layer, weights = built_score(case, rng, 3, 3, dtype="float64")
    q, k = _inputs(rng, 2, 3, 4, 3, 3, dtype="float64")
    got = layer(q, k)
    assert keras.backend.standardize_dtype(got.dtype) == "float64"
    np.testing.assert_allclose(keras.ops.convert_to_numpy(got), case.reference(q, k, weights))


# ----------------------------------------------------------------------------- cosine
@pytest.mark.parametrize("beta_shape", ["b_tq", "b_tq_1"])
def test_cosine_per_query_sharpness_overrides_beta(beta_shape, rng):
    layer = attnkit.CosineScore(sharpness=3.0)
    q, k = _inputs(rng, 2, 3, 4, 5, 5)
    beta = rng.uniform(0.5, 4.0, size=(2, 3)).astype("float32")
    given = beta if beta_shape == "b_tq" else beta[..., None]
    got = keras.ops.convert_to_numpy(layer(q, k, sharpness=given))
    np.testing.assert_allclose(got, ref.cosine_scores(q, k, beta), rtol=1e-5, atol=1e-6)


def test_cosine_zero_vectors_give_zero_scores_and_finite_gradients():
    q = np.zeros((1, 2, 3), "float32")
    q[0, 1] = [1.0, 2.0, 2.0]
    k = np.array([[[0.0, 0.0, 0.0], [2.0, 0.0, 0.0]]], "float32")
    layer = attnkit.CosineScore(sharpness="learned")
    q_t, k_t = tf.constant(q), tf.constant(k)
    with tf.GradientTape() as tape:
        tape.watch([q_t, k_t])
        scores = layer(q_t, k_t)
        total = tf.reduce_sum(scores)
    grads = tape.gradient(total, [q_t, k_t, *layer.trainable_weights])
    np.testing.assert_allclose(scores.numpy(), ref.cosine_scores(q, k), atol=1e-6)
    assert scores.numpy()[0, 0].tolist() == [0.0, 0.0]
    for g in grads:
        assert np.all(np.isfinite(g.numpy()))


def test_cosine_norms_do_not_overflow_in_float16(mixed_float16, rng):
    # Σ q² is about 4e5 here: it overflows float16 (max 65504) unless computed in float32.
    q = (300.0 * rng.normal(size=(2, 3, 4))).astype("float32")
    k = (300.0 * rng.normal(size=(2, 5, 4))).astype("float32")
    layer = attnkit.CosineScore()
    got = layer(q, k)
    assert keras.backend.standardize_dtype(got.dtype) == "float16"
    got = keras.ops.convert_to_numpy(got).astype("float64")
    assert np.all(np.isfinite(got))
    np.testing.assert_allclose(got, ref.cosine_scores(q, k), atol=2e-3)


# --------------------------------------------------------------------------- location
def test_location_score_ignores_key_content(rng):
    layer, weights = built_score(CASES[CASE_IDS.index("location")], rng, 4, 2)
    q = rng.normal(size=(2, 3, 4)).astype("float32")
    k1 = rng.normal(size=(2, 5, 2)).astype("float32")
    k2 = rng.normal(size=(2, 5, 2)).astype("float32")
    s1 = keras.ops.convert_to_numpy(layer(q, k1))
    s2 = keras.ops.convert_to_numpy(layer(q, k2))
    np.testing.assert_array_equal(s1, s2)
    np.testing.assert_allclose(s1, ref.location_scores(q, weights["kernel"], 5), rtol=1e-5)


# -------------------------------------------------------------------------- gradients
GRADIENT_CASES = ["scaled_dot", "bilinear", "additive", "cosine_learned", "location"]


@pytest.mark.parametrize("case_id", GRADIENT_CASES)
def test_gradients_match_finite_differences(case_id, rng):
    case = CASES[CASE_IDS.index(case_id)]
    dq, dk = (3, 3) if case.same_size else (3, 2)
    layer, weights = built_score(case, rng, dq, dk, dtype="float64")
    q, k = _inputs(rng, 2, 3, 4, dq, dk, dtype="float64")
    upstream = rng.normal(size=(2, 3, 4))  # d loss / d scores

    def loss(q_, k_, w_):
        return float(np.sum(case.reference(q_, k_, w_) * upstream))

    q_t, k_t = tf.constant(q), tf.constant(k)
    names = [w.name for w in layer.trainable_weights]
    with tf.GradientTape() as tape:
        tape.watch([q_t, k_t])
        total = tf.reduce_sum(layer(q_t, k_t) * upstream)
    got = tape.gradient(total, [q_t, k_t, *layer.trainable_weights])

    expected = [
        layers.numeric_gradient(lambda x: loss(x, k, weights), q),
        layers.numeric_gradient(lambda x: loss(q, x, weights), k),
    ]
    for name in names:
        expected.append(
            layers.numeric_gradient(lambda x, n=name: loss(q, k, {**weights, n: x}), weights[name])
        )
    if case_id == "location":  # the key's content does not matter: its gradient is None.
        assert got[1] is None
        got, expected = [got[0], *got[2:]], [expected[0], *expected[2:]]
        assert np.all(expected[0] != 0)
    assert len(got) == len(expected)
    for g, e in zip(got, expected, strict=True):
        np.testing.assert_allclose(keras.ops.convert_to_numpy(g), e, rtol=1e-6, atol=1e-8)


# ------------------------------------------------------------------ save / load, config
@pytest.mark.parametrize("case", CASES, ids=CASE_IDS)
def test_keras_file_round_trip(case, rng, tmp_path):
    dq, dk = (4, 4) if case.same_size else (4, 3)
    layer, weights = built_score(case, rng, dq, dk)
    q_in = keras.Input((3, dq))
    k_in = keras.Input((5, dk))
    scores = layer(q_in, k_in)
    assert tuple(scores.shape) == (None, 3, 5)
    model = keras.Model([q_in, k_in], scores)
    path = tmp_path / f"{case.id}.keras"
    model.save(path)
    loaded = keras.saving.load_model(path)

    q, k = _inputs(rng, 2, 3, 5, dq, dk)
    expected = case.reference(q, k, weights)
    np.testing.assert_allclose(model.predict([q, k], verbose=0), expected, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(loaded.predict([q, k], verbose=0), expected, rtol=1e-5, atol=1e-5)
    assert type(loaded.layers[-1]) is type(layer)


@pytest.mark.parametrize("case", CASES, ids=CASE_IDS)
def test_config_round_trip(case, rng):
    layer, weights = built_score(case, rng, 3, 3)
    config = layer.get_config()
    clone = type(layer).from_config(config)
    assert clone.get_config() == config
    clone.build((None, None, 3), (None, None, 3))
    clone.set_weights(layer.get_weights())
    q, k = _inputs(rng, 2, 4, 3, 3, 3)
    np.testing.assert_allclose(
        keras.ops.convert_to_numpy(clone(q, k)),
        case.reference(q, k, weights),
        rtol=1e-5,
        atol=1e-5,
    )


def test_config_keeps_every_constructor_argument():
    layer = attnkit.AdditiveScore(7, kernel_initializer="he_normal", name="add")
    clone = attnkit.AdditiveScore.from_config(layer.get_config())
    assert clone.units == 7
    assert isinstance(clone.kernel_initializer, keras.initializers.HeNormal)
    assert clone.name == "add"
    assert attnkit.LocationScore.from_config(attnkit.LocationScore(9).get_config()).max_keys == 9
    for sharpness in (None, 2.0, "learned"):
        config = attnkit.CosineScore(sharpness=sharpness).get_config()
        assert attnkit.CosineScore.from_config(config).sharpness == sharpness
    bilinear = attnkit.BilinearScore(kernel_initializer="zeros")
    clone = attnkit.BilinearScore.from_config(bilinear.get_config())
    assert isinstance(clone.kernel_initializer, keras.initializers.Zeros)


# -------------------------------------------------------------------------- get_score
@pytest.mark.parametrize(
    ("name", "cls"),
    [
        ("dot", attnkit.DotScore),
        ("scaled_dot", attnkit.ScaledDotScore),
        ("bilinear", attnkit.BilinearScore),
        ("cosine", attnkit.CosineScore),
        ("Scaled_Dot", attnkit.ScaledDotScore),
    ],
)
def test_get_score_by_name(name, cls):
    assert type(get_score(name)) is cls


def test_get_score_from_config_and_instance():
    layer = attnkit.AdditiveScore(5, name="my_score")
    assert get_score(layer) is layer
    for config in (
        keras.saving.serialize_keras_object(layer),
        {"class_name": "AdditiveScore", "config": {"units": 5, "name": "my_score"}},
    ):
        clone = get_score(config)
        assert type(clone) is attnkit.AdditiveScore
        assert clone.units == 5 and clone.name == "my_score"


@pytest.mark.parametrize(
    ("identifier", "fragments"),
    [
        ("additive", ["AdditiveScore(units=", "identifier='additive'"]),
        ("location", ["LocationScore(max_keys=", "identifier='location'"]),
        ("softmax", ["'dot', 'scaled_dot', 'bilinear', 'cosine'", "identifier='softmax'"]),
        (3, ["identifier=3"]),
        ({"class_name": "NoSuchScore", "config": {}}, ["identifier="]),
    ],
)
def test_get_score_errors(identifier, fragments):
    with pytest.raises(ValueError, match="Received:") as info:
        get_score(identifier)
    for fragment in fragments:
        assert fragment in str(info.value)


# ----------------------------------------------------------------------------- errors
@pytest.mark.parametrize(
    ("factory", "fragment"),
    [
        (lambda: attnkit.AdditiveScore(0), "units=0"),
        (lambda: attnkit.AdditiveScore(-2), "units=-2"),
        (lambda: attnkit.AdditiveScore(2.5), "units=2.5"),
        (lambda: attnkit.AdditiveScore(True), "units=True"),
        (lambda: attnkit.AdditiveScore(4, kernel_initializer="nope"), "kernel_initializer="),
        (lambda: attnkit.BilinearScore(kernel_initializer=3), "kernel_initializer=3"),
        (lambda: attnkit.CosineScore(sharpness=0.0), "sharpness=0.0"),
        (lambda: attnkit.CosineScore(sharpness=-1), "sharpness=-1"),
        (lambda: attnkit.CosineScore(sharpness="sharp"), "sharpness='sharp'"),
        (lambda: attnkit.LocationScore(0), "max_keys=0"),
        (lambda: attnkit.LocationScore(None), "max_keys=None"),
    ],
)
def test_constructor_errors(factory, fragment):
    with pytest.raises(ValueError, match="Received:") as info:
        factory()
    assert fragment in str(info.value)


@pytest.mark.parametrize(
    ("factory", "query_shape", "key_shape", "fragments"),
    [
        (attnkit.DotScore, (2, 3, 4), (2, 5, 3), ["BilinearScore or AdditiveScore", "(2, 5, 3)"]),
        (attnkit.ScaledDotScore, (2, 3, 4), (2, 5, 3), ["BilinearScore or AdditiveScore"]),
        (attnkit.CosineScore, (2, 3, 4), (2, 5, 3), ["d_q == d_k", "key_shape=(2, 5, 3)"]),
        (lambda: attnkit.LocationScore(4), (2, 3, 4), (2, 5, 4), ["max_keys", "(2, 5, 4)"]),
        (attnkit.BilinearScore, (2, 4), (2, 5, 4), ["query_shape=(2, 4)"]),
    ],
)
def test_shape_errors(factory, query_shape, key_shape, fragments):
    rng = np.random.default_rng(0)
    q = rng.normal(size=query_shape).astype("float32")
    k = rng.normal(size=key_shape).astype("float32")
    with pytest.raises(ValueError, match="Received:") as info:
        factory()(q, k)
    for fragment in fragments:
        assert fragment in str(info.value)


def test_location_rejects_too_many_keys_after_build(rng):
    layer = attnkit.LocationScore(MAX_KEYS)
    layer.build((None, 3, 2), (None, None, 2))
    q = rng.normal(size=(1, 3, 2)).astype("float32")
    k = rng.normal(size=(1, MAX_KEYS + 1, 2)).astype("float32")
    with pytest.raises(ValueError, match="max_keys"):
        layer(q, k)
