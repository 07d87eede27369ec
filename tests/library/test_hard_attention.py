"""HardAttention (NNDL 8.2.1.1, (8.8); Xu 2015) against float64 NumPy, and its gradients."""

import keras
import numpy as np
import pytest
import tensorflow as tf

from attnkit.attention import HardAttention
from grader.reference import attention as ref
from grader.reference import heads as hr
from tests.support import layers
from tests.support.score_cases import CASE_IDS, CASES, built_score


def _np(x):
    return keras.ops.convert_to_numpy(x)


def _case(case_id):
    return CASES[CASE_IDS.index(case_id)]


# (batch, Tq, Tk, d_q, d_k, d_v): batch 1, Tq != Tk, d = 1, a single key.
SHAPES = [(1, 1, 1, 1, 1, 1), (2, 3, 5, 4, 4, 4), (3, 4, 2, 3, 2, 5), (2, 5, 3, 1, 1, 2)]
SCORES = ["dot", "scaled_dot", "bilinear", "additive"]


def _layer_and_data(case_id, rng, shape, dtype="float32", **kwargs):
    case = _case(case_id)
    b, tq, tk, dq, dk, dv = shape
    if case.same_size:
        dk = dq
    score, weights = built_score(case, rng, dq, dk, dtype=dtype)
    q = rng.normal(size=(b, tq, dq)).astype(dtype)
    k = rng.normal(size=(b, tk, dk)).astype(dtype)
    v = rng.normal(size=(b, tk, dv)).astype(dtype)
    return case, HardAttention(score, dtype=dtype, **kwargs), weights, (q, k, v)


def _soft(case, weights, q, k, keep=None):
    return ref.masked_softmax(case.reference(q, k, weights), keep)


# ------------------------------------------------------------------------------- argmax
@pytest.mark.parametrize("straight_through", [False, True], ids=["plain", "straight_through"])
@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: "x".join(map(str, s)))
@pytest.mark.parametrize("case_id", SCORES)
def test_argmax_matches_numpy(case_id, shape, straight_through, rng):
    case, layer, weights, (q, k, v) = _layer_and_data(
        case_id, rng, shape, straight_through=straight_through
    )
    selected, indices, alpha = layer(q, v, key=k, return_attention_scores=True)
    expected_alpha = _soft(case, weights, q, k)
    expected_selected, expected_indices = hr.hard_attention(expected_alpha, v)
    assert keras.backend.standardize_dtype(indices.dtype) == "int32"
    np.testing.assert_array_equal(_np(indices), expected_indices)
    # The selected vector is exactly the value at that index (no averaging, even with the
    # straight-through estimator).
    np.testing.assert_array_equal(_np(selected), expected_selected.astype("float32"))
    np.testing.assert_allclose(_np(alpha), expected_alpha, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("kind", layers.MASK_KINDS)
@pytest.mark.parametrize("mode", ["argmax", "sample"])
def test_masked_keys_are_never_picked(mode, kind, rng):
    case, layer, weights, (q, k, v) = _layer_and_data(
        "additive", rng, (3, 40, 6, 3, 3, 2), mode=mode, seed=11
    )
    kwargs, keep = layers.random_masks(kind, rng, 3, 40, 6)
    selected, indices, alpha = layer(q, v, key=k, return_attention_scores=True, **kwargs)
    selected, indices, alpha = _np(selected), _np(indices), _np(alpha)
    has_key = keep.any(axis=-1)
    np.testing.assert_array_equal(indices[~has_key], -1)
    np.testing.assert_array_equal(selected[~has_key], 0.0)
    b_idx, q_idx = np.nonzero(has_key)
    assert np.all(keep[b_idx, q_idx, indices[b_idx, q_idx]])
    np.testing.assert_array_equal(selected[b_idx, q_idx], v[b_idx, indices[b_idx, q_idx]])
    expected_alpha = _soft(case, weights, q, k, keep)
    assert np.all(alpha[~keep] == 0.0)
    np.testing.assert_allclose(alpha, expected_alpha, rtol=1e-5, atol=1e-6)
    if mode == "argmax":
        np.testing.assert_array_equal(indices, hr.hard_attention(expected_alpha, v, keep)[1])


# ------------------------------------------------------------------------------ sample
def test_samples_follow_the_attention_distribution(rng):
    # Every query of an example is the same, so the n draws are n samples of one α.
    n, tk, d = 4000, 5, 3
    q = np.repeat(rng.normal(size=(2, 1, d)), n, axis=1).astype("float32")
    v = rng.normal(size=(2, tk, d)).astype("float32")
    value_mask = np.array([[True, True, False, True, True], [True, True, True, True, False]])
    layer = HardAttention("dot", mode="sample", seed=5)
    selected, indices, alpha = layer(q, v, value_mask=value_mask, return_attention_scores=True)
    indices = _np(indices)
    expected_alpha = ref.masked_softmax(ref.dot_scores(q[:, :1], v), value_mask[:, None, :])[:, 0]
    for b in range(2):
        freq = np.bincount(indices[b], minlength=tk) / n
        sigma = np.sqrt(expected_alpha[b] * (1 - expected_alpha[b]) / n)
        assert np.all(np.abs(freq - expected_alpha[b]) <= 5 * sigma + 1e-3), (freq, expected_alpha)
        assert np.all(freq[~value_mask[b]] == 0.0)
    np.testing.assert_array_equal(_np(selected), np.take_along_axis(v, indices[..., None], 1))


def test_sampling_is_seeded(rng):
    q = rng.normal(size=(2, 200, 3)).astype("float32")
    v = rng.normal(size=(2, 6, 3)).astype("float32")
    draws = [_np(HardAttention(mode="sample", seed=s)(q, v)[1]) for s in (3, 3, 4)]
    np.testing.assert_array_equal(draws[0], draws[1])
    assert not np.array_equal(draws[0], draws[2])
    layer = HardAttention(mode="sample", seed=3)
    assert not np.array_equal(_np(layer(q, v)[1]), _np(layer(q, v)[1]))  # the seed advances


def test_sampling_under_jit_compile_respects_masks(rng):
    layer = HardAttention("scaled_dot", mode="sample", seed=2)
    q = rng.normal(size=(2, 50, 4)).astype("float32")
    v = rng.normal(size=(2, 6, 4)).astype("float32")
    lengths = np.array([3, 0], "int32")

    @tf.function(jit_compile=True)
    def run(q_, v_, lengths_):
        return layer(q_, v_, key_lengths=lengths_)

    selected, indices = (_np(t) for t in run(q, v, lengths))
    assert np.all((indices[0] >= 0) & (indices[0] < 3)) and len(np.unique(indices[0])) > 1
    np.testing.assert_array_equal(indices[1], -1)
    np.testing.assert_array_equal(selected[1], 0.0)
    np.testing.assert_array_equal(selected[0], v[0][indices[0]])


# --------------------------------------------------------------------------- gradients
@pytest.mark.parametrize("mode", ["argmax", "sample"])
def test_plain_hard_attention_has_no_gradient_to_the_scores(mode, rng):
    """The index is piecewise constant in the scores: nothing flows to q, k or W."""
    _, layer, _, (q, k, v) = _layer_and_data("bilinear", rng, (2, 3, 4, 3, 2, 2), mode=mode)
    upstream = rng.normal(size=(2, 3, 2)).astype("float32")
    q_t, k_t, v_t = (tf.constant(x) for x in (q, k, v))
    with tf.GradientTape() as tape:
        tape.watch([q_t, k_t, v_t])
        selected, indices = layer(q_t, v_t, key=k_t)
        total = tf.reduce_sum(selected * upstream)
    grad_q, grad_k, grad_v, grad_kernel = tape.gradient(
        total, [q_t, k_t, v_t, layer.score_layer.kernel]
    )
    for g in (grad_q, grad_k, grad_kernel):
        assert g is None or not np.any(_np(g))
    assert grad_kernel is None  # TensorFlow says so outright
    # Only the selected values get a gradient: the upstream gradient of their queries.
    expected_v = np.zeros(v.shape)
    indices = _np(indices)
    for b in range(2):
        for i in range(3):
            expected_v[b, indices[b, i]] += upstream[b, i]
    np.testing.assert_allclose(_np(grad_v), expected_v, rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("mode", ["argmax", "sample"])
def test_straight_through_gradient_is_the_soft_attention_gradient(mode, rng):
    case, layer, weights, (q, k, v) = _layer_and_data(
        "bilinear", rng, (2, 3, 4, 3, 2, 2), dtype="float64", straight_through=True, mode=mode
    )
    kwargs, keep = layers.random_masks("value_mask", rng, 2, 3, 4)
    keep[:, :, 0] = True
    kwargs["value_mask"][:, 0] = True
    upstream = rng.normal(size=(2, 3, 2))

    def soft_loss(q_, k_, w_):
        return float(np.sum(ref.attend(_soft(case, w_, q_, k_, keep), v) * upstream))

    q_t, k_t, v_t = (tf.constant(x) for x in (q, k, v))
    with tf.GradientTape() as tape:
        tape.watch([q_t, k_t, v_t])
        selected, indices = layer(q_t, v_t, key=k_t, **kwargs)
        total = tf.reduce_sum(selected * upstream)
    grad_q, grad_k, grad_v, grad_kernel = tape.gradient(
        total, [q_t, k_t, v_t, layer.score_layer.kernel]
    )
    # Forward: still the hard selection.
    indices = _np(indices)
    np.testing.assert_array_equal(_np(selected), np.take_along_axis(v, indices[..., None], 1))
    assert np.all(np.take_along_axis(keep, indices[..., None], -1))
    # Backward: the gradient of Σ α_j v_j, checked against finite differences in NumPy.
    expected = [
        layers.numeric_gradient(lambda x: soft_loss(x, k, weights), q),
        layers.numeric_gradient(lambda x: soft_loss(q, x, weights), k),
        layers.numeric_gradient(
            lambda x: soft_loss(q, k, {**weights, "kernel": x}), weights["kernel"]
        ),
    ]
    for g, e in zip((grad_q, grad_k, grad_kernel), expected, strict=True):
        assert np.any(e != 0)
        np.testing.assert_allclose(_np(g), e, rtol=1e-6, atol=1e-8)
    # The values see the forward selection: the one-hot rows.
    one_hot = np.eye(4)[indices]
    np.testing.assert_allclose(_np(grad_v), np.einsum("bij,bid->bjd", one_hot, upstream))


def test_fully_masked_rows_select_nothing_and_have_finite_gradients(rng):
    _, layer, _, (q, k, v) = _layer_and_data(
        "additive", rng, (2, 3, 4, 2, 2, 3), straight_through=True
    )
    key_lengths = np.array([0, 2], "int32")
    query_mask = np.array([[True, True, True], [True, False, True]])
    q_t, k_t, v_t = (tf.constant(x) for x in (q, k, v))
    with tf.GradientTape() as tape:
        tape.watch([q_t, k_t, v_t])
        selected, indices, alpha = layer(
            q_t,
            v_t,
            key=k_t,
            key_lengths=key_lengths,
            query_mask=query_mask,
            return_attention_scores=True,
        )
        total = tf.reduce_sum(selected**2) + tf.reduce_sum(alpha**2)
    grads = tape.gradient(total, [q_t, k_t, v_t, *layer.trainable_weights])
    selected, indices, alpha = _np(selected), _np(indices), _np(alpha)
    np.testing.assert_array_equal(indices[0], -1)
    np.testing.assert_array_equal(indices[1, 1], -1)
    assert np.all((indices[1, [0, 2]] >= 0) & (indices[1, [0, 2]] < 2))
    np.testing.assert_array_equal(selected[0], 0.0)
    np.testing.assert_array_equal(selected[1, 1], 0.0)
    np.testing.assert_array_equal(alpha[0], 0.0)
    for g in grads:
        assert g is not None and np.all(np.isfinite(_np(g)))
    np.testing.assert_array_equal(_np(grads[2])[0], 0.0)


# ------------------------------------------------------------------------------ errors
@pytest.mark.parametrize(
    ("kwargs", "fragment"),
    [
        ({"mode": "max"}, "mode='max'"),
        ({"mode": None}, "mode=None"),
        ({"straight_through": 1}, "straight_through=1"),
        ({"seed": 1.5}, "seed=1.5"),
        ({"seed": True}, "seed=True"),
        ({"score": "softmax"}, "score='softmax'"),
        ({"score": "additive"}, "score='additive'"),
    ],
)
def test_constructor_errors(kwargs, fragment):
    with pytest.raises(ValueError, match="Received:") as info:
        HardAttention(**kwargs)
    assert fragment in str(info.value)


@pytest.mark.parametrize(
    ("shapes", "fragment"),
    [
        (((2, 3, 4), (2, 5, 4), (2, 6, 4)), "key_shape=(2, 6, 4)"),
        (((2, 3, 4), (2, 5), None), "value_shape=(2, 5)"),
    ],
)
def test_build_errors(shapes, fragment):
    with pytest.raises(ValueError, match="Received:") as info:
        HardAttention("dot").build(*shapes)
    assert fragment in str(info.value)
