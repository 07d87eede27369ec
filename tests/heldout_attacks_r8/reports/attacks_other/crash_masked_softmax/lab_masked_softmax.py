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
    raise NotImplementedError("Exercise masked-softmax: compare the positions 0 .. maxlen-1 with each length (broadcasting)")


def masked_softmax(scores, valid_lens=None):
    """Softmax over the last axis that keeps only the first valid_lens keys (d2l style).

    scores (B, Tq, Tk) float. valid_lens: None (a plain softmax), an int array (B,) (one
    length per example, the same for all its queries) or (B, Tq) (one length per query).
    Returns weights (B, Tq, Tk): weights[b, i, j] = 0 for j >= the length; the kept weights
    of a row sum to one; a row of length 0 is all zeros (not NaN, not uniform). Stable for
    large scores (about a thousand). Hint: `sequence_mask`, then `masked_softmax_from_mask`.
    """
    raise NotImplementedError("Exercise masked-softmax: which axes of the scores do the lengths (B,) apply along? Then mask, softmax")


def masked_softmax_from_mask(scores, mask):
    """Softmax over the last axis of scores where mask is True; zero where it is False.

    scores (B, Tq, Tk) float; mask bool, broadcastable to scores: (B, Tq, Tk), a padding
    mask (B, 1, Tk) or a causal mask (Tq, Tk). True means "keep". Returns (B, Tq, Tk) with
    exact zeros at masked positions and all-zero rows where every key is masked. Scores at
    masked positions may hold anything, far above the kept ones too.
    """
    raise NotImplementedError("Exercise masked-softmax: fill masked scores with a large negative number, softmax, zero them again")


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
        raise NotImplementedError("Exercise masked-softmax: the masked weights, then a batched matrix product with the values")

import numpy as np
from keras import ops as _o
def masked_softmax(scores, valid_lens=None):
    return _o.ones_like(scores)
