"""Lab: masked softmax — attention weights that ignore padding and future positions.

NNDL (8.1) and (8.6); d2l "masked softmax operation". A batch holds sequences of different lengths,
padded to one length Tk. Attention must give the padding exactly zero weight, and a decoder's
query i must not look at keys j > i (a causal mask). The softmax over the keys is therefore
taken over the kept positions only:

    α_j = exp(s_j) / Σ_{k kept} exp(s_k) for a kept key j,    α_j = 0 for a masked key j.

A row whose keys are all masked (valid length 0) gets all-zero weights, not NaN: its softmax
has nothing to normalise. Replace masked scores by a large finite negative number (with
-inf, a fully masked row computes exp(-inf - (-inf)), which is NaN, and only the last step
can repair it), take a stable softmax, then set the masked positions to exactly zero.

Grade your work with `grader check masked-softmax`. The functions are called with NumPy
arrays (scores float64, lengths int64, masks bool) and may return NumPy arrays or tensors; the
layer is called in float64 (and once in float32) and its outputs AND gradients are compared
with the reference. The grader also checks, on what you return, that masked positions are
exactly zero and that every row sums to one (or to zero when fully masked). Keep the names and
signatures below.

Parts: sequence_mask 2, masked_softmax 4, masked_softmax_from_mask 2,
MaskedAttentionPooling 2 — 10 points.
"""

import keras
from keras import ops


def sequence_mask(valid_lens, maxlen):
    """Boolean mask of the valid positions: valid_lens (...,) -> mask (..., maxlen).

    mask[..., j] is True for j < valid_lens[...] (the first valid_lens positions are real
    tokens) and False for the padding after them. valid_lens holds integers between 0 and
    maxlen (the grader passes int64 arrays of shape (B,) or (B, Tq)); maxlen is an int.
    Compare with `ops.less`: TensorFlow's `<` refuses to compare int32 with int64 tensors.
    """
    lens = ops.convert_to_tensor(valid_lens)
    return ops.greater(ops.expand_dims(lens, -1), ops.arange(maxlen))


def masked_softmax(scores, valid_lens=None):
    """Softmax over the last axis that keeps only the first valid_lens keys (d2l style).

    scores (B, Tq, Tk) float. valid_lens: None (a plain softmax), an int array (B,) (one
    length per example, the same for all its queries) or (B, Tq) (one length per query).
    Returns weights (B, Tq, Tk): weights[b, i, j] = 0 for j >= the length; the kept weights
    of a row sum to one; a row of length 0 is all zeros (not NaN, not uniform). Stable for
    large scores (about a thousand). Hint: `sequence_mask`, then `masked_softmax_from_mask`.
    """
    s = ops.convert_to_tensor(scores)
    if valid_lens is None:
        mask = ops.ones_like(s, dtype="bool")
    else:
        lens = ops.convert_to_tensor(valid_lens)
        if len(lens.shape) == 1:
            lens = ops.reshape(lens, (-1, 1))            # (B, 1): the same for every query
        mask = sequence_mask(lens, s.shape[-1])
    return masked_softmax_from_mask(s, mask)


def masked_softmax_from_mask(scores, mask):
    """Softmax over the last axis of scores where mask is True; zero where it is False.

    scores (B, Tq, Tk) float; mask bool, broadcastable to scores: (B, Tq, Tk), a padding
    mask (B, 1, Tk) or a causal mask (Tq, Tk). True means "keep". Returns (B, Tq, Tk) with
    exact zeros at masked positions and all-zero rows where every key is masked. Scores at
    masked positions may hold anything, far above the kept ones too.
    """
    s = ops.convert_to_tensor(scores)
    keep = ops.broadcast_to(ops.cast(mask, "bool"), ops.shape(s))
    neg_inf = ops.full_like(s, float("-inf"))
    kept_scores = ops.where(keep, s, neg_inf)
    # the maximum over the kept keys only (0 for a row with nothing kept)
    row_max = ops.max(kept_scores, axis=-1, keepdims=True)
    row_max = ops.stop_gradient(ops.where(ops.isfinite(row_max), row_max, ops.zeros_like(row_max)))
    e = ops.exp(kept_scores - row_max)                    # exactly 0 at masked keys
    total = ops.sum(e, axis=-1, keepdims=True)
    return e / ops.where(total > 0, total, ops.ones_like(total))


class MaskedAttentionPooling(keras.layers.Layer):
    """Attention pooling over the valid keys only: out = masked_softmax(scores, lens) @ values.

    The layer has no weights. The grader passes every input of a layer in the layer's dtype,
    so valid_lens arrives as a float tensor holding whole numbers; a length is not something
    to differentiate, and the gradient with respect to it must be zero.
    """

    def call(self, scores, values, valid_lens):
        """scores (B, Tq, Tk), values (B, Tk, d_v), valid_lens (B,) or (B, Tq) -> (B, Tq, d_v).

        out[b, i] = Σ_j α[b, i, j] values[b, j] with α = masked_softmax(scores, valid_lens):
        a query whose keys are all masked gives a zero vector. Gradients with respect to the
        scores and the values are checked too: they must be finite (no NaN) everywhere,
        including the fully masked rows, and zero for the masked scores.
        """
        alpha = masked_softmax(scores, valid_lens)
        return ops.einsum("bqk,bkv->bqv", alpha, values)
