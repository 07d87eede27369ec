"""Run by test_jax_backend.py in a process of its own with KERAS_BACKEND=jax (the backend is
fixed when Keras is first imported): multi-head attention on JAX, op by op and under jax.jit,
where "auto" takes the blockwise path with its custom gradient."""

import os
import sys

assert os.environ.get("KERAS_BACKEND") == "jax"
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import keras  # noqa: E402
import numpy as np  # noqa: E402

import attnkit  # noqa: E402
from attnkit.attention import multi_head  # noqa: E402
from grader.reference import heads as hr  # noqa: E402
from tests.support import layers  # noqa: E402

assert keras.backend.backend() == "jax"
rng = np.random.default_rng(3)
b, t, d = 3, 300, 8
x = rng.normal(size=(b, t, d)).astype("float32")
kwargs, keep = layers.random_masks("all", rng, b, t, t)
kwargs.pop("attention_mask")  # given whole it is (B, T, T); the masks that scale stay
keep = np.ones((b, t, t), bool)
keep &= kwargs["value_mask"][:, None, :]
keep &= (np.arange(t)[None, :] < kwargs["key_lengths"][:, None])[:, None, :]
keep &= np.tril(np.ones((t, t), bool))[None]
keep &= kwargs["query_mask"][:, :, None]

paths = []
original = multi_head.blockwise_attention
multi_head.blockwise_attention = lambda *a, **k: (paths.append("blockwise"), original(*a, **k))[1]

layer = attnkit.MultiHeadAttention(num_heads=2, key_dim=4)
layer(x[:, :4], x[:, :4])
weights = layers.random_weights(layer, rng)
expected, _ = hr.multi_head_attention(x, x, x, weights, keep)

eager = np.asarray(layer(x, x, **kwargs))
np.testing.assert_allclose(eager, expected, rtol=1e-4, atol=1e-4)
assert paths == [], paths

trainable = [w.value for w in layer.trainable_variables]


def loss(trainable, x, implementation):
    layer.implementation = implementation
    out, _ = layer.stateless_call(trainable, [], x, x, **kwargs)
    return jnp.sum(out * jnp.cos(out)), out


grad = jax.jit(jax.value_and_grad(loss, argnums=(0, 1), has_aux=True), static_argnums=2)
(_, compiled), (d_weights, d_x) = grad(trainable, x, "auto")
assert paths == ["blockwise"], paths  # traced once, with the blockwise path
np.testing.assert_allclose(np.asarray(compiled), expected, rtol=1e-4, atol=1e-4)
(_, plain), (plain_d_weights, plain_d_x) = grad(trainable, x, "plain")
assert paths == ["blockwise"], paths
np.testing.assert_allclose(np.asarray(d_x), np.asarray(plain_d_x), rtol=1e-4, atol=1e-5)
for mine, theirs in zip(d_weights, plain_d_weights, strict=True):
    # The key bias's gradient is 0 up to rounding (it adds the same q·b to every key's score).
    np.testing.assert_allclose(np.asarray(mine), np.asarray(theirs), rtol=1e-4, atol=1e-4)
assert np.abs(np.asarray(d_x)).max() > 0
print("jax backend: ok")
