"""attnkit.Attention against independent NumPy references."""

import keras
import numpy as np
import pytest
import tensorflow as tf

import attnkit
from grader.reference import attention as ref
from tests.support import layers
from tests.support.score_cases import CASE_IDS, CASES, built_score

# (batch, Tq, Tk, d_q, d_k, d_v): batch 1, Tq != Tk, d = 1, d_q != d_k != d_v.
SHAPES = [
    (1, 1, 1, 1, 1, 1),
    (2, 3, 5, 4, 4, 4),
    (3, 4, 2, 3, 2, 5),
    (2, 2, 3, 1, 2, 1),
]


def _np(x):
    return keras.ops.convert_to_numpy(x)


def _case(case_id):
    return CASES[CASE_IDS.index(case_id)]


def _sizes(case, shape, mode):
    """d_q, d_k, d_v for a case: keys are the values in soft attention."""
    b, tq, tk, dq, dk, dv = shape
    if mode == "soft":
        dk = dv
    if case.same_size:
        dq = dk
    return b, tq, tk, dq, dk, dv


def _data(rng, b, tq, tk, dq, dk, dv, dtype="float32"):
    q = rng.normal(size=(b, tq, dq)).astype(dtype)
    k = rng.normal(size=(b, tk, dk)).astype(dtype)
    v = rng.normal(size=(b, tk, dv)).astype(dtype)
    return q, k, v


def reference_attention(case, weights, q, k, v, mask=None):
    """float64 (output, weights) of key-value attention with `case`'s score."""
    alpha = ref.masked_softmax(case.reference(q, k, weights), mask)
    return ref.attend(alpha, v), alpha


def _attention_and_data(case, rng, shape, mode, dtype="float32", **attention_kwargs):
    b, tq, tk, dq, dk, dv = _sizes(case, shape, mode)
    score, weights = built_score(case, rng, dq, dk, dtype=dtype)
    layer = attnkit.Attention(score, dtype=dtype, **attention_kwargs)
    q, k, v = _data(rng, b, tq, tk, dq, dk, dv, dtype)
    if mode == "soft":
        k = v
    return layer, weights, (q, k, v)


# -------------------------------------------------------------------------- numerics
@pytest.mark.parametrize("mode", ["soft", "key_value"])
@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: "x".join(map(str, s)))
@pytest.mark.parametrize("case", CASES, ids=CASE_IDS)
def test_attention_matches_numpy(case, shape, mode, rng):
    layer, weights, (q, k, v) = _attention_and_data(case, rng, shape, mode)
    if mode == "soft":
        out, alpha = layer(q, v, return_attention_scores=True)
    else:
        out, alpha = layer(q, v, key=k, return_attention_scores=True)
    expected_out, expected_alpha = reference_attention(case, weights, q, k, v)
    np.testing.assert_allclose(_np(alpha), expected_alpha, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(_np(out), expected_out, rtol=1e-5, atol=1e-5)
    # Without the flag, only the output comes back.
    np.testing.assert_allclose(_np(layer(q, v, key=k)), expected_out, rtol=1e-5, atol=1e-5)


def _zero_masked_queries(out, query_mask):
    """A masked query's output is zero (Keras's convention, which attnkit.Attention keeps)."""
    return out if query_mask is None else np.where(query_mask[..., None], out, 0.0)


@pytest.mark.parametrize("kind", layers.MASK_KINDS)
@pytest.mark.parametrize("case_id", ["scaled_dot", "additive"])
def test_masks_match_numpy(case_id, kind, rng):
    case = _case(case_id)
    layer, weights, (q, k, v) = _attention_and_data(case, rng, (3, 4, 6, 3, 3, 2), "key_value")
    kwargs, keep = layers.random_masks(kind, rng, 3, 4, 6, query_mask_hides_weights=False)
    out, alpha = layer(q, v, key=k, return_attention_scores=True, **kwargs)
    alpha = _np(alpha)
    expected_out, expected_alpha = reference_attention(case, weights, q, k, v, keep)
    expected_out = _zero_masked_queries(expected_out, kwargs.get("query_mask"))
    assert np.all(alpha[~keep] == 0.0)
    np.testing.assert_allclose(alpha, expected_alpha, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(_np(out), expected_out, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("case", CASES, ids=CASE_IDS)
def test_fully_masked_rows_give_zeros_and_finite_gradients(case, rng):
    layer, weights, (q, k, v) = _attention_and_data(case, rng, (2, 3, 4, 2, 2, 3), "key_value")
    key_lengths = np.array([0, 2], "int32")  # example 0: every key is padding
    query_mask = np.array([[True, True, True], [True, False, True]])  # a padded query
    q_t, k_t, v_t = (tf.constant(x) for x in (q, k, v))
    with tf.GradientTape() as tape:
        tape.watch([q_t, k_t, v_t])
        out, alpha = layer(
            q_t,
            v_t,
            key=k_t,
            key_lengths=key_lengths,
            query_mask=query_mask,
            return_attention_scores=True,
        )
        total = tf.reduce_sum(out**2) + tf.reduce_sum(alpha**2)
    grads = tape.gradient(total, [q_t, k_t, v_t, *layer.trainable_weights])
    out, alpha = out.numpy(), alpha.numpy()
    np.testing.assert_array_equal(out[0], 0.0)
    np.testing.assert_array_equal(alpha[0], 0.0)
    np.testing.assert_array_equal(out[1, 1], 0.0)  # the padded query: zero output
    np.testing.assert_array_equal(alpha[1, :, 2:], 0.0)
    # The padded query's weights are those of an unmasked query (Keras's convention).
    keep = np.broadcast_to(ref.length_mask(key_lengths, 4)[:, None, :], alpha.shape)
    np.testing.assert_allclose(
        alpha, reference_attention(case, weights, q, k, v, keep)[1], rtol=1e-5, atol=1e-6
    )
    assert np.isclose(alpha[1, 1].sum(), 1.0)
    # Every gradient comes back, finite; location-based scores read the query alone, so the
    # key (and only the key) gets none there, by design.
    names = ["query", "key", "value", *(w.name for w in layer.trainable_weights)]
    missing = [name for name, g in zip(names, grads, strict=True) if g is None]
    assert missing == (["key"] if case.id == "location" else []), missing
    for g in grads:
        assert g is None or np.all(np.isfinite(_np(g)))
    # Nothing flows back to fully masked examples' values.
    np.testing.assert_array_equal(_np(grads[2])[0], 0.0)


@pytest.mark.parametrize("case_id", ["scaled_dot", "bilinear", "additive", "cosine_learned"])
def test_gradients_match_finite_differences(case_id, rng):
    case = _case(case_id)
    layer, weights, (q, k, v) = _attention_and_data(
        case, rng, (2, 3, 4, 3, 2, 2), "key_value", dtype="float64"
    )
    kwargs, keep = layers.random_masks("value_mask", rng, 2, 3, 4)
    upstream = rng.normal(size=(2, 3, 2))

    def loss(q_, k_, v_, w_):
        return float(np.sum(reference_attention(case, w_, q_, k_, v_, keep)[0] * upstream))

    q_t, k_t, v_t = (tf.constant(x) for x in (q, k, v))
    with tf.GradientTape() as tape:
        tape.watch([q_t, k_t, v_t])
        total = tf.reduce_sum(layer(q_t, v_t, key=k_t, **kwargs) * upstream)
    got = tape.gradient(total, [q_t, k_t, v_t, *layer.trainable_weights])
    expected = [
        layers.numeric_gradient(lambda x: loss(x, k, v, weights), q),
        layers.numeric_gradient(lambda x: loss(q, x, v, weights), k),
        layers.numeric_gradient(lambda x: loss(q, k, x, weights), v),
    ]
    for w in layer.trainable_weights:
        expected.append(
            layers.numeric_gradient(
                lambda x, n=w.name: loss(q, k, v, {**weights, n: x}), weights[w.name]
            )
        )
    assert len(got) == len(expected)
    for g, e in zip(got, expected, strict=True):
        np.testing.assert_allclose(_np(g), e, rtol=1e-6, atol=1e-8)


def test_dropout_only_when_training(rng):
    case = _case("bilinear")
    layer, weights, (q, k, v) = _attention_and_data(
        case, rng, (2, 4, 6, 3, 3, 3), "soft", dropout=0.5, seed=7
    )
    expected_out, expected_alpha = reference_attention(case, weights, q, k, v)
    for training in (None, False):
        out = layer(q, v, training=training)
        np.testing.assert_allclose(_np(out), expected_out, rtol=1e-5, atol=1e-5)
    out, alpha = layer(q, v, training=True, return_attention_scores=True)
    # The returned weights are the ones the output was pooled with, after dropout (as
    # Keras's): each kept weight is scaled by 1 / (1 - rate), each dropped one is zero.
    alpha = _np(alpha)
    dropped = alpha == 0.0
    assert dropped.any() and not dropped.all()
    np.testing.assert_allclose(alpha[~dropped], expected_alpha[~dropped] / 0.5, rtol=1e-5)
    np.testing.assert_allclose(_np(out), ref.attend(alpha, v), rtol=1e-5, atol=1e-5)
    assert not np.allclose(_np(out), expected_out, atol=1e-3)


# -------------------------------------------------------------------- Keras masking
def test_embedding_mask_zero_masks_padded_keys_eagerly():
    tokens = np.array([[3, 5, 2, 0, 0], [4, 0, 0, 0, 0], [1, 2, 3, 4, 5]])
    keep = tokens != 0
    x = keras.layers.Embedding(10, 4, mask_zero=True)(tokens)
    layer = attnkit.Attention("dot")
    out, alpha = layer(x, x, return_attention_scores=True)
    x = _np(x)
    expected_alpha = ref.masked_softmax(ref.dot_scores(x, x), keep[:, None, :])
    alpha = _np(alpha)
    assert np.all(alpha[np.broadcast_to(~keep[:, None, :], alpha.shape)] == 0.0)
    np.testing.assert_allclose(alpha, expected_alpha, rtol=1e-5, atol=1e-6)
    expected_out = _zero_masked_queries(ref.attend(expected_alpha, x), keep)
    np.testing.assert_allclose(_np(out), expected_out, rtol=1e-5, atol=1e-6)
    # The output carries the query's mask.
    np.testing.assert_array_equal(_np(out._keras_mask), keep)


def test_embedding_mask_zero_in_a_functional_model():
    tokens = np.array([[3, 5, 2, 0, 0], [4, 0, 0, 0, 0]])
    keep = tokens != 0
    inputs = keras.Input((5,), dtype="int32")
    embedding = keras.layers.Embedding(10, 4, mask_zero=True)
    x = embedding(inputs)
    out, alpha = attnkit.Attention("dot")(x, x, return_attention_scores=True)
    pooled = keras.layers.GlobalAveragePooling1D()(out)  # uses the propagated mask
    model = keras.Model(inputs, [out, alpha, pooled])
    out, alpha, pooled = (_np(t) for t in model(tokens))

    emb = _np(embedding(tokens))
    expected_alpha = ref.masked_softmax(ref.dot_scores(emb, emb), keep[:, None, :])
    expected_out = _zero_masked_queries(ref.attend(expected_alpha, emb), keep)
    np.testing.assert_allclose(alpha, expected_alpha, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(out, expected_out, rtol=1e-5, atol=1e-6)
    expected_pooled = [expected_out[b][keep[b]].mean(axis=0) for b in range(2)]
    np.testing.assert_allclose(pooled, expected_pooled, rtol=1e-5, atol=1e-6)


# -------------------------------------------------------------------- mixed precision
@pytest.mark.parametrize("case", CASES, ids=CASE_IDS)
def test_mixed_precision(case, mixed_policy, rng):
    b, tq, tk, dq, dk, dv = 2, 3, 5, 4, 4, 3
    score = case.make()
    score.build((None, None, dq), (None, None, dk))
    weights = case.weights(rng, dq, dk)
    for w in score.weights:  # variables stay float32 under a mixed policy
        assert keras.backend.standardize_dtype(w.dtype) == "float32"
        w.assign(weights[w.name].astype("float32"))
    layer = attnkit.Attention(score)
    q, k, v = _data(rng, b, tq, tk, dq, dk, dv)
    key_lengths = np.array([0, 3], "int32")
    out, alpha = layer(q, v, key=k, key_lengths=key_lengths, return_attention_scores=True)
    low = mixed_policy.split("_")[1]
    assert keras.backend.standardize_dtype(out.dtype) == low
    assert keras.backend.standardize_dtype(alpha.dtype) == low
    out, alpha = _np(tf.cast(out, "float64")), _np(tf.cast(alpha, "float64"))
    assert np.all(np.isfinite(out)) and np.all(np.isfinite(alpha))
    np.testing.assert_array_equal(out[0], 0.0)
    np.testing.assert_array_equal(alpha[0], 0.0)
    np.testing.assert_array_equal(alpha[1, :, 3:], 0.0)
    keep = ref.length_mask(key_lengths, tk)[:, None, :]
    expected_out, expected_alpha = reference_attention(case, weights, q, k, v, keep)
    tol = 2e-2 if low == "float16" else 1e-1
    np.testing.assert_allclose(alpha, expected_alpha, atol=tol)
    np.testing.assert_allclose(out, expected_out, atol=3 * tol)


# -------------------------------------------------------------------------------- XLA
@pytest.mark.parametrize("case", CASES, ids=CASE_IDS)
def test_jit_compile_matches_eager(case, rng):
    layer, weights, (q, k, v) = _attention_and_data(case, rng, (2, 3, 5, 4, 4, 3), "key_value")
    key_lengths = np.array([2, 0], "int32")

    def run(q_, k_, v_, lengths):
        return layer(
            q_, v_, key=k_, key_lengths=lengths, use_causal_mask=True, return_attention_scores=True
        )

    eager = run(q, k, v, key_lengths)
    compiled = tf.function(run, jit_compile=True)(q, k, v, key_lengths)
    for e, c in zip(eager, compiled, strict=True):
        assert np.all(np.isfinite(_np(c)))
        np.testing.assert_allclose(_np(c), _np(e), rtol=1e-5, atol=1e-6)
    keep = ref.length_mask(key_lengths, 5)[:, None, :] & ref.causal_mask(3, 5)[None]
    np.testing.assert_allclose(
        _np(compiled[1]),
        reference_attention(case, weights, q, k, v, keep)[1],
        rtol=1e-5,
        atol=1e-6,
    )


@pytest.mark.parametrize("case", CASES, ids=CASE_IDS)
def test_unknown_lengths_in_a_traced_graph(case, rng):
    # Batch size and sequence lengths only known at run time (tf.function with None dims).
    layer, weights, (q, k, v) = _attention_and_data(case, rng, (2, 3, 5, 4, 4, 3), "key_value")
    key_lengths = np.array([4, 1], "int32")
    spec = [
        tf.TensorSpec((None, None, q.shape[-1])),
        tf.TensorSpec((None, None, k.shape[-1])),
        tf.TensorSpec((None, None, v.shape[-1])),
        tf.TensorSpec((None,), tf.int32),
    ]

    @tf.function(input_signature=spec)
    def run(q_, k_, v_, lengths):
        return layer(q_, v_, key=k_, key_lengths=lengths, return_attention_scores=True)

    out, alpha = run(q, k, v, key_lengths)
    keep = ref.length_mask(key_lengths, 5)[:, None, :]
    expected_out, expected_alpha = reference_attention(case, weights, q, k, v, keep)
    np.testing.assert_allclose(_np(alpha), expected_alpha, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(_np(out), expected_out, rtol=1e-5, atol=1e-5)


def test_trains_under_a_distribution_strategy(rng):
    keras.utils.set_random_seed(0)
    strategy = tf.distribute.MirroredStrategy(["/cpu:0"])
    with strategy.scope():
        q_in, v_in = keras.Input((3, 4)), keras.Input((5, 4))
        out = attnkit.Attention(attnkit.BilinearScore())(q_in, v_in)
        model = keras.Model([q_in, v_in], out)
        model.compile(optimizer=keras.optimizers.SGD(0.1), loss="mse")
    q = rng.normal(size=(8, 3, 4)).astype("float32")
    v = rng.normal(size=(8, 5, 4)).astype("float32")
    losses = model.fit([q, v], v[:, :3], epochs=3, batch_size=4, verbose=0).history["loss"]
    assert np.all(np.isfinite(losses)) and losses[-1] < losses[0]


# ------------------------------------------------------------ save / load and config
SAVE_CASES = ["additive", "location", "bilinear", "cosine_learned"]


@pytest.mark.parametrize("case_id", SAVE_CASES)
def test_keras_file_round_trip(case_id, rng, tmp_path):
    case = _case(case_id)
    b, tq, tk, dq, dk, dv = _sizes(case, (2, 3, 5, 4, 2, 3), "key_value")
    score, weights = built_score(case, rng, dq, dk)
    q_in, k_in, v_in = keras.Input((tq, dq)), keras.Input((tk, dk)), keras.Input((tk, dv))
    lengths_in = keras.Input((), dtype="int32")
    out, alpha = attnkit.Attention(score, dropout=0.1, seed=3)(
        q_in, v_in, key=k_in, key_lengths=lengths_in, return_attention_scores=True
    )
    assert tuple(out.shape) == (None, tq, dv) and tuple(alpha.shape) == (None, tq, tk)
    model = keras.Model([q_in, k_in, v_in, lengths_in], [out, alpha])
    model.save(tmp_path / "model.keras")
    loaded = keras.saving.load_model(tmp_path / "model.keras")

    q, k, v = _data(rng, b, tq, tk, dq, dk, dv)
    lengths = np.array([5, 2], "int32")
    keep = ref.length_mask(lengths, tk)[:, None, :]
    expected = reference_attention(case, weights, q, k, v, keep)
    for m in (model, loaded):
        got = m.predict([q, k, v, lengths], verbose=0)
        for g, e in zip(got, expected, strict=True):
            np.testing.assert_allclose(g, e, rtol=1e-5, atol=1e-6)
    restored = next(layer for layer in loaded.layers if isinstance(layer, attnkit.Attention))
    assert type(restored.score_layer) is type(score)
    assert restored.dropout == 0.1 and restored.seed == 3


@pytest.mark.parametrize(
    "score",
    [
        "cosine",
        "bilinear",
        {"class_name": "AdditiveScore", "config": {"units": 4}},
        attnkit.LocationScore(8, name="where"),
    ],
    ids=["name_cosine", "name_bilinear", "dict_additive", "instance_location"],
)
def test_config_round_trip(score, rng):
    layer = attnkit.Attention(score, dropout=0.25, seed=5, name="att")
    q, k, v = _data(rng, 2, 3, 5, 4, 4, 2)
    layer(q, v, key=k)
    config = layer.get_config()
    clone = attnkit.Attention.from_config(config)
    assert clone.get_config() == config
    assert type(clone.score_layer) is type(layer.score_layer)
    assert clone.score_layer is not layer.score_layer
    clone(q, v, key=k)
    clone.set_weights(layer.get_weights())
    np.testing.assert_allclose(_np(clone(q, v, key=k)), _np(layer(q, v, key=k)), rtol=1e-6)


def test_default_score_is_keras_dot_product(rng):
    """As keras.layers.Attention: the unscaled dot product (score_mode="dot")."""
    layer = attnkit.Attention()
    assert layer.score_layer is None and layer.score_mode == "dot"
    q, k, v = _data(rng, 2, 3, 4, 5, 5, 2)
    expected = ref.attend(ref.masked_softmax(ref.dot_scores(q, k)), v)
    np.testing.assert_allclose(_np(layer(q, v, key=k)), expected, rtol=1e-5, atol=1e-6)


# ------------------------------------------------------------------------- training
def test_trains_inside_model_fit(rng):
    keras.utils.set_random_seed(0)
    q_in, v_in = keras.Input((3, 4)), keras.Input((5, 4))
    score = attnkit.AdditiveScore(6)
    out = attnkit.Attention(score)(q_in, v_in)
    model = keras.Model([q_in, v_in], keras.layers.Dense(1)(out))
    model.compile(optimizer=keras.optimizers.SGD(0.1), loss="mse")
    q = rng.normal(size=(16, 3, 4)).astype("float32")
    v = rng.normal(size=(16, 5, 4)).astype("float32")
    y = v[:, :3, :1]  # learnable: attend to the matching position
    before = [w.numpy().copy() for w in score.weights]
    history = model.fit([q, v], y, epochs=3, batch_size=8, verbose=0)
    losses = history.history["loss"]
    assert np.all(np.isfinite(losses)) and losses[-1] < losses[0]
    assert all(not np.allclose(b, w.numpy()) for b, w in zip(before, score.weights, strict=True))


# --------------------------------------------------------------------------- errors
@pytest.mark.parametrize(
    ("kwargs", "fragment"),
    [
        ({"dropout": -0.1}, "dropout=-0.1"),
        ({"dropout": 1.0}, "dropout=1.0"),
        ({"dropout": "high"}, "dropout='high'"),
        ({"seed": 1.5}, "seed=1.5"),
        ({"score": "softmax"}, "score='softmax'"),
        ({"score": "additive"}, "score='additive'"),
        ({"score": 42}, "score=42"),
    ],
)
def test_constructor_errors(kwargs, fragment):
    with pytest.raises(ValueError, match="Received:") as info:
        attnkit.Attention(**kwargs)
    assert fragment in str(info.value)


@pytest.mark.parametrize(
    ("call_kwargs", "fragment"),
    [
        ({"key": np.zeros((2, 4, 3), "float32")}, "key_shape=(2, 4, 3)"),
        ({"key_lengths": np.array([[1], [2]], "int32")}, "key_lengths"),
        ({"attention_mask": np.ones((3,), bool)}, "attention_mask"),
    ],
)
def test_call_errors(call_kwargs, fragment):
    q = np.zeros((2, 3, 3), "float32")
    v = np.zeros((2, 5, 3), "float32")
    with pytest.raises(ValueError, match="Received:") as info:
        attnkit.Attention("dot")(q, v, **call_kwargs)
    assert fragment in str(info.value)


def test_named_score_follows_the_layer_dtype(rng):
    # A score made from a name takes the Attention layer's dtype policy: in float64 the
    # result matches NumPy to float64 precision, which a float32 score could not.
    layer = attnkit.Attention("bilinear", dtype="float64")
    q, k, v = _data(rng, 2, 3, 4, 3, 2, 2, dtype="float64")
    layer.build(q.shape, v.shape, k.shape)
    kernel = rng.normal(size=(3, 2))
    layer.score_layer.kernel.assign(kernel)
    out = _np(layer(q, v, key=k))
    expected = ref.attend(ref.masked_softmax(ref.bilinear_scores(q, k, kernel)), v)
    np.testing.assert_allclose(out, expected, rtol=1e-12, atol=1e-12)
