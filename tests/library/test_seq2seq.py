"""BahdanauDecoder and LuongAttention against step-by-step float64 NumPy references."""

import keras
import numpy as np
import pytest
import tensorflow as tf

from attnkit.seq2seq import BahdanauDecoder, LuongAttention
from grader.reference import attention as ref
from grader.reference import recurrent as recurrent_ref
from grader.reference import seq2seq as seq2seq_ref
from tests.support import layers


def _np(x):
    return keras.ops.convert_to_numpy(x)


def randomize(layer, rng, scale=0.7):
    """Gives every weight of a built layer random N(0, scale²) values (not the init's)."""
    for weight in layer.weights:
        weight.assign(rng.normal(0.0, scale, tuple(weight.shape)).astype(weight.dtype))


# ============================================================================ Bahdanau
def bahdanau_weights(layer):
    return {
        "embedding": ref.as64(layer.embedding.embeddings.numpy()),
        "query_kernel": ref.as64(layer.score.query_kernel.numpy()),
        "key_kernel": ref.as64(layer.score.key_kernel.numpy()),
        "score_vector": ref.as64(layer.score.score_vector.numpy()),
        "cell": recurrent_ref.cell_weights(layer.cell),
        "out_kernel": ref.as64(layer.output_projection.kernel.numpy()),
        "out_bias": ref.as64(layer.output_projection.bias.numpy()),
    }


# (batch, T_in, T_out, d_enc, units, attention_units, vocab, embedding_dim)
BAHDANAU_SHAPES = [
    (1, 1, 1, 2, 3, None, 4, 2),
    (2, 5, 3, 4, 6, None, 7, 3),
    (3, 4, 6, 3, 5, 2, 9, 4),
]


def _bahdanau(rng, shape):
    b, t_in, t_out, d_enc, units, att, vocab, emb = shape
    layer = BahdanauDecoder(vocab, emb, units, attention_units=att)
    tokens = rng.integers(0, vocab, (b, t_out)).astype("int32")
    enc = rng.normal(size=(b, t_in, d_enc)).astype("float32")
    layer.build(tokens.shape, enc.shape)
    randomize(layer, rng)
    return layer, tokens, enc


def _source_masks(kind, rng, b, t_in):
    """Call kwargs and the (B, T_in) keep-mask the reference expects."""
    if kind == "none":
        return {}, np.ones((b, t_in), bool)
    lengths = rng.integers(1, t_in + 1, b).astype("int32")
    if kind == "lengths":
        return {"key_lengths": lengths}, ref.length_mask(lengths, t_in)
    mask = rng.random((b, t_in)) > 0.3
    mask[:, 0] = True
    return {"encoder_outputs_mask": mask}, mask


@pytest.mark.parametrize("kind", ["none", "lengths", "mask"])
@pytest.mark.parametrize("shape", BAHDANAU_SHAPES, ids=lambda s: "x".join(map(str, s[:5])))
def test_bahdanau_teacher_forcing_matches_numpy(shape, kind, rng):
    layer, tokens, enc = _bahdanau(rng, shape)
    kwargs, keep = _source_masks(kind, rng, shape[0], shape[1])
    s0 = rng.normal(size=(shape[0], shape[4])).astype("float32")
    logits, attention, state = layer(
        tokens, enc, initial_state=s0, return_attention_scores=True, return_state=True, **kwargs
    )
    expected = seq2seq_ref.bahdanau_decoder(bahdanau_weights(layer), tokens, enc, keep, s0)
    np.testing.assert_allclose(_np(attention), expected[1], rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(_np(logits), expected[0], rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(_np(state), expected[2], rtol=1e-4, atol=1e-5)
    assert np.all(_np(attention)[np.broadcast_to(~keep[:, None], attention.shape)] == 0.0)
    # Without the flags, only the logits; without an initial state, s_0 = 0.
    np.testing.assert_allclose(
        _np(layer(tokens, enc, **kwargs)),
        seq2seq_ref.bahdanau_decoder(bahdanau_weights(layer), tokens, enc, keep)[0],
        rtol=1e-4,
        atol=1e-4,
    )


@pytest.mark.parametrize("end_token", [None, 2])
def test_bahdanau_greedy_decode_matches_numpy(end_token, rng):
    layer, _, enc = _bahdanau(rng, (4, 5, 1, 3, 6, 4, 5, 3))
    layer.output_projection.bias.assign([0.0, 0.0, 1.5, 0.0, 0.0])  # EOS comes up early
    lengths = np.array([5, 2, 3, 1], "int32")
    tokens, attention = layer.decode(enc, 1, 6, key_lengths=lengths, end_token=end_token)
    _, expected_attention, _, expected_tokens = seq2seq_ref.bahdanau_decoder(
        bahdanau_weights(layer),
        None,
        enc,
        ref.length_mask(lengths, 5),
        greedy=(1, 6, end_token),
    )
    np.testing.assert_array_equal(_np(tokens), expected_tokens)
    np.testing.assert_allclose(_np(attention), expected_attention, rtol=1e-4, atol=1e-5)
    if end_token is not None:
        assert np.any(expected_tokens[:, :-1] == end_token)  # the end token was exercised


def test_bahdanau_takes_the_padding_mask_from_the_encoder(rng):
    source = np.array([[3, 4, 5, 0, 0], [6, 0, 0, 0, 0]])
    states = keras.layers.GRU(4, return_sequences=True)(
        keras.layers.Embedding(8, 3, mask_zero=True)(source)
    )
    layer, tokens, _ = _bahdanau(rng, (2, 5, 3, 4, 6, None, 7, 3))
    _, attention = layer(tokens, states, return_attention_scores=True)
    keep = source != 0
    expected = seq2seq_ref.bahdanau_decoder(bahdanau_weights(layer), tokens, _np(states), keep)
    np.testing.assert_allclose(_np(attention), expected[1], rtol=1e-4, atol=1e-5)
    np.testing.assert_array_equal(_np(attention)[:, :, 3:], 0.0)


def test_bahdanau_empty_source_gives_zero_attention_and_finite_gradients(rng):
    layer, tokens, enc = _bahdanau(rng, (2, 4, 3, 3, 5, None, 6, 3))
    enc_t = tf.constant(enc)
    with tf.GradientTape() as tape:
        tape.watch(enc_t)
        logits, attention = layer(
            tokens, enc_t, key_lengths=np.array([0, 2]), return_attention_scores=True
        )
        loss = tf.reduce_sum(logits**2)
    grads = tape.gradient(loss, [enc_t, *layer.trainable_weights])
    np.testing.assert_array_equal(_np(attention)[0], 0.0)
    keep = ref.length_mask([0, 2], 4)
    expected = seq2seq_ref.bahdanau_decoder(bahdanau_weights(layer), tokens, enc, keep)
    np.testing.assert_allclose(_np(logits), expected[0], rtol=1e-4, atol=1e-4)
    for g in grads:
        assert g is not None and np.all(np.isfinite(_np(g)))
    np.testing.assert_array_equal(_np(grads[0])[0], 0.0)  # nothing reaches unused states


def test_bahdanau_mixed_precision(mixed_policy, rng):
    low = mixed_policy.split("_")[1]
    layer, tokens, enc = _bahdanau(rng, (2, 5, 4, 4, 6, None, 7, 3))
    lengths = np.array([0, 3], "int32")
    logits, attention = layer(tokens, enc, key_lengths=lengths, return_attention_scores=True)
    assert keras.backend.standardize_dtype(logits.dtype) == low
    logits, attention = _np(tf.cast(logits, "float64")), _np(tf.cast(attention, "float64"))
    assert np.all(np.isfinite(logits)) and np.all(np.isfinite(attention))
    expected = seq2seq_ref.bahdanau_decoder(
        bahdanau_weights(layer), tokens, enc, ref.length_mask(lengths, 5)
    )
    np.testing.assert_allclose(attention, expected[1], atol=2e-2)
    np.testing.assert_allclose(logits, expected[0], atol=5e-2, rtol=2e-2)


def test_bahdanau_jit_compile_matches_eager(rng):
    layer, tokens, enc = _bahdanau(rng, (2, 5, 3, 4, 6, None, 7, 3))
    lengths = np.array([5, 2], "int32")

    def run(t, e, n):
        return layer(t, e, key_lengths=n, return_attention_scores=True)

    eager = run(tokens, enc, lengths)
    compiled = tf.function(run, jit_compile=True)(tokens, enc, lengths)
    for e, c in zip(eager, compiled, strict=True):
        np.testing.assert_allclose(_np(c), _np(e), rtol=1e-5, atol=1e-5)


def test_bahdanau_keras_file_round_trip(rng, tmp_path):
    layer = BahdanauDecoder(9, 4, 6, attention_units=5)
    tokens_in = keras.Input((None,), dtype="int32")
    enc_in = keras.Input((5, 3))
    lengths_in = keras.Input((), dtype="int32")
    logits, attention = layer(
        tokens_in, enc_in, key_lengths=lengths_in, return_attention_scores=True
    )
    assert tuple(logits.shape) == (None, None, 9) and tuple(attention.shape) == (None, None, 5)
    model = keras.Model([tokens_in, enc_in, lengths_in], [logits, attention])
    randomize(layer, rng)
    tokens = rng.integers(0, 9, (2, 4)).astype("int32")
    enc = rng.normal(size=(2, 5, 3)).astype("float32")
    lengths = np.array([5, 3], "int32")
    model.save(tmp_path / "model.keras")
    loaded = keras.saving.load_model(tmp_path / "model.keras")
    expected = seq2seq_ref.bahdanau_decoder(
        bahdanau_weights(layer), tokens, enc, ref.length_mask(lengths, 5)
    )
    for m in (model, loaded):
        got_logits, got_attention = m.predict([tokens, enc, lengths], verbose=0)
        np.testing.assert_allclose(got_logits, expected[0], rtol=1e-4, atol=1e-4)
        np.testing.assert_allclose(got_attention, expected[1], rtol=1e-4, atol=1e-5)


def test_bahdanau_config_round_trip(rng):
    layer = BahdanauDecoder(9, 4, 6, attention_units=3, name="dec")
    tokens = rng.integers(0, 9, (2, 4))
    enc = rng.normal(size=(2, 5, 3)).astype("float32")
    layer(tokens, enc)
    config = layer.get_config()
    assert {k: config[k] for k in ("vocab_size", "embedding_dim", "units", "attention_units")} == {
        "vocab_size": 9,
        "embedding_dim": 4,
        "units": 6,
        "attention_units": 3,
    }
    clone = BahdanauDecoder.from_config(config)
    assert clone.get_config() == config
    clone(tokens, enc)
    clone.set_weights(layer.get_weights())
    np.testing.assert_allclose(_np(clone(tokens, enc)), _np(layer(tokens, enc)), rtol=1e-6)


@pytest.mark.parametrize(
    ("kwargs", "fragment"),
    [
        ({"vocab_size": 0}, "vocab_size=0"),
        ({"embedding_dim": -1}, "embedding_dim=-1"),
        ({"units": 0}, "units=0"),
        ({"units": "8"}, "units='8'"),
        ({"attention_units": 0}, "attention_units=0"),
    ],
)
def test_bahdanau_constructor_errors(kwargs, fragment):
    args = {"vocab_size": 5, "embedding_dim": 3, "units": 4, **kwargs}
    with pytest.raises(ValueError, match="Received:") as info:
        BahdanauDecoder(**args)
    assert fragment in str(info.value)


def test_bahdanau_call_errors(rng):
    layer = BahdanauDecoder(5, 3, 4)
    with pytest.raises(ValueError, match=r"Received: inputs_shape=\(2, 3, 1\)"):
        layer(np.zeros((2, 3, 1), "int32"), np.zeros((2, 4, 3), "float32"))
    with pytest.raises(ValueError, match=r"Received: encoder_outputs_shape=\(2, 4\)"):
        layer(np.zeros((2, 3), "int32"), np.zeros((2, 4), "float32"))
    with pytest.raises(ValueError, match="Received: max_length=0"):
        layer.decode(np.zeros((2, 4, 3), "float32"), 1, 0)


# =============================================================================== Luong
SCORES = ["dot", "general", "concat", "location"]
MODES = ["global", "local-m", "local-p"]
MAX_LENGTH = 9


def luong_weights(layer):
    w = {"combine": ref.as64(layer.combine.kernel.numpy())}
    for weight in layer.score_layer.weights:
        w[weight.name] = ref.as64(weight.numpy())
    if layer.mode == "local-p":
        w["position_hidden"] = ref.as64(layer.position_hidden.kernel.numpy())
        w["position_output"] = ref.as64(layer.position_output.kernel.numpy())
    return w


def _luong(rng, score, mode, b, tq, tk, d_h, d_s, window=2, units=5, dtype=None):
    if score == "dot":
        d_s = d_h
    layer = LuongAttention(
        units, score=score, mode=mode, window=window, max_length=MAX_LENGTH, dtype=dtype
    )
    h = rng.normal(size=(b, tq, d_h)).astype(dtype or "float32")
    hbar = rng.normal(size=(b, tk, d_s)).astype(dtype or "float32")
    layer.build(h.shape, hbar.shape)
    randomize(layer, rng)
    return layer, h, hbar


# (batch, Tq, Tk, d_h, d_s)
LUONG_SHAPES = [(1, 1, 1, 2, 2), (2, 4, 7, 3, 5), (3, 6, 4, 4, 2)]


@pytest.mark.parametrize("shape", LUONG_SHAPES, ids=lambda s: "x".join(map(str, s)))
@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("score", SCORES)
def test_luong_matches_numpy(score, mode, shape, rng):
    b, tq, tk, d_h, d_s = shape
    layer, h, hbar = _luong(rng, score, mode, *shape)
    lengths = rng.integers(1, tk + 1, b).astype("int32")
    local = mode != "global"
    results = layer(
        h, hbar, key_lengths=lengths, return_attention_scores=True, return_positions=local
    )
    expected = seq2seq_ref.luong(
        luong_weights(layer), h, hbar, score, mode, 2, ref.length_mask(lengths, tk)
    )
    np.testing.assert_allclose(_np(results[1]), expected[1], rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(_np(results[0]), expected[0], rtol=1e-5, atol=1e-5)
    if local:
        np.testing.assert_allclose(_np(results[2]), expected[2], rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(
        _np(layer(h, hbar, key_lengths=lengths)), expected[0], rtol=1e-5, atol=1e-5
    )


@pytest.mark.parametrize("mode", MODES)
def test_luong_value_and_query_masks(mode, rng):
    layer, h, hbar = _luong(rng, "general", mode, 3, 5, 8, 3, 4, window=3)
    value_mask = rng.random((3, 8)) > 0.3
    value_mask[:, 0] = True
    query_mask = rng.random((3, 5)) > 0.3
    out, weights = layer(
        h, hbar, value_mask=value_mask, query_mask=query_mask, return_attention_scores=True
    )
    expected = seq2seq_ref.luong(luong_weights(layer), h, hbar, "general", mode, 3, value_mask)
    expected_weights = expected[1] * query_mask[:, :, None]
    np.testing.assert_allclose(_np(weights), expected_weights, rtol=1e-5, atol=1e-6)
    assert np.all(_np(weights)[~query_mask] == 0.0)
    # A masked query sees a zero context: h̃ = tanh(W_c [0; h_t]).
    w_c = luong_weights(layer)["combine"]
    np.testing.assert_allclose(
        _np(out)[~query_mask],
        np.tanh(np.concatenate([np.zeros((h[~query_mask].shape[0], 4)), h[~query_mask]], -1) @ w_c),
        rtol=1e-5,
        atol=1e-6,
    )


def test_luong_takes_the_padding_mask_from_the_encoder(rng):
    source = np.array([[3, 4, 5, 0, 0, 0], [6, 7, 0, 0, 0, 0]])
    states = keras.layers.Embedding(8, 4, mask_zero=True)(source)
    layer, h, _ = _luong(rng, "dot", "local-p", 2, 3, 6, 4, 4)
    _, weights, centres = layer(h, states, return_attention_scores=True, return_positions=True)
    expected = seq2seq_ref.luong(
        luong_weights(layer), h, _np(states), "dot", "local-p", 2, source != 0
    )
    np.testing.assert_allclose(_np(weights), expected[1], rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(_np(centres), expected[2], rtol=1e-5)
    assert np.all(_np(centres)[0] < 3) and np.all(_np(centres)[1] < 2)  # p_t ∈ (0, S)


@pytest.mark.parametrize("rank", [1, 2])
def test_luong_local_m_query_positions(rank, rng):
    layer, h, hbar = _luong(rng, "concat", "local-m", 2, 3, 7, 3, 4, window=1)
    positions = np.array([[6, 0, 3], [2, 9, 4]])  # 9: the window holds no source position
    given = positions if rank == 2 else positions[0]
    out, weights, centres = layer(
        h, hbar, query_positions=given, return_attention_scores=True, return_positions=True
    )
    broadcast = np.broadcast_to(given, (2, 3))
    expected = seq2seq_ref.luong(
        luong_weights(layer), h, hbar, "concat", "local-m", 1, query_positions=broadcast
    )
    np.testing.assert_allclose(_np(centres), broadcast)
    np.testing.assert_allclose(_np(weights), expected[1], rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(_np(out), expected[0], rtol=1e-5, atol=1e-5)
    if rank == 2:
        np.testing.assert_array_equal(_np(weights)[1, 1], 0.0)
        assert np.all(np.isfinite(_np(out)))


def test_luong_local_p_gradients_match_finite_differences(rng):
    layer, h, hbar = _luong(rng, "general", "local-p", 2, 3, 6, 3, 4, window=4, dtype="float64")
    lengths = np.array([6, 4])
    keep = ref.length_mask(lengths, 6)
    weights = luong_weights(layer)
    upstream = rng.normal(size=(2, 3, 5))

    def loss(w):
        return float(
            np.sum(seq2seq_ref.luong(w, h, hbar, "general", "local-p", 4, keep)[0] * upstream)
        )

    with tf.GradientTape() as tape:
        total = tf.reduce_sum(layer(h, hbar, key_lengths=lengths) * upstream)
    variables = [layer.position_hidden.kernel, layer.position_output.kernel]
    got = tape.gradient(total, variables)
    for name, g in zip(["position_hidden", "position_output"], got, strict=True):
        expected = layers.numeric_gradient(lambda x, n=name: loss({**weights, n: x}), weights[name])
        assert np.abs(expected).max() > 1e-4  # p_t does receive a gradient
        np.testing.assert_allclose(_np(g), expected, rtol=1e-5, atol=1e-8)


@pytest.mark.parametrize("mode", MODES)
def test_luong_mixed_precision(mode, mixed_policy, rng):
    low = mixed_policy.split("_")[1]
    layer, h, hbar = _luong(rng, "general", mode, 2, 4, 6, 3, 3)
    lengths = np.array([0, 4], "int32")
    out, weights = layer(h, hbar, key_lengths=lengths, return_attention_scores=True)
    assert keras.backend.standardize_dtype(out.dtype) == low
    out, weights = _np(tf.cast(out, "float64")), _np(tf.cast(weights, "float64"))
    assert np.all(np.isfinite(out)) and np.all(np.isfinite(weights))
    np.testing.assert_array_equal(weights[0], 0.0)
    expected = seq2seq_ref.luong(
        luong_weights(layer), h, hbar, "general", mode, 2, ref.length_mask(lengths, 6)
    )
    np.testing.assert_allclose(weights, expected[1], atol=2e-2)
    np.testing.assert_allclose(out, expected[0], atol=2e-2)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("score", SCORES)
def test_luong_jit_compile_matches_eager(score, mode, rng):
    layer, h, hbar = _luong(rng, score, mode, 2, 4, 6, 3, 5)
    lengths = np.array([6, 0], "int32")
    local = mode != "global"

    def run(q, v, n):
        return layer(q, v, key_lengths=n, return_attention_scores=True, return_positions=local)

    eager = run(h, hbar, lengths)
    compiled = tf.function(run, jit_compile=True)(h, hbar, lengths)
    for e, c in zip(eager, compiled, strict=True):
        assert np.all(np.isfinite(_np(c)))
        np.testing.assert_allclose(_np(c), _np(e), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize(("score", "mode"), [("location", "local-p"), ("concat", "global")])
def test_luong_keras_file_round_trip(score, mode, rng, tmp_path):
    layer = LuongAttention(5, score=score, mode=mode, window=3, max_length=MAX_LENGTH)
    h_in, v_in, n_in = keras.Input((4, 3)), keras.Input((6, 2)), keras.Input((), dtype="int32")
    outputs = layer(h_in, v_in, key_lengths=n_in, return_attention_scores=True)
    assert tuple(outputs[0].shape) == (None, 4, 5) and tuple(outputs[1].shape) == (None, 4, 6)
    model = keras.Model([h_in, v_in, n_in], outputs)
    randomize(layer, rng)
    h = rng.normal(size=(2, 4, 3)).astype("float32")
    hbar = rng.normal(size=(2, 6, 2)).astype("float32")
    lengths = np.array([6, 3], "int32")
    model.save(tmp_path / "model.keras")
    loaded = keras.saving.load_model(tmp_path / "model.keras")
    expected = seq2seq_ref.luong(
        luong_weights(layer), h, hbar, score, mode, 3, ref.length_mask(lengths, 6)
    )
    for m in (model, loaded):
        got = m.predict([h, hbar, lengths], verbose=0)
        np.testing.assert_allclose(got[0], expected[0], rtol=1e-5, atol=1e-5)
        np.testing.assert_allclose(got[1], expected[1], rtol=1e-5, atol=1e-6)


def test_luong_positions_output_spec():
    layer = LuongAttention(5, mode="local-p", score="general")
    h_in, v_in = keras.Input((4, 3)), keras.Input((None, 2))
    out, weights, centres = layer(h_in, v_in, return_attention_scores=True, return_positions=True)
    assert tuple(out.shape) == (None, 4, 5)
    assert tuple(weights.shape) == (None, 4, None)
    assert tuple(centres.shape) == (None, 4)


def test_luong_config_round_trip(rng):
    layer = LuongAttention(5, score="location", mode="local-m", window=2, max_length=7, name="lu")
    h = rng.normal(size=(2, 3, 4)).astype("float32")
    hbar = rng.normal(size=(2, 6, 4)).astype("float32")
    layer(h, hbar)
    config = layer.get_config()
    assert {k: config[k] for k in ("units", "score", "mode", "window", "max_length")} == {
        "units": 5,
        "score": "location",
        "mode": "local-m",
        "window": 2,
        "max_length": 7,
    }
    clone = LuongAttention.from_config(config)
    assert clone.get_config() == config
    clone(h, hbar)
    clone.set_weights(layer.get_weights())
    np.testing.assert_allclose(_np(clone(h, hbar)), _np(layer(h, hbar)), rtol=1e-6)


@pytest.mark.parametrize(
    ("kwargs", "fragment"),
    [
        ({"units": 0}, "units=0"),
        ({"score": "bahdanau"}, "score='bahdanau'"),
        ({"mode": "local"}, "mode='local'"),
        ({"window": 0}, "window=0"),
        ({"window": 2.5}, "window=2.5"),
        ({"max_length": 0}, "max_length=0"),
        ({"score": "location"}, "max_length=None"),
    ],
)
def test_luong_constructor_errors(kwargs, fragment):
    with pytest.raises(ValueError, match="Received:") as info:
        LuongAttention(**{"units": 4, **kwargs})
    assert fragment in str(info.value)


def test_luong_call_errors(rng):
    h = rng.normal(size=(2, 3, 4)).astype("float32")
    hbar = rng.normal(size=(2, 5, 4)).astype("float32")
    with pytest.raises(ValueError, match="Received: mode='global'"):
        LuongAttention(4)(h, hbar, return_positions=True)
    with pytest.raises(ValueError, match="Received: query_shape=.*value_shape="):
        LuongAttention(4)(h[:, 0], hbar)
    with pytest.raises(ValueError, match="d_q == d_k"):
        LuongAttention(4, score="dot")(h, hbar[..., :3])
    with pytest.raises(ValueError, match="max_keys"):
        LuongAttention(4, score="location", max_length=4)(h, hbar)


def test_luong_output_carries_the_query_mask(rng):
    tokens = np.array([[3, 4, 0], [5, 0, 0]])
    h = keras.layers.Embedding(8, 3, mask_zero=True)(tokens)
    layer, _, hbar = _luong(rng, "general", "global", 2, 3, 4, 3, 2)
    out, weights = layer(h, hbar, return_attention_scores=True)
    np.testing.assert_array_equal(_np(out._keras_mask), tokens != 0)
    np.testing.assert_array_equal(_np(weights)[tokens == 0], 0.0)  # padded queries
