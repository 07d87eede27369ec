"""attnkit.attention.masking against NumPy."""

import keras
import numpy as np
import pytest
import tensorflow as tf

from attnkit.attention import masking
from grader.reference import attention as ref
from tests.support import layers


def _np(x):
    return keras.ops.convert_to_numpy(x)


# ------------------------------------------------------------------------ mask helpers
@pytest.mark.parametrize(
    ("lengths", "maxlen"), [([0, 3, 5], 5), ([1], 1), ([2, 7, 0, 4], 7), ([6, 1], 4)]
)
def test_length_mask(lengths, maxlen):
    got = _np(masking.length_mask(np.array(lengths), maxlen))
    assert got.dtype == bool
    np.testing.assert_array_equal(got, ref.length_mask(lengths, maxlen))


@pytest.mark.parametrize(("tq", "tk"), [(1, 1), (3, 3), (2, 5), (5, 2)])
def test_causal_mask(tq, tk):
    got = _np(masking.causal_mask(tq, tk))
    assert got.dtype == bool
    np.testing.assert_array_equal(got, ref.causal_mask(tq, tk))


def test_causal_mask_matches_keras_multi_head_attention():
    # keras.layers.MultiHeadAttention(use_causal_mask=True) is top-left aligned too.
    mha = keras.layers.MultiHeadAttention(num_heads=1, key_dim=2)
    q = np.ones((1, 3, 2), "float32")
    v = np.ones((1, 5, 2), "float32")
    _, scores = mha(q, v, use_causal_mask=True, return_attention_scores=True)
    np.testing.assert_array_equal(_np(scores)[0, 0] > 0, _np(masking.causal_mask(3, 5)))


def test_combine_masks(rng):
    a = rng.random((2, 3, 1)) > 0.3
    b = rng.random((2, 1, 4)) > 0.3
    c = rng.random((3, 4)) > 0.3
    np.testing.assert_array_equal(_np(masking.combine_masks(a, None, b, c)), a & b & c)
    np.testing.assert_array_equal(_np(masking.combine_masks(None, c)), c)
    # 0/1 masks are read as booleans.
    np.testing.assert_array_equal(_np(masking.combine_masks(c.astype("int32"))), c)
    assert masking.combine_masks() is None
    assert masking.combine_masks(None, None) is None


MASK_KINDS = [
    "query_mask",
    "key_mask",
    "key_lengths",
    "attention_mask_3d",
    "attention_mask_2d",
    "causal",
    "all",
]


def _mask_inputs(kind, rng, b, tq, tk):
    """Keyword arguments of `attention_mask` and the (B, Tq, Tk) mask NumPy expects."""
    query_mask = rng.random((b, tq)) > 0.3
    key_mask = rng.random((b, tk)) > 0.3
    lengths = rng.integers(0, tk + 1, size=b)
    mask3 = rng.random((b, tq, tk)) > 0.3
    mask2 = rng.random((tq, tk)) > 0.3
    expected = np.ones((b, tq, tk), bool)
    kwargs = {}
    if kind in ("query_mask", "all"):
        kwargs["query_mask"] = query_mask
        expected &= query_mask[:, :, None]
    if kind in ("key_mask", "all"):
        kwargs["key_mask"] = key_mask
        expected &= key_mask[:, None, :]
    if kind in ("key_lengths", "all"):
        kwargs["key_lengths"] = lengths
        expected &= ref.length_mask(lengths, tk)[:, None, :]
    if kind in ("attention_mask_3d", "all"):
        kwargs["attention_mask"] = mask3
        expected &= mask3
    if kind == "attention_mask_2d":
        kwargs["attention_mask"] = mask2
        expected &= mask2[None]
    if kind in ("causal", "all"):
        kwargs["use_causal_mask"] = True
        expected &= ref.causal_mask(tq, tk)[None]
    return kwargs, expected


@pytest.mark.parametrize("kind", MASK_KINDS)
@pytest.mark.parametrize(("b", "tq", "tk"), [(1, 1, 1), (3, 4, 6), (2, 5, 3)])
def test_attention_mask(kind, b, tq, tk, rng):
    kwargs, expected = _mask_inputs(kind, rng, b, tq, tk)
    query = np.zeros((b, tq, 2), "float32")
    key = np.zeros((b, tk, 3), "float32")
    got = masking.attention_mask(query, key, **kwargs)
    np.testing.assert_array_equal(np.broadcast_to(_np(got), (b, tq, tk)), expected)


@pytest.mark.parametrize("kind", MASK_KINDS)
@pytest.mark.parametrize("block", [1, 2, 4])
def test_masks_keep_whole_and_by_blocks_of_keys(kind, block, rng):
    """`Masks` holds a call's mask arguments; its keep-mask of a block of keys is that block's
    columns of the whole one (the blockwise path asks for blocks only)."""
    b, tq, tk = 3, 4, 6
    kwargs, expected = _mask_inputs(kind, rng, b, tq, tk)
    masks = masking.Masks(**kwargs)
    query = np.zeros((b, tq, 2, 5), "float32")  # heads: only (B, T) counts
    key = np.zeros((b, tk, 2, 5), "float32")
    whole = masks.keep(query, key)
    np.testing.assert_array_equal(np.broadcast_to(_np(whole), (b, tq, tk)), expected)
    for start in range(0, tk, block):
        stop = min(start + block, tk)
        part = masks.keep(query, key, start, stop)
        np.testing.assert_array_equal(
            np.broadcast_to(_np(part), (b, tq, stop - start)), expected[..., start:stop]
        )


def test_masks_without_masks_keep_is_none():
    x = np.zeros((2, 3, 4), "float32")
    assert masking.Masks().keep(x, x) is None
    assert masking.Masks().keep(x, x, 1, 2) is None


def test_attention_mask_without_masks_is_none():
    x = np.zeros((2, 3, 4), "float32")
    assert masking.attention_mask(x, x) is None


@pytest.mark.parametrize(
    ("kwargs", "name"),
    [
        ({"key_lengths": np.array([[1, 2]])}, "key_lengths"),
        ({"key_lengths": np.array(2)}, "key_lengths"),
        ({"query_mask": np.ones((2, 3, 1), bool)}, "query_mask"),
        ({"key_mask": np.ones((2,), bool)}, "key_mask"),
        ({"attention_mask": np.ones((2, 1, 3, 3), bool)}, "attention_mask"),
    ],
)
def test_attention_mask_rank_errors(kwargs, name):
    x = np.zeros((2, 3, 4), "float32")
    with pytest.raises(ValueError, match="Received:") as info:
        masking.attention_mask(x, x, **kwargs)
    assert name in str(info.value)


def test_length_mask_rank_error():
    with pytest.raises(ValueError, match=r"`lengths`.*Received:"):
        masking.length_mask(np.ones((2, 1), "int32"), 3)


# ---------------------------------------------------------------------- masked_softmax
def _random_mask_with_empty_rows(rng, shape):
    mask = rng.random(shape) > 0.4
    mask[0, 0] = False  # one fully masked row
    if shape[1] > 1:
        mask[0, 1] = True  # and one fully kept row
    return mask


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("shape", [(1, 1, 1), (2, 3, 5), (3, 4, 2)])
def test_masked_softmax_matches_numpy(dtype, shape, rng):
    scores = (3 * rng.normal(size=shape)).astype(dtype)
    mask = _random_mask_with_empty_rows(rng, shape)
    got = masking.masked_softmax(scores, mask)
    assert keras.backend.standardize_dtype(got.dtype) == dtype
    got = _np(got)
    np.testing.assert_allclose(got, ref.masked_softmax(scores, mask), rtol=1e-6, atol=1e-7)
    assert np.all(got[~mask] == 0.0)  # exactly zero, not merely small
    np.testing.assert_array_equal(got[0, 0], np.zeros(shape[-1]))


def test_masked_softmax_without_mask_and_other_axis(rng):
    scores = rng.normal(size=(2, 3, 4))
    np.testing.assert_allclose(_np(masking.masked_softmax(scores)), ref.masked_softmax(scores))
    mask = rng.random((2, 3, 4)) > 0.5
    got = _np(masking.masked_softmax(scores, mask, axis=1))
    expected = np.swapaxes(
        ref.masked_softmax(np.swapaxes(scores, 1, 2), np.swapaxes(mask, 1, 2)), 1, 2
    )
    np.testing.assert_allclose(got, expected)


def test_masked_softmax_broadcasts_key_mask(rng):
    scores = rng.normal(size=(2, 3, 4))
    key_mask = np.array([[True, False, True, True], [False, False, False, False]])
    got = _np(masking.masked_softmax(scores, key_mask[:, None, :]))
    np.testing.assert_allclose(got, ref.masked_softmax(scores, key_mask[:, None, :]))
    np.testing.assert_array_equal(got[1], np.zeros((3, 4)))


def test_masked_softmax_gradient_matches_numpy_and_is_finite_in_empty_rows(rng):
    scores = rng.normal(size=(2, 3, 4))
    mask = _random_mask_with_empty_rows(rng, (2, 3, 4))
    upstream = rng.normal(size=(2, 3, 4))
    s = tf.constant(scores)
    with tf.GradientTape() as tape:
        tape.watch(s)
        total = tf.reduce_sum(masking.masked_softmax(s, mask) * upstream)
    got = tape.gradient(total, s).numpy()
    expected = layers.numeric_gradient(
        lambda x: float(np.sum(ref.masked_softmax(x, mask) * upstream)), scores
    )
    assert np.all(np.isfinite(got))
    np.testing.assert_allclose(got, expected, rtol=1e-6, atol=1e-8)
    assert np.all(got[~mask] == 0.0)


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_masked_softmax_low_precision(dtype, rng):
    # Scores near the float16 limit: a float16 softmax or a -1e9 fill would overflow.
    scores = rng.uniform(-6e4, 6e4, size=(2, 3, 5))
    mask = _random_mask_with_empty_rows(rng, (2, 3, 5))
    s = tf.cast(tf.constant(scores), dtype)
    with tf.GradientTape() as tape:
        tape.watch(s)
        probs = masking.masked_softmax(s, mask)
        total = tf.reduce_sum(tf.cast(probs, "float32"))
    grad = tape.gradient(total, s)
    assert keras.backend.standardize_dtype(probs.dtype) == dtype
    got = _np(tf.cast(probs, "float64"))
    assert np.all(np.isfinite(got))
    assert np.all(np.isfinite(_np(tf.cast(grad, "float64"))))
    assert np.all(got[~mask] == 0.0)
    expected = ref.masked_softmax(_np(tf.cast(s, "float64")), mask)
    np.testing.assert_allclose(got, expected, atol=1e-2)


def test_large_negative_number_fits_the_dtype():
    assert masking.large_negative_number("float16") > np.finfo(np.float16).min
    assert masking.large_negative_number("float32") <= -1e9


def test_masked_softmax_never_produces_inf_or_nan_inside(rng):
    # The fill value is finite: no intermediate of the forward or backward pass is inf or NaN,
    # even in a fully masked row (a -inf fill gives -inf - (-inf) = NaN there).
    scores = tf.constant(rng.normal(size=(2, 3, 4)))
    mask = _random_mask_with_empty_rows(rng, (2, 3, 4))
    tf.debugging.enable_check_numerics()
    try:
        with tf.GradientTape() as tape:
            tape.watch(scores)
            total = tf.reduce_sum(masking.masked_softmax(scores, mask) ** 2)
        tape.gradient(total, scores)
    finally:
        tf.debugging.disable_check_numerics()


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_masked_softmax_exponentiates_in_float32(dtype):
    graph = (
        tf.function(masking.masked_softmax)
        .get_concrete_function(tf.TensorSpec((2, 3), dtype), tf.TensorSpec((2, 3), tf.bool))
        .graph
    )
    exps = [op for op in graph.get_operations() if op.type in ("Exp", "Softmax")]
    assert exps
    assert all(op.outputs[0].dtype == tf.float32 for op in exps)
    assert graph.outputs[0].dtype == tf.as_dtype(dtype)
