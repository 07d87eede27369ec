"""SelfAttention (NNDL (8.16)-(8.22)) and MultiHeadSelfAttention against float64 NumPy."""

import keras
import numpy as np
import pytest
import tensorflow as tf

from attnkit.attention import MultiHeadSelfAttention, SelfAttention
from grader.reference import attention as ref
from grader.reference import heads as hr
from tests.support import layers


def _np(x):
    return keras.ops.convert_to_numpy(x)


# (batch, T, d) and (key_dim, value_dim, use_bias): batch 1, T = 1, d = 1, D_v != D_k.
SA_CASES = [
    ((1, 1, 1), (1, None, False)),
    ((2, 5, 4), (3, None, False)),
    ((3, 4, 2), (2, 5, True)),
    ((2, 3, 1), (2, 1, False)),
]
SA_IDS = ["x".join(map(str, s)) + f"-k{c[0]}v{c[1]}{'b' if c[2] else ''}" for s, c in SA_CASES]


def _self_attention(rng, shape, cfg, dtype="float32", **kwargs):
    key_dim, value_dim, use_bias = cfg
    layer = SelfAttention(key_dim, value_dim, use_bias=use_bias, dtype=dtype, **kwargs)
    x = rng.normal(size=shape).astype(dtype)
    layer.build(x.shape)
    return layer, layers.random_weights(layer, rng), x


def _reference(weights, x, keep=None):
    return hr.self_attention_columns(
        x,
        weights["query_kernel"],
        weights["key_kernel"],
        weights["value_kernel"],
        keep,
        weights.get("query_bias"),
        weights.get("key_bias"),
        weights.get("value_bias"),
    )


PADDINGS = ["mask", "lengths", "mask+lengths", "causal", "mask+causal"]


def _padding(kind, rng, b, t):
    """Call kwargs, constructor kwargs and the (B, T, T) keep-mask they mean."""
    call, init, keep = {}, {}, np.ones((b, t, t), bool)
    real = np.ones((b, t), bool)
    if "mask" in kind:
        call["mask"] = rng.random((b, t)) > 0.3
        real &= call["mask"]
    if "lengths" in kind:
        call["key_lengths"] = np.array([t, 0, t - 1][:b], "int32")
        real &= ref.length_mask(call["key_lengths"], t)
    keep &= real[:, :, None] & real[:, None, :]
    if "causal" in kind:
        init["use_causal_mask"] = True
        keep &= ref.causal_mask(t, t)[None]
    return call, init, keep, real


# ------------------------------------------------------------------------ SelfAttention
@pytest.mark.parametrize(("shape", "cfg"), SA_CASES, ids=SA_IDS)
def test_self_attention_matches_the_book(shape, cfg, rng):
    layer, weights, x = _self_attention(rng, shape, cfg)
    out, alpha = layer(x, return_attention_scores=True)
    expected_out, expected_alpha = _reference(weights, x)
    np.testing.assert_allclose(_np(alpha), expected_alpha, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(_np(out), expected_out, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(_np(layer(x)), expected_out, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("kind", PADDINGS)
def test_self_attention_masks(kind, rng):
    b, t = 3, 5
    call, init, keep, real = _padding(kind, rng, b, t)
    layer, weights, x = _self_attention(rng, (b, t, 3), (2, 4, True), **init)
    out, alpha = layer(x, return_attention_scores=True, **call)
    out, alpha = _np(out), _np(alpha)
    expected_out, expected_alpha = _reference(weights, x, keep)
    assert np.all(alpha[~keep] == 0.0)
    np.testing.assert_array_equal(out[~real], 0.0)  # padded positions output nothing
    np.testing.assert_allclose(alpha, expected_alpha, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(out, expected_out, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("multi_head", [False, True], ids=["single", "multi_head"])
def test_fully_masked_rows_have_finite_gradients(multi_head, rng):
    if multi_head:
        layer = MultiHeadSelfAttention(2, 2, use_bias=False)
        x = rng.normal(size=(2, 4, 3)).astype("float32")
    else:
        layer, _, x = _self_attention(rng, (2, 4, 3), (2, 2, False))
    lengths = np.array([0, 2], "int32")
    x_t = tf.constant(x)
    with tf.GradientTape() as tape:
        tape.watch(x_t)
        out, alpha = layer(x_t, key_lengths=lengths, return_attention_scores=True)
        total = tf.reduce_sum(out**2) + tf.reduce_sum(alpha**2)
    grads = tape.gradient(total, [x_t, *layer.trainable_weights])
    np.testing.assert_array_equal(_np(out)[0], 0.0)
    np.testing.assert_array_equal(_np(alpha)[0], 0.0)
    for g in grads:
        assert g is not None and np.all(np.isfinite(_np(g)))
    np.testing.assert_array_equal(_np(grads[0])[0], 0.0)
    np.testing.assert_array_equal(_np(grads[0])[1, 2:], 0.0)


def test_self_attention_dropout_only_when_training(rng):
    layer, weights, x = _self_attention(rng, (2, 6, 3), (3, None, False), dropout=0.5, seed=1)
    expected_out, expected_alpha = _reference(weights, x)
    for training in (None, False):
        np.testing.assert_allclose(
            _np(layer(x, training=training)), expected_out, rtol=1e-5, atol=1e-5
        )
    out, alpha = layer(x, training=True, return_attention_scores=True)
    np.testing.assert_allclose(_np(alpha), expected_alpha, rtol=1e-5, atol=1e-6)
    assert not np.allclose(_np(out), expected_out, atol=1e-3)


# ---------------------------------------------------------------- MultiHeadSelfAttention
# (batch, T, d) and (num_heads, key_dim, value_dim, output_dim, use_bias)
MHSA_CASES = [
    ((1, 1, 1), (1, 1, None, None, True)),
    ((2, 5, 4), (2, 3, None, None, True)),
    ((3, 4, 2), (3, 2, 4, 6, False)),
]


@pytest.mark.parametrize("kind", ["none", *PADDINGS])
@pytest.mark.parametrize(("shape", "cfg"), MHSA_CASES, ids=["d1", "h2", "h3-vdim-odim"])
def test_multi_head_self_attention_matches_numpy(shape, cfg, kind, rng):
    b, t, _ = shape
    call, init, keep, real = _padding(kind, rng, b, t)
    num_heads, key_dim, value_dim, output_dim, use_bias = cfg
    layer = MultiHeadSelfAttention(
        num_heads, key_dim, value_dim, output_dim, use_bias=use_bias, **init
    )
    x = rng.normal(size=shape).astype("float32")
    layer.build(x.shape)
    weights = layers.random_weights(layer, rng)
    out, alpha = layer(x, return_attention_scores=True, **call)
    expected_out, expected_alpha = hr.multi_head_attention(x, x, x, weights, keep)
    alpha = _np(alpha)
    assert np.all(alpha[np.broadcast_to(~keep[:, None], alpha.shape)] == 0.0)
    np.testing.assert_allclose(alpha, expected_alpha, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(_np(out), expected_out, rtol=1e-5, atol=1e-5)


def test_multi_head_self_attention_weights_are_those_of_multi_head_attention():
    layer = MultiHeadSelfAttention(2, 3, output_dim=5)
    layer.build((None, 4, 6))
    assert [layers.weight_name(w) for w in layer.weights] == [
        f"{p}_{w}" for p in ("query", "key", "value", "output") for w in ("kernel", "bias")
    ]
    assert [tuple(w.shape) for w in layer.weights] == [
        (6, 2, 3),
        (2, 3),
        (6, 2, 3),
        (2, 3),
        (6, 2, 3),
        (2, 3),
        (2, 3, 5),
        (5,),
    ]


# ---------------------------------------------------------------- Keras padding masks
@pytest.mark.parametrize("make", [lambda: SelfAttention(3), lambda: MultiHeadSelfAttention(2, 3)])
@pytest.mark.parametrize("with_lengths", [False, True], ids=["mask", "mask+lengths"])
def test_embedding_mask_zero_in_a_functional_model(make, with_lengths):
    tokens = np.array([[3, 5, 2, 0, 0], [4, 1, 7, 2, 6]])
    lengths = np.array([5, 2], "int32")
    real = tokens != 0
    if with_lengths:
        real &= ref.length_mask(lengths, 5)
    keep = real[:, :, None] & real[:, None, :]
    token_in, lengths_in = keras.Input((5,), dtype="int32"), keras.Input((), dtype="int32")
    embedding = keras.layers.Embedding(10, 4, mask_zero=True)
    layer = make()
    kwargs = {"key_lengths": lengths_in} if with_lengths else {}
    out, alpha = layer(embedding(token_in), return_attention_scores=True, **kwargs)
    pooled = keras.layers.GlobalAveragePooling1D()(out)  # uses the propagated mask
    model = keras.Model([token_in, lengths_in], [out, alpha, pooled])
    out, alpha, pooled = (_np(t) for t in model([tokens, lengths]))

    weights = {layers.weight_name(w): _np(w) for w in layer.weights}
    emb = _np(embedding(tokens))
    if isinstance(layer, SelfAttention):
        expected_out, expected_alpha = _reference(weights, emb, keep)
    else:
        expected_out, expected_alpha = hr.multi_head_attention(emb, emb, emb, weights, keep)
    np.testing.assert_allclose(alpha, expected_alpha, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(out, expected_out, rtol=1e-5, atol=1e-5)
    tokens_real = tokens != 0
    expected_pooled = [expected_out[b][tokens_real[b]].mean(axis=0) for b in range(2)]
    np.testing.assert_allclose(pooled, expected_pooled, rtol=1e-5, atol=1e-5)


# ------------------------------------------------------------------------------ errors
@pytest.mark.parametrize(
    ("cls", "kwargs", "fragment"),
    [
        (SelfAttention, {"key_dim": 0}, "key_dim=0"),
        (SelfAttention, {"key_dim": "8"}, "key_dim='8'"),
        (SelfAttention, {"value_dim": -2}, "value_dim=-2"),
        (SelfAttention, {"use_causal_mask": "no"}, "use_causal_mask='no'"),
        (SelfAttention, {"dropout": 1.5}, "dropout=1.5"),
        (SelfAttention, {"use_bias": None}, "use_bias=None"),
        (SelfAttention, {"seed": "x"}, "seed='x'"),
        (SelfAttention, {"kernel_initializer": "nope"}, "kernel_initializer='nope'"),
        (SelfAttention, {"bias_initializer": "nope"}, "bias_initializer='nope'"),
        (MultiHeadSelfAttention, {"num_heads": 0}, "num_heads=0"),
        (MultiHeadSelfAttention, {"key_dim": 2.5}, "key_dim=2.5"),
        (MultiHeadSelfAttention, {"output_dim": 0}, "output_dim=0"),
        (MultiHeadSelfAttention, {"dropout": -1}, "dropout=-1"),
        (MultiHeadSelfAttention, {"use_causal_mask": 1}, "use_causal_mask=1"),
    ],
)
def test_constructor_errors(cls, kwargs, fragment):
    args = {"key_dim": 3, **({"num_heads": 2} if cls is MultiHeadSelfAttention else {})}
    with pytest.raises(ValueError, match="Received:") as info:
        cls(**{**args, **kwargs})
    assert fragment in str(info.value)


@pytest.mark.parametrize("cls", [SelfAttention, MultiHeadSelfAttention])
@pytest.mark.parametrize(
    ("shape", "fragment"),
    [((2, 4), "inputs_shape=(2, 4)"), ((2, 3, 4, 5), "inputs_shape=(2, 3, 4, 5)")],
)
def test_build_errors(cls, shape, fragment):
    layer = SelfAttention(3) if cls is SelfAttention else MultiHeadSelfAttention(2, 3)
    with pytest.raises(ValueError, match="Received:") as info:
        layer.build(shape)
    assert fragment in str(info.value)
