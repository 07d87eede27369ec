"""SinusoidalPositionEncoding and LearnedPositionEmbedding (NNDL 8.3; Vaswani 2017)."""

import keras
import numpy as np
import pytest
import tensorflow as tf

from attnkit.attention import SelfAttention
from attnkit.position import LearnedPositionEmbedding, SinusoidalPositionEncoding
from grader.reference import heads as hr
from tests.support import layers


def _np(x):
    return keras.ops.convert_to_numpy(x)


# (batch, T, d): d = 1, odd d, T = 1, batch 1.
SHAPES = [(1, 1, 1), (2, 7, 4), (3, 6, 5), (1, 50, 8), (2, 3, 1)]


@pytest.mark.parametrize("max_wavelength", [10000.0, 100.0])
@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: "x".join(map(str, s)))
def test_sinusoidal_matches_the_formula(shape, max_wavelength, rng):
    x = rng.normal(size=shape).astype("float32")
    out = SinusoidalPositionEncoding(max_wavelength=max_wavelength)(x)
    table = hr.sinusoidal_table(shape[1], shape[2], max_wavelength)
    np.testing.assert_allclose(_np(out), x + table[None], rtol=1e-5, atol=2e-5)


def test_sinusoidal_first_rows_by_hand():
    out = _np(SinusoidalPositionEncoding()(np.zeros((1, 2, 3), "float32")))[0]
    # pos 0: sin 0, cos 0, sin 0; pos 1: sin(1), cos(1), sin(1 / 10000^(2/3)) (odd d: a sine).
    expected = [[0.0, 1.0, 0.0], [np.sin(1.0), np.cos(1.0), np.sin(1.0 / 10000 ** (2 / 3))]]
    np.testing.assert_allclose(out, expected, rtol=1e-6, atol=1e-7)


def test_learned_adds_the_first_rows_of_its_table(rng):
    layer = LearnedPositionEmbedding(6)
    layer.build((None, None, 3))
    table = layers.random_weights(layer, rng)["embeddings"]
    for t in (1, 4, 6):
        x = rng.normal(size=(2, t, 3)).astype("float32")
        np.testing.assert_allclose(_np(layer(x)), x + table[:t][None], rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize(
    "layer",
    [SinusoidalPositionEncoding(max_length=4), LearnedPositionEmbedding(4)],
    ids=["sinusoidal", "learned"],
)
def test_sequences_longer_than_max_length_raise(layer, rng):
    layer(rng.normal(size=(2, 4, 3)).astype("float32"))  # T = max_length is fine
    with pytest.raises(ValueError, match="max_length=4") as info:
        layer(rng.normal(size=(2, 5, 3)).astype("float32"))
    assert "Received: input_shape=(2, 5, 3)" in str(info.value)
    with pytest.raises(ValueError, match="max_length=4"):
        keras.Model(inp := keras.Input((9, 3)), layer(inp))


@pytest.mark.parametrize(
    "make", [SinusoidalPositionEncoding, lambda: LearnedPositionEmbedding(10)], ids=["sin", "lrn"]
)
def test_lengths_known_only_at_run_time(make, rng):
    layer = make()
    layer.build((None, None, 3))
    table = (
        hr.sinusoidal_table(10, 3)
        if isinstance(layer, SinusoidalPositionEncoding)
        else _np(layer.embeddings)
    )

    @tf.function(input_signature=[tf.TensorSpec((None, None, 3))])
    def run(x):
        return layer(x)

    for t in (2, 7):
        x = rng.normal(size=(2, t, 3)).astype("float32")
        np.testing.assert_allclose(_np(run(x)), x + table[:t], rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize(
    "make", [SinusoidalPositionEncoding, lambda: LearnedPositionEmbedding(5)], ids=["sin", "lrn"]
)
def test_the_padding_mask_passes_through(make):
    tokens = np.array([[3, 5, 0, 0, 0], [4, 1, 7, 2, 6]])
    out = make()(keras.layers.Embedding(10, 4, mask_zero=True)(tokens))
    np.testing.assert_array_equal(_np(out._keras_mask), tokens != 0)


def test_positions_break_the_permutation_symmetry_of_self_attention(rng):
    """NNDL 8.3: α_ij depends on q_i and k_j only, so self-attention ignores the order."""
    attention = SelfAttention(3)
    x = rng.normal(size=(2, 6, 4)).astype("float32")
    perm = rng.permutation(6)
    np.testing.assert_allclose(
        _np(attention(x[:, perm])), _np(attention(x))[:, perm], rtol=1e-5, atol=1e-6
    )
    encode = SinusoidalPositionEncoding()
    with_positions = _np(attention(encode(x[:, perm])))
    assert not np.allclose(with_positions, _np(attention(encode(x)))[:, perm], atol=1e-3)


def test_long_sequences_under_mixed_precision(mixed_policy, rng):
    t, d = 3000, 16
    x = rng.normal(size=(1, t, d)).astype("float32")
    for layer in (SinusoidalPositionEncoding(), LearnedPositionEmbedding(t)):
        out = layer(x)
        assert keras.backend.standardize_dtype(out.dtype) == mixed_policy.split("_")[1]
        out = _np(tf.cast(out, "float64"))
        assert np.all(np.isfinite(out))
        if isinstance(layer, SinusoidalPositionEncoding):
            expected = x + hr.sinusoidal_table(t, d)[None]
        else:
            assert keras.backend.standardize_dtype(layer.embeddings.dtype) == "float32"
            expected = x + _np(layer.embeddings)[None]
        tol = 1e-2 if mixed_policy == "mixed_float16" else 5e-2
        np.testing.assert_allclose(out, expected, atol=tol)


# ------------------------------------------------------------------------------ errors
@pytest.mark.parametrize(
    ("make", "fragment"),
    [
        (lambda: SinusoidalPositionEncoding(max_length=0), "max_length=0"),
        (lambda: SinusoidalPositionEncoding(max_length="5"), "max_length='5'"),
        (lambda: SinusoidalPositionEncoding(max_wavelength=0), "max_wavelength=0"),
        (lambda: SinusoidalPositionEncoding(max_wavelength="big"), "max_wavelength='big'"),
        (lambda: LearnedPositionEmbedding(0), "max_length=0"),
        (lambda: LearnedPositionEmbedding(None), "max_length=None"),
        (lambda: LearnedPositionEmbedding(True), "max_length=True"),
        (
            lambda: LearnedPositionEmbedding(4, embeddings_initializer="nope"),
            "embeddings_initializer='nope'",
        ),
    ],
)
def test_constructor_errors(make, fragment):
    with pytest.raises(ValueError, match="Received:") as info:
        make()
    assert fragment in str(info.value)


@pytest.mark.parametrize(
    "layer", [SinusoidalPositionEncoding(), LearnedPositionEmbedding(4)], ids=["sin", "lrn"]
)
def test_build_errors(layer):
    with pytest.raises(ValueError, match=r"Received: input_shape=\(2, 3\)"):
        layer.build((2, 3))
