"""Nadaraya–Watson kernel regression (NNDL 8.2; d2l 11.2), fixed and parametric."""

import numpy as np

from grader.reference.attention import as64, pool


def nadaraya_watson(x, x_i, y_i, kernel, bandwidth, keep=None):
    """f(x) = Σ K((x-x_i)/h) y_i / Σ K((x-x_j)/h) with the textbook kernels (constants kept).

    x (B, Tq), x_i (B, Tk), y_i (B, Tk) or (B, Tk, d); keep (B, Tq, Tk). Returns
    (predictions, weights); a query whose kernel sum is 0 gets zero weights.
    """
    x, x_i = as64(x), as64(x_i)
    b_size, tq = x.shape
    tk = x_i.shape[1]
    keep = np.ones((b_size, tq, tk), bool) if keep is None else np.asarray(keep, bool)
    weights = np.zeros((b_size, tq, tk))
    for b in range(b_size):
        for i in range(tq):
            k = np.zeros(tk)
            if kernel == "gaussian" and keep[b, i].any():
                # In log space, shifted by the largest: far from every key, exp(-u²/2) alone
                # underflows to 0 while the normalised weights are still well defined.
                logs = -(((x[b, i] - x_i[b]) / bandwidth) ** 2) / 2
                logs = np.where(keep[b, i], logs, -np.inf)
                k = np.exp(logs - logs.max())
            for j in range(tk):
                if not keep[b, i, j] or kernel == "gaussian":
                    continue
                u = (x[b, i] - x_i[b, j]) / bandwidth
                if kernel == "boxcar":
                    k[j] = 0.5 if abs(u) <= 1 else 0.0
                else:  # epanechnikov
                    k[j] = 0.75 * (1 - u**2) if abs(u) <= 1 else 0.0
            if k.sum() > 0:
                weights[b, i] = k / k.sum()
    return pool(weights, y_i), weights


def parametric_nadaraya_watson(x, x_i, y_i, w, keep=None):
    """masked_softmax(-½((x - x_i) w)²) pooling, computed as a ratio of exponentials."""
    x, x_i = as64(x), as64(x_i)
    b_size, tq = x.shape
    tk = x_i.shape[1]
    keep = np.ones((b_size, tq, tk), bool) if keep is None else np.asarray(keep, bool)
    weights = np.zeros((b_size, tq, tk))
    for b in range(b_size):
        for i in range(tq):
            e = np.array([np.exp(-0.5 * ((x[b, i] - x_i[b, j]) * w) ** 2) for j in range(tk)])
            e = e * keep[b, i]
            if e.sum() > 0:
                weights[b, i] = e / e.sum()
    return pool(weights, y_i), weights
