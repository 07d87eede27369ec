"""MultiHeadAttention (Vaswani 2017) and MultiQueryAttention (NNDL (8.11)) against float64
NumPy and against keras.layers.MultiHeadAttention."""

import keras
import numpy as np
import pytest
import tensorflow as tf

from attnkit.attention import MultiHeadAttention, MultiQueryAttention
from grader.reference import attention as ref
from grader.reference import heads as hr
from tests.support import layers
from tests.support.score_cases import CASE_IDS, CASES, built_score


def _np(x):
    return keras.ops.convert_to_numpy(x)


def _data(rng, b, tq, tk, dq, dk, dv, dtype="float32"):
    q = rng.normal(size=(b, tq, dq)).astype(dtype)
    k = rng.normal(size=(b, tk, dk)).astype(dtype)
    v = rng.normal(size=(b, tk, dv)).astype(dtype)
    return q, k, v


# (batch, Tq, Tk, d_q, d_k, d_v) and (num_heads, key_dim, value_dim, output_dim, use_bias):
# batch 1, Tq != Tk, d = 1, one head, different sizes everywhere, no bias.
MHA_CASES = [
    ((1, 1, 1, 1, 1, 1), (1, 1, None, None, True)),
    ((2, 3, 5, 4, 4, 4), (2, 3, None, None, True)),
    ((3, 4, 2, 3, 2, 5), (3, 2, 4, 6, False)),
    ((2, 2, 3, 1, 2, 1), (2, 1, 1, 3, True)),
]
MHA_IDS = ["x".join(map(str, shape)) + f"-h{cfg[0]}" for shape, cfg in MHA_CASES]


def _mha(rng, shape, cfg, dtype="float32", **kwargs):
    num_heads, key_dim, value_dim, output_dim, use_bias = cfg
    layer = MultiHeadAttention(
        num_heads,
        key_dim,
        value_dim,
        output_shape=output_dim,
        use_bias=use_bias,
        dtype=dtype,
        **kwargs,
    )
    q, k, v = _data(rng, *shape, dtype=dtype)
    layer.build(q.shape, v.shape, k.shape)
    return layer, layers.random_weights(layer, rng), (q, k, v)


# ------------------------------------------------------------------ multi-head numerics
@pytest.mark.parametrize(("shape", "cfg"), MHA_CASES, ids=MHA_IDS)
def test_multi_head_matches_numpy(shape, cfg, rng):
    layer, weights, (q, k, v) = _mha(rng, shape, cfg)
    out, alpha = layer(q, v, key=k, return_attention_scores=True)
    expected_out, expected_alpha = hr.multi_head_attention(q, k, v, weights)
    np.testing.assert_allclose(_np(alpha), expected_alpha, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(_np(out), expected_out, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(_np(layer(q, v, key=k)), expected_out, rtol=1e-5, atol=1e-5)


def test_key_defaults_to_value(rng):
    layer, weights, (q, _, v) = _mha(rng, (2, 3, 4, 3, 2, 2), (2, 2, None, 5, True))
    expected = hr.multi_head_attention(q, v, v, weights)[0]
    np.testing.assert_allclose(_np(layer(q, v)), expected, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("kind", layers.MASK_KINDS)
def test_multi_head_masks_match_numpy(kind, rng):
    layer, weights, (q, k, v) = _mha(rng, (3, 4, 6, 3, 3, 2), (2, 3, 2, None, True))
    kwargs, keep = layers.random_masks(kind, rng, 3, 4, 6)
    out, alpha = layer(q, v, key=k, return_attention_scores=True, **kwargs)
    alpha = _np(alpha)
    expected_out, expected_alpha = hr.multi_head_attention(q, k, v, weights, keep)
    assert np.all(alpha[np.broadcast_to(~keep[:, None], alpha.shape)] == 0.0)
    np.testing.assert_allclose(alpha, expected_alpha, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(_np(out), expected_out, rtol=1e-5, atol=1e-5)


def test_multi_head_fully_masked_rows_give_bias_and_finite_gradients(rng):
    layer, weights, (q, k, v) = _mha(rng, (2, 3, 4, 2, 2, 3), (2, 2, 3, None, True))
    key_lengths = np.array([0, 2], "int32")  # example 0: every key is padding
    query_mask = np.array([[True, True, True], [True, False, True]])
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
    out, alpha = _np(out), _np(alpha)
    np.testing.assert_array_equal(alpha[0], 0.0)
    np.testing.assert_array_equal(alpha[1, :, 1], 0.0)
    np.testing.assert_array_equal(alpha[1, :, :, 2:], 0.0)
    # Zero weights, zero heads: what is left is the output bias b_O.
    bias = weights["output_bias"].astype("float32")
    np.testing.assert_array_equal(out[0], np.broadcast_to(bias, out[0].shape))
    np.testing.assert_array_equal(out[1, 1], bias)
    keep = ref.length_mask(key_lengths, 4)[:, None, :] & query_mask[:, :, None]
    expected_out, expected_alpha = hr.multi_head_attention(q, k, v, weights, keep)
    np.testing.assert_allclose(alpha, expected_alpha, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(out, expected_out, rtol=1e-5, atol=1e-5)
    for g in grads:
        assert g is not None and np.all(np.isfinite(_np(g)))
    np.testing.assert_array_equal(_np(grads[2])[0], 0.0)  # no gradient to unseen values


def test_multi_head_gradients_match_finite_differences(rng):
    shape, cfg = (2, 2, 3, 2, 3, 2), (2, 2, 1, 2, True)
    layer, weights, (q, k, v) = _mha(rng, shape, cfg, dtype="float64")
    kwargs, keep = layers.random_masks("value_mask", rng, 2, 2, 3)
    upstream = rng.normal(size=(2, 2, 2))

    def loss(q_, k_, v_, w_):
        return float(np.sum(hr.multi_head_attention(q_, k_, v_, w_, keep)[0] * upstream))

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
    for name in map(layers.weight_name, layer.trainable_weights):
        expected.append(
            layers.numeric_gradient(
                lambda x, n=name: loss(q, k, v, {**weights, n: x}), weights[name]
            )
        )
    for g, e in zip(got, expected, strict=True):
        np.testing.assert_allclose(_np(g), e, rtol=1e-6, atol=1e-8)


def test_multi_head_dropout_only_when_training(rng):
    layer, weights, (q, k, v) = _mha(rng, (2, 4, 6, 3, 3, 3), (2, 3, None, None, True), dropout=0.5)
    expected_out, expected_alpha = hr.multi_head_attention(q, k, v, weights)
    for training in (None, False):
        np.testing.assert_allclose(
            _np(layer(q, v, key=k, training=training)), expected_out, rtol=1e-5, atol=1e-5
        )
    out, alpha = layer(q, v, key=k, training=True, return_attention_scores=True)
    np.testing.assert_allclose(_np(alpha), expected_alpha, rtol=1e-5, atol=1e-6)
    assert not np.allclose(_np(out), expected_out, atol=1e-3)


# ------------------------------------------------------ the same as Keras's own layer
KERAS_CONFIGS = [
    # (batch, Tq, Tk, d_q, d_k, d_v), (num_heads, key_dim, value_dim, output_dim, use_bias)
    ((2, 4, 6, 5, 3, 2), (3, 4, None, None, True)),
    ((3, 5, 5, 4, 4, 4), (2, 3, 2, 6, True)),
    ((1, 3, 4, 2, 2, 3), (2, 2, 3, 3, False)),
]
KERAS_MASKS = ["none", "padding", "causal", "key_lengths", "padding+causal+key_lengths"]


def _keras_and_attnkit_masks(kind, rng, b, tq, tk):
    """The same masks for both layers (Keras has no key_lengths: an attention mask instead).

    Key 0 is always kept, so no row is fully masked (Keras gives such rows uniform weights,
    attnkit zeros).
    """
    ours, theirs, keep = {}, {}, np.ones((b, tq, tk), bool)
    if "padding" in kind:
        value_mask = rng.random((b, tk)) > 0.4
        value_mask[:, 0] = True
        ours["value_mask"] = theirs["value_mask"] = value_mask
        keep &= value_mask[:, None, :]
    if "key_lengths" in kind:
        lengths = rng.integers(1, tk + 1, size=b).astype("int32")
        ours["key_lengths"] = lengths
        theirs["attention_mask"] = np.broadcast_to(
            ref.length_mask(lengths, tk)[:, None, :], (b, tq, tk)
        ).copy()
        keep &= ref.length_mask(lengths, tk)[:, None, :]
    if "causal" in kind:
        ours["use_causal_mask"] = theirs["use_causal_mask"] = True
        keep &= ref.causal_mask(tq, tk)[None]
    assert keep.any(axis=-1).all()
    return ours, theirs, keep


@pytest.mark.parametrize("kind", KERAS_MASKS)
@pytest.mark.parametrize(("shape", "cfg"), KERAS_CONFIGS, ids=["h3", "h2-vdim-odim", "no-bias"])
def test_same_as_keras_multi_head_attention(shape, cfg, kind, rng):
    b, tq, tk, dq, dk, dv = shape
    num_heads, key_dim, value_dim, output_dim, use_bias = cfg
    q, k, v = _data(rng, *shape)
    theirs = keras.layers.MultiHeadAttention(
        num_heads,
        key_dim,
        value_dim=value_dim,
        output_shape=output_dim,
        use_bias=use_bias,
        flash_attention=False,
    )
    theirs(q, v, key=k)
    for w in theirs.weights:  # non-zero biases, so that copying them is tested too
        w.assign(rng.normal(scale=0.5, size=tuple(w.shape)).astype("float32"))
    ours = MultiHeadAttention(
        num_heads, key_dim, value_dim, output_shape=output_dim, use_bias=use_bias
    )
    ours.build(q.shape, v.shape, k.shape)
    # Keras's weights load in order, and each lands on the weight of the same name.
    ours.set_weights(theirs.get_weights())
    by_name = {
        "query": theirs.query_dense,
        "key": theirs.key_dense,
        "value": theirs.value_dense,
        "output": theirs.output_dense,
    }
    expected_names = [f"{n}_{w}" for n in by_name for w in ("kernel", "bias")[: 1 + use_bias]]
    assert [layers.weight_name(w) for w in ours.weights] == expected_names
    for w in ours.weights:
        part, kind_of_weight = layers.weight_name(w).rsplit("_", 1)
        np.testing.assert_array_equal(_np(w), _np(getattr(by_name[part], kind_of_weight)))

    our_kwargs, their_kwargs, keep = _keras_and_attnkit_masks(kind, rng, b, tq, tk)
    out, alpha = ours(q, v, key=k, return_attention_scores=True, **our_kwargs)
    expected_out, expected_alpha = theirs(q, v, key=k, return_attention_scores=True, **their_kwargs)
    assert tuple(alpha.shape) == (b, num_heads, tq, tk)
    np.testing.assert_allclose(_np(alpha), _np(expected_alpha), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(_np(out), _np(expected_out), rtol=1e-5, atol=1e-5)
    assert np.all(_np(alpha)[np.broadcast_to(~keep[:, None], alpha.shape)] == 0.0)


def test_a_fully_masked_row_gets_zero_weights_as_in_keras(rng):
    """Keras 3.15's layer gives a query with no key zero weights too (so its output is the
    output bias), like attnkit; older versions of Keras gave it uniform weights."""
    q = rng.normal(size=(2, 3, 4)).astype("float32")
    theirs = keras.layers.MultiHeadAttention(2, 3, flash_attention=False)
    theirs(q, q)
    for w in theirs.weights:
        w.assign(rng.normal(scale=0.5, size=tuple(w.shape)).astype("float32"))
    ours = MultiHeadAttention(2, 3)
    ours.build(q.shape, q.shape)
    ours.set_weights(theirs.get_weights())
    mask = np.ones((2, 3, 3), bool)
    mask[0, 1] = False  # query 1 of example 0 sees no key
    out, alpha = ours(q, q, attention_mask=mask, return_attention_scores=True)
    expected_out, expected_alpha = theirs(q, q, attention_mask=mask, return_attention_scores=True)
    np.testing.assert_array_equal(_np(expected_alpha)[0, :, 1], 0.0)
    np.testing.assert_array_equal(_np(alpha)[0, :, 1], 0.0)
    np.testing.assert_allclose(_np(alpha), _np(expected_alpha), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(_np(out), _np(expected_out), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(_np(out)[0, 1], _np(ours.output_bias), rtol=1e-6)


# ------------------------------------------------------------------ multi-query numerics
MQ_SCORES = ["dot", "scaled_dot", "bilinear", "additive", "cosine"]
# (batch, Tq, M, Tk, d_q, d_k, d_v): batch 1, M = 1, Tq != Tk, d = 1.
MQ_SHAPES = [(1, 1, 1, 1, 1, 1, 1), (2, 3, 2, 5, 4, 4, 3), (3, 2, 4, 3, 2, 3, 1)]


def _mq(case_id, rng, shape):
    case = CASES[CASE_IDS.index(case_id)]
    b, tq, m, tk, dq, dk, dv = shape
    if case.same_size:
        dk = dq
    score, weights = built_score(case, rng, dq, dk)
    q = rng.normal(size=(b, tq, m, dq)).astype("float32")
    _, k, v = _data(rng, b, 1, tk, dq, dk, dv)
    return case, MultiQueryAttention(score), weights, (q, k, v)


def reference_multi_query(case, weights, q, k, v, keep=None):
    """att((K, V), q_1) ⊕ ... ⊕ att((K, V), q_M): one query at a time, then concatenated."""
    outputs, alphas = [], []
    for m in range(q.shape[2]):
        alpha = ref.masked_softmax(case.reference(q[:, :, m, :], k, weights), keep)
        outputs.append(ref.attend(alpha, v))
        alphas.append(alpha)
    return np.concatenate(outputs, axis=-1), np.stack(alphas, axis=2)


@pytest.mark.parametrize("shape", MQ_SHAPES, ids=lambda s: "x".join(map(str, s)))
@pytest.mark.parametrize("case_id", MQ_SCORES)
def test_multi_query_matches_numpy(case_id, shape, rng):
    case, layer, weights, (q, k, v) = _mq(case_id, rng, shape)
    out, alpha = layer(q, v, key=k, return_attention_scores=True)
    expected_out, expected_alpha = reference_multi_query(case, weights, q, k, v)
    np.testing.assert_allclose(_np(alpha), expected_alpha, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(_np(out), expected_out, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("kind", layers.MASK_KINDS)
def test_multi_query_masks_match_numpy(kind, rng):
    case, layer, weights, (q, k, v) = _mq("additive", rng, (3, 4, 2, 6, 3, 2, 2))
    kwargs, keep = layers.random_masks(kind, rng, 3, 4, 6)
    out, alpha = layer(q, v, key=k, return_attention_scores=True, **kwargs)
    alpha = _np(alpha)
    expected_out, expected_alpha = reference_multi_query(case, weights, q, k, v, keep)
    assert np.all(alpha[np.broadcast_to(~keep[:, :, None], alpha.shape)] == 0.0)
    np.testing.assert_allclose(alpha, expected_alpha, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(_np(out), expected_out, rtol=1e-5, atol=1e-5)


def test_multi_query_fully_masked_rows_give_zeros_and_finite_gradients(rng):
    case, layer, weights, (q, k, v) = _mq("bilinear", rng, (2, 3, 2, 4, 2, 2, 3))
    key_lengths = np.array([0, 4], "int32")
    query_mask = np.array([[True, True, True], [False, True, True]])
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
    np.testing.assert_array_equal(_np(out)[0], 0.0)
    np.testing.assert_array_equal(_np(out)[1, 0], 0.0)
    np.testing.assert_array_equal(_np(alpha)[0], 0.0)
    for g in grads:
        assert g is not None and np.all(np.isfinite(_np(g)))
    np.testing.assert_array_equal(_np(grads[0])[0], 0.0)


# ------------------------------------------------------------------------------ errors
@pytest.mark.parametrize(
    ("kwargs", "fragment"),
    [
        ({"num_heads": 0}, "num_heads=0"),
        ({"num_heads": 2.0}, "num_heads=2.0"),
        ({"key_dim": -1}, "key_dim=-1"),
        ({"key_dim": True}, "key_dim=True"),
        ({"value_dim": 0}, "value_dim=0"),
        ({"output_dim": "4"}, "output_dim='4'"),
        ({"dropout": 1.0}, "dropout=1.0"),
        ({"dropout": -0.5}, "dropout=-0.5"),
        ({"use_bias": "yes"}, "use_bias='yes'"),
        ({"seed": 1.5}, "seed=1.5"),
        ({"kernel_initializer": "no_such_init"}, "kernel_initializer='no_such_init'"),
        ({"bias_initializer": 3}, "bias_initializer=3"),
    ],
)
def test_multi_head_constructor_errors(kwargs, fragment):
    args = {"num_heads": 2, "key_dim": 3, **kwargs}
    with pytest.raises(ValueError, match="Received:") as info:
        MultiHeadAttention(**args)
    assert fragment in str(info.value)


@pytest.mark.parametrize(
    ("layer", "shapes", "fragment"),
    [
        (MultiHeadAttention(2, 3), ((2, 3), (2, 4, 3), None), "query_shape=(2, 3)"),
        (MultiHeadAttention(2, 3), ((2, 3, 4), (2, 5, 3), (2, 4, 3)), "key_shape=(2, 4, 3)"),
        (MultiHeadAttention(2, 3), ((2, 3, None), (2, 5, 3), None), "query_shape=(2, 3, None)"),
        (MultiQueryAttention(), ((2, 3, 4), (2, 5, 4), None), "query_shape=(2, 3, 4)"),
        (MultiQueryAttention(), ((2, 3, 2, 4), (2, 5, 4), (2, 6, 4)), "key_shape=(2, 6, 4)"),
        (MultiQueryAttention(), ((2, 3, 2, 4), (2, 5), None), "value_shape=(2, 5)"),
    ],
    ids=["mha-rank", "mha-key-value", "mha-unknown-size", "mq-rank", "mq-key-value", "mq-value"],
)
def test_build_errors(layer, shapes, fragment):
    with pytest.raises(ValueError, match="Received:") as info:
        layer.build(*shapes)
    assert fragment in str(info.value)


@pytest.mark.parametrize(("score", "fragment"), [("softmax", "score='softmax'"), (7, "score=7")])
def test_multi_query_constructor_errors(score, fragment):
    with pytest.raises(ValueError, match="Received:") as info:
        MultiQueryAttention(score)
    assert fragment in str(info.value)
