"""Independent float64 NumPy references for the attnkit tests (loops, not the layers' code).

Parameters are named like the arrays of the grader's cases (query, key, kernel, scores,
valid_lens, ...), so that a record's known mistake is one of these functions called with the
case's arrays by name and one argument changed (`Mistake.of`).
"""

import numpy as np

from grader.i18n import N_, _
from grader.vocabulary.rounding import rounding


def as64(x):
    return np.asarray(x, dtype=np.float64)


# How many units in the last place a correct computation written another way may be off, at
# the magnitude of the values it combines (sums, a max subtracted, float64 inside).
def sigmoid(x):
    return 1.0 / (1.0 + np.exp(-as64(x)))


def softmax(scores, axis=-1):
    """exp(s_i) / Σ_j exp(s_j) along `axis`, shifted by the maximum so that it never overflows."""
    scores = as64(scores)
    shifted = np.exp(scores - scores.max(axis=axis, keepdims=True))
    return shifted / shifted.sum(axis=axis, keepdims=True)


def softmax_jacobian(scores, axis=-1, softmax_first=True, diagonal=True):
    """diag(p) - p pᵀ over the last axis, p = softmax(scores) taken along `axis` (or the scores
    themselves when not `softmax_first`); without the diag(p) term when not `diagonal`."""
    probs = softmax(scores, axis) if softmax_first else as64(scores)
    outer = probs[..., :, None] * probs[..., None, :]
    if not diagonal:
        return -outer
    return np.einsum("...i,ij->...ij", probs, np.eye(probs.shape[-1])) - outer


def masked_softmax(scores, mask=None, axis=-1):
    """Softmax along `axis` (the last by default) that skips masked entries; all-masked rows
    give zeros."""
    scores = as64(scores)
    keep_all = np.ones(scores.shape, bool) if mask is None else np.asarray(mask, bool)
    keep_all = np.moveaxis(np.broadcast_to(keep_all, scores.shape), axis, -1)
    scores = np.moveaxis(scores, axis, -1)
    out = np.zeros(scores.shape)
    for idx in np.ndindex(*scores.shape[:-1]):
        keep = keep_all[idx]
        if not keep.any():
            continue
        row = scores[idx][keep]
        e = np.exp(row - row.max())
        out[idx + (keep,)] = e / e.sum()
    return np.moveaxis(out, -1, axis)


def length_mask(lengths, maxlen):
    out = np.zeros((len(lengths), maxlen), bool)
    for b, n in enumerate(lengths):
        for j in range(maxlen):
            out[b, j] = j < n
    return out


def sequence_mask(valid_lens, maxlen, compare="<", transposed=False):
    """mask[..., j] = j < valid_lens[...] for j < maxlen (`compare` "<=" or ">=" instead of
    "<"), lengths of any shape: True at the valid positions. `transposed` swaps the two axes
    of a 2-D mask."""
    ufunc = {"<": np.less, "<=": np.less_equal, ">=": np.greater_equal}[compare]
    mask = ufunc(np.arange(maxlen), np.asarray(valid_lens)[..., None])
    return mask.T if transposed else mask


def kept_keys(scores, valid_lens=None, mask=None, extra=0):
    """Which keys each query keeps, broadcast to the scores' shape: where `mask` is True; else
    the first valid_lens + extra keys, lengths (B,) or (B, Tq) (floats holding whole numbers
    allowed); else all of them."""
    shape = np.shape(scores)
    if mask is not None:
        return np.broadcast_to(np.asarray(mask, bool), shape)
    if valid_lens is None:
        return np.ones(shape, bool)
    lengths = np.asarray(valid_lens).astype(np.int64)
    lengths = lengths[:, None] if lengths.ndim == 1 else lengths
    return np.broadcast_to(sequence_mask(lengths + extra, shape[-1]), shape)


def fully_masked_row(scores, valid_lens=None, mask=None):
    """Whether some query keeps no key at all."""
    return not kept_keys(scores, valid_lens, mask).any(axis=-1).all()


def some_key_masked(scores, valid_lens=None, mask=None):
    """Whether some key of some query is masked."""
    return not kept_keys(scores, valid_lens, mask).all()


def masked_weight_problem(output, scores, valid_lens=None, mask=None, dtype="float64"):
    """What is wrong with weights that give a masked key a nonzero weight (None if none does):
    nonzero beyond `rounding` of the case's dtype (weights are at most 1)."""
    keep, output = kept_keys(scores, valid_lens, mask), as64(output)
    nonzero = np.abs(output) > rounding(dtype)
    leaks = (~keep) & nonzero if output.shape == keep.shape else np.zeros(0, bool)
    if not leaks.any():
        return None
    where = [int(i) for i in np.argwhere(leaks)[0]]
    return _(
        "a masked position has weight {weight:.3g} at index {index}; masked keys must get "
        "exactly zero weight",
        weight=output[tuple(where)],
        index=where,
    )


def kept_rows_sum_problem(output, scores, valid_lens=None, mask=None, dtype="float64"):
    """What is wrong with weights whose rows do not sum to one, or a fully masked row that is
    not all zeros (None if every row is right; another shape is the output check's)."""
    keep, output = kept_keys(scores, valid_lens, mask), as64(output)
    if output.shape != keep.shape:
        return None
    sums, want = output.sum(axis=-1), keep.any(axis=-1).astype(np.float64)
    bad = ~(np.abs(sums - want) <= max(1e-6, rounding(dtype) * output.shape[-1]))
    if not bad.any():
        return None
    where = tuple(int(i) for i in np.argwhere(bad)[0])
    values = dict(total=sums[where], index=list(where), want=want[where])
    if want[where]:
        template = N_(
            "a row with kept keys sums to {total:.6g} at index {index}, not {want:g}: the kept "
            "weights of a row sum to one, a fully masked row is all zeros"
        )
    else:
        template = N_(
            "a fully masked row sums to {total:.6g} at index {index}, not {want:g}: the kept "
            "weights of a row sum to one, a fully masked row is all zeros"
        )
    return _(template, **values)


def padded_everywhere(scores, valid_lens):
    """(B, Tk): the keys past every query's valid length (masked for all queries)."""
    lengths = np.asarray(valid_lens).reshape(len(scores), -1)
    return np.arange(np.shape(scores)[-1])[None, :] >= lengths.max(axis=1)[:, None]


def masked_attention(
    scores, valid_lens=None, mask=None, values=None, extra=0, axis=-1, masking="before"
):
    """Weights over the kept keys (see `kept_keys`), times `values` (B, Tk, d_v) when given.

    masking "before": the softmax over the kept keys, zeros where masked and in rows with no
    kept key; "after": the softmax over all keys, then the masked weights zeroed (the kept ones
    no longer sum to one); "fill only": masked scores replaced by -1e6, as d2l does, and nothing
    zeroed (a fully masked row comes out uniform).
    """
    keep = kept_keys(scores, valid_lens, mask, extra)
    if masking == "after":
        weights = softmax(scores, axis) * keep
    elif masking == "fill only":
        weights = softmax(np.where(keep, scores, -1e6), axis)
    else:
        weights = masked_softmax(scores, keep, axis)
    return weights if values is None else weights @ as64(values)


def causal_mask(tq, tk):
    out = np.zeros((tq, tk), bool)
    for i in range(tq):
        for j in range(tk):
            out[i, j] = j <= i
    return out


def dot_scores(query, key):
    q, k = as64(query), as64(key)
    b, tq, _ = q.shape
    tk = k.shape[1]
    out = np.zeros((b, tq, tk))
    for n in range(b):
        for i in range(tq):
            for j in range(tk):
                out[n, i, j] = np.sum(q[n, i] * k[n, j])
    return out


def scaled_dot_scores(query, key, power=0.5):
    """q·k / d**power, d the size of the keys: (8.4) for power ½."""
    return dot_scores(query, key) / float(np.shape(key)[-1]) ** power


def bilinear_scores(query, key, kernel, power=0.0):
    """qᵀ W k, divided by d_k**power."""
    scores = np.einsum("bip,pq,bjq->bij", as64(query), as64(kernel), as64(key))
    return scores / float(np.shape(key)[-1]) ** power


def dot_product_variance(d, var_q=1.0, var_k=1.0, d_power=1):
    """d ** d_power · var_q · var_k: Var(q·k) for d independent zero-mean terms (d_power 1);
    Var(q·k / √d) for d_power 0, since dividing by √d divides the variance by d."""
    return np.asarray(d**d_power * var_q * var_k)


def bilinear_asymmetry(W, sign=-1):
    """W + sign·Wᵀ: for sign -1, the A with s(x, q) - s(q, x) = xᵀ A q, s(x, q) = xᵀ W q."""
    W = as64(W)
    return W + sign * W.T


def additive_scores(query, key, query_kernel, key_kernel, score_vector, tanh="of the sum"):
    """vᵀ tanh(W_q q + W_k k) for every pair; `tanh` "of each projection" gives
    vᵀ(tanh(W_q q) + tanh(W_k k)), "after the score vector" tanh(vᵀ(W_q q + W_k k)), None no
    tanh. score_vector 1 sums the features."""
    q, k = as64(query), as64(key)
    b, tq, _ = q.shape
    tk = k.shape[1]
    out = np.zeros((b, tq, tk))
    for n in range(b):
        for i in range(tq):
            for j in range(tk):
                pq, pk = q[n, i] @ as64(query_kernel), k[n, j] @ as64(key_kernel)
                if tanh == "of the sum":
                    hidden = np.tanh(pq + pk)
                elif tanh == "of each projection":
                    hidden = np.tanh(pq) + np.tanh(pk)
                else:
                    hidden = pq + pk
                out[n, i, j] = np.sum(hidden * as64(score_vector))
                if tanh == "after the score vector":
                    out[n, i, j] = np.tanh(out[n, i, j])
    return out


def additive_attention(
    query, key, value, query_kernel, key_kernel, score_vector, axis=-1, normalised=True
):
    """Σ_j α_ij v_j with α the softmax of the additive scores along `axis` (the keys), or the
    raw scores when not `normalised`."""
    scores = additive_scores(query, key, query_kernel, key_kernel, score_vector)
    return attend(softmax(scores, axis) if normalised else scores, value)


def additive_multiplications(tq, tk, d_q, d_k, units, project_first=True, v_products="Tq·Tk"):
    """Multiplications of the (Tq, Tk) additive scores: each query and key projected once
    (project_first) or once per pair, plus `units` for each vᵀ tanh(·), counted per pair
    ("Tq·Tk", right), per query and key ("Tq+Tk"), or not at all (None)."""
    v_count = {"Tq·Tk": tq * tk, "Tq+Tk": tq + tk, None: 0}[v_products]
    if project_first:
        return np.asarray(tq * d_q * units + tk * d_k * units + v_count * units)
    return np.asarray(tq * tk * (d_q * units + d_k * units) + v_count * units)


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
