"""Run by test_jax_backend.py in a process of its own (Keras fixes its backend when first
imported), with KERAS_BACKEND=jax or KERAS_BACKEND=torch:

- on JAX: multi-head attention op by op and under jax.jit, where "auto" takes the blockwise path
  with its custom gradient;
- on JAX and PyTorch: float64 stays float64 on every path of MultiHeadAttention ("plain",
  "blockwise", "fused", "auto"; on JAX also "blockwise" and "plain" under jax.jit) and of
  SelfAttention, and agrees with the float64 NumPy reference to 1e-10, outputs and gradients;
  so do a Transformer decoder block (RMSNorm, SwiGLU, grouped-query attention, rotary
  positions), LayerNorm and the GELU feed-forward network, and attnkit's Dense;
- with ATTNKIT_FLOAT64_OUTPUTS=FILE, the float64 outputs of the layers built on Keras's saved there
  (tests/support/float64_outputs.py), which the test compares with TensorFlow's.
"""

import os
import sys

BACKEND = os.environ.get("KERAS_BACKEND")
assert BACKEND in ("jax", "torch"), BACKEND
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))

import keras  # noqa: E402
import numpy as np  # noqa: E402

import attnkit  # noqa: E402
from attnkit.attention import multi_head  # noqa: E402
from grader.reference import attention as ref  # noqa: E402
from grader.reference import heads as hr  # noqa: E402
from tests.support import layers  # noqa: E402
from tests.support import transformer_reference as tr  # noqa: E402

assert keras.backend.backend() == BACKEND
PATHS = ("plain", "blockwise", "fused", "auto")

paths = []
original = multi_head.attend_in_blocks
multi_head.attend_in_blocks = lambda *a, **k: (paths.append("blockwise"), original(*a, **k))[1]


def dtype_of(tensor):
    return keras.backend.standardize_dtype(tensor.dtype)


def loss_and_input_gradient(layer, x, kwargs):
    """The layer's output on (x, x) and the gradient of Σ out·cos(out) with respect to x."""
    if BACKEND == "jax":
        import jax
        import jax.numpy as jnp

        def loss(x):
            out = layer(x, x, **kwargs)
            return jnp.sum(out * jnp.cos(out)), out

        (_, out), grad = jax.value_and_grad(loss, has_aux=True)(jnp.asarray(x))
        return out, grad
    import torch

    x = torch.tensor(x, requires_grad=True)
    out = layer(x, x, **kwargs)
    torch.sum(out * torch.cos(out)).backward()
    return out.detach(), x.grad


def check_float64_paths():
    """Every implementation, op by op: float64 out, float64 gradients, the reference's values."""
    rng = np.random.default_rng(5)
    b, t, d = 3, 16, 6  # two blocks of 8 keys: one shape, compiled once op by op on JAX
    x = rng.normal(size=(b, t, d))
    kwargs, keep = layers.random_masks("all", rng, b, t, t)
    reference = attnkit.MultiHeadAttention(num_heads=2, key_dim=3, dtype="float64")
    reference(x[:, :2], x[:, :2])
    expected, _ = hr.multi_head_attention(x, x, x, layers.random_weights(reference, rng), keep)
    gradients = {}
    for implementation in PATHS:
        layer = attnkit.MultiHeadAttention(
            num_heads=2, key_dim=3, implementation=implementation, block_size=8, dtype="float64"
        )
        layer(x[:, :2], x[:, :2])
        layer.set_weights(reference.get_weights())
        out, gradients[implementation] = loss_and_input_gradient(layer, x, kwargs)
        assert dtype_of(out) == "float64", (implementation, out.dtype)
        assert dtype_of(gradients[implementation]) == "float64", implementation
        np.testing.assert_allclose(
            keras.ops.convert_to_numpy(out), expected, rtol=1e-10, atol=1e-10
        )
    plain = keras.ops.convert_to_numpy(gradients["plain"])
    assert np.abs(plain).max() > 0
    for implementation in PATHS:
        np.testing.assert_allclose(
            keras.ops.convert_to_numpy(gradients[implementation]), plain, rtol=1e-10, atol=1e-10
        )


def check_float64_self_attention():
    """SelfAttention on both its paths: float64 out, the reference's values (padding masks the
    keys and the queries, as the layer says)."""
    rng = np.random.default_rng(6)
    b, t, d, key_dim = 2, 10, 5, 4
    x = rng.normal(size=(b, t, d))
    lengths = np.array([t, 6], "int32")
    real = ref.length_mask(lengths, t)
    keep = real[:, :, None] & real[:, None, :] & ref.causal_mask(t, t)[None]
    kernels = [rng.normal(scale=0.5, size=(d, key_dim)) for _ in range(3)]
    q, k, v = (np.einsum("btd,dk->btk", x, kernel) for kernel in kernels)
    alpha = ref.masked_softmax(np.einsum("bik,bjk->bij", q, k) / np.sqrt(key_dim), keep)
    expected = ref.attend(alpha, v)
    for implementation in ("plain", "blockwise"):
        layer = attnkit.SelfAttention(
            key_dim,
            use_causal_mask=True,
            implementation=implementation,
            block_size=3,
            dtype="float64",
        )
        layer(x)
        layer.set_weights(kernels)
        out = layer(x, key_lengths=lengths)
        assert dtype_of(out) == "float64", (implementation, out.dtype)
        np.testing.assert_allclose(
            keras.ops.convert_to_numpy(out), expected, rtol=1e-10, atol=1e-10
        )


def check_jax_float32_and_jit():
    """The float32 checks on JAX, then the same call in float64 under jax.jit."""
    import jax
    import jax.numpy as jnp

    rng = np.random.default_rng(3)
    b, t, d = 2, 260, 8  # just past AUTO_BLOCKWISE_KEYS (256): a compiled call goes blockwise
    x = rng.normal(size=(b, t, d)).astype("float32")
    kwargs, keep = layers.random_masks("all", rng, b, t, t)
    kwargs.pop("attention_mask")  # given whole it is (B, T, T); the masks that scale stay
    keep = np.ones((b, t, t), bool)
    keep &= kwargs["value_mask"][:, None, :]
    keep &= (np.arange(t)[None, :] < kwargs["key_lengths"][:, None])[:, None, :]
    keep &= np.tril(np.ones((t, t), bool))[None]
    keep &= kwargs["query_mask"][:, :, None]

    layer = attnkit.MultiHeadAttention(num_heads=2, key_dim=4)
    layer(x[:, :4], x[:, :4])
    weights = layers.random_weights(layer, rng)
    expected, _ = hr.multi_head_attention(x, x, x, weights, keep)

    eager = keras.ops.convert_to_numpy(layer(x, x, **kwargs))
    np.testing.assert_allclose(eager, expected, rtol=1e-4, atol=1e-4)
    assert paths == [], paths

    def jitted_grad(layer, kwargs):
        def loss(trainable, x, implementation):
            layer.implementation = implementation
            out, _ = layer.stateless_call(trainable, [], x, x, **kwargs)
            return jnp.sum(out * jnp.cos(out)), out

        return jax.jit(jax.value_and_grad(loss, argnums=(0, 1), has_aux=True), static_argnums=2)

    grad = jitted_grad(layer, kwargs)
    trainable = [w.value for w in layer.trainable_variables]
    (_, compiled), (d_weights, d_x) = grad(trainable, x, "auto")
    assert paths == ["blockwise"], paths  # traced once, with the blockwise path
    np.testing.assert_allclose(keras.ops.convert_to_numpy(compiled), expected, rtol=1e-4, atol=1e-4)
    (_, plain), (plain_d_weights, plain_d_x) = grad(trainable, x, "plain")
    assert paths == ["blockwise"], paths
    np.testing.assert_allclose(
        keras.ops.convert_to_numpy(d_x), keras.ops.convert_to_numpy(plain_d_x), rtol=1e-4, atol=1e-5
    )
    for mine, theirs in zip(d_weights, plain_d_weights, strict=True):
        # The key bias's gradient is 0 up to rounding (it adds the same q·b to every key's score).
        np.testing.assert_allclose(
            keras.ops.convert_to_numpy(mine),
            keras.ops.convert_to_numpy(theirs),
            rtol=1e-4,
            atol=1e-4,
        )
    assert np.abs(keras.ops.convert_to_numpy(d_x)).max() > 0

    # float64 under jax.jit, on both paths a compiled call can take (on a few keys, in blocks of
    # 8: the path, not the size, is what keeps or loses float64): float64 out and gradients,
    # the reference's values.
    jax.config.update("jax_enable_x64", True)
    t = 24
    x64 = rng.normal(size=(b, t, d))
    kwargs, keep = layers.random_masks("all", rng, b, t, t)
    layer64 = attnkit.MultiHeadAttention(num_heads=2, key_dim=4, block_size=8, dtype="float64")
    layer64(x64[:, :4], x64[:, :4])
    expected, _ = hr.multi_head_attention(x64, x64, x64, layers.random_weights(layer64, rng), keep)
    grad = jitted_grad(layer64, kwargs)
    trainable = [w.value for w in layer64.trainable_variables]
    results = {}
    for implementation in ("blockwise", "plain"):
        (_, out), (_, d_x) = grad(trainable, x64, implementation)
        assert dtype_of(out) == "float64" and dtype_of(d_x) == "float64", implementation
        np.testing.assert_allclose(
            keras.ops.convert_to_numpy(out), expected, rtol=1e-10, atol=1e-10
        )
        results[implementation] = keras.ops.convert_to_numpy(d_x)
    assert paths == ["blockwise", "blockwise"], paths
    np.testing.assert_allclose(results["blockwise"], results["plain"], rtol=1e-9, atol=1e-10)


def check_jax_float64_without_asking():
    """Issue 33: importing attnkit is enough for a float64 layer on JAX to compute in float64
    (JAX alone would store its weights and inputs as float32), and a float32 layer given
    float64 inputs still computes in float32."""
    rng = np.random.default_rng(7)
    x = rng.normal(size=(2, 5, 6))
    layer64 = attnkit.MultiHeadAttention(num_heads=2, key_dim=3, dtype="float64")
    layer64(x[:, :2], x[:, :2])
    expected, _ = hr.multi_head_attention(x, x, x, layers.random_weights(layer64, rng))
    out = layer64(x, x)
    assert dtype_of(out) == "float64", out.dtype
    np.testing.assert_allclose(keras.ops.convert_to_numpy(out), expected, rtol=1e-10, atol=1e-10)
    assert dtype_of(attnkit.MultiHeadAttention(num_heads=2, key_dim=3)(x, x)) == "float32"


def check_float64_transformer():
    """A LLaMA-style decoder block (RMSNorm, SwiGLU, one key/value head, rotary positions,
    cross-attention) in float64 against the NumPy block; layer norm and GELU on their own (a
    whole second block costs seconds of op-by-op compilation on JAX)."""
    rng = np.random.default_rng(11)
    x, memory = rng.normal(size=(2, 5, 4)), rng.normal(size=(2, 3, 4))
    decoder = attnkit.TransformerDecoderBlock(
        2,
        7,
        num_key_value_heads=1,
        norm_first=True,
        normalization="rms",
        activation="swiglu",
        use_rotary=True,
        dtype="float64",
    )
    decoder.build((2, 5, 4), (2, 3, 4))
    layers.random_weights(decoder, rng, scale=0.4)
    out = decoder(x, memory)
    assert dtype_of(out) == "float64", out.dtype
    np.testing.assert_allclose(
        keras.ops.convert_to_numpy(out), tr.decoder_block(x, decoder, memory), atol=1e-10
    )
    norm = attnkit.LayerNorm(dtype="float64")
    norm.build(x.shape)
    layers.random_weights(norm, rng)
    np.testing.assert_allclose(
        keras.ops.convert_to_numpy(norm(x)), tr.layer_norm(x, norm), atol=1e-12
    )
    gelu = attnkit.FeedForward(6, "gelu", dtype="float64")
    gelu.build(x.shape)
    layers.random_weights(gelu, rng)
    np.testing.assert_allclose(
        keras.ops.convert_to_numpy(gelu(x)), tr.feed_forward(x, gelu), atol=1e-12
    )


def check_float64_dense():
    """attnkit's Dense, on which the feed-forward network and the Luong, Bahdanau, hierarchical
    and NTM layers build (Keras's multiplies float64 in float32 on PyTorch, and its tanh returns
    float32 on both backends), and LuongAttention's tanh(W_c [c; h]) through it."""
    rng = np.random.default_rng(12)
    x = rng.normal(size=(2, 3, 4))
    dense = attnkit.precision.Dense(5, activation="tanh", dtype="float64")
    dense.build(x.shape)
    w = layers.random_weights(dense, rng)
    out = dense(x)
    assert dtype_of(out) == "float64", out.dtype
    expected = np.tanh(x @ w["kernel"] + w["bias"])
    np.testing.assert_allclose(keras.ops.convert_to_numpy(out), expected, atol=1e-13)
    luong = attnkit.LuongAttention(4, score="dot", dtype="float64")
    assert dtype_of(luong(x, rng.normal(size=(2, 5, 4)))) == "float64"


def save_float64_outputs():
    """The float64 outputs of tests/support/float64_outputs.py's layers into the file that
    ATTNKIT_FLOAT64_OUTPUTS names, for the test to compare with TensorFlow's."""
    path = os.environ.get("ATTNKIT_FLOAT64_OUTPUTS")
    if path:
        from tests.support import float64_outputs

        np.savez(path, **float64_outputs.outputs(compiled=BACKEND == "jax"))


if BACKEND == "jax":
    check_jax_float64_without_asking()
    check_jax_float32_and_jit()  # first: it turns float64 on (jax_enable_x64) at its end
check_float64_paths()
check_float64_self_attention()
check_float64_transformer()
check_float64_dense()
save_float64_outputs()
print(f"{BACKEND} backend: ok")
