"""RotaryEmbedding (RoFormer) and AlibiBias (Press et al. 2022) against float64 NumPy written from
the papers, the offset property of rotary scores, and keras-hub's layers where installed."""

import keras
import numpy as np
import pytest

from attnkit import AlibiBias, RotaryEmbedding
from attnkit.alibi import alibi_slopes
from tests.support import transformer_reference as ref


def _np(x):
    return keras.ops.convert_to_numpy(x)


# ------------------------------------------------------------------ rotary
@pytest.mark.parametrize("pairing", ["halves", "adjacent"])
@pytest.mark.parametrize("rank", [3, 4])
def test_rotary_matches_numpy_in_float64(pairing, rank, rng):
    shape = (2, 5, 6) if rank == 3 else (2, 5, 3, 6)
    x = rng.normal(size=shape)
    layer = RotaryEmbedding(max_wavelength=500.0, pairing=pairing, dtype="float64")
    out = layer(x)
    assert keras.backend.standardize_dtype(out.dtype) == "float64"
    np.testing.assert_allclose(_np(out), ref.rotate(x, np.arange(5), 500.0, pairing), atol=1e-12)


@pytest.mark.parametrize("pairing", ["halves", "adjacent"])
def test_rotary_takes_any_positions_and_a_scaling_factor(pairing, rng):
    x = rng.normal(size=(2, 4, 2, 8))
    positions = np.array([[7, 3, 3, 1000], [0, -2, 5, 11]], "int32")  # per example, any order
    layer = RotaryEmbedding(pairing=pairing, scaling_factor=4.0, dtype="float64")
    expected = ref.rotate(x, positions, 10000.0, pairing, scaling=4.0)
    np.testing.assert_allclose(_np(layer(x, positions=positions)), expected, atol=1e-10)
    # start_index is positions start_index + 0 … T − 1
    np.testing.assert_allclose(
        _np(layer(x, start_index=9)),
        ref.rotate(x, 9 + np.arange(4), 10000.0, pairing, scaling=4.0),
        atol=1e-10,
    )


@pytest.mark.parametrize("pairing", ["halves", "adjacent"])
def test_rotary_score_depends_only_on_the_offset(pairing, rng):
    """(R_m q)·(R_n k) is the same for every (m, n) with the same n − m, and the rotation keeps
    lengths; it differs between offsets (else the property is empty)."""
    layer = RotaryEmbedding(max_wavelength=100.0, pairing=pairing, dtype="float64")
    q, k = rng.normal(size=(1, 1, 8)), rng.normal(size=(1, 1, 8))

    def score(m, n):
        rq = _np(layer(q, positions=np.array([m])))
        rk = _np(layer(k, positions=np.array([n])))
        return float(np.sum(rq * rk))

    for offset in (0, 3, -5):
        scores = [score(m, m + offset) for m in (0, 1, 17, 250)]
        np.testing.assert_allclose(scores, scores[0], rtol=1e-9, atol=1e-12)
    assert abs(score(0, 3) - score(0, 0)) > 1e-3
    np.testing.assert_allclose(
        np.linalg.norm(_np(layer(q, positions=np.array([41])))), np.linalg.norm(q), rtol=1e-12
    )


def test_the_two_pairings_differ(rng):
    x = rng.normal(size=(1, 3, 4))
    halves = _np(RotaryEmbedding(pairing="halves")(x))
    adjacent = _np(RotaryEmbedding(pairing="adjacent")(x))
    assert np.abs(halves - adjacent).max() > 1e-2


def test_rotary_matches_keras_hub(rng):
    keras_hub = pytest.importorskip("keras_hub")
    x = rng.normal(size=(2, 6, 3, 8)).astype("float32")
    theirs = keras_hub.layers.RotaryEmbedding(max_wavelength=1000, scaling_factor=2.0)
    ours = RotaryEmbedding(max_wavelength=1000.0, scaling_factor=2.0, pairing="halves")
    np.testing.assert_allclose(_np(ours(x)), _np(theirs(x)), atol=1e-5)
    np.testing.assert_allclose(
        _np(ours(x, start_index=4)), _np(theirs(x, start_index=4)), atol=1e-5
    )


@pytest.mark.parametrize(
    ("kwargs", "fragment"),
    [
        ({"max_wavelength": 0}, "max_wavelength=0"),
        ({"scaling_factor": -1.0}, "scaling_factor=-1.0"),
        ({"pairing": "pairs"}, "pairing='pairs'"),
    ],
)
def test_rotary_constructor_errors(kwargs, fragment):
    with pytest.raises(ValueError, match=fragment):
        RotaryEmbedding(**kwargs)


def test_rotary_refuses_an_odd_feature_size():
    with pytest.raises(ValueError, match=r"Received: input_shape=\(2, 3, 5\)"):
        RotaryEmbedding()(np.zeros((2, 3, 5), "float32"))


# ------------------------------------------------------------------ ALiBi
def test_alibi_slopes_are_the_papers():
    # Press et al. 2022, section 3: 8 heads: 1/2, 1/4, …, 1/256.
    np.testing.assert_allclose(alibi_slopes(8), [2.0**-k for k in range(1, 9)], rtol=1e-15)
    # 16 heads: 1/√2, 1/2, …, 1/256.
    np.testing.assert_allclose(alibi_slopes(16), [2.0 ** (-k / 2) for k in range(1, 17)])
    for heads in (1, 3, 5, 6, 12, 20):
        np.testing.assert_allclose(alibi_slopes(heads), ref.alibi_slopes(heads), rtol=1e-12)


@pytest.mark.parametrize("bidirectional", [False, True])
@pytest.mark.parametrize("heads", [4, 6])
def test_alibi_bias_matches_numpy(heads, bidirectional, rng):
    scores = rng.normal(size=(2, heads, 3, 5))
    layer = AlibiBias(bidirectional=bidirectional, dtype="float64")
    for start in (0, 2):
        expected = scores + ref.alibi_bias(heads, 3, 5, start, bidirectional)[None]
        np.testing.assert_allclose(_np(layer(scores, query_start=start)), expected, atol=1e-12)


def test_alibi_softmax_matches_keras_hub_under_a_causal_mask(rng):
    """keras-hub adds m·(j − Tk + 1), the paper −m·(i − j): equal up to a constant per row."""
    keras_hub = pytest.importorskip("keras_hub")
    scores = rng.normal(size=(2, 6, 5, 5)).astype("float32")
    keep = ref.causal(5, 5)
    ours = ref.masked_softmax(_np(AlibiBias()(scores)).astype(np.float64), keep)
    theirs = ref.masked_softmax(_np(keras_hub.layers.AlibiBias()(scores)).astype(np.float64), keep)
    np.testing.assert_allclose(ours, theirs, atol=1e-6)


def test_alibi_errors():
    with pytest.raises(ValueError, match="max_bias=0"):
        AlibiBias(max_bias=0)
    with pytest.raises(ValueError, match=r"Received: scores_shape=\(2, 3, 4\)"):
        AlibiBias()(np.zeros((2, 3, 4), "float32"))
