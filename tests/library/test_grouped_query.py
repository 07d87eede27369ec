"""GroupedQueryAttention (Ainslie et al. 2023) against float64 NumPy that repeats the key/value
heads, against attnkit.MultiHeadAttention with the same weights, and its key/value cache."""

import keras
import numpy as np
import pytest

from attnkit import GroupedQueryAttention, MultiHeadAttention
from tests.support import layers
from tests.support import transformer_reference as ref


def _np(x):
    return keras.ops.convert_to_numpy(x)


def _gqa(rng, heads, kv_heads, head_dim=3, d=5, dtype="float64", **kwargs):
    layer = GroupedQueryAttention(heads, kv_heads, head_dim, dtype=dtype, **kwargs)
    layer.build((None, None, d), (None, None, d))
    layers.random_weights(layer, rng)
    return layer, ref.gqa_weights(layer)


@pytest.mark.parametrize(("heads", "kv_heads"), [(4, 4), (4, 2), (6, 3), (4, 1)])
def test_matches_numpy_with_repeated_key_value_heads(heads, kv_heads, rng):
    layer, w = _gqa(rng, heads, kv_heads)
    q, kv = rng.normal(size=(2, 3, 5)), rng.normal(size=(2, 4, 5))
    out, weights = layer(q, kv, return_attention_scores=True)
    expected_out, expected_weights = ref.grouped_query_attention(q, kv, kv, w)
    np.testing.assert_allclose(_np(weights), expected_weights, atol=1e-12)
    np.testing.assert_allclose(_np(out), expected_out, atol=1e-10)


def test_as_many_key_value_heads_as_query_heads_is_multi_head_attention(rng):
    q, kv = rng.normal(size=(2, 3, 6)), rng.normal(size=(2, 4, 6))
    mha = MultiHeadAttention(3, 2, dtype="float64")
    mha(q, kv)
    layers.random_weights(mha, rng)
    gqa = GroupedQueryAttention(3, 3, 2, dtype="float64")
    gqa(q, kv)
    gqa.set_weights(mha.get_weights())
    np.testing.assert_allclose(
        _np(gqa(q, kv, use_causal_mask=True)), _np(mha(q, kv, use_causal_mask=True)), atol=1e-12
    )


def test_one_key_value_head_is_multi_query_attention(rng):
    """Every query head reads the same keys and values: swapping the query heads' projections
    permutes the heads' weights, nothing else."""
    layer, w = _gqa(rng, 3, 1)
    q, kv = rng.normal(size=(1, 2, 5)), rng.normal(size=(1, 4, 5))
    _, weights = layer(q, kv, return_attention_scores=True)
    order = [2, 0, 1]
    layer.query_kernel.assign(w["query_kernel"][:, order])
    layer.query_bias.assign(w["query_bias"][order])
    _, permuted = layer(q, kv, return_attention_scores=True)
    np.testing.assert_allclose(_np(permuted), _np(weights)[:, order], atol=1e-12)


@pytest.mark.parametrize("kind", layers.MASK_KINDS)
def test_masks_match_numpy(kind, rng):
    layer, w = _gqa(rng, 4, 2)
    q, kv = rng.normal(size=(3, 4, 5)), rng.normal(size=(3, 6, 5))
    kwargs, keep = layers.random_masks(kind, rng, 3, 4, 6)
    out, weights = layer(q, kv, return_attention_scores=True, **kwargs)
    expected_out, expected_weights = ref.grouped_query_attention(q, kv, kv, w, keep[:, None])
    np.testing.assert_allclose(_np(weights), expected_weights, atol=1e-12)
    np.testing.assert_allclose(_np(out), expected_out, atol=1e-10)


@pytest.mark.parametrize("mask_shape", [(2, 4, 3, 5), (1, 4, 3, 5), (2, 1, 3, 5)])
def test_per_head_masks(mask_shape, rng):
    layer, w = _gqa(rng, 4, 2)
    q, kv = rng.normal(size=(2, 3, 5)), rng.normal(size=(2, 5, 5))
    mask = rng.random(mask_shape) > 0.4
    out, weights = layer(q, kv, attention_mask=mask, return_attention_scores=True)
    expected_out, expected_weights = ref.grouped_query_attention(q, kv, kv, w, mask)
    np.testing.assert_allclose(_np(weights), expected_weights, atol=1e-12)
    np.testing.assert_allclose(_np(out), expected_out, atol=1e-10)


@pytest.mark.parametrize("mask_shape", [(2, 3, 3, 5), (5,), (1, 2, 4, 3, 5)])
def test_masks_of_other_shapes_are_refused_by_name(mask_shape, rng):
    layer, _ = _gqa(rng, 4, 2)
    q, kv = rng.normal(size=(2, 3, 5)), rng.normal(size=(2, 5, 5))
    with pytest.raises(ValueError, match=r"\(batch_size, num_heads, Tq, Tk\).*Received"):
        layer(q, kv, attention_mask=np.ones(mask_shape, bool))


@pytest.mark.parametrize("causal", [False, True])
def test_sliding_window(causal, rng):
    layer, w = _gqa(rng, 2, 1, sliding_window=2)
    x = rng.normal(size=(2, 5, 5))
    i, j = np.arange(5)[:, None], np.arange(5)[None, :]
    keep = np.abs(i - j) < 2
    if causal:
        keep = keep & (j <= i)
    out, weights = layer(x, x, use_causal_mask=causal, return_attention_scores=True)
    expected_out, expected_weights = ref.grouped_query_attention(x, x, x, w, keep)
    np.testing.assert_allclose(_np(weights), expected_weights, atol=1e-12)
    np.testing.assert_allclose(_np(out), expected_out, atol=1e-10)


@pytest.mark.parametrize("pairing", ["halves", "adjacent"])
def test_rotary_and_alibi_positions(pairing, rng):
    layer, w = _gqa(rng, 4, 2, head_dim=4, use_rotary=True, rotary_pairing=pairing, use_alibi=True)
    x = rng.normal(size=(2, 5, 5))
    out = layer(x, x, use_causal_mask=True)
    expected, _ = ref.grouped_query_attention(
        x,
        x,
        x,
        w,
        ref.causal(5, 5),
        rotary=(10000.0, pairing),
        query_positions=np.arange(5),
        key_positions=np.arange(5),
        alibi_start=0,
    )
    np.testing.assert_allclose(_np(out), expected, atol=1e-10)


@pytest.mark.parametrize(
    "options", [{}, {"use_rotary": True, "sliding_window": 3}, {"use_alibi": True}]
)
@pytest.mark.parametrize("step", [1, 2])
def test_cached_steps_equal_the_full_causal_pass(options, step, rng):
    layer, _ = _gqa(rng, 4, 2, head_dim=4, **options)
    x = rng.normal(size=(2, 6, 5))
    full = _np(layer(x, x, use_causal_mask=True))
    cache = layer.empty_cache(2, 6)
    assert tuple(cache.shape) == (2, 2, 6, 2, 4)
    outputs = []
    for start in range(0, 6, step):
        chunk = x[:, start : start + step]
        out, cache = layer(
            chunk, chunk, use_causal_mask=True, cache=cache, cache_update_index=start
        )
        outputs.append(_np(out))
    np.testing.assert_allclose(np.concatenate(outputs, axis=1), full, atol=1e-10)
    # the cache holds every position's projected keys, rotated when the layer rotates them
    keys = np.einsum("btd,dhk->bthk", x, ref.as64(layer.key_kernel)) + ref.as64(layer.key_bias)
    if options.get("use_rotary"):
        keys = ref.rotate(keys, np.arange(6))
    np.testing.assert_allclose(_np(cache)[:, 0], keys, atol=1e-12)
    if not options:
        # read as it is (cross-attention's use), the cache gives the last query all the keys
        out, _ = layer(x[:, -1:], None, cache=cache)
        np.testing.assert_allclose(_np(out), full[:, -1:], atol=1e-10)


def test_cached_decoding_compiles(rng):
    layer, _ = _gqa(rng, 2, 1, head_dim=2, dtype="float32", use_rotary=True)
    x = rng.normal(size=(1, 4, 5)).astype("float32")
    full = _np(layer(x, x, use_causal_mask=True))
    import tensorflow as tf

    @tf.function(jit_compile=True)
    def step(token, cache, index):
        return layer(token, token, use_causal_mask=True, cache=cache, cache_update_index=index)

    cache = layer.empty_cache(1, 4)
    outs = []
    for index in range(4):
        out, cache = step(x[:, index : index + 1], cache, tf.constant(index))
        outs.append(_np(out))
    np.testing.assert_allclose(np.concatenate(outs, 1), full, atol=1e-5)


@pytest.mark.parametrize(
    ("kwargs", "fragment"),
    [
        ({"num_query_heads": 0}, "num_query_heads=0"),
        ({"num_key_value_heads": 3}, "num_key_value_heads=3"),
        ({"head_dim": 2.5}, "head_dim=2.5"),
        ({"sliding_window": 0}, "sliding_window=0"),
        ({"dropout": 1.0}, "dropout=1.0"),
        ({"rotary_pairing": "odd"}, "rotary_pairing='odd'"),
        ({"use_alibi": 1}, "use_alibi=1"),
    ],
)
def test_constructor_errors(kwargs, fragment):
    arguments = {"num_query_heads": 4, "num_key_value_heads": 2, "head_dim": 2} | kwargs
    with pytest.raises(ValueError, match=fragment):
        GroupedQueryAttention(**arguments)


def test_rotary_needs_an_even_head_dim():
    with pytest.raises(ValueError, match="head_dim=3"):
        GroupedQueryAttention(2, 1, 3, use_rotary=True)(np.zeros((1, 2, 4)), np.zeros((1, 2, 4)))
