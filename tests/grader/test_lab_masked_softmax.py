"""Lab masked-softmax graded end to end: what the reference is checked on, a correct alternative
and planted mistakes (the NaN gradient of a log-mask included). Full marks and the stub:
tests/grader/test_records.py."""

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

LAB = "masked-softmax"


def test_the_reference_is_checked_on_properties_and_gradients():
    result = reference_result(LAB, HIDDEN_SEEDS[LAB])
    names = [check.name for part in result.parts for check in part.checks]
    assert any(name.startswith("masked positions get zero weight") for name in names)
    assert any(name.startswith("gradient wrt scores") for name in names)


ALTERNATIVE_NUMPY_AND_TENSORFLOW = """
import tensorflow as tf

def sequence_mask(valid_lens, maxlen):
    return np.arange(maxlen) < np.asarray(valid_lens)[..., None]

def masked_softmax_from_mask(scores, mask):
    mask = np.broadcast_to(mask, scores.shape)
    shifted = np.where(mask, scores - np.where(mask, scores, -np.inf).max(-1, keepdims=True)
                       if mask.any() else 0.0, -np.inf)
    e = np.where(mask, np.exp(np.where(mask, shifted, 0.0)), 0.0)
    total = e.sum(-1, keepdims=True)
    return np.divide(e, total, out=np.zeros_like(e), where=total > 0)

def masked_softmax(scores, valid_lens=None):
    if valid_lens is None:
        return masked_softmax_from_mask(scores, np.ones(scores.shape, bool))
    lens = valid_lens if valid_lens.ndim == 2 else valid_lens[:, None]
    return masked_softmax_from_mask(scores, sequence_mask(lens, scores.shape[-1]))

class MaskedAttentionPooling(keras.layers.Layer):
    def call(self, scores, values, valid_lens):
        if len(valid_lens.shape) == 1:
            valid_lens = valid_lens[:, tf.newaxis]
        mask = tf.sequence_mask(tf.cast(valid_lens, tf.int32), tf.shape(scores)[-1])
        keep = tf.cast(mask, scores.dtype)
        weights = tf.nn.softmax(scores - 1e9 * (1 - keep), axis=-1) * keep
        return tf.einsum("bqk,bkd->bqd", weights, values)
"""


def test_correct_alternative_scores_full_marks(tmp_path):
    assert_full_marks(grade(LAB, submit(tmp_path, LAB, ALTERNATIVE_NUMPY_AND_TENSORFLOW)))


SEQUENCE_MASK = """
def sequence_mask(valid_lens, maxlen):
    return {expression}
"""
FROM_LENGTHS = """
def masked_softmax(scores, valid_lens=None):
    if valid_lens is None:
        return ops.softmax(scores)
    lens = valid_lens if valid_lens.ndim == 2 else valid_lens[:, None]
    mask = np.arange(scores.shape[-1]) < lens[..., None]
    {body}
"""
POOLING_LOG_MASK = """
class MaskedAttentionPooling(keras.layers.Layer):
    def call(self, scores, values, valid_lens):
        if len(valid_lens.shape) == 1:
            valid_lens = ops.expand_dims(valid_lens, -1)
        mask = ops.less(ops.arange(scores.shape[-1]), ops.expand_dims(valid_lens, -1))
        weights = ops.softmax(scores + ops.log(ops.cast(mask, scores.dtype)), axis=-1)
        weights = ops.where(ops.any(mask, axis=-1, keepdims=True), weights, 0.0)
        return ops.matmul(weights, values)
"""

PLANTED = [
    # (part, source, the named mistake, a phrase of the feedback)
    (
        "sequence_mask",
        SEQUENCE_MASK.format(expression="np.arange(maxlen) <= valid_lens[..., None]"),
        "one position too many",
        "you kept j <= valid_lens[b]",
    ),
    (
        "sequence_mask",
        SEQUENCE_MASK.format(expression="np.arange(maxlen) >= valid_lens[..., None]"),
        "inverted",
        "The mask is inverted",
    ),
    (
        "masked_softmax",
        FROM_LENGTHS.format(body="return ops.softmax(np.where(mask, scores, -1e6))"),
        "fully masked row uniform",
        "came out uniform",
    ),
    (
        "masked_softmax",
        FROM_LENGTHS.format(body="return ops.softmax(scores) * mask"),
        "mask applied after the softmax",
        "no longer sum to one",
    ),
    (
        "masked_softmax",
        FROM_LENGTHS.format(body="return ops.softmax(np.where(mask, scores, -np.inf))"),
        None,
        "all in rows the reference gives zeros, where every position is masked",
    ),
    (
        "masked_softmax_from_mask",
        "def masked_softmax_from_mask(scores, mask):\n"
        "    weights = ops.softmax(ops.where(mask, -1e9, scores))\n"
        "    return ops.where(mask, 0.0, weights)\n",
        "mask inverted",
        "True means keep",
    ),
    ("MaskedAttentionPooling", POOLING_LOG_MASK, None, "NaN or infinite"),
    (
        # right but where masked keys score far above the kept ones: those underflow to 0
        "masked_softmax_from_mask",
        "def masked_softmax_from_mask(scores, mask):\n"
        "    weights = ops.softmax(scores) * ops.cast(mask, scores.dtype)\n"
        "    total = ops.sum(weights, axis=-1, keepdims=True)\n"
        "    return ops.where(total > 0, weights / ops.maximum(total, 1e-30), 0.0)\n",
        "mask applied after the softmax",
        "mask the scores before the softmax",
    ),
]


def test_the_log_mask_passes_its_outputs_but_not_its_gradients(tmp_path):
    result = grade(LAB, submit(tmp_path, LAB, POOLING_LOG_MASK), parts=["MaskedAttentionPooling"])
    failed = [check for check in result.part("MaskedAttentionPooling").checks if not check.passed]
    gradients = ("gradient wrt scores", "gradients finite, zero at masked keys")
    assert failed and all(check.name.startswith(gradients) for check in failed)
    assert any(c.name.startswith(gradients[1]) and "nan or inf" in c.message for c in failed)


ONE_KEY_TOO_MANY = (
    "keep = sequence_mask(lengths, ops.shape(scores)[-1])",
    "keep = sequence_mask(lengths + 1, ops.shape(scores)[-1])",
)
OVER_QUERIES = ("weights = ops.softmax(filled, axis=-1)", "weights = ops.softmax(filled, axis=-2)")
NOT_ZEROED = ("return ops.where(keep, weights, ops.zeros_like(weights))", "return weights")
# A softmax written by hand whose fully masked rows are repaired by a `where`: the forward pass
# is right, but the backward pass divides by a zero sum in the branch `where` did not pick.
NAN_BEHIND_WHERE = (
    """    filled = ops.where(keep, logits, ops.full_like(logits, -1e9))
    weights = ops.softmax(filled, axis=-1)
    return ops.where(keep, weights, ops.zeros_like(weights))""",
    """    shifted = logits - ops.max(logits, axis=-1, keepdims=True)
    kept = ops.exp(shifted) * ops.cast(keep, logits.dtype)
    total = ops.sum(kept, axis=-1, keepdims=True)
    return ops.where(total > 0, kept / total, ops.zeros_like(kept))""",
)
NOT_FILLED = ("filled = ops.where(keep, logits, ops.full_like(logits, -1e9))", "filled = logits")
# Lengths (B,) turned into a (B, Tk) mask without the query axis: against (B, Tq, Tk) scores a
# broadcast lines B up with Tq (wrong values where B = Tq, an error elsewhere).
NO_QUERY_AXIS = ("        lengths = ops.expand_dims(lengths, -1)", "        pass")


def planted():
    """Every planted mistake of this exercise (graded by tests/grader/test_records.py)."""
    return from_table(PLANTED) + [
        patched("masked_softmax", None, "lacks an axis the formula gives it", LAB, NO_QUERY_AXIS),
        patched(
            "sequence_mask",
            "axes swapped",
            "The mask is transposed",
            LAB,
            (
                "return ops.less(positions, ops.expand_dims(valid_lens, -1))",
                "return ops.transpose(ops.less(positions, ops.expand_dims(valid_lens, -1)))",
            ),
        ),
        *(
            patched(part, "one key too many", "valid_lens[b] + 1 keys", LAB, ONE_KEY_TOO_MANY)
            for part in ("masked_softmax", "MaskedAttentionPooling")
        ),
        *(
            patched(
                part, "softmax over the queries", "normalises over the queries", LAB, OVER_QUERIES
            )
            for part in ("masked_softmax", "masked_softmax_from_mask", "MaskedAttentionPooling")
        ),
        *(
            patched(part, "fully masked row uniform", "came out uniform", LAB, NOT_ZEROED)
            for part in ("masked_softmax_from_mask", "MaskedAttentionPooling")
        ),
        *(
            patched(part, "mask applied after the softmax", "no longer sum to one", LAB, NOT_FILLED)
            for part in ("masked_softmax_from_mask",)
        ),
        patched(
            "MaskedAttentionPooling",
            "mask applied after the softmax",
            ("no longer sum to one", "not 0: a masked key must get exactly zero weight"),
            LAB,
            NOT_FILLED,
        ),
        patched(
            "MaskedAttentionPooling",
            "property: masked keys change nothing",
            ("changed when masked key", "your mask leaks"),
            LAB,
            (
                "        weights = masked_softmax(scores, valid_lens)\n",
                "        weights = ops.softmax(scores)\n",
            ),
        ),
        patched(
            "MaskedAttentionPooling",
            "property: gradients finite, zero at masked keys",
            "that are nan or inf",
            LAB,
            NAN_BEHIND_WHERE,
        ),
    ]
