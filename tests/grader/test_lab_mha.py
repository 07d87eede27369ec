"""Lab mha (multi-head attention) graded end to end: what the graded reference shows, a correct
alternative and planted mistakes (full marks and the stub: tests/grader/test_records.py)."""

import pytest

from grader.grading import grade
from tests.grader.test_records import HIDDEN_SEEDS
from tests.support.grading import (
    assert_full_marks,
    reference_result,
    submit,
)
from tests.support.planting import from_table, patched

pytestmark = pytest.mark.labs

LAB = "mha"


def test_reference_is_checked_for_the_gradients_of_every_kernel():
    result = reference_result(LAB, HIDDEN_SEEDS[LAB])
    names = [check.name for part in result.parts for check in part.checks]
    for weight in ("query_kernel", "key_kernel", "value_kernel", "output_kernel"):
        assert any(name.startswith(f"gradient wrt {weight},") for name in names)


LAYER = """
class MultiHeadAttention(keras.layers.Layer):
    def __init__(self, num_heads, key_dim, value_dim=None, output_dim=None, **kwargs):
        super().__init__(**kwargs)
        self.num_heads, self.key_dim = num_heads, key_dim
        self.value_dim, self.output_dim = value_dim or key_dim, output_dim

    def build(self, query_shape, key_shape, value_shape):
        h, out = self.num_heads, self.output_dim or query_shape[-1]
        hk, hv = h * self.key_dim, h * self.value_dim
        self.query_kernel = self.add_weight(name="query_kernel", shape=(query_shape[-1], hk))
        self.key_kernel = self.add_weight(name="key_kernel", shape=(key_shape[-1], hk))
        self.value_kernel = self.add_weight(name="value_kernel", shape=(value_shape[-1], hv))
        self.output_kernel = self.add_weight(name="output_kernel", shape=(hv, out))

    def call(self, query, key, value):
        h = self.num_heads
        {body}
"""
EINSUM_BODY = """
        wq = ops.reshape(self.query_kernel, (-1, h, self.key_dim))
        wk = ops.reshape(self.key_kernel, (-1, h, self.key_dim))
        wv = ops.reshape(self.value_kernel, (-1, h, self.value_dim))
        wo = ops.reshape(self.output_kernel, (h, self.value_dim, -1))
        q = ops.einsum("bqd,dhk->bhqk", query, wq) / self.key_dim ** 0.5
        k = ops.einsum("btd,dhk->bhtk", key, wk)
        v = ops.einsum("btd,dhv->bhtv", value, wv)
        weights = ops.softmax(ops.einsum("bhqk,bhtk->bhqt", q, k), axis=-1)
        return ops.einsum("bhqt,bhtv,hvo->bqo", weights, v, wo)
"""

ALTERNATIVE = """
import tensorflow as tf

def split_heads(x, num_heads):
    b, t, width = x.shape
    return np.stack(np.split(x, num_heads, axis=-1), axis=1)

def merge_heads(x):
    return tf.concat(tf.unstack(tf.convert_to_tensor(x), axis=1), axis=-1)
""" + LAYER.format(body=EINSUM_BODY.strip())


def test_correct_alternative_scores_full_marks(tmp_path):
    assert_full_marks(grade(LAB, submit(tmp_path, LAB, ALTERNATIVE)))


HEADS = """
def split_heads(x, num_heads):
    b, t, width = x.shape
    return np.transpose(np.reshape(x, (b, t, num_heads, width // num_heads)), (0, 2, 1, 3))

def merge_heads(x):
    b, h, t, d = x.shape
    return ops.reshape(ops.transpose(x, (0, 2, 1, 3)), (b, t, h * d))
"""
STANDARD_BODY = """
        def split(x):
            b, t, width = x.shape
            return ops.transpose(ops.reshape(x, (b, t, {heads}, width // {heads})), (0, 2, 1, 3))

        q = split(ops.matmul(query, self.query_kernel))
        k = split(ops.matmul(key, self.key_kernel))
        v = split(ops.matmul(value, self.value_kernel))
        scores = ops.matmul(q, ops.transpose(k, (0, 1, 3, 2))) / {scale} ** 0.5
        heads = ops.matmul(ops.softmax(scores, axis={axis}), v)
        b, heads_count, t, d = heads.shape
        merged = ops.reshape(ops.transpose(heads, (0, 2, 1, 3)), (b, t, heads_count * d))
        return ops.matmul(merged, {output_kernel})
"""


def layer(heads="h", scale="self.key_dim", axis="-1", output_kernel="self.output_kernel"):
    body = STANDARD_BODY.format(heads=heads, scale=scale, axis=axis, output_kernel=output_kernel)
    return LAYER.format(body=body.strip())


PLANTED = [
    # (part, source, the named mistake, a phrase of the feedback)
    (
        "split_heads",
        "def split_heads(x, num_heads):\n"
        "    b, t, width = x.shape\n"
        "    return np.reshape(x, (b, num_heads, t, width // num_heads))\n",
        "reshaped straight to (B, h, T, d)",
        "mixes time steps into the heads",
    ),
    (
        "split_heads",
        "def split_heads(x, num_heads):\n"
        "    b, t, width = x.shape\n"
        "    return np.reshape(x, (b, t, width // num_heads, num_heads)).transpose(0, 3, 1, 2)\n",
        "heads interleaved",
        "head i owns the contiguous features",
    ),
    (
        "merge_heads",
        "def merge_heads(x):\n    b, h, t, d = x.shape\n    return np.reshape(x, (b, t, h * d))\n",
        "reshaped without transposing",
        "transpose to (B, T, h, d) first",
    ),
    (
        "MultiHeadAttention",
        HEADS + layer(scale="(h * self.key_dim)"),
        "scaled by the total width",
        "each head divides by √key_dim",
    ),
    (
        "MultiHeadAttention",
        HEADS + layer(axis="-2"),
        "softmax over the queries",
        "it must run over the keys",
    ),
    (
        "MultiHeadAttention",
        HEADS + layer(heads="1"),
        "heads not split",
        "the heads were never split",
    ),
    (
        "MultiHeadAttention",
        HEADS + layer(output_kernel="ops.stop_gradient(self.output_kernel)"),
        "gradient cut",
        "gradient with respect to output_kernel is zero",
    ),
]


SPLIT_INTERLEAVED = (
    "x = ops.reshape(x, (batch, steps, num_heads, features // num_heads))\n"
    "    return ops.transpose(x, (0, 2, 1, 3))",
    "x = ops.reshape(x, (batch, steps, features // num_heads, num_heads))\n"
    "    return ops.transpose(x, (0, 3, 1, 2))",
)
MERGE_INTERLEAVED = (
    "x = ops.transpose(x, (0, 2, 1, 3))\n    return ops.reshape(x, (batch, steps, heads * depth))",
    "x = ops.transpose(x, (0, 2, 3, 1))\n    return ops.reshape(x, (batch, steps, heads * depth))",
)


def planted():
    """Every planted mistake of the lab (graded by tests/grader/test_records.py)."""
    return from_table(PLANTED) + [
        patched("merge_heads", "heads interleaved", "head i must fill", LAB, MERGE_INTERLEAVED),
        patched(
            "MultiHeadAttention",
            "scale forgotten",
            "1/√key_dim scale of the scores is missing",
            LAB,
            ("        scores = scores / ops.sqrt(ops.cast(self.key_dim, scores.dtype))\n", ""),
        ),
        patched(
            "MultiHeadAttention",
            "heads interleaved",
            "head i owns the contiguous features",
            LAB,
            SPLIT_INTERLEAVED,
            MERGE_INTERLEAVED,
        ),
        patched(
            "MultiHeadAttention",
            "output projection missing",
            "without the output projection",
            LAB,
            (
                "return ops.matmul(merge_heads(heads), self.output_kernel)",
                "return merge_heads(heads)",
            ),
        ),
    ]
