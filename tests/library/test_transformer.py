"""TransformerEncoderBlock and TransformerDecoderBlock (Vaswani et al. 2017) against a float64
NumPy block written by hand from the layers' weights: post-norm, pre-norm and the RMSNorm +
SwiGLU block, padding, causal and per-head masks, and cached decoding."""

import keras
import numpy as np
import pytest

from attnkit import LayerNorm, RMSNorm, TransformerDecoderBlock, TransformerEncoderBlock
from tests.support import layers
from tests.support import transformer_reference as ref

VARIANTS = {
    "post-ln-relu": {},
    "pre-ln-gelu": {"norm_first": True, "activation": "gelu"},
    "modern": {
        "norm_first": True,
        "normalization": "rms",
        "activation": "swiglu",
        "use_bias": False,
        "num_key_value_heads": 1,
        "use_rotary": True,
    },
    "post-rms-window": {"normalization": "rms", "sliding_window": 2},
    "adjacent-rotary": {"use_rotary": True, "rotary_pairing": "adjacent", "head_dim": 4},
}


def _np(x):
    return keras.ops.convert_to_numpy(x)


def _block(cls, rng, *shapes, **options):
    block = cls(2, 7, dtype="float64", **options)
    block.build(*shapes)
    layers.random_weights(block, rng, scale=0.4)
    return block


@pytest.mark.parametrize("variant", VARIANTS)
def test_encoder_block_matches_numpy(variant, rng):
    block = _block(TransformerEncoderBlock, rng, (2, 5, 4), **VARIANTS[variant])
    x = rng.normal(size=(2, 5, 4))
    padding = np.array([[True] * 5, [True, True, True, False, False]])
    out = block(x, padding_mask=padding)
    assert keras.backend.standardize_dtype(out.dtype) == "float64"
    np.testing.assert_allclose(_np(out), ref.encoder_block(x, block, padding), atol=1e-10)


def test_encoder_block_reads_the_keras_mask_and_passes_it_on(rng):
    block = _block(TransformerEncoderBlock, rng, (2, 4, 4))
    tokens = np.array([[3, 1, 2, 0], [5, 0, 0, 0]])
    embedding = keras.layers.Embedding(6, 4, mask_zero=True, dtype="float64")
    x = embedding(tokens)
    out = block(x)
    np.testing.assert_allclose(_np(out), ref.encoder_block(_np(x), block, tokens != 0), atol=1e-10)
    np.testing.assert_array_equal(_np(out._keras_mask), tokens != 0)


@pytest.mark.parametrize("mask_shape", [(5, 5), (2, 5, 5), (2, 2, 5, 5)])
def test_encoder_block_takes_masks_of_every_rank(mask_shape, rng):
    block = _block(TransformerEncoderBlock, rng, (2, 5, 4), norm_first=True)
    x = rng.normal(size=(2, 5, 4))
    mask = rng.random(mask_shape) > 0.3
    expected = ref.encoder_block(x, block, attention_mask=mask)
    np.testing.assert_allclose(_np(block(x, attention_mask=mask)), expected, atol=1e-10)
    with pytest.raises(ValueError, match=r"Received: attention_mask with shape \(2, 3, 5, 5\)"):
        block(x, attention_mask=np.ones((2, 3, 5, 5), bool))


@pytest.mark.parametrize("variant", VARIANTS)
def test_decoder_block_matches_numpy(variant, rng):
    block = _block(TransformerDecoderBlock, rng, (2, 4, 4), (2, 3, 6), **VARIANTS[variant])
    x, encoder = rng.normal(size=(2, 4, 4)), rng.normal(size=(2, 3, 6))
    decoder_padding = np.array([[True] * 4, [True, True, True, False]])
    encoder_padding = np.array([[True, False, True], [True, True, True]])
    out = block(
        x,
        encoder,
        decoder_padding_mask=decoder_padding,
        encoder_padding_mask=encoder_padding,
    )
    expected = ref.decoder_block(x, block, encoder, decoder_padding, encoder_padding)
    np.testing.assert_allclose(_np(out), expected, atol=1e-10)


def test_decoder_only_block_is_causal(rng):
    """It matches NumPy, and changing a later token leaves the earlier outputs unchanged."""
    block = _block(TransformerDecoderBlock, rng, (1, 5, 4), **VARIANTS["modern"])
    x = rng.normal(size=(1, 5, 4))
    out = _np(block(x))
    np.testing.assert_allclose(out, ref.decoder_block(x, block), atol=1e-10)
    changed = x.copy()
    changed[:, 3:] += 1.0
    out_changed = _np(block(changed))
    np.testing.assert_allclose(out_changed[:, :3], out[:, :3], atol=1e-12)
    assert np.abs(out_changed[:, 3:] - out[:, 3:]).max() > 1e-3


@pytest.mark.parametrize("variant", ["post-ln-relu", "modern", "post-rms-window"])
def test_cached_decoding_equals_the_full_causal_pass(variant, rng):
    block = _block(TransformerDecoderBlock, rng, (2, 5, 4), (2, 3, 6), **VARIANTS[variant])
    x, encoder = rng.normal(size=(2, 5, 4)), rng.normal(size=(2, 3, 6))
    full = _np(block(x, encoder))
    cache = block.empty_cache(2, 5)
    steps = []
    for index in range(5):
        out, cache = block(
            x[:, index : index + 1],
            encoder,
            self_attention_cache=cache,
            self_attention_cache_update_index=index,
        )
        steps.append(_np(out))
    np.testing.assert_allclose(np.concatenate(steps, axis=1), full, atol=1e-10)


@pytest.mark.parametrize("cls", [LayerNorm, RMSNorm])
def test_normalizations_match_numpy(cls, rng):
    layer = cls(epsilon=1e-3, dtype="float64")
    x = rng.normal(size=(2, 3, 4)) * 3 + 1
    layer.build(x.shape)
    layers.random_weights(layer, rng)
    np.testing.assert_allclose(_np(layer(x)), ref.norm(x, layer), atol=1e-12)


def test_layer_norm_takes_keras_layer_normalization_weights(rng):
    theirs = keras.layers.LayerNormalization(epsilon=1e-5)
    x = rng.normal(size=(2, 3, 4)).astype("float32")
    theirs(x)
    layers.random_weights(theirs, rng)
    ours = LayerNorm()
    ours(x)
    ours.set_weights(theirs.get_weights())
    np.testing.assert_allclose(_np(ours(x)), _np(theirs(x)), atol=1e-5)


def _copy_into_keras_hub(ours, theirs):
    pairs = [
        ("self_attention", "_self_attention_layer"),
        ("self_attention_norm", "_self_attention_layer_norm"),
        ("feed_forward_norm", "_feedforward_layer_norm"),
    ]
    if getattr(ours, "cross_attention", None) is not None:
        pairs += [
            ("cross_attention", "_cross_attention_layer"),
            ("cross_attention_norm", "_cross_attention_layer_norm"),
        ]
    for mine, their in pairs:
        getattr(theirs, their).set_weights(getattr(ours, mine).get_weights())
    theirs._feedforward_intermediate_dense.set_weights(ours.feed_forward.inner.get_weights())
    theirs._feedforward_output_dense.set_weights(ours.feed_forward.outer.get_weights())


@pytest.mark.parametrize("norm_first", [False, True])
def test_encoder_matches_keras_hub(norm_first, rng):
    """keras-hub masks padded keys only; the real positions' outputs agree."""
    keras_hub = pytest.importorskip("keras_hub")
    block = _block(TransformerEncoderBlock, rng, (2, 5, 4), norm_first=norm_first)
    theirs = keras_hub.layers.TransformerEncoder(
        7, 2, layer_norm_epsilon=1e-5, normalize_first=norm_first, dtype="float64"
    )
    x = rng.normal(size=(2, 5, 4))
    padding = np.array([[True] * 5, [True, True, True, False, False]])
    theirs(x, padding_mask=padding)
    _copy_into_keras_hub(block, theirs)
    ours, expected = _np(block(x, padding_mask=padding)), _np(theirs(x, padding_mask=padding))
    np.testing.assert_allclose(ours[padding], expected[padding], atol=1e-10)


def test_decoder_and_its_cache_match_keras_hub(rng):
    keras_hub = pytest.importorskip("keras_hub")
    block = _block(TransformerDecoderBlock, rng, (2, 4, 4), (2, 3, 4), norm_first=True)
    theirs = keras_hub.layers.TransformerDecoder(
        7, 2, layer_norm_epsilon=1e-5, normalize_first=True, dtype="float64"
    )
    x, encoder = rng.normal(size=(2, 4, 4)), rng.normal(size=(2, 3, 4))
    theirs(x, encoder)
    _copy_into_keras_hub(block, theirs)
    np.testing.assert_allclose(_np(block(x, encoder)), _np(theirs(x, encoder)), atol=1e-10)
    ours_cache, their_cache = block.empty_cache(2, 4), block.empty_cache(2, 4)
    cross_cache = np.zeros((2, 2, 3, 2, 2))  # keras-hub caches the cross-attention too
    for index in range(4):
        step = x[:, index : index + 1]
        ours, ours_cache = block(
            step, encoder, self_attention_cache=ours_cache, self_attention_cache_update_index=index
        )
        expected, their_cache, cross_cache = theirs(
            step,
            encoder,
            self_attention_cache=their_cache,
            self_attention_cache_update_index=index,
            cross_attention_cache=cross_cache,
            cross_attention_cache_update_index=0,
        )
        np.testing.assert_allclose(_np(ours), _np(expected), atol=1e-10)
    np.testing.assert_allclose(_np(ours_cache), _np(their_cache), atol=1e-10)


def test_dropout_only_in_training(rng):
    block = _block(TransformerEncoderBlock, rng, (2, 5, 4), dropout=0.5, attention_dropout=0.5)
    x = rng.normal(size=(2, 5, 4))
    expected = ref.encoder_block(x, block)
    np.testing.assert_allclose(_np(block(x)), expected, atol=1e-10)
    np.testing.assert_allclose(_np(block(x, training=False)), expected, atol=1e-10)
    assert np.abs(_np(block(x, training=True)) - expected).max() > 1e-2


@pytest.mark.parametrize(
    ("kwargs", "fragment"),
    [
        ({"num_heads": 0}, "num_heads=0"),
        ({"intermediate_dim": -1}, "intermediate_dim=-1"),
        ({"num_key_value_heads": 3}, "num_key_value_heads=3"),
        ({"activation": "tanh"}, "activation='tanh'"),
        ({"normalization": "batch"}, "normalization='batch'"),
        ({"norm_first": "yes"}, "norm_first='yes'"),
        ({"dropout": -0.1}, "dropout=-0.1"),
        ({"epsilon": 0}, "epsilon=0"),
    ],
)
@pytest.mark.parametrize("cls", [TransformerEncoderBlock, TransformerDecoderBlock])
def test_constructor_errors(cls, kwargs, fragment):
    with pytest.raises(ValueError, match=fragment):
        cls(**({"num_heads": 2, "intermediate_dim": 4} | kwargs))


def test_call_errors(rng):
    x = rng.normal(size=(1, 3, 5)).astype("float32")
    with pytest.raises(ValueError, match="multiple of `num_heads`"):
        TransformerEncoderBlock(2, 4)(x)
    decoder = TransformerDecoderBlock(1, 4)
    decoder(x)
    with pytest.raises(ValueError, match="built with cross-attention: False"):
        decoder(x, x)
    with pytest.raises(ValueError, match="self_attention_cache_update_index=None"):
        decoder(x, self_attention_cache=decoder.empty_cache(1, 3))
