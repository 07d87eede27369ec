"""The memory-efficient path: exact attention in key blocks (online softmax, recomputed
backward), equal to the plain path, and never holding a Tq × Tk tensor; its two passes
(`blockwise_forward`, `blockwise_backward`) checked on their own against float64 NumPy; and the
choice of path (`attnkit.attention.dispatch`)."""

import keras
import numpy as np
import pytest
import tensorflow as tf

import attnkit
from attnkit.attention import blockwise_attention, dispatch, masking
from attnkit.attention.blockwise import (
    BlockPlan,
    attend_in_blocks,
    blockwise_backward,
    blockwise_forward,
)
from attnkit.attention.multi_head import multi_head_scaled_dot_attention
from grader.reference import attention as ref
from grader.reference import heads as hr
from tests.support import layers
from tests.support.layers import numeric_gradient

rng = np.random.default_rng(7)


def numpy_attention(q, k, v, keep):
    """float64 reference: softmax over kept keys, zero rows where nothing is kept."""
    scores = np.einsum("bqhd,bkhd->bhqk", q, k) / np.sqrt(q.shape[-1])
    keep = np.broadcast_to(keep[:, None], scores.shape)
    scores = np.where(keep, scores, -np.inf)
    top = np.max(scores, axis=-1, keepdims=True)
    top = np.where(np.isfinite(top), top, 0.0)
    weights = np.where(keep, np.exp(scores - top), 0.0)
    total = weights.sum(-1, keepdims=True)
    weights = np.divide(weights, total, out=np.zeros_like(weights), where=total > 0)
    return np.einsum("bhqk,bkhd->bqhd", weights, v)


def masks(b, tq, tk, causal, with_lengths, with_query_mask):
    keep = np.ones((b, tq, tk), bool)
    kwargs = {"use_causal_mask": causal}
    if causal:
        keep &= np.tril(np.ones((tq, tk), bool))
    if with_lengths:
        lengths = rng.integers(0, tk + 1, size=b)
        lengths[0] = 0  # a sequence with no keys at all
        kwargs["key_lengths"] = lengths
        keep &= (np.arange(tk)[None, :] < lengths[:, None])[:, None, :]
    if with_query_mask:
        query_mask = rng.random((b, tq)) > 0.3
        kwargs["query_mask"] = query_mask
        keep &= query_mask[:, :, None]
    return keep, kwargs


@pytest.mark.parametrize("shape", [(1, 1, 1, 1, 1, 1), (2, 5, 9, 3, 4, 2), (3, 8, 8, 2, 1, 5)])
@pytest.mark.parametrize("block_size", [1, 3, 8, 100])
@pytest.mark.parametrize(
    "causal,lengths,query_mask",
    [
        (False, False, False),
        (True, False, False),
        (False, True, True),
        (True, True, True),
    ],
)
def test_equals_float64_numpy(shape, block_size, causal, lengths, query_mask):
    b, tq, tk, h, d, dv = shape
    q, k = rng.standard_normal((b, tq, h, d)), rng.standard_normal((b, tk, h, d))
    v = rng.standard_normal((b, tk, h, dv))
    keep, kwargs = masks(b, tq, tk, causal, lengths, query_mask)
    out = blockwise_attention(
        tf.constant(q), tf.constant(k), tf.constant(v), block_size=block_size, **kwargs
    )
    np.testing.assert_allclose(out.numpy(), numpy_attention(q, k, v, keep), atol=1e-12)


def test_key_mask_and_attention_mask_are_sliced_per_block():
    b, tq, tk, h, d = 2, 4, 7, 2, 3
    q, k, v = (rng.standard_normal((b, t, h, d)) for t in (tq, tk, tk))
    key_mask = rng.random((b, tk)) > 0.4
    attention_mask = rng.random((b, tq, tk)) > 0.3
    out = blockwise_attention(
        *map(tf.constant, (q, k, v)), key_mask=key_mask, attention_mask=attention_mask, block_size=3
    )
    keep = attention_mask & key_mask[:, None, :]
    np.testing.assert_allclose(out.numpy(), numpy_attention(q, k, v, keep), atol=1e-12)


@pytest.mark.parametrize(
    "causal,padding", [(False, False), (True, False), (False, True), (True, True)]
)
def test_outputs_and_gradients_equal_the_plain_path_in_float32(causal, padding):
    b, t, h, d = 2, 37, 3, 8
    q, k, v, up = (
        tf.constant(rng.standard_normal(s), tf.float32) for s in [(b, t, h, d)] * 3 + [(b, t, h, d)]
    )
    lengths = tf.constant([t, 20]) if padding else None
    mask = attnkit.attention_mask(
        q[:, :, 0], k[:, :, 0], key_lengths=lengths, use_causal_mask=causal
    )
    with tf.GradientTape(persistent=True) as tape:
        tape.watch([q, k, v])
        fast = blockwise_attention(
            q, k, v, key_lengths=lengths, use_causal_mask=causal, block_size=8
        )
        plain, _ = multi_head_scaled_dot_attention(q, k, v, mask)
    np.testing.assert_allclose(fast.numpy(), plain.numpy(), rtol=1e-5, atol=1e-5)
    for mine, theirs in zip(
        tape.gradient(fast, [q, k, v], output_gradients=up),
        tape.gradient(plain, [q, k, v], output_gradients=up),
        strict=True,
    ):
        np.testing.assert_allclose(mine.numpy(), theirs.numpy(), rtol=1e-4, atol=1e-5)


def test_no_tensor_of_the_score_size_in_forward_or_backward():
    b, t, h, d, block = 1, 64, 2, 4, 16
    q, k, v = (tf.constant(rng.standard_normal((b, t, h, d)), tf.float32) for _ in range(3))

    def shapes_in(implementation):
        @tf.function
        def step(q, k, v):
            with tf.GradientTape() as tape:
                tape.watch([q, k, v])
                if implementation == "blockwise":
                    out = blockwise_attention(
                        q, k, v, key_lengths=[50], use_causal_mask=True, block_size=block
                    )
                else:
                    mask = attnkit.attention_mask(
                        q[:, :, 0], k[:, :, 0], key_lengths=[50], use_causal_mask=True
                    )
                    out, _ = multi_head_scaled_dot_attention(q, k, v, mask)
                loss = tf.reduce_sum(out * out)
            return tape.gradient(loss, [q, k, v])

        graph = step.get_concrete_function(q, k, v).graph
        return [
            tuple(o.shape)
            for op in graph.get_operations()
            for o in op.outputs
            if o.shape.rank and o.shape.rank >= 2
        ]

    def full_scores(shape):
        return shape[-1] == t and shape[-2] == t

    assert any(full_scores(s) for s in shapes_in("plain"))  # the check can see one
    assert not any(full_scores(s) for s in shapes_in("blockwise"))


def copy_layer(layer, implementation, inputs):
    config = layer.get_config() | {"implementation": implementation}
    twin = type(layer).from_config(config)
    twin(*inputs)
    twin.set_weights(layer.get_weights())
    return twin


@pytest.mark.parametrize("implementation", ["blockwise", "fused"])
def test_multi_head_attention_paths_agree(implementation):
    x = tf.constant(rng.standard_normal((2, 13, 16)), tf.float32)
    memory = tf.constant(rng.standard_normal((2, 9, 12)), tf.float32)
    layer = attnkit.MultiHeadAttention(num_heads=4, key_dim=5, implementation="plain", block_size=4)
    layer(x, memory)
    twin = copy_layer(layer, implementation, (x, memory))
    value_mask = rng.random((2, 9)) > 0.3
    value_mask[1] = False  # every key of one example masked: zero heads, output = bias
    for kwargs in (
        {},
        {"value_mask": value_mask},
        {"key_lengths": tf.constant([9, 4])},
        {"use_causal_mask": True, "key_lengths": tf.constant([9, 4])},
    ):
        np.testing.assert_allclose(
            twin(x, memory, **kwargs).numpy(),
            layer(x, memory, **kwargs).numpy(),
            rtol=1e-5,
            atol=1e-5,
        )


@pytest.mark.parametrize(
    "make",
    [
        lambda impl: attnkit.MultiHeadSelfAttention(
            num_heads=2, key_dim=4, use_causal_mask=True, implementation=impl, block_size=3
        ),
        lambda impl: attnkit.SelfAttention(
            key_dim=4, use_causal_mask=True, implementation=impl, block_size=3
        ),
    ],
    ids=["MultiHeadSelfAttention", "SelfAttention"],
)
def test_self_attention_blockwise_agrees_and_trains(make, tmp_path):
    x = tf.constant(rng.standard_normal((2, 10, 6)), tf.float32)
    lengths = tf.constant([10, 6])
    plain = make("plain")
    plain(x)
    fast = copy_layer(plain, "blockwise", (x,))
    np.testing.assert_allclose(
        fast(x, key_lengths=lengths).numpy(),
        plain(x, key_lengths=lengths).numpy(),
        rtol=1e-5,
        atol=1e-5,
    )
    jitted = tf.function(lambda inputs: fast(inputs), jit_compile=True)
    np.testing.assert_allclose(jitted(x).numpy(), plain(x).numpy(), rtol=1e-5, atol=1e-5)
    with tf.GradientTape() as tape:
        loss = tf.reduce_sum(fast(x) ** 2)
    grads = tape.gradient(loss, fast.trainable_variables)
    with tf.GradientTape() as tape:
        loss = tf.reduce_sum(plain(x) ** 2)
    for mine, theirs in zip(grads, tape.gradient(loss, plain.trainable_variables), strict=True):
        if theirs is not None:
            np.testing.assert_allclose(mine.numpy(), theirs.numpy(), rtol=1e-4, atol=1e-5)


def test_options_that_need_the_weights_are_refused():
    with pytest.raises(ValueError, match="Received: dropout=0.1"):
        attnkit.MultiHeadAttention(2, 4, dropout=0.1, implementation="blockwise")
    with pytest.raises(ValueError, match="Received: implementation='fast'"):
        attnkit.MultiHeadAttention(2, 4, implementation="fast")
    with pytest.raises(ValueError, match="Received: block_size=0"):
        attnkit.MultiHeadAttention(2, 4, implementation="blockwise", block_size=0)
    layer = attnkit.MultiHeadAttention(2, 4, implementation="blockwise")
    x = tf.ones((1, 3, 4))
    with pytest.raises(ValueError, match="return_attention_scores=True"):
        layer(x, x, return_attention_scores=True)


def test_config_round_trip_keeps_the_implementation(tmp_path):
    inputs = keras.Input((12, 8))
    layer = attnkit.MultiHeadSelfAttention(2, 4, implementation="blockwise", block_size=5)
    model = keras.Model(inputs, layer(inputs))
    path = tmp_path / "model.keras"
    model.save(path)
    loaded = keras.models.load_model(path)
    x = rng.standard_normal((2, 12, 8)).astype("float32")
    np.testing.assert_allclose(loaded.predict(x, verbose=0), model.predict(x, verbose=0), rtol=1e-6)
    assert loaded.layers[-1].get_config()["implementation"] == "blockwise"
    assert loaded.layers[-1].get_config()["block_size"] == 5


def test_blocks_run_one_after_another_in_a_graph():
    """A graph executor may run independent ops in any order, so the saving only holds if every
    block's (Tq × block) tensors depend on the previous block's results: otherwise it can
    compute, say, all the backward pass's dO·Vᵀ blocks first and hold them all at once."""
    b, t, h, d = 1, 32, 2, 3  # d differs from every block size, so shapes cannot be confused

    def block_tensors(blocks):
        block = t // blocks
        q, k, v = (tf.constant(rng.standard_normal((b, t, h, d)), tf.float32) for _ in range(3))

        @tf.function
        def step(q, k, v):
            with tf.GradientTape() as tape:
                tape.watch([q, k, v])
                out = blockwise_attention(q, k, v, use_causal_mask=True, block_size=block)
                loss = tf.reduce_sum(out * out)
            return tape.gradient(loss, [q, k, v])

        graph = step.get_concrete_function(q, k, v).graph
        ancestors = {}

        def ancestors_of(op):
            if op.name not in ancestors:
                found = set()
                for parent in [i.op for i in op.inputs] + list(op.control_inputs):
                    found |= {parent.name} | ancestors_of(parent)
                ancestors[op.name] = found
            return ancestors[op.name]

        sized = [
            op
            for op in graph.get_operations()
            if any(o.dtype.is_floating and tuple(o.shape) == (b, h, t, block) for o in op.outputs)
        ]
        return sized, ancestors_of

    for blocks in (4, 8):
        sized, ancestors_of = block_tensors(blocks)
        concurrent = max(
            sum(
                1
                for other in sized
                if other is not op
                and other.name not in ancestors_of(op)
                and op.name not in ancestors_of(other)
            )
            for op in sized
        )
        per_block = len(sized) / blocks
        # Only the tensors of one block may be unordered among themselves, however many blocks.
        assert concurrent <= per_block, (blocks, concurrent, per_block)


@pytest.mark.parametrize("num_keys", [1, 127, 128, 2048, 2049, 8192, 100_000])
def test_default_blocks_are_small_and_few(num_keys):
    from attnkit.attention.blockwise import default_block_size

    size = default_block_size(num_keys)
    assert size >= 128
    assert -(-num_keys // size) <= 16  # blocks
    if num_keys <= 16 * 128:
        assert size == 128


def test_the_default_block_size_gives_the_same_result():
    q, k, v = (tf.constant(rng.standard_normal((2, 300, 2, 4)), tf.float32) for _ in range(3))
    np.testing.assert_allclose(
        blockwise_attention(q, k, v, use_causal_mask=True).numpy(),
        numpy_attention(
            *(t.numpy().astype(np.float64) for t in (q, k, v)),
            np.broadcast_to(np.tril(np.ones((300, 300), bool)), (2, 300, 300)),
        ),
        rtol=1e-4,
        atol=1e-5,
    )
    with pytest.raises(ValueError, match="Received: block_size=0"):
        blockwise_attention(q, k, v, block_size=0)


def test_auto_goes_blockwise_only_in_a_compiled_call_with_enough_keys(monkeypatch):
    from attnkit.attention import multi_head

    calls = []

    def recording(*args, **kwargs):
        calls.append(args[1].shape[1])
        return attend_in_blocks(*args, **kwargs)

    monkeypatch.setattr(multi_head, "attend_in_blocks", recording)
    layer = attnkit.MultiHeadSelfAttention(2, 4, use_causal_mask=True)
    long_input = tf.constant(rng.standard_normal((2, 256, 8)), tf.float32)
    short_input = long_input[:, :128]

    eager = layer(long_input)
    assert calls == []  # op by op: the plain path
    compiled = tf.function(lambda x: layer(x))(long_input)
    assert calls == [256]
    np.testing.assert_allclose(compiled.numpy(), eager.numpy(), rtol=1e-4, atol=1e-5)
    tf.function(lambda x: layer(x))(short_input)  # one block only: plain
    tf.function(lambda x: layer(x, return_attention_scores=True))(long_input)
    assert calls == [256]


# ------------------------------------------------------- the two passes, one at a time
def reference_heads(q, k, v, keep):
    """float64 NumPy (grader.reference): every head's softmax over its kept keys, then the
    pooled values; (B, Tq, H, d_v)."""
    heads = []
    for h in range(q.shape[2]):
        alpha = ref.masked_softmax(ref.scaled_dot_scores(q[:, :, h], k[:, :, h]), keep)
        heads.append(ref.attend(alpha, v[:, :, h]))
    return np.stack(heads, axis=2)


def pass_case(seed=11, b=2, tq=4, tk=7, h=2, d=3, dv=2):
    """Inputs, a `Masks` with every kind of mask (one example has no key at all, some queries
    are masked), and the (B, Tq, Tk) keep-mask it means."""
    case_rng = np.random.default_rng(seed)
    q, k = case_rng.standard_normal((b, tq, h, d)), case_rng.standard_normal((b, tk, h, d))
    v = case_rng.standard_normal((b, tk, h, dv))
    lengths = np.array([0, tk - 1][:b])
    key_mask = case_rng.random((b, tk)) > 0.2
    query_mask = np.array([[True] * tq, [True, False] * (tq // 2) + [True] * (tq % 2)])[:b]
    attention_mask = case_rng.random((tq, tk)) > 0.2
    masks = masking.Masks(query_mask, key_mask, lengths, attention_mask, use_causal_mask=True)
    keep = (
        ref.length_mask(lengths, tk)[:, None, :]
        & key_mask[:, None, :]
        & query_mask[:, :, None]
        & attention_mask[None]
        & ref.causal_mask(tq, tk)[None]
    )
    return (q, k, v), masks, keep


def test_block_plan():
    q, k = tf.zeros((1, 2, 1, 4), tf.float64), tf.zeros((1, 7, 1, 4), tf.float64)
    plan = BlockPlan.make(q, k, block_size=3)
    assert plan.bounds == ((0, 3), (3, 6), (6, 7))
    assert plan.scale == 0.5 and plan.dtype == "float64"
    assert BlockPlan.make(tf.cast(q, tf.float16), k).dtype == "float32"
    assert BlockPlan.make(q, k).bounds == ((0, 7),)
    with pytest.raises(ValueError, match="Received: block_size=0"):
        BlockPlan.make(q, k, block_size=0)


@pytest.mark.parametrize("block_size", [1, 3, 7])
def test_forward_pass_gives_the_output_and_the_log_normaliser(block_size):
    (q, k, v), masks, keep = pass_case()
    plan = BlockPlan.make(tf.constant(q), tf.constant(k), block_size)
    output, logsumexp = blockwise_forward(*map(tf.constant, (q, k, v)), masks, plan)
    assert output.dtype == tf.float64 and logsumexp.dtype == tf.float64
    np.testing.assert_allclose(output.numpy(), reference_heads(q, k, v, keep), atol=1e-12)
    # L = log Σ_j e^(s_j) over the kept keys; a query with no kept key gets 1e9 (e^(s - L) = 0).
    scores = np.einsum("bqhd,bkhd->bhqk", q, k) / np.sqrt(q.shape[-1])
    kept = np.broadcast_to(keep[:, None], scores.shape)
    has_key = kept.any(-1, keepdims=True)
    sums = np.where(kept, np.exp(scores), 0.0).sum(-1, keepdims=True)
    expected = np.log(sums, out=np.zeros_like(sums), where=has_key)
    assert not has_key.all() and has_key.any()
    np.testing.assert_allclose(logsumexp.numpy()[has_key], expected[has_key], atol=1e-12)
    np.testing.assert_array_equal(logsumexp.numpy()[~has_key], 1e9)


@pytest.mark.parametrize("block_size", [1, 3, 7])
def test_backward_pass_equals_finite_differences_of_the_reference(block_size):
    (q, k, v), masks, keep = pass_case()
    upstream = np.random.default_rng(12).standard_normal((*q.shape[:-1], v.shape[-1]))
    tensors = [tf.constant(t) for t in (q, k, v)]
    plan = BlockPlan.make(*tensors[:2], block_size)
    output, logsumexp = blockwise_forward(*tensors, masks, plan)
    mine = blockwise_backward(*tensors, output, logsumexp, tf.constant(upstream), masks, plan)

    def loss(position):
        def f(x):
            inputs = [q, k, v]
            inputs[position] = x
            return np.sum(upstream * reference_heads(*inputs, keep))

        return f

    for position, (gradient, x) in enumerate(zip(mine, (q, k, v), strict=True)):
        assert gradient.dtype == tf.float64
        np.testing.assert_allclose(
            gradient.numpy(), numeric_gradient(loss(position), x), rtol=1e-6, atol=1e-8
        )


def test_attend_in_blocks_uses_the_backward_pass_as_its_gradient():
    (q, k, v), masks, _ = pass_case()
    tensors = [tf.constant(t) for t in (q, k, v)]
    upstream = tf.constant(np.random.default_rng(13).standard_normal((*q.shape[:-1], 2)))
    with tf.GradientTape() as tape:
        tape.watch(tensors)
        out = attend_in_blocks(*tensors, masks, block_size=2)
    plan = BlockPlan.make(*tensors[:2], 2)
    output, logsumexp = blockwise_forward(*tensors, masks, plan)
    expected = blockwise_backward(*tensors, output, logsumexp, upstream, masks, plan)
    for mine, theirs in zip(
        tape.gradient(out, tensors, output_gradients=upstream), expected, strict=True
    ):
        np.testing.assert_array_equal(mine.numpy(), theirs.numpy())


# -------------------------------------------------------------- masks, one block at a time
def test_the_blockwise_path_of_a_layer_never_builds_the_whole_mask(monkeypatch):
    """`MultiHeadAttention.call` used to build the (B, Tq, Tk) mask before choosing a path;
    the blockwise path now asks for one block of keys at a time, the plain path for all."""
    widths = []
    original = masking.attention_mask

    def recording(query, key, **kwargs):
        widths.append(key.shape[1])
        return original(query, key, **kwargs)

    monkeypatch.setattr(masking, "attention_mask", recording)
    x = tf.constant(rng.standard_normal((2, 12, 8)), tf.float32)
    kwargs = {"query_mask": np.ones((2, 12), bool), "key_lengths": [12, 5]}
    for implementation, expected in (("blockwise", [4, 4, 4] * 2), ("plain", [12])):
        layer = attnkit.MultiHeadAttention(2, 4, implementation=implementation, block_size=4)
        widths.clear()
        with tf.GradientTape() as tape:
            tape.watch(x)
            out = layer(x, x, use_causal_mask=True, **kwargs)
        tape.gradient(out, x)
        assert widths == expected, implementation  # blockwise: 3 blocks, forward and backward


# ---------------------------------------------------------------------- path choice
def test_choose_implementation():
    f32, f64 = tf.zeros((1, 300, 2, 4)), tf.zeros((1, 300, 2, 4), tf.float64)
    choose = dispatch.choose_implementation
    assert choose("fused", False, False, key=f32) == "fused"
    assert choose("fused", False, False, key=f64) == "plain"  # float64 never goes fused
    assert choose("blockwise", False, False, key=f64) == "blockwise"
    assert choose("auto", False, False, key=f32) == "plain"  # op by op
    assert choose("auto", True, False, key=f32) == "plain"

    @tf.function
    def compiled(key):
        return tf.constant(choose("auto", False, False, key=key) == "blockwise")

    assert compiled(f32) and compiled(f64)
    assert not compiled(f32[:, :255])
    assert dispatch.AUTO_BLOCKWISE_KEYS == 256
    with pytest.raises(ValueError, match="Received: return_attention_scores=True"):
        choose("fused", True, False)
    with pytest.raises(ValueError, match="Received: implementation='fast'"):
        dispatch.check_implementation("fast", dispatch.IMPLEMENTATIONS, 0.0)
    with pytest.raises(ValueError, match="Received: dropout=0.5"):
        dispatch.check_implementation("blockwise", dispatch.IMPLEMENTATIONS, 0.5)


@pytest.mark.parametrize("implementation", ["plain", "blockwise", "fused", "auto"])
def test_float64_stays_float64_on_every_path(implementation):
    """On TensorFlow (JAX and PyTorch: tests/support/jax_backend_checks.py)."""
    case_rng = np.random.default_rng(21)
    x = case_rng.standard_normal((3, 9, 6))
    kwargs, keep = layers.random_masks("all", case_rng, 3, 9, 9)
    layer = attnkit.MultiHeadAttention(
        2, 3, implementation=implementation, block_size=4, dtype="float64"
    )
    layer(x, x)
    expected, _ = hr.multi_head_attention(x, x, x, layers.random_weights(layer, case_rng), keep)
    out = layer(x, x, **kwargs)
    assert out.dtype == tf.float64
    np.testing.assert_allclose(out.numpy(), expected, rtol=1e-10, atol=1e-10)
