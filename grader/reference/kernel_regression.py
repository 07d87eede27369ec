"""Nadaraya–Watson kernel regression (NNDL 8.2; d2l 11.2), fixed and parametric."""

import numpy as np

from grader.i18n import _
from grader.reference.attention import as64, pool, rounding, softmax


def nadaraya_watson(x, x_i, y_i, kernel, bandwidth, keep=None):
    """f(x) = Σ K((x-x_i)/h) y_i / Σ K((x-x_j)/h) with the textbook kernels.

    x (B, Tq), x_i (B, Tk), y_i (B, Tk) or (B, Tk, d); keep (B, Tq, Tk). Returns
    (predictions, weights); a query whose kernel sum is 0 gets zero weights.
    """
    weights = masked_kernel_weights(differences(x, x_i) / bandwidth, kernel, keep)
    return pool(weights, y_i), weights


def parametric_nadaraya_watson(x, x_i, y_i, w, keep=None):
    """masked_softmax(-½((x - x_i) w)²) pooling: the Gaussian kernel with u = (x - x_i) w."""
    weights = masked_kernel_weights(differences(x, x_i) * as64(w), "gaussian", keep)
    return pool(weights, y_i), weights


def masked_kernel_weights(u, kernel, keep=None):
    """K(u_ij) / Σ_j K(u_ij) over the kept keys (zero weights where no kept key has K > 0).

    The Gaussian is taken in log space, shifted by the largest: far from every key,
    exp(-u²/2) alone underflows to 0 while the normalised weights are still well defined."""
    keep = (
        np.ones(u.shape, bool) if keep is None else np.broadcast_to(np.asarray(keep, bool), u.shape)
    )
    if kernel == "gaussian":
        logs = np.where(keep, -0.5 * np.square(u), -np.inf)
        top = logs.max(axis=-1, keepdims=True)
        k = np.exp(logs - np.where(np.isfinite(top), top, 0.0))
    else:
        k = np.where(keep, kernel_values(u, kernel), 0.0)
    total = k.sum(axis=-1, keepdims=True)
    return np.where(total > 0, k / np.where(total > 0, total, 1.0), 0.0)


# ---- the forms of lab nw: queries (..., m), keys and values (..., n), the student's names ------
# Keyword arguments with defaults name the parts of a formula that a known mistake gets wrong.


def differences(queries, keys):
    """x_i - x_j for every query and key: (..., m) and (..., n) -> (..., m, n)."""
    return as64(queries)[..., :, None] - as64(keys)[..., None, :]


def gaussian_weights(
    queries, keys, bandwidth=1.0, half=0.5, power=2, sign=-1.0, axis=-1, normalise=True
):
    """softmax_j(-½ (x_i - x_j)² / h²), the Gaussian kernel's attention weights (m, n).

    `half`, `power` (of h) and `sign` are the formula's; `axis` is the softmax's; without
    `normalise`, the kernel values exp(-½ (x_i - x_j)² / h²) themselves."""
    scores = sign * half * np.square(differences(queries, keys)) / bandwidth**power
    return softmax(scores, axis=axis) if normalise else np.exp(scores)


def kernel_values(u, kernel, include_edge=True, clip=True):
    """K(u) without its constant factor (it cancels in the ratio): exp(-u²/2) ("gaussian"), 1 for
    |u| <= 1 ("boxcar"; |u| < 1 without `include_edge`), max(1 - u², 0) ("epanechnikov"; 1 - u²
    without `clip`)."""
    if kernel == "gaussian":
        return np.exp(-0.5 * np.square(u))
    if kernel == "boxcar":
        return (np.abs(u) <= 1.0 if include_edge else np.abs(u) < 1.0).astype(float)
    return np.maximum(1.0 - np.square(u), 0.0) if clip else 1.0 - np.square(u)


def kernel_regression(
    queries,
    keys,
    values,
    kernel="gaussian",
    bandwidth=1.0,
    include_edge=True,
    clip=True,
    normalise=True,
):
    """Σ_j K(u_ij) y_j / Σ_k K(u_ik) with u_ij = (x_i - x_j)/h, (m,) -> (m,); a query whose
    kernel sum is 0 predicts 0. Without `normalise`, Σ_j K(u_ij) y_j."""
    k = kernel_values(differences(queries, keys) / bandwidth, kernel, include_edge, clip)
    if normalise:
        total = k.sum(axis=-1, keepdims=True)
        k = k / np.where(total != 0, total, 1.0)
    return k @ as64(values)


def boxcar_on_edge(queries, keys, kernel, bandwidth=1.0):
    """A boxcar case with a training point at distance exactly h, where |u| < 1 and |u| <= 1
    differ."""
    return kernel == "boxcar" and bool(np.any(np.abs(differences(queries, keys) / bandwidth) == 1))


def parametric_pooling(queries, keys, values, w, half=0.5, power=2, axis=-1):
    """Σ_j softmax_j(-½ (x_i - x_j)² w²) y_j: queries (B, m), keys and values (B, n) -> (B, m).
    `half` and `power` (of w) are the formula's, `axis` the softmax's."""
    scores = -half * np.square(differences(queries, keys)) * as64(w) ** power
    return pool(softmax(scores, axis=axis), values)


# ---- properties of the outputs (checks of grader.engine.cases.check_of) ----------------------


def rows_sum_to_one(output, dtype="float64"):
    """What is wrong with attention weights whose rows do not sum to one (None if they do)."""
    sums = np.asarray(output, np.float64).sum(axis=-1)
    worst = float(np.max(np.abs(sums - 1.0), initial=0.0))
    if worst > max(1e-6, rounding(dtype) * np.shape(output)[-1]):
        return _(
            "a row of weights sums to {total:.6g}, not 1: normalise over the keys (the last axis)",
            total=sums.flat[int(np.argmax(np.abs(sums - 1.0)))],
        )
    return None


def weights_in_unit_interval(output, dtype="float64"):
    """What is wrong with attention weights outside [0, 1] (None if there are none)."""
    output = np.asarray(output, np.float64)
    slack = rounding(dtype)
    if np.any(output < -slack) or np.any(output > 1.0 + slack):
        return _("a weight lies outside [0, 1]; attention weights are probabilities")
    return None


def within_values(values, output, dtype="float64"):
    """What is wrong with predictions outside the range of the training outputs `values` (None
    if there are none), beyond the rounding of the case's dtype at the values' magnitude; a 0
    (an empty window) is allowed."""
    output = np.asarray(output, np.float64)
    slack = max(1e-9, rounding(dtype, values))
    low, high = values.min() - slack, values.max() + slack
    outside = ~((output >= low) & (output <= high)) & (np.abs(output) > slack)
    if np.any(outside):
        index = int(np.argmax(outside))
        return _(
            "prediction {index} is {prediction:.6g}, outside [{low:.6g}, {high:.6g}], the range "
            "of the training outputs: a weighted average with weights >= 0 that sum to one "
            "cannot leave it (a negative kernel value does this)",
            index=index,
            prediction=output[index],
            low=values.min(),
            high=values.max(),
        )
    return None
