"""attnkit's MultiHeadAttention, Attention and AdditiveAttention as drop-ins for Keras's.

Each test builds Keras's layer and ours with the same arguments and weights, calls both the
same way (the argument and mask forms Keras documents) and compares outputs, weights, shapes,
configs, errors and saved models. What differs on purpose is tested as such, and listed in
docs/keras_differences.md.
"""

import keras
import numpy as np
import pytest

import attnkit
from grader.reference import attention as ref

B, TQ, TK, D = 2, 4, 5, 6


def _np(x):
    return np.asarray(keras.ops.convert_to_numpy(x))


@pytest.fixture
def data(rng):
    q = rng.normal(size=(B, TQ, D)).astype("float32")
    v = rng.normal(size=(B, TK, D)).astype("float32")
    k = rng.normal(size=(B, TK, D)).astype("float32")
    return q, v, k


def _pair(theirs_class, ours_class, rng, build_args, **kwargs):
    """Keras's layer and ours, built alike, holding the same (random, non-zero) weights."""
    theirs, ours = theirs_class(**kwargs), ours_class(**kwargs)
    theirs.build(*build_args)
    ours.build(*build_args)
    for w in theirs.weights:
        w.assign(rng.normal(scale=0.5, size=tuple(w.shape)).astype("float32"))
    ours.set_weights(theirs.get_weights())
    return theirs, ours


def _same(got, expected, atol=1e-5):
    for g, e in zip(got, expected, strict=True):
        assert tuple(g.shape) == tuple(e.shape)
        np.testing.assert_allclose(_np(g), _np(e), rtol=1e-5, atol=atol)


# ------------------------------------------------------------------ MultiHeadAttention
def _mha_pair(rng, query_shape, value_shape, key_shape=None, **kwargs):
    kwargs = {"num_heads": 2, "key_dim": 3, **kwargs}
    theirs_kwargs = {"flash_attention": False, **kwargs}
    theirs = keras.layers.MultiHeadAttention(**theirs_kwargs)
    ours = attnkit.MultiHeadAttention(**kwargs)
    for layer in (theirs, ours):
        layer.build(query_shape, value_shape, key_shape)
    for w in theirs.weights:
        w.assign(rng.normal(scale=0.5, size=tuple(w.shape)).astype("float32"))
    ours.set_weights(theirs.get_weights())
    return theirs, ours


def _mask_forms(rng):
    """Every attention_mask form Keras documents, with a query that sees no key."""
    per_example = rng.random((B, TQ, TK)) > 0.4
    per_example[0, 1] = False
    return {
        "2d": rng.random((TQ, TK)) > 0.4,
        "3d": per_example,
        "4d_per_head": rng.random((B, 2, TQ, TK)) > 0.4,
        "4d_heads_broadcast": per_example[:, None],
    }


@pytest.mark.parametrize(
    "kwargs",
    [
        {},
        {"value_dim": 4, "output_shape": 5, "use_bias": False},
        {"output_shape": (2, 3)},
        {"use_gate": True},
        {"sliding_window": 2},
    ],
    ids=["default", "value_dim-output-no_bias", "output_tuple", "gate", "sliding_window"],
)
def test_mha_matches_keras_every_way_it_is_called(kwargs, data, rng):
    q, v, k = data
    theirs, ours = _mha_pair(rng, q.shape, v.shape, k.shape, **kwargs)
    assert [w.path.split("/", 1)[1] for w in ours.weights] == [
        w.path.split("/", 1)[1] for w in theirs.weights
    ]
    calls = [
        {},
        {"key": k},
        {"key": k, "use_causal_mask": True},
        *({"key": k, "attention_mask": m} for m in _mask_forms(rng).values()),
        {"key": k, "attention_mask": _mask_forms(rng)["3d"], "use_causal_mask": True},
    ]
    for call in calls:
        got = ours(q, v, return_attention_scores=True, **call)
        expected = theirs(q, v, return_attention_scores=True, **call)
        _same(got, expected)
        _same([ours(q, v, **call)], [expected[0]])


def test_mha_keras_masks_of_the_inputs_as_in_keras(rng):
    """Keras masks carried by the query, value and key (Embedding(mask_zero=True))."""
    tokens_q = np.array([[1, 2, 3, 0], [4, 0, 0, 0]])
    tokens_v = np.array([[5, 4, 0, 0, 0], [3, 2, 1, 1, 2]])
    embed_q, embed_v = (
        keras.layers.Embedding(6, D, mask_zero=True),
        keras.layers.Embedding(6, D, mask_zero=True),
    )
    theirs, ours = _mha_pair(rng, (B, 4, D), (B, 5, D))
    for causal in (False, True):
        outputs = []
        for layer in (theirs, ours):
            q, v = embed_q(tokens_q), embed_v(tokens_v)  # fresh: the layers strip the masks
            outputs.append(layer(q, v, use_causal_mask=causal, return_attention_scores=True))
        _same(outputs[1], outputs[0])
        np.testing.assert_array_equal(_np(outputs[1][0]._keras_mask), tokens_q != 0)


def test_mha_attention_axes_over_two_image_axes_matches_keras_and_numpy(rng):
    x = rng.normal(size=(2, 3, 2, 4)).astype("float32")  # (B, H, W, C)
    theirs, ours = _mha_pair(rng, x.shape, x.shape, attention_axes=(1, 2))
    out, weights = ours(x, x, return_attention_scores=True)
    _same([out, weights], theirs(x, x, return_attention_scores=True))
    assert tuple(weights.shape) == (2, 2, 3, 2, 3, 2)
    # float64 NumPy: one softmax over the 6 positions of the image, per head.
    w = {p.path.split("/", 1)[1]: _np(p).astype("float64") for p in ours.weights}
    x64 = x.astype("float64").reshape(2, 6, 4)
    qh = np.einsum("btd,dhk->bthk", x64, w["query/kernel"]) + w["query/bias"]
    kh = np.einsum("btd,dhk->bthk", x64, w["key/kernel"]) + w["key/bias"]
    vh = np.einsum("btd,dhk->bthk", x64, w["value/kernel"]) + w["value/bias"]
    scores = np.einsum("bqhd,bkhd->bhqk", qh, kh) / np.sqrt(3)
    alpha = ref.masked_softmax(scores)
    heads = np.einsum("bhqk,bkhd->bqhd", alpha, vh)
    expected = np.einsum("bqhd,hdo->bqo", heads, w["attention_output/kernel"])
    expected += w["attention_output/bias"]
    np.testing.assert_allclose(_np(out).reshape(2, 6, 4), expected, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(_np(weights).reshape(2, 2, 6, 6), alpha, rtol=1e-5, atol=1e-6)


def test_per_head_mask_in_multi_head_scaled_dot_attention(rng):
    q = rng.normal(size=(B, TQ, 2, 3))
    k = rng.normal(size=(B, TK, 2, 3))
    v = rng.normal(size=(B, TK, 2, 2))
    mask = rng.random((B, 2, TQ, TK)) > 0.4
    out, alpha = attnkit.multi_head_scaled_dot_attention(q, k, v, mask)
    expected = ref.masked_softmax(np.einsum("bqhd,bkhd->bhqk", q, k) / np.sqrt(3), mask)
    np.testing.assert_allclose(_np(alpha), expected, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(_np(out), np.einsum("bhqk,bkhd->bqhd", expected, v), rtol=1e-10)
    with pytest.raises(ValueError, match=r"Received: mask with shape \(4, 5, 1, 1, 1\)"):
        attnkit.multi_head_scaled_dot_attention(q, k, v, np.ones((4, 5, 1, 1, 1), bool))
    layer = attnkit.MultiHeadAttention(2, 3)
    x = q[..., 0, :].astype("float32")
    for bad in (np.ones((TQ,), bool), np.ones((B, 2, TQ, TQ, 1), bool)):
        with pytest.raises(ValueError, match=r"num_heads, Tq, Tk\). Received: attention_mask"):
            layer(x, x, attention_mask=bad)


def test_mha_compute_attention_hook_is_used_by_a_subclass(data, rng):
    q, v, _ = data
    seen = []

    class Recording(attnkit.MultiHeadAttention):
        def _compute_attention(self, query, key, value, attention_mask=None, training=None,
                               return_attention_scores=False):  # fmt: skip
            seen.append(attention_mask)
            return super()._compute_attention(
                query, key, value, attention_mask, training, return_attention_scores
            )

    theirs, _ = _mha_pair(rng, q.shape, v.shape)
    layer = Recording(num_heads=2, key_dim=3)
    layer.build(q.shape, v.shape)
    layer.set_weights(theirs.get_weights())
    _same([layer(q, v, use_causal_mask=True)], [theirs(q, v, use_causal_mask=True)])
    # The causal mask reaches the hook (Keras's shape is (1, Tq, Tk); ours broadcasts to it).
    assert len(seen) == 1 and seen[0] is not None
    causal = np.tril(np.ones((TQ, TK), bool))[None]
    np.testing.assert_array_equal(np.broadcast_to(_np(seen[0]), causal.shape), causal)


def test_mha_config_is_keras_config_and_round_trips():
    kwargs = {
        "num_heads": 3,
        "key_dim": 4,
        "value_dim": 2,
        "dropout": 0.1,
        "use_bias": False,
        "output_shape": (2, 5),
        "attention_axes": (1,),
        "sliding_window": 3,
        "kernel_regularizer": "l2",
        "kernel_constraint": "non_neg",
        "use_gate": True,
        "seed": 7,
    }
    theirs = keras.layers.MultiHeadAttention(**kwargs).get_config()
    ours = attnkit.MultiHeadAttention(**kwargs).get_config()
    extras = {"name", "implementation", "block_size", "flash_attention"}
    assert set(ours) - set(theirs) <= extras
    for key in set(theirs) - {"name"}:
        assert ours[key] == theirs[key], key
    # Keras's config makes our layer; ours round-trips.
    assert attnkit.MultiHeadAttention.from_config(theirs).get_config()["output_shape"] == (2, 5)
    assert attnkit.MultiHeadAttention.from_config(ours).get_config() == ours


@pytest.mark.parametrize(
    "kwargs",
    [
        {"num_heads": 0},
        {"key_dim": -1},
        {"value_dim": 1.5},
        {"output_shape": 8.0},
        {"sliding_window": 0},
    ],
)
def test_mha_refuses_what_keras_refuses(kwargs):
    kwargs = {"num_heads": 2, "key_dim": 3, **kwargs}
    with pytest.raises(ValueError):
        keras.layers.MultiHeadAttention(**kwargs)
    with pytest.raises(ValueError, match="Received"):
        attnkit.MultiHeadAttention(**kwargs)


@pytest.mark.parametrize(
    "shapes",
    [((2, 4, 8), (2, 2, 7), (2,)), ((2, 4, 8), (2, 2, 8), (2, 1, 7))],
    ids=["rank", "key_positions"],
)
def test_mha_compute_output_shape_refuses_what_the_call_refuses(shapes):
    for layer in (keras.layers.MultiHeadAttention(2, 2), attnkit.MultiHeadAttention(2, 2)):
        with pytest.raises(ValueError, match="must be equal"):
            layer.compute_output_shape(*shapes)
    # Ours also refuses what only Keras's call would refuse.
    ours = attnkit.MultiHeadAttention(2, 2, attention_axes=3)
    with pytest.raises(ValueError, match="attention_axes=\\(3,\\)"):
        ours.compute_output_shape((2, 4, 8), (2, 4, 8))


def test_mha_quantize_lora_and_dtype_policy_map_reach_the_sub_layers(data, rng):
    q, v, _ = data
    _, ours = _mha_pair(rng, q.shape, v.shape, use_bias=False)
    before = _np(ours(q, v))
    ours.query_dense.quantize("int8")
    assert keras.backend.standardize_dtype(ours.query_dense._kernel.dtype) == "int8"
    assert np.mean((_np(ours(q, v)) - before) ** 2) < 1e-2
    ours.key_dense.enable_lora(2)
    assert len(ours.non_trainable_weights) > 0
    policies = keras.dtype_policies.DTypePolicyMap()
    policies["mha/value"] = keras.dtype_policies.DTypePolicy("float64")
    layer = attnkit.MultiHeadAttention(2, 3, dtype=policies, name="mha")
    layer.build(q.shape, v.shape)
    assert keras.backend.standardize_dtype(layer.value_dense.kernel.dtype) == "float64"
    assert keras.backend.standardize_dtype(layer.query_dense.kernel.dtype) == "float32"


def _mha_model(layer_class):
    q_in, v_in = keras.Input((TQ, D)), keras.Input((TK, D))
    x = layer_class(num_heads=2, key_dim=3, name="mha")(q_in, v_in, use_causal_mask=True)
    return keras.Model([q_in, v_in], keras.layers.Dense(1, name="head")(x))


def test_a_model_trained_with_keras_mha_gives_the_same_outputs_with_attnkits(data, rng):
    """The issue's "done when": train with keras.layers.MultiHeadAttention, swap the class,
    set_weights; also through a weights file."""
    q, v, _ = data
    keras.utils.set_random_seed(1)
    theirs = _mha_model(keras.layers.MultiHeadAttention)
    theirs.compile(optimizer=keras.optimizers.Adam(0.01), loss="mse", jit_compile=False)
    target = rng.normal(size=(B, TQ, 1)).astype("float32")
    before = _np(theirs([q, v]))
    theirs.fit([q, v], target, epochs=3, verbose=0)
    trained = _np(theirs([q, v]))
    assert not np.allclose(trained, before)
    ours = _mha_model(attnkit.MultiHeadAttention)
    ours.set_weights(theirs.get_weights())
    np.testing.assert_allclose(_np(ours([q, v])), trained, rtol=1e-5, atol=1e-6)


def test_weights_file_and_keras_file_round_trip(data, rng, tmp_path):
    q, v, _ = data
    theirs = _mha_model(keras.layers.MultiHeadAttention)
    for w in theirs.weights:
        w.assign(rng.normal(scale=0.5, size=tuple(w.shape)).astype("float32"))
    theirs.save_weights(tmp_path / "keras.weights.h5")
    ours = _mha_model(attnkit.MultiHeadAttention)
    ours.load_weights(tmp_path / "keras.weights.h5")
    expected = _np(theirs([q, v]))
    np.testing.assert_allclose(_np(ours([q, v])), expected, rtol=1e-5, atol=1e-6)
    ours.save(tmp_path / "ours.keras")
    loaded = keras.saving.load_model(tmp_path / "ours.keras")
    np.testing.assert_allclose(_np(loaded([q, v])), expected, rtol=1e-5, atol=1e-6)
    assert type(loaded.get_layer("mha")) is attnkit.MultiHeadAttention


# ----------------------------------------------------------- Attention, AdditiveAttention
ATTENTION_KWARGS = [
    (keras.layers.Attention, attnkit.Attention, {}),
    (keras.layers.Attention, attnkit.Attention, {"use_scale": True}),
    (keras.layers.Attention, attnkit.Attention, {"score_mode": "concat"}),
    (keras.layers.Attention, attnkit.Attention, {"score_mode": "concat", "use_scale": True}),
    (keras.layers.AdditiveAttention, attnkit.AdditiveAttention, {}),
    (keras.layers.AdditiveAttention, attnkit.AdditiveAttention, {"use_scale": False}),
]
ATTENTION_IDS = ["dot", "dot-scale", "concat", "concat-scale", "additive", "additive-no-scale"]


@pytest.mark.parametrize(
    ("theirs_class", "ours_class", "kwargs"), ATTENTION_KWARGS, ids=ATTENTION_IDS
)
def test_attention_matches_keras_every_way_it_is_called(
    theirs_class, ours_class, kwargs, data, rng
):
    q, v, k = data
    theirs, ours = _pair(theirs_class, ours_class, rng, ([q.shape, v.shape, k.shape],), **kwargs)
    assert [w.name for w in ours.weights] == [w.name for w in theirs.weights]
    query_mask = rng.random((B, TQ)) > 0.3
    value_mask = rng.random((B, TK)) > 0.3
    value_mask[:, 0] = True  # every query keeps a key (the fully masked row differs: below)
    calls = [
        ([q, v], {}),
        ([q, v, k], {}),
        ([q, v, k], {"mask": [query_mask, value_mask]}),
        ([q, v, k], {"mask": [None, value_mask]}),
        ([q, v, k], {"mask": [query_mask, None]}),
        ([q, v, k], {"mask": [query_mask, value_mask], "use_causal_mask": True}),
        ([q, v], {"use_causal_mask": True}),
    ]
    for inputs, call in calls:
        got = ours(inputs, return_attention_scores=True, **call)
        expected = theirs(inputs, return_attention_scores=True, **call)
        assert isinstance(got, tuple)
        _same(got, expected)
        _same([ours(inputs, **call)], [expected[0]])
    # attnkit's own form of the same call.
    got = ours(q, v, key=k, query_mask=query_mask, value_mask=value_mask, use_causal_mask=True)
    expected = theirs([q, v, k], mask=[query_mask, value_mask], use_causal_mask=True)
    _same([got], [expected])


@pytest.mark.parametrize(
    ("theirs_class", "ours_class", "kwargs"), ATTENTION_KWARGS[::2], ids=ATTENTION_IDS[::2]
)
def test_attention_keras_masks_and_symbolic_shapes_as_in_keras(
    theirs_class, ours_class, kwargs, rng
):
    tokens = np.array([[1, 2, 3, 0], [4, 0, 0, 0]])
    embedding = keras.layers.Embedding(5, D, mask_zero=True)
    x = embedding(tokens)
    theirs, ours = _pair(theirs_class, ours_class, rng, ([x.shape, x.shape],), **kwargs)
    got = ours([x, x], return_attention_scores=True)
    _same(got, theirs([x, x], return_attention_scores=True))
    np.testing.assert_array_equal(_np(got[0]._keras_mask), tokens != 0)
    q_in, v_in = keras.Input((3, D)), keras.Input((5, D))
    for layer in (theirs, ours):
        out, weights = layer([q_in, v_in], return_attention_scores=True)
        assert (tuple(out.shape), tuple(weights.shape)) == ((None, 3, D), (None, 3, 5))
        assert layer.compute_output_shape([(None, 3, D), (None, 5, 4)]) == (None, 3, 4)


def test_a_masked_query_is_zeroed_at_the_output_and_keeps_its_weights(rng):
    query = np.array([[[1.0, 0.0], [0.0, 1.0]]], "float32")
    value = np.array([[[1.0, 2.0], [3.0, 4.0]]], "float32")
    mask = [np.array([[True, False]]), np.array([[True, False]])]
    for layer in (keras.layers.Attention(), attnkit.Attention()):
        out, weights = layer([query, value], mask=mask, return_attention_scores=True)
        np.testing.assert_allclose(_np(out), [[[1.0, 2.0], [0.0, 0.0]]])
        np.testing.assert_allclose(_np(weights), [[[1.0, 0.0], [1.0, 0.0]]])


def test_a_query_with_no_key_left_differs_on_purpose(data):
    """docs/keras_differences.md: Keras's weights for a query whose keys are all masked spread
    over the masked keys (uniform in float32); attnkit's are zero."""
    q, v, _ = data
    value_mask = np.ones((B, TK), bool)
    value_mask[0] = False
    theirs = _np(
        keras.layers.Attention()([q, v], mask=[None, value_mask], return_attention_scores=True)[1]
    )
    out, ours = attnkit.Attention()([q, v], mask=[None, value_mask], return_attention_scores=True)
    np.testing.assert_array_equal(_np(ours)[0], 0.0)
    np.testing.assert_array_equal(_np(out)[0], 0.0)
    np.testing.assert_allclose(theirs[0].sum(-1), 1.0, rtol=1e-5)  # Keras: not zero
    np.testing.assert_allclose(_np(ours)[1], theirs[1], rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize(
    ("theirs_class", "ours_class", "kwargs"), ATTENTION_KWARGS, ids=ATTENTION_IDS
)
def test_attention_config_is_keras_config_and_round_trips(theirs_class, ours_class, kwargs):
    kwargs = {**kwargs, "dropout": 0.2, "seed": 3}
    theirs = theirs_class(**kwargs).get_config()
    ours = ours_class(**kwargs).get_config()
    assert set(ours) - set(theirs) <= {"score"}
    for key in set(theirs) - {"name"}:
        assert ours[key] == theirs[key], key
    assert ours_class.from_config(theirs).get_config() == {**ours, "name": theirs["name"]}


@pytest.mark.parametrize("layer_class", [attnkit.Attention, attnkit.AdditiveAttention])
def test_attention_refuses_what_keras_refuses(layer_class):
    tensor = np.ones((1, 2, 2), "float32")
    theirs_class = getattr(keras.layers, layer_class.__name__)
    for call, message in [
        (lambda layer: layer(tensor), "must be called on a list"),
        (lambda layer: layer([tensor] * 4), "length 2 or 3"),
        (lambda layer: layer([tensor, tensor], mask=tensor), "mask must be a list"),
        (lambda layer: layer([tensor, tensor], mask=[tensor]), "length 2 or 3"),
    ]:
        for layer in (theirs_class(), layer_class()):
            with pytest.raises(ValueError, match=message):
                call(layer)
    with pytest.raises(ValueError, match="score_mode"):
        keras.layers.Attention(score_mode="general")
    with pytest.raises(ValueError, match="Received: score_mode='general'"):
        attnkit.Attention(score_mode="general")


def test_attention_keras_file_round_trip(data, rng, tmp_path):
    q, v, k = data
    inputs = [keras.Input((TQ, D)), keras.Input((TK, D)), keras.Input((TK, D))]
    dot = attnkit.Attention(use_scale=True, score_mode="concat", name="concat")(inputs)
    additive = attnkit.AdditiveAttention(name="additive")(inputs[:2])
    book = attnkit.Attention(score=attnkit.AdditiveScore(3), name="book")(inputs)
    model = keras.Model(inputs, [dot, additive, book])
    for w in model.weights:
        w.assign(rng.normal(scale=0.5, size=tuple(w.shape)).astype("float32"))
    model.save(tmp_path / "model.keras")
    loaded = keras.saving.load_model(tmp_path / "model.keras")
    _same(loaded([q, v, k]), model([q, v, k]))
    assert type(loaded.get_layer("book").score_layer) is attnkit.AdditiveScore
    # The book's additive score has its own W_q, W_k, v; Keras's AdditiveAttention one vector.
    assert len(model.get_layer("book").weights) == 3
    assert [w.name for w in model.get_layer("additive").weights] == ["scale"]


def test_attention_weights_file_of_keras_layers_loads_into_attnkits(data, rng, tmp_path):
    q, v, k = data

    def model(module):
        inputs = [keras.Input((TQ, D)), keras.Input((TK, D)), keras.Input((TK, D))]
        concat = module.Attention(use_scale=True, score_mode="concat")(inputs)
        additive = module.AdditiveAttention()(inputs[:2])
        return keras.Model(inputs, [concat, additive])

    theirs = model(keras.layers)
    for w in theirs.weights:
        w.assign(rng.normal(scale=0.5, size=tuple(w.shape)).astype("float32"))
    theirs.save_weights(tmp_path / "keras.weights.h5")
    ours = model(attnkit)
    ours.load_weights(tmp_path / "keras.weights.h5")
    _same(ours([q, v, k]), theirs([q, v, k]))


@pytest.mark.parametrize("policy", ["mixed_float16", "mixed_bfloat16"])
def test_mixed_precision_as_in_keras(policy, data, rng):
    q, v, k = data
    theirs, ours = _mha_pair(rng, q.shape, v.shape, dtype=policy)
    tol = 2e-2 if policy == "mixed_float16" else 1e-1
    for got, expected in zip(
        ours(q, v, use_causal_mask=True, return_attention_scores=True),
        theirs(q, v, use_causal_mask=True, return_attention_scores=True),
        strict=True,
    ):
        assert got.dtype == expected.dtype
        np.testing.assert_allclose(
            _np(got).astype("float32"), _np(expected).astype("float32"), atol=tol
        )
    theirs, ours = _pair(
        keras.layers.Attention, attnkit.Attention, rng, ([q.shape, v.shape],), dtype=policy
    )
    got, expected = ours([q, v]), theirs([q, v])
    assert got.dtype == expected.dtype
    np.testing.assert_allclose(
        _np(got).astype("float32"), _np(expected).astype("float32"), atol=tol
    )
