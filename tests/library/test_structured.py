"""StructuredAttention: forward-backward marginals against brute-force enumeration of all z."""

import keras
import numpy as np
import pytest
import tensorflow as tf

import attnkit
from attnkit.structured import StructuredAttention
from grader.reference import attention as ref
from grader.reference import structured as structured_ref
from tests.support import layers


def _np(x):
    return keras.ops.convert_to_numpy(x)


def reference(q, k, v, transition, keep, score="dot", kernel=None):
    """(output, marginals) by enumeration; unary = the dot or bilinear score."""
    if score == "dot":
        unary = ref.dot_scores(q, k)
    else:
        unary = ref.bilinear_scores(q, k, kernel)
    b_size, tq, tk = unary.shape
    keep = np.broadcast_to(keep, (b_size, tq, tk))
    marginals = np.zeros((b_size, tq, tk))
    for b in range(b_size):
        for i in range(tq):
            marginals[b, i] = structured_ref.crf_marginals_brute_force(
                unary[b, i], transition, keep[b, i]
            )
    return ref.attend(marginals, v), marginals


def _layer(rng, score="dot", d_q=3, d_k=3, dtype=None, scale=1.0):
    layer = StructuredAttention(score, dtype=dtype)
    layer.build((None, None, d_q), (None, None, d_k))
    transition = rng.normal(0.0, 1.5, (2, 2))
    layer.transition.assign(transition)
    kernel = None
    if score == "bilinear":
        kernel = rng.normal(0.0, scale, (d_q, d_k))
        layer.score_layer.kernel.assign(kernel)
    return layer, transition, kernel


# (batch, Tq, Tk, d_q, d_k, d_v)
SHAPES = [(1, 1, 1, 2, 2, 1), (2, 3, 5, 3, 3, 2), (3, 2, 6, 2, 4, 3), (1, 4, 2, 1, 1, 4)]


@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: "x".join(map(str, s)))
@pytest.mark.parametrize("score", ["dot", "bilinear"])
def test_marginals_match_brute_force(score, shape, rng):
    b, tq, tk, d_q, d_k, d_v = shape
    if score == "dot":
        d_q = d_k
    layer, transition, kernel = _layer(rng, score, d_q, d_k)
    q = rng.normal(size=(b, tq, d_q)).astype("float32")
    k = rng.normal(size=(b, tk, d_k)).astype("float32")
    v = rng.normal(size=(b, tk, d_v)).astype("float32")
    out, weights = layer(q, v, key=k, return_attention_scores=True)
    expected_out, expected_weights = reference(q, k, v, transition, True, score, kernel)
    np.testing.assert_allclose(_np(weights), expected_weights, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(_np(out), expected_out, rtol=1e-5, atol=1e-5)


def test_keys_default_to_values(rng):
    layer, transition, _ = _layer(rng, "dot", 3, 3)
    q = rng.normal(size=(2, 3, 3)).astype("float32")
    v = rng.normal(size=(2, 4, 3)).astype("float32")
    np.testing.assert_allclose(
        _np(layer(q, v)), reference(q, v, v, transition, True)[0], rtol=1e-5, atol=1e-5
    )


def test_zero_transitions_give_independent_sigmoids(rng):
    # With A = 0 the chain factorises: p(z_i = 1) = sigmoid(s(q, k_i)).
    layer = StructuredAttention("dot")
    q = rng.normal(size=(2, 3, 4)).astype("float32")
    v = rng.normal(size=(2, 5, 4)).astype("float32")
    _, weights = layer(q, v, return_attention_scores=True)
    np.testing.assert_allclose(_np(weights), ref.sigmoid(ref.dot_scores(q, v)), rtol=1e-5)


MASK_KINDS = ["value_mask", "key_lengths", "attention_mask", "query_mask", "all"]


def _masks(kind, rng, b, tq, tk):
    kwargs, keep = {}, np.ones((b, tq, tk), bool)
    if kind in ("value_mask", "all"):
        kwargs["value_mask"] = rng.random((b, tk)) > 0.4  # holes in the middle of chains
        keep &= kwargs["value_mask"][:, None, :]
    if kind in ("key_lengths", "all"):
        kwargs["key_lengths"] = np.array([tk - 2, 0, tk][:b], "int32")
        keep &= ref.length_mask(kwargs["key_lengths"], tk)[:, None, :]
    if kind in ("attention_mask", "all"):
        kwargs["attention_mask"] = rng.random((b, tq, tk)) > 0.3
        keep &= kwargs["attention_mask"]
    if kind in ("query_mask", "all"):
        kwargs["query_mask"] = rng.random((b, tq)) > 0.3
        keep &= kwargs["query_mask"][:, :, None]
    return kwargs, keep


@pytest.mark.parametrize("kind", MASK_KINDS)
def test_masked_positions_leave_the_chain(kind, rng):
    layer, transition, kernel = _layer(rng, "bilinear", 3, 2)
    q = rng.normal(size=(3, 4, 3)).astype("float32")
    k = rng.normal(size=(3, 7, 2)).astype("float32")
    v = rng.normal(size=(3, 7, 2)).astype("float32")
    kwargs, keep = _masks(kind, rng, 3, 4, 7)
    out, weights = layer(q, v, key=k, return_attention_scores=True, **kwargs)
    expected_out, expected_weights = reference(q, k, v, transition, keep, "bilinear", kernel)
    assert np.all(_np(weights)[~keep] == 0.0)
    np.testing.assert_allclose(_np(weights), expected_weights, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(_np(out), expected_out, rtol=1e-5, atol=1e-5)


def test_fully_masked_rows_give_zeros_and_finite_gradients(rng):
    layer, transition, _ = _layer(rng, "dot", 3, 3)
    q, v = (tf.constant(rng.normal(size=s).astype("float32")) for s in ((2, 3, 3), (2, 4, 3)))
    with tf.GradientTape() as tape:
        tape.watch([q, v])
        out, weights = layer(q, v, key_lengths=np.array([0, 3]), return_attention_scores=True)
        loss = tf.reduce_sum(out**2) + tf.reduce_sum(weights)
    grads = tape.gradient(loss, [q, v, layer.transition])
    np.testing.assert_array_equal(_np(out)[0], 0.0)
    np.testing.assert_array_equal(_np(weights)[0], 0.0)
    for g in grads:
        assert np.all(np.isfinite(_np(g)))
    keep = ref.length_mask([0, 3], 4)[:, None, :]
    np.testing.assert_allclose(
        _np(weights), reference(_np(q), _np(v), _np(v), transition, keep)[1], rtol=1e-5, atol=1e-6
    )


def test_log_space_survives_huge_scores(rng):
    # Scores of ±300: exp would overflow float32; the log-space recursions do not.
    layer, transition, kernel = _layer(rng, "bilinear", 2, 2, scale=60.0)
    q = rng.normal(size=(2, 3, 2)).astype("float32")
    v = rng.normal(size=(2, 6, 2)).astype("float32")
    _, weights = layer(q, v, return_attention_scores=True)
    weights = _np(weights)
    assert np.all(np.isfinite(weights))
    unary = ref.bilinear_scores(q, v, kernel)
    assert np.abs(unary).max() > 100
    # float32 log-potentials of size ~300 keep about 1e-4 of absolute precision.
    np.testing.assert_allclose(
        weights, reference(q, v, v, transition, True, "bilinear", kernel)[1], atol=1e-3
    )


def test_gradients_match_finite_differences(rng):
    layer = StructuredAttention("bilinear", dtype="float64")
    layer.build((None, None, 2), (None, None, 3))
    transition = rng.normal(size=(2, 2))
    kernel = rng.normal(size=(2, 3))
    layer.transition.assign(transition)
    layer.score_layer.kernel.assign(kernel)
    q = rng.normal(size=(2, 2, 2))
    k = rng.normal(size=(2, 4, 3))
    v = rng.normal(size=(2, 4, 2))
    keep = np.array([[True, False, True, True], [True, True, True, False]])[:, None, :]
    upstream = rng.normal(size=(2, 2, 2))

    def loss(q_, t_, kern_):
        return float(np.sum(reference(q_, k, v, t_, keep, "bilinear", kern_)[0] * upstream))

    q_t = tf.constant(q)
    with tf.GradientTape() as tape:
        tape.watch(q_t)
        total = tf.reduce_sum(layer(q_t, v, key=k, value_mask=keep[:, 0]) * upstream)
    got = tape.gradient(total, [q_t, layer.transition, layer.score_layer.kernel])
    expected = [
        layers.numeric_gradient(lambda x: loss(x, transition, kernel), q),
        layers.numeric_gradient(lambda x: loss(q, x, kernel), transition),
        layers.numeric_gradient(lambda x: loss(q, transition, x), kernel),
    ]
    for g, e in zip(got, expected, strict=True):
        np.testing.assert_allclose(_np(g), e, rtol=1e-6, atol=1e-9)


def test_mixed_precision(mixed_policy, rng):
    low = mixed_policy.split("_")[1]
    layer, transition, kernel = _layer(rng, "bilinear", 3, 3, scale=3.0)
    q = rng.normal(size=(2, 3, 3)).astype("float32")
    v = rng.normal(size=(2, 5, 3)).astype("float32")
    lengths = np.array([0, 4], "int32")
    out, weights = layer(q, v, key_lengths=lengths, return_attention_scores=True)
    assert keras.backend.standardize_dtype(weights.dtype) == low
    out, weights = _np(tf.cast(out, "float64")), _np(tf.cast(weights, "float64"))
    assert np.all(np.isfinite(out)) and np.all(np.isfinite(weights))
    keep = ref.length_mask(lengths, 5)[:, None, :]
    expected = reference(q, v, v, transition, keep, "bilinear", kernel)
    # The bilinear scores (|s| up to ~47 here) are computed in `low`: bfloat16 rounds them by ~0.1.
    tol = 2e-2 if low == "float16" else 4e-2
    np.testing.assert_allclose(weights, expected[1], atol=tol)
    np.testing.assert_allclose(out, expected[0], atol=2.5 * tol)


@pytest.mark.parametrize("score", ["dot", "bilinear"])
def test_jit_compile_matches_eager(score, rng):
    layer, transition, kernel = _layer(rng, score, 3, 3)
    q = rng.normal(size=(2, 3, 3)).astype("float32")
    v = rng.normal(size=(2, 5, 3)).astype("float32")
    mask = rng.random((2, 5)) > 0.3

    def run(q_, v_, m_):
        return layer(q_, v_, value_mask=m_, return_attention_scores=True)

    eager = run(q, v, mask)
    compiled = tf.function(run, jit_compile=True)(q, v, mask)
    for e, c in zip(eager, compiled, strict=True):
        np.testing.assert_allclose(_np(c), _np(e), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(
        _np(compiled[1]),
        reference(q, v, v, transition, mask[:, None, :], score, kernel)[1],
        rtol=1e-5,
        atol=1e-6,
    )


def test_unknown_lengths_in_a_traced_graph(rng):
    layer, transition, _ = _layer(rng, "dot", 3, 3)
    spec = [tf.TensorSpec((None, None, 3)), tf.TensorSpec((None, None, 3))]
    run = tf.function(
        lambda q_, v_: layer(q_, v_, return_attention_scores=True), input_signature=spec
    )
    q = rng.normal(size=(2, 2, 3)).astype("float32")
    v = rng.normal(size=(2, 6, 3)).astype("float32")
    np.testing.assert_allclose(
        _np(run(q, v)[1]), reference(q, v, v, transition, True)[1], rtol=1e-5, atol=1e-6
    )


def test_keras_file_round_trip(rng, tmp_path):
    layer = StructuredAttention(attnkit.BilinearScore())
    q_in, v_in, n_in = keras.Input((3, 2)), keras.Input((5, 4)), keras.Input((), dtype="int32")
    out, weights = layer(q_in, v_in, key_lengths=n_in, return_attention_scores=True)
    assert tuple(out.shape) == (None, 3, 4) and tuple(weights.shape) == (None, 3, 5)
    model = keras.Model([q_in, v_in, n_in], [out, weights])
    transition = rng.normal(size=(2, 2))
    kernel = rng.normal(size=(2, 4))
    layer.transition.assign(transition)
    layer.score_layer.kernel.assign(kernel)
    q = rng.normal(size=(2, 3, 2)).astype("float32")
    v = rng.normal(size=(2, 5, 4)).astype("float32")
    lengths = np.array([5, 2], "int32")
    model.save(tmp_path / "model.keras")
    loaded = keras.saving.load_model(tmp_path / "model.keras")
    keep = ref.length_mask(lengths, 5)[:, None, :]
    expected = reference(q, v, v, transition, keep, "bilinear", kernel)
    for m in (model, loaded):
        for g, e in zip(m.predict([q, v, lengths], verbose=0), expected, strict=True):
            np.testing.assert_allclose(g, e, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize(
    "score",
    ["dot", {"class_name": "AdditiveScore", "config": {"units": 3}}, attnkit.CosineScore(2.0)],
    ids=["name", "dict", "instance"],
)
def test_config_round_trip(score, rng):
    layer = StructuredAttention(score, transition_initializer="ones", name="crf")
    q = rng.normal(size=(2, 3, 4)).astype("float32")
    v = rng.normal(size=(2, 5, 4)).astype("float32")
    layer(q, v)
    layer.transition.assign(rng.normal(size=(2, 2)))
    config = layer.get_config()
    clone = StructuredAttention.from_config(config)
    assert clone.get_config() == config
    assert type(clone.score_layer) is type(layer.score_layer)
    clone(q, v)
    clone.set_weights(layer.get_weights())
    np.testing.assert_allclose(_np(clone(q, v)), _np(layer(q, v)), rtol=1e-6)


@pytest.mark.parametrize(
    ("kwargs", "fragment"),
    [
        ({"score": "softmax"}, "score='softmax'"),
        ({"score": "additive"}, "score='additive'"),
        ({"score": 3}, "score=3"),
        ({"transition_initializer": 42}, "transition_initializer=42"),
    ],
)
def test_constructor_errors(kwargs, fragment):
    with pytest.raises(ValueError, match="Received:") as info:
        StructuredAttention(**kwargs)
    assert fragment in str(info.value)


def test_call_errors():
    layer = StructuredAttention("dot")
    with pytest.raises(ValueError, match=r"Received: query_shape=\(2, 3\)"):
        layer(np.zeros((2, 3), "float32"), np.zeros((2, 4, 3), "float32"))
    with pytest.raises(ValueError, match=r"key_shape=\(2, 5, 3\)"):
        StructuredAttention("dot")(
            np.zeros((2, 3, 3), "float32"),
            np.zeros((2, 4, 3), "float32"),
            key=np.zeros((2, 5, 3), "float32"),
        )
