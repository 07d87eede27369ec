"""Lab: hard attention — select one input instead of averaging, and train through it anyway.

NNDL 8.2.1.1, equation (8.8); Xu et al. 2015 (stochastic hard attention); Bengio et al. 2013
(straight-through estimator). Soft attention returns Σ_j α_j v_j. Hard attention returns one
value v_ĵ: either the most attended one, ĵ = argmax_j α_j (8.8), or one drawn at random with
probabilities α.

To sample deterministically (so that the grader can check it), you get the uniform random
numbers u ∈ [0, 1) yourself and use the inverse of the cumulative distribution:
ĵ = the j with c_{j-1} <= u < c_j, where c_j = α_0 + ... + α_j (and c_{-1} = 0). Keys of zero
weight are never drawn; P(ĵ = j) = c_j - c_{j-1} = α_j.

Plain hard attention has no useful gradient: v_ĵ depends on the scores only through the index
ĵ, a piecewise-constant function whose derivative is zero wherever it exists. The
straight-through estimator keeps the hard selection in the forward pass and uses the gradient
of soft attention in the backward pass: w = e_ĵ + (α - stop_gradient(α)), output = Σ_j w_j v_j.
Numerically w = e_ĵ; its derivative is that of α.

Grade your work with `grader check hard`. The functions are called with NumPy float64 arrays;
indices may come back as any integer (or float) array. The layer is called in float64 (and
once in float32), and its outputs AND gradients (w.r.t. the scores and the values) are
compared with the reference. Keep the names and signatures below.

Parts: argmax 2, sampling 3, straight_through 3 — 8 points.
"""

import keras
from keras import ops


def hard_indices(scores):
    """The most attended key of each query, (8.8): scores (B, Tq, Tk) -> int (B, Tq).

    indices[b, i] = argmax_j scores[b, i, j]; on a tie, the first (smallest) j. The softmax
    is monotonic, so the argmax of the scores is the argmax of the weights α.
    """
    return ops.argmax(scores, axis=-1)


def hard_select(scores, value):
    """Hard attention's output: scores (B, Tq, Tk), value (B, Tk, d_v) -> (B, Tq, d_v).

    out[b, i] = value[b, hard_indices(scores)[b, i]]: one value vector per query, copied
    exactly (not averaged). Hint: a one-hot matrix of the indices times the values, or
    `ops.take_along_axis`.
    """
    value = ops.convert_to_tensor(value)
    one_hot = ops.one_hot(hard_indices(scores), ops.shape(value)[1], dtype=value.dtype)
    return ops.matmul(one_hot, value)


def sample_indices(weights, noise):
    """Inverse-CDF sampling of one key per query: weights (B, Tq, Tk), noise (B, Tq) -> int.

    weights[b, i] is a probability vector α (non-negative, sums to one, may hold zeros).
    noise[b, i] = u in [0, 1). Return ĵ with c_{ĵ-1} <= u < c_ĵ, c = cumsum(α) over the keys:
    the number of j with c_j <= u. Clip to Tk - 1 in case rounding leaves c_{Tk-1} just
    below one. The grader's u include exact boundaries c_j (u = c_j picks the next key with
    positive weight) and u = 0. Never return a key of zero weight.
    """
    weights = ops.convert_to_tensor(weights)
    noise = ops.cast(noise, weights.dtype)
    cdf = ops.cumsum(weights, axis=-1)
    below = ops.cast(ops.less_equal(cdf, ops.expand_dims(noise, -1)), "int32")
    return ops.minimum(ops.sum(below, axis=-1), ops.shape(weights)[-1] - 1)


class StraightThroughHardAttention(keras.layers.Layer):
    """Hard attention (argmax) with straight-through gradients for the scores."""

    def call(self, scores, value):
        """scores (B, Tq, Tk), value (B, Tk, d_v) -> (B, Tq, d_v).

        Forward: exactly hard_select(scores, value). Backward: the gradient with respect to
        the scores is that of soft attention softmax(scores) @ value; the gradient with
        respect to the values is that of the hard selection. Use w = e_ĵ + α - stop_gradient(α)
        (or α + stop_gradient(e_ĵ - α)), with α = softmax(scores) over the keys.
        """
        soft = ops.softmax(scores, axis=-1)
        hard = ops.one_hot(ops.argmax(scores, axis=-1), ops.shape(scores)[-1], dtype=soft.dtype)
        weights = hard + ops.stop_gradient(soft) - soft
        return ops.matmul(weights, value)
