"""Independent float64 NumPy references for the attnkit tests (loops, not the layers' code)."""

import numpy as np


def as64(x):
    return np.asarray(x, dtype=np.float64)


def sigmoid(x):
    return 1.0 / (1.0 + np.exp(-as64(x)))


def softmax(scores, axis=-1):
    """exp(s_i) / Σ_j exp(s_j) along `axis`, shifted by the maximum so that it never overflows."""
    scores = as64(scores)
    shifted = np.exp(scores - scores.max(axis=axis, keepdims=True))
    return shifted / shifted.sum(axis=axis, keepdims=True)


def masked_softmax(scores, mask=None):
    """Softmax over the last axis that skips masked entries; all-masked rows give zeros."""
    scores = as64(scores)
    keep_all = np.ones(scores.shape, bool) if mask is None else np.asarray(mask, bool)
    keep_all = np.broadcast_to(keep_all, scores.shape)
    out = np.zeros(scores.shape)
    for idx in np.ndindex(*scores.shape[:-1]):
        keep = keep_all[idx]
        if not keep.any():
            continue
        row = scores[idx][keep]
        e = np.exp(row - row.max())
        out[idx + (keep,)] = e / e.sum()
    return out


def length_mask(lengths, maxlen):
    out = np.zeros((len(lengths), maxlen), bool)
    for b, n in enumerate(lengths):
        for j in range(maxlen):
            out[b, j] = j < n
    return out


def causal_mask(tq, tk):
    out = np.zeros((tq, tk), bool)
    for i in range(tq):
        for j in range(tk):
            out[i, j] = j <= i
    return out


def dot_scores(q, k):
    q, k = as64(q), as64(k)
    b, tq, _ = q.shape
    tk = k.shape[1]
    out = np.zeros((b, tq, tk))
    for n in range(b):
        for i in range(tq):
            for j in range(tk):
                out[n, i, j] = np.sum(q[n, i] * k[n, j])
    return out


def scaled_dot_scores(q, k):
    return dot_scores(q, k) / np.sqrt(np.shape(k)[-1])


def bilinear_scores(q, k, kernel):
    return np.einsum("bip,pq,bjq->bij", as64(q), as64(kernel), as64(k))


def additive_scores(q, k, query_kernel, key_kernel, score_vector):
    q, k = as64(q), as64(k)
    b, tq, _ = q.shape
    tk = k.shape[1]
    out = np.zeros((b, tq, tk))
    for n in range(b):
        for i in range(tq):
            for j in range(tk):
                hidden = np.tanh(q[n, i] @ as64(query_kernel) + k[n, j] @ as64(key_kernel))
                out[n, i, j] = hidden @ as64(score_vector)
    return out


def cosine_scores(q, k, beta=1.0):
    """β·cos(q, k); β a scalar or an array (B, Tq); a zero vector scores 0."""
    q, k = as64(q), as64(k)
    b, tq, _ = q.shape
    tk = k.shape[1]
    beta = np.broadcast_to(as64(beta), (b, tq))
    out = np.zeros((b, tq, tk))
    for n in range(b):
        for i in range(tq):
            for j in range(tk):
                nq, nk = np.linalg.norm(q[n, i]), np.linalg.norm(k[n, j])
                if nq == 0 or nk == 0:
                    continue
                out[n, i, j] = beta[n, i] * (q[n, i] @ k[n, j]) / (nq * nk)
    return out


def location_scores(q, kernel, key_length):
    return np.einsum("bip,pm->bim", as64(q), as64(kernel))[:, :, :key_length]


def attend(weights, value):
    """Σ_j α_ij v_j."""
    return np.einsum("bij,bjd->bid", as64(weights), as64(value))


def pool(weights, values):
    """Σ_j α_ij v_j for values (B, Tk) or (B, Tk, d)."""
    values = as64(values)
    if values.ndim == 2:
        return np.einsum("bij,bj->bi", weights, values)
    return np.einsum("bij,bjd->bid", weights, values)
