"""attnkit.memory.EndToEndMemoryNetwork against an independent float64 NumPy forward pass."""

import keras
import numpy as np
import pytest
import tensorflow as tf

from attnkit.memory import EndToEndMemoryNetwork, position_encoding
from grader.reference import memory as memory_ref

VOCAB, DIM = 11, 5


def _np(x):
    return keras.ops.convert_to_numpy(x)


def _tokens(rng, batch, slots, length, question_length=3, empty_slots=True):
    """Random token ids with padded words, and (optionally) all-padding slots."""
    story = rng.integers(1, VOCAB, size=(batch, slots, length))
    story[rng.random(story.shape) < 0.3] = 0
    if empty_slots:
        story[0, -1] = 0  # a padded memory slot
    story[:, 0, 0] = rng.integers(1, VOCAB, size=batch)  # every story has a sentence
    question = rng.integers(1, VOCAB, size=(batch, question_length))
    question[:, -1] = 0
    return story.astype("int32"), question.astype("int32")


def _set_random_weights(layer, rng, scale=0.5):
    values = {}
    for w in layer.weights:
        if w.trainable:
            values[w.name] = rng.normal(scale=scale, size=w.shape)
            w.assign(values[w.name].astype(w.dtype))
    return values


def _layer(config, rng, story, question, dtype="float64", **kwargs):
    layer = EndToEndMemoryNetwork(VOCAB, DIM, activation=None, dtype=dtype, **config, **kwargs)
    layer.build(story.shape, question.shape)
    return layer, _set_random_weights(layer, rng)


def _reference(config, weights, story, question, keep_slots=None):
    return memory_ref.memn2n(
        story,
        question,
        weights,
        hops=config.get("hops", 3),
        tying=config.get("weight_tying", "adjacent"),
        temporal=config.get("temporal_encoding", False),
        encoding=config.get("sentence_encoding", "bow"),
        projection=config.get("use_hop_projection", False),
        keep_slots=keep_slots,
    )


def _expected_weight_names(config):
    """The weights weight tying leaves: K + 1 shared matrices (adjacent) or one per role."""
    hops, temporal = config.get("hops", 3), config.get("temporal_encoding", False)
    if config.get("weight_tying", "adjacent") == "adjacent":
        names = [f"embedding_{k}" for k in range(hops + 1)]
        names += [f"temporal_{k}" for k in range(hops + 1)] if temporal else []
    else:
        names = ["embedding_a", "embedding_b", "embedding_c", "answer_kernel"]
        names += ["temporal_a", "temporal_c"] if temporal else []
    names += ["hop_kernel"] if config.get("use_hop_projection", False) else []
    return sorted(names)


CONFIGS = [
    {"hops": 1},
    {"hops": 3},
    {"hops": 2, "temporal_encoding": True, "sentence_encoding": "position"},
    {"hops": 3, "weight_tying": "layerwise"},
    {"hops": 2, "weight_tying": "layerwise", "temporal_encoding": True, "use_hop_projection": True},
    {"hops": 2, "use_hop_projection": True, "sentence_encoding": "position"},
]
CONFIG_IDS = [
    "adj_1hop",
    "adj_3hops",
    "adj_temporal_pe",
    "layerwise",
    "layerwise_temporal_H",
    "adj_H_pe",
]
SHAPES = [(1, 1, 1), (2, 4, 3), (3, 6, 5)]  # (batch, slots, words)


@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: "x".join(map(str, s)))
@pytest.mark.parametrize("config", CONFIGS, ids=CONFIG_IDS)
def test_matches_numpy(config, shape, rng):
    story, question = _tokens(rng, *shape, empty_slots=shape[1] > 1)
    layer, weights = _layer(config, rng, story, question)
    assert sorted(weights) == _expected_weight_names(config)
    logits, attention = layer(story, question, return_attention_scores=True)
    expected_logits, expected_attention = _reference(config, weights, story, question)
    np.testing.assert_allclose(_np(attention), expected_attention, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(_np(logits), expected_logits, rtol=1e-10, atol=1e-10)


def test_softmax_activation_and_float32(rng):
    story, question = _tokens(rng, 3, 4, 3)
    layer = EndToEndMemoryNetwork(VOCAB, DIM, hops=2)
    layer.build(story.shape, question.shape)
    weights = _set_random_weights(layer, rng)
    probs = _np(layer(story, question))
    logits, _ = _reference({"hops": 2}, weights, story, question)
    expected = np.exp(logits - logits.max(-1, keepdims=True))
    expected /= expected.sum(-1, keepdims=True)
    np.testing.assert_allclose(probs, expected, rtol=1e-5, atol=1e-6)


def test_position_encoding_matches_the_paper():
    np.testing.assert_allclose(
        _np(position_encoding(4, 3, "float64")), memory_ref.position_encoding(4, 3)
    )


@pytest.mark.parametrize("kind", ["padded_slots", "memory_mask", "key_lengths"])
def test_padded_memory_slots_get_zero_attention(kind, rng):
    config = {"hops": 2, "temporal_encoding": True}  # T_A(i) would make padded slots non-zero
    story, question = _tokens(rng, 3, 5, 3)
    story[1, 2:] = 0  # example 1: slots 2..4 are padding
    story[2] = 0  # example 2: no sentence at all
    keep = np.any(story != 0, axis=-1)
    kwargs = {}
    if kind == "memory_mask":
        kwargs["memory_mask"] = rng.random((3, 5)) > 0.3
        keep &= kwargs["memory_mask"]
    if kind == "key_lengths":
        kwargs["key_lengths"] = np.array([3, 5, 5], "int32")
        keep &= np.arange(5)[None] < kwargs["key_lengths"][:, None]
    layer, weights = _layer(config, rng, story, question)
    logits, attention = layer(story, question, return_attention_scores=True, **kwargs)
    attention = _np(attention)
    assert np.all(attention[np.broadcast_to(~keep[:, None, :], attention.shape)] == 0.0)
    np.testing.assert_array_equal(attention[2], 0.0)  # fully padded: zeros, not NaN
    assert np.all(np.isfinite(_np(logits)))
    expected_logits, expected_attention = _reference(config, weights, story, question, keep)
    np.testing.assert_allclose(attention, expected_attention, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(_np(logits), expected_logits, rtol=1e-10, atol=1e-10)


@pytest.mark.parametrize("config", [CONFIGS[2], CONFIGS[4]], ids=[CONFIG_IDS[2], CONFIG_IDS[4]])
def test_gradients_reach_every_weight(config, rng):
    story, question = _tokens(rng, 2, 4, 3)
    layer, _ = _layer(config, rng, story, question, dtype="float32")
    with tf.GradientTape() as tape:
        loss = tf.reduce_sum(layer(story, question) ** 2)
    grads = tape.gradient(loss, layer.trainable_weights)
    assert len(grads) == len(layer.trainable_weights) >= 5
    for w, g in zip(layer.trainable_weights, grads, strict=True):
        assert g is not None, w.name
        g = _np(tf.convert_to_tensor(g))
        assert np.all(np.isfinite(g)) and np.any(g != 0), w.name


def test_temporal_encoding_with_a_shorter_story(rng):
    # memory_size 6, stories of 4 slots: the first 4 rows of T are used.
    config = {"hops": 2, "temporal_encoding": True}
    story, question = _tokens(rng, 2, 4, 3)
    layer = EndToEndMemoryNetwork(
        VOCAB, DIM, memory_size=6, activation=None, dtype="float64", **config
    )
    layer.build((None, None, 3), question.shape)
    weights = _set_random_weights(layer, rng)
    assert tuple(layer.temporals[0].shape) == (6, DIM)
    short = {k: (v[:4] if k.startswith("temporal") else v) for k, v in weights.items()}
    expected, _ = _reference(config, short, story, question)
    np.testing.assert_allclose(_np(layer(story, question)), expected, rtol=1e-10)


# ------------------------------------------------------ precision, XLA, save / load
def test_mixed_precision_has_no_nan(mixed_policy, rng):
    low = mixed_policy.split("_")[1]
    story, question = _tokens(rng, 3, 5, 4)
    story[2] = 0
    layer = EndToEndMemoryNetwork(VOCAB, DIM, hops=3, temporal_encoding=True)
    probs, attention = layer(story, question, return_attention_scores=True)
    assert keras.backend.standardize_dtype(probs.dtype) == low
    probs = _np(tf.cast(probs, "float32"))
    attention = _np(tf.cast(attention, "float32"))
    assert np.all(np.isfinite(probs)) and np.all(np.isfinite(attention))
    np.testing.assert_allclose(probs.sum(-1), 1.0, atol=1e-2)
    np.testing.assert_array_equal(attention[2], 0.0)
    weights = {w.name: _np(w) for w in layer.weights}
    expected, _ = _reference({"hops": 3, "temporal_encoding": True}, weights, story, question)
    expected = np.exp(expected - expected.max(-1, keepdims=True))
    np.testing.assert_allclose(probs, expected / expected.sum(-1, keepdims=True), atol=1e-2)


def test_jit_compile_matches_eager(rng):
    story, question = _tokens(rng, 3, 5, 4)
    layer, _ = _layer(CONFIGS[4], rng, story, question, dtype="float32")
    lengths = np.array([5, 2, 0], "int32")

    def run(s, q, n):
        return layer(s, q, key_lengths=n, return_attention_scores=True)

    eager = run(story, question, lengths)
    compiled = tf.function(run, jit_compile=True)(story, question, lengths)
    for e, c in zip(eager, compiled, strict=True):
        assert np.all(np.isfinite(_np(c)))
        np.testing.assert_allclose(_np(c), _np(e), rtol=1e-5, atol=1e-6)


def test_keras_file_round_trip(rng, tmp_path):
    story_in = keras.Input((5, 4), dtype="int32")
    question_in = keras.Input((3,), dtype="int32")
    layer = EndToEndMemoryNetwork(
        VOCAB,
        DIM,
        hops=2,
        weight_tying="layerwise",
        temporal_encoding=True,
        sentence_encoding="position",
        use_hop_projection=True,
        name="memn2n",
    )
    probs, attention = layer(story_in, question_in, return_attention_scores=True)
    assert tuple(probs.shape) == (None, VOCAB) and tuple(attention.shape) == (None, 2, 5)
    model = keras.Model([story_in, question_in], [probs, attention])
    weights = _set_random_weights(layer, rng)
    story, question = _tokens(rng, 3, 5, 4)
    model.save(tmp_path / "memn2n.keras")
    loaded = keras.saving.load_model(tmp_path / "memn2n.keras")
    config = {
        "hops": 2,
        "weight_tying": "layerwise",
        "temporal_encoding": True,
        "sentence_encoding": "position",
        "use_hop_projection": True,
    }
    logits, expected_attention = _reference(config, weights, story, question)
    expected_probs = np.exp(logits - logits.max(-1, keepdims=True))
    expected_probs /= expected_probs.sum(-1, keepdims=True)
    for m in (model, loaded):
        got_probs, got_attention = m.predict([story, question], verbose=0)
        np.testing.assert_allclose(got_probs, expected_probs, rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(got_attention, expected_attention, rtol=1e-5, atol=1e-6)
    assert loaded.get_layer("memn2n").get_config() == layer.get_config()


def test_config_round_trip(rng):
    layer = EndToEndMemoryNetwork(
        VOCAB,
        DIM,
        hops=4,
        weight_tying="layerwise",
        temporal_encoding=True,
        memory_size=7,
        sentence_encoding="position",
        use_hop_projection=True,
        activation=None,
        embeddings_initializer="glorot_uniform",
        name="m",
    )
    config = layer.get_config()
    for name, value in [
        ("vocab_size", VOCAB),
        ("embedding_dim", DIM),
        ("hops", 4),
        ("weight_tying", "layerwise"),
        ("temporal_encoding", True),
        ("memory_size", 7),
        ("sentence_encoding", "position"),
        ("use_hop_projection", True),
        ("activation", None),
    ]:
        assert config[name] == value
    clone = EndToEndMemoryNetwork.from_config(config)
    assert clone.get_config() == config
    story, question = _tokens(rng, 2, 5, 3)
    layer(story, question)
    clone(story, question)
    clone.set_weights(layer.get_weights())
    np.testing.assert_allclose(_np(clone(story, question)), _np(layer(story, question)))


def test_trains_inside_model_fit_under_a_distribution_strategy(rng):
    keras.utils.set_random_seed(0)
    story, question = _tokens(rng, 32, 4, 3)
    answer = story[:, 0, 0]  # the first word of the first sentence
    with tf.distribute.MirroredStrategy(["/cpu:0"]).scope():
        s_in, q_in = keras.Input((4, 3), dtype="int32"), keras.Input((3,), dtype="int32")
        out = EndToEndMemoryNetwork(VOCAB, 8, hops=2, temporal_encoding=True)(s_in, q_in)
        model = keras.Model([s_in, q_in], out)
        model.compile(optimizer=keras.optimizers.Adam(0.02), loss="sparse_categorical_crossentropy")
    history = model.fit([story, question], answer, epochs=5, batch_size=16, verbose=0)
    losses = history.history["loss"]
    assert np.all(np.isfinite(losses)) and losses[-1] < losses[0]


# --------------------------------------------------------------------------- errors
@pytest.mark.parametrize(
    ("kwargs", "fragment"),
    [
        ({"hops": 0}, "hops=0"),
        ({"hops": 2.0}, "hops=2.0"),
        ({"vocab_size": 0}, "vocab_size=0"),
        ({"embedding_dim": -1}, "embedding_dim=-1"),
        ({"weight_tying": "rnn"}, "weight_tying='rnn'"),
        ({"temporal_encoding": 1}, "temporal_encoding=1"),
        ({"memory_size": 0}, "memory_size=0"),
        ({"sentence_encoding": "lstm"}, "sentence_encoding='lstm'"),
        ({"use_hop_projection": "yes"}, "use_hop_projection='yes'"),
        ({"activation": "relu"}, "activation='relu'"),
        ({"embeddings_initializer": "nope"}, "embeddings_initializer='nope'"),
    ],
)
def test_constructor_errors(kwargs, fragment):
    kwargs = {"vocab_size": VOCAB, "embedding_dim": DIM, **kwargs}
    with pytest.raises(ValueError, match="Received:") as info:
        EndToEndMemoryNetwork(**kwargs)
    assert fragment in str(info.value)


@pytest.mark.parametrize(
    ("layer_kwargs", "story_shape", "question_shape", "fragment"),
    [
        ({}, (2, 0, 3), (2, 3), "memory_size=0"),
        ({}, (2, 3), (2, 3), "story_shape=(2, 3)"),
        ({}, (2, 4, 3), (2, 3, 1), "question_shape=(2, 3, 1)"),
        ({"temporal_encoding": True, "memory_size": 3}, (2, 4, 3), (2, 3), "memory_size`=3"),
    ],
)
def test_call_errors(layer_kwargs, story_shape, question_shape, fragment):
    layer = EndToEndMemoryNetwork(VOCAB, DIM, **layer_kwargs)
    story = np.ones(story_shape, "int32")
    question = np.ones(question_shape, "int32")
    with pytest.raises(ValueError, match="Received:") as info:
        layer(story, question)
    assert fragment in str(info.value)


def test_temporal_encoding_needs_a_known_memory_size():
    layer = EndToEndMemoryNetwork(VOCAB, DIM, temporal_encoding=True)
    with pytest.raises(ValueError, match="memory_size"):
        layer.build((None, None, 3), (None, 3))
    with pytest.raises(ValueError, match="memory_mask with shape"):
        EndToEndMemoryNetwork(VOCAB, DIM)(
            np.ones((2, 4, 3), "int32"), np.ones((2, 3), "int32"), memory_mask=np.ones(4, bool)
        )
