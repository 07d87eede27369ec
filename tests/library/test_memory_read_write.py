"""attnkit.memory.memory_read / memory_write against independent float64 NumPy references."""

import keras
import numpy as np
import pytest
import tensorflow as tf

from attnkit.memory import memory_address, memory_read, memory_write
from grader.reference import attention as ref
from grader.reference import memory as memory_ref
from tests.support import layers
from tests.support.score_cases import CASE_IDS, CASES, built_score

# (batch, memory_size, width): one slot, width 1, several examples.
MEMORY_SHAPES = [(1, 1, 1), (2, 5, 3), (3, 4, 6)]
READ_CASES = ["dot", "scaled_dot", "bilinear", "additive", "cosine", "cosine_learned"]


def _np(x):
    return keras.ops.convert_to_numpy(x)


def _case(case_id):
    return CASES[CASE_IDS.index(case_id)]


def _reference_read(case, weights, memory, query, keys=None, keep=None):
    """float64 (read, weights) with `case`'s score; query (B, Tq, d_q)."""
    keys = memory if keys is None else keys
    scores = case.reference(query, keys, weights)
    alpha = ref.masked_softmax(scores, None if keep is None else keep[:, None, :])
    return ref.attend(alpha, memory), alpha


# ----------------------------------------------------------------------------- read
@pytest.mark.parametrize("single", [True, False], ids=["one_query", "Tq_queries"])
@pytest.mark.parametrize("shape", MEMORY_SHAPES, ids=lambda s: "x".join(map(str, s)))
@pytest.mark.parametrize("case_id", READ_CASES)
def test_read_matches_numpy(case_id, shape, single, rng):
    case = _case(case_id)
    b, n, d = shape
    score, weights = built_score(case, rng, d, d)
    memory = rng.normal(size=(b, n, d)).astype("float32")
    query = rng.normal(size=(b, 1 if single else 3, d)).astype("float32")
    expected_read, expected_alpha = _reference_read(case, weights, memory, query)
    if single:
        got_read, got_alpha = memory_read(memory, query[:, 0], score, return_weights=True)
        expected_read, expected_alpha = expected_read[:, 0], expected_alpha[:, 0]
    else:
        got_read, got_alpha = memory_read(memory, query, score, return_weights=True)
    np.testing.assert_allclose(_np(got_alpha), expected_alpha, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(_np(got_read), expected_read, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("case_id", ["dot", "bilinear", "additive"])
def test_read_with_separate_keys_matches_numpy(case_id, rng):
    # Key-value read: address with keys (width 4), read the memory (width 2).
    case = _case(case_id)
    score, weights = built_score(case, rng, 4, 4)
    memory = rng.normal(size=(2, 5, 2)).astype("float32")
    keys = rng.normal(size=(2, 5, 4)).astype("float32")
    query = rng.normal(size=(2, 3, 4)).astype("float32")
    got = memory_read(memory, query, score, keys=keys)
    expected, _ = _reference_read(case, weights, memory, query, keys=keys)
    np.testing.assert_allclose(_np(got), expected, rtol=1e-5, atol=1e-5)


def test_read_by_score_name_and_per_query_sharpness(rng):
    memory = rng.normal(size=(2, 6, 3)).astype("float32")
    query = rng.normal(size=(2, 4, 3)).astype("float32")
    beta = rng.uniform(0.5, 5.0, size=(2, 4)).astype("float32")
    got, alpha = memory_read(memory, query, "cosine", sharpness=beta, return_weights=True)
    expected_alpha = ref.masked_softmax(ref.cosine_scores(query, memory, beta))
    np.testing.assert_allclose(_np(alpha), expected_alpha, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(_np(got), ref.attend(expected_alpha, memory), atol=1e-5)
    # One query per example: β of shape (B,).
    single = memory_read(memory, query[:, 0], "cosine", sharpness=beta[:, 0])
    np.testing.assert_allclose(_np(single), ref.attend(expected_alpha, memory)[:, 0], atol=1e-5)
    # Default score is the dot product.
    expected = ref.attend(ref.masked_softmax(ref.dot_scores(query, memory)), memory)
    np.testing.assert_allclose(_np(memory_read(memory, query)), expected, atol=1e-5)


@pytest.mark.parametrize("kind", ["memory_mask", "memory_lengths", "both"])
def test_read_masks_padded_slots(kind, rng):
    b, n, d = 3, 5, 4
    memory = rng.normal(size=(b, n, d)).astype("float32")
    query = rng.normal(size=(b, 2, d)).astype("float32")
    keep = np.ones((b, n), bool)
    kwargs = {}
    if kind in ("memory_mask", "both"):
        kwargs["memory_mask"] = rng.random((b, n)) > 0.4
        kwargs["memory_mask"][0] = False  # example 0: every slot is padding
        keep &= kwargs["memory_mask"]
    if kind in ("memory_lengths", "both"):
        kwargs["memory_lengths"] = np.array([0, 3, 5], "int32")
        keep &= ref.length_mask(kwargs["memory_lengths"], n)
    got, alpha = memory_read(memory, query, "dot", return_weights=True, **kwargs)
    got, alpha = _np(got), _np(alpha)
    expected, expected_alpha = _reference_read(_case("dot"), {}, memory, query, keep=keep)
    assert np.all(alpha[np.broadcast_to(~keep[:, None, :], alpha.shape)] == 0.0)
    np.testing.assert_array_equal(got[0], 0.0)  # fully masked memory reads zeros, not NaN
    np.testing.assert_allclose(alpha, expected_alpha, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-5)


# ---------------------------------------------------------------------------- write
@pytest.mark.parametrize("heads", [None, 1, 3], ids=["no_head_axis", "1_head", "3_heads"])
@pytest.mark.parametrize("shape", MEMORY_SHAPES, ids=lambda s: "x".join(map(str, s)))
def test_write_matches_numpy(shape, heads, rng):
    b, n, d = shape
    h = 1 if heads is None else heads
    memory = rng.normal(size=(b, n, d))
    weights = rng.dirichlet(np.ones(n), size=(b, h))
    erase = rng.uniform(size=(b, h, d))
    add = rng.normal(size=(b, h, d))
    expected = np.stack(
        [memory_ref.write(memory[i], weights[i], erase[i], add[i]) for i in range(b)]
    )
    if heads is None:
        weights, erase, add = weights[:, 0], erase[:, 0], add[:, 0]
    args = [x.astype("float32") for x in (memory, weights, erase, add)]
    np.testing.assert_allclose(_np(memory_write(*args)), expected, rtol=1e-5, atol=1e-5)


def test_write_erases_and_adds_only_where_addressed():
    memory = np.arange(12, dtype="float32").reshape(1, 3, 4)
    weights = np.array([[0.0, 1.0, 0.0]], "float32")
    erase = np.array([[1.0, 1.0, 0.0, 0.0]], "float32")
    add = np.array([[-1.0, -2.0, -3.0, -4.0]], "float32")
    new = _np(memory_write(memory, weights, erase, add))
    np.testing.assert_array_equal(new[0, 0], memory[0, 0])  # weight 0: untouched
    np.testing.assert_array_equal(new[0, 2], memory[0, 2])
    # weight 1: erased entries replaced by a, kept entries get a added.
    np.testing.assert_array_equal(new[0, 1], [-1.0, -2.0, 6.0 - 3.0, 7.0 - 4.0])


@pytest.mark.parametrize("kind", ["memory_mask", "memory_lengths"])
def test_write_never_touches_padded_slots(kind, rng):
    b, n, d = 2, 4, 3
    memory = rng.normal(size=(b, n, d)).astype("float32")
    weights = rng.dirichlet(np.ones(n), size=b).astype("float32")
    erase = rng.uniform(size=(b, d)).astype("float32")
    add = rng.normal(size=(b, d)).astype("float32")
    if kind == "memory_mask":
        keep = np.array([[True, False, True, False], [False, False, False, False]])
        new = memory_write(memory, weights, erase, add, memory_mask=keep)
    else:
        keep = ref.length_mask([2, 4], n)
        new = memory_write(memory, weights, erase, add, memory_lengths=np.array([2, 4]))
    masked_weights = np.where(keep, weights, 0.0)
    expected = np.stack(
        [
            memory_ref.write(memory[i], masked_weights[i][None], erase[i][None], add[i][None])
            for i in range(b)
        ]
    )
    new = _np(new)
    np.testing.assert_array_equal(new[~keep], memory[~keep])
    np.testing.assert_allclose(new, expected, rtol=1e-5, atol=1e-6)


# ------------------------------------------------------------------------ gradients
def test_gradients_flow_to_memory_query_erase_and_add(rng):
    b, n, d = 2, 5, 3
    memory, query = rng.normal(size=(b, n, d)), rng.normal(size=(b, d))
    erase, add = rng.uniform(0.1, 0.9, size=(b, d)), rng.normal(size=(b, d))
    beta = np.array([1.5, 3.0])
    upstream = rng.normal(size=(b, n, d))

    def reference_loss(memory_, query_, erase_, add_):
        total = 0.0
        for i in range(b):
            w = memory_ref.content_addressing(memory_[i], query_[i], beta[i])
            new = memory_ref.write(memory_[i], w[None], erase_[i][None], add_[i][None])
            total += np.sum(new * upstream[i])
        return total

    tensors = [tf.constant(x) for x in (memory, query, erase, add)]
    with tf.GradientTape() as tape:
        tape.watch(tensors)
        m, q, e, a = tensors
        weights = memory_address(m, q, "cosine", sharpness=tf.constant(beta))
        loss = tf.reduce_sum(memory_write(m, weights, e, a) * upstream)
    grads = [_np(g) for g in tape.gradient(loss, tensors)]
    arrays = [memory, query, erase, add]
    for index, (g, x) in enumerate(zip(grads, arrays, strict=True)):
        assert np.all(np.isfinite(g)) and np.any(np.abs(g) > 1e-6)

        def partial(value, index=index):
            args = list(arrays)
            args[index] = value
            return reference_loss(*args)

        np.testing.assert_allclose(g, layers.numeric_gradient(partial, x), rtol=1e-5, atol=1e-7)


def test_read_gradients_match_finite_differences(rng):
    memory, query = rng.normal(size=(2, 4, 3)), rng.normal(size=(2, 2, 3))
    upstream = rng.normal(size=(2, 2, 3))
    keep = np.array([[True, True, False, True], [True, True, True, True]])

    def loss(memory_, query_):
        return float(
            np.sum(_reference_read(_case("dot"), {}, memory_, query_, keep=keep)[0] * upstream)
        )

    m, q = tf.constant(memory), tf.constant(query)
    with tf.GradientTape() as tape:
        tape.watch([m, q])
        total = tf.reduce_sum(memory_read(m, q, "dot", memory_mask=keep) * upstream)
    gm, gq = (_np(g) for g in tape.gradient(total, [m, q]))
    np.testing.assert_allclose(
        gm, layers.numeric_gradient(lambda x: loss(x, query), memory), atol=1e-7
    )
    np.testing.assert_allclose(
        gq, layers.numeric_gradient(lambda x: loss(memory, x), query), atol=1e-7
    )
    assert np.any(gm != 0) and np.any(gq != 0)


# --------------------------------------------------------------- precision and XLA
def test_mixed_precision_read_and_write(mixed_policy, rng):
    low = mixed_policy.split("_")[1]
    # Rounded to the compute dtype here, so that the reference sees the same inputs.
    memory = _np(tf.cast(rng.normal(size=(2, 6, 4)), low))
    query = _np(tf.cast(10 * rng.normal(size=(2, 4)), low))  # large scores
    lengths = np.array([0, 4], "int32")
    read, alpha = memory_read(memory, query, "dot", memory_lengths=lengths, return_weights=True)
    assert keras.backend.standardize_dtype(read.dtype) == low
    read, alpha = _np(tf.cast(read, "float64")), _np(tf.cast(alpha, "float64"))
    assert np.all(np.isfinite(read)) and np.all(np.isfinite(alpha))
    keep = ref.length_mask(lengths, 6)
    expected, expected_alpha = _reference_read(_case("dot"), {}, memory, query[:, None], keep=keep)
    np.testing.assert_allclose(alpha, expected_alpha[:, 0], atol=2e-2)
    np.testing.assert_allclose(read, expected[:, 0], atol=5e-2)
    alpha = _np(tf.cast(alpha, low))  # the weights written with, as the reference sees them
    new = memory_write(memory, alpha, tf.cast(np.full((2, 4), 0.5), low), query)
    new = _np(tf.cast(new, "float64"))
    expected_new = np.stack(
        [
            memory_ref.write(memory[i], alpha[i][None], np.full((1, 4), 0.5), query[i][None])
            for i in range(2)
        ]
    )
    assert np.all(np.isfinite(new))
    # Slots reach ~17 here, where one bfloat16 rounding alone is up to 0.0625: relative there.
    np.testing.assert_allclose(new, expected_new, atol=5e-2, rtol=0 if low == "float16" else 8e-3)


def test_jit_compile_matches_eager(rng):
    memory = rng.normal(size=(3, 5, 4)).astype("float32")
    query = rng.normal(size=(3, 4)).astype("float32")
    erase = rng.uniform(size=(3, 4)).astype("float32")
    add = rng.normal(size=(3, 4)).astype("float32")
    lengths = np.array([5, 0, 2], "int32")

    def run(m, q, e, a, n):
        r, w = memory_read(m, q, "cosine", memory_lengths=n, return_weights=True)
        return r, w, memory_write(m, w, e, a, memory_lengths=n)

    eager = run(memory, query, erase, add, lengths)
    compiled = tf.function(run, jit_compile=True)(memory, query, erase, add, lengths)
    for e, c in zip(eager, compiled, strict=True):
        assert np.all(np.isfinite(_np(c)))
        np.testing.assert_allclose(_np(c), _np(e), rtol=1e-5, atol=1e-6)
    keep = ref.length_mask(lengths, 5)
    expected_alpha = ref.masked_softmax(ref.cosine_scores(query[:, None], memory), keep[:, None])
    np.testing.assert_allclose(_np(compiled[1]), expected_alpha[:, 0], rtol=1e-5, atol=1e-6)


# --------------------------------------------------------------------------- errors
M = np.zeros((2, 4, 3), "float32")
Q = np.zeros((2, 3), "float32")
W = np.full((2, 4), 0.25, "float32")
V = np.zeros((2, 3), "float32")


@pytest.mark.parametrize(
    ("call", "fragment"),
    [
        (lambda: memory_read(np.zeros((2, 0, 3), "float32"), Q), "memory_size=0"),
        (lambda: memory_read(np.zeros((2, 3), "float32"), Q), "memory with shape (2, 3)"),
        (lambda: memory_read(M, np.zeros((2, 5), "float32")), "query_shape=(2, 1, 5)"),
        (lambda: memory_read(M, np.zeros((3,), "float32")), "query with shape (3,)"),
        (lambda: memory_read(M, Q, keys=np.zeros((2, 5, 3), "float32")), "keys with shape"),
        (lambda: memory_read(M, Q, "bilinear"), "score='bilinear'"),
        (lambda: memory_read(M, Q, "softmax"), "score='softmax'"),
        (lambda: memory_read(M, Q, "dot", sharpness=np.ones(2)), "score=DotScore"),
        (lambda: memory_read(M, Q, memory_mask=np.ones(4, bool)), "memory_mask with shape"),
        (lambda: memory_read(M, Q, memory_lengths=np.ones((2, 1))), "memory_lengths"),
        (lambda: memory_write(np.zeros((2, 0, 3), "float32"), W, V, V), "memory_size=0"),
        (lambda: memory_write(M, W, np.zeros((2, 5), "float32"), V), "erase with shape (2, 5)"),
        (lambda: memory_write(M, W, V, np.zeros((2, 2), "float32")), "add with shape (2, 2)"),
        (lambda: memory_write(M, np.zeros((2, 5), "float32"), V, V), "weights with shape (2, 5)"),
        (lambda: memory_write(M, np.zeros((2,), "float32"), V, V), "weights with shape (2,)"),
        (lambda: memory_write(M, W, np.zeros((2, 1, 3), "float32"), V), "erase with shape"),
        (
            lambda: memory_write(
                M, np.zeros((2, 2, 4), "float32"), np.zeros((2, 3, 3)), np.zeros((2, 2, 3))
            ),
            "erase with shape (2, 3, 3)",
        ),
    ],
)
def test_errors(call, fragment):
    with pytest.raises(ValueError, match="Received:") as info:
        call()
    assert fragment in str(info.value)
