"""Independent float64 NumPy references for the hard, multi-query, multi-head, self-attention
and position layers (loops and the book's own layouts, not the layers' code), and for the
exercises on them (lab mha, exercise 8-3, lab hard): their parameters are named like the
grader's case arrays, and the arguments after the maths' own are what a known mistake changes
(see grader.vocabulary.spec.Mistake.of)."""

import math

import numpy as np

from grader.i18n import _
from grader.reference import attention as ref
from grader.reference.attention import as64
from grader.reference.positions import sinusoidal_encoding


def linear(x, kernel, bias=None):
    """x W (+ b) over the last axis, with an explicit loop over positions."""
    x, kernel = as64(x), as64(kernel)
    out = np.zeros((*x.shape[:-1], kernel.shape[-1]))
    for idx in np.ndindex(*x.shape[:-1]):
        out[idx] = x[idx] @ kernel
    return out if bias is None else out + as64(bias)


def multi_head_attention(query, key, value, weights, mask=None, scale_dim=None, softmax_axis=-1):
    """MultiHead(Q, K, V) = [head_1; ...; head_H] W^O, one head at a time.

    `weights` holds the arrays of `keras.layers.MultiHeadAttention`'s layout:
    `query_kernel (d_q, H, d_k)`, `query_bias (H, d_k)` (biases optional), ...,
    `output_kernel (H, d_v, d_out)`; without an output kernel, the concatenated heads are
    returned. Scores are divided by √scale_dim (default d_k) and normalised over
    `softmax_axis` (-1, the keys; another axis ignores the mask). Returns (output, weights
    (B, H, Tq, Tk)).
    """
    num_heads = weights["query_kernel"].shape[1]
    heads, alphas = [], []
    for h in range(num_heads):

        def project(x, name, h=h):
            bias = weights.get(f"{name}_bias")
            return linear(x, weights[f"{name}_kernel"][:, h, :], None if bias is None else bias[h])

        q, k, v = project(query, "query"), project(key, "key"), project(value, "value")
        if scale_dim is None:
            scores = ref.scaled_dot_scores(q, k)
        else:
            scores = ref.dot_scores(q, k) / np.sqrt(scale_dim)
        if softmax_axis == -1:
            alpha = ref.masked_softmax(scores, mask)
        else:
            alpha = ref.softmax(scores, axis=softmax_axis)
        heads.append(ref.attend(alpha, v))
        alphas.append(alpha)
    concat = np.concatenate(heads, axis=-1)  # (B, Tq, H * d_v): head 1 first
    if "output_kernel" not in weights:
        return concat, np.stack(alphas, axis=1)
    w_o = as64(weights["output_kernel"])
    w_o = w_o.reshape(w_o.shape[0] * w_o.shape[1], w_o.shape[2])
    return linear(concat, w_o, weights.get("output_bias")), np.stack(alphas, axis=1)


def self_attention_columns(
    x,
    w_q,
    w_k,
    w_v,
    keep=None,
    b_q=None,
    b_k=None,
    b_v=None,
    scale_dim=None,
    softmax_axis=-1,
    mask_after_softmax=False,
):
    """NNDL (8.16)-(8.22) in the book's column layout, one example at a time.

    X ∈ R^{D_x × N}; Q = W_q X, K = W_k X, V = W_v X with W_q ∈ R^{D_k × D_x} (the transposes
    of the layer's row-layout kernels); H = V softmax(Kᵀ Q / √D_k), softmax over each column.
    `keep` (B, N_q, N_k) is True where query n may see key j. Returns H (B, N, D_v) and
    α (B, N, N), α[n, j] the weight of key j for query n.

    What known mistakes change: `scale_dim` (divide by √scale_dim instead of √D_k),
    `softmax_axis` (-2: normalise over the queries; the mask is then ignored),
    `mask_after_softmax` (zero the masked weights after an unmasked softmax).
    """
    x = as64(x)
    b, n, _ = x.shape
    d_k = np.shape(w_k)[-1]
    outs, alphas = [], []
    for i in range(b):
        cols = x[i].T  # (D_x, N)
        q = as64(w_q).T @ cols + (0 if b_q is None else as64(b_q)[:, None])
        k = as64(w_k).T @ cols + (0 if b_k is None else as64(b_k)[:, None])
        v = as64(w_v).T @ cols + (0 if b_v is None else as64(b_v)[:, None])
        scale = math.sqrt(d_k if scale_dim is None else scale_dim)
        scores = (k.T @ q) / scale  # (N_k, N_q): column n holds query n
        # The column-wise softmax is the row-wise softmax of the transpose.
        mask = None if keep is None else keep[i]
        if softmax_axis == -1 and not mask_after_softmax:
            alpha_cols = ref.masked_softmax(scores.T, mask).T
        else:
            alpha_cols = ref.softmax(scores.T, axis=softmax_axis).T
            if mask_after_softmax and mask is not None:
                alpha_cols = alpha_cols * np.asarray(mask).T
        outs.append((v @ alpha_cols).T)  # H = V softmax(.) (D_v, N), back to rows
        alphas.append(alpha_cols.T)
    return np.stack(outs), np.stack(alphas)


def self_attention(
    inputs,
    query_kernel,
    key_kernel,
    value_kernel,
    causal=False,
    reverse_mask=False,
    scale_dim=None,
    softmax_axis=-1,
    mask_after_softmax=False,
):
    """Exercise 8-3's SelfAttention in the layer's row layout: inputs (B, N, d_x) and kernels
    (d_x, d_k) -> H (B, N, d_v), by `self_attention_columns` (whose last three arguments
    plant known mistakes). `causal` keeps key j <= i for query i (`reverse_mask`: j >= i)."""
    b, n, _ = np.shape(inputs)
    keep = None
    if causal:
        lower = ref.causal_mask(n, n)
        keep = np.broadcast_to(lower.T if reverse_mask else lower, (b, n, n))
    out, _ = self_attention_columns(
        inputs,
        query_kernel,
        key_kernel,
        value_kernel,
        keep,
        scale_dim=scale_dim,
        softmax_axis=softmax_axis,
        mask_after_softmax=mask_after_softmax,
    )
    return out


def hard_attention(alpha, value, keep=None):
    """(8.8): n̂ = argmax_n α_n (first on ties), att = v_n̂; -1 and a zero vector when no key."""
    alpha, value = as64(alpha), as64(value)
    b, tq, tk = alpha.shape
    keep = np.ones(alpha.shape, bool) if keep is None else np.broadcast_to(keep, alpha.shape)
    indices = np.full((b, tq), -1)
    selected = np.zeros((b, tq, value.shape[-1]))
    for n in range(b):
        for i in range(tq):
            best, best_j = -np.inf, -1
            for j in range(tk):
                if keep[n, i, j] and alpha[n, i, j] > best:
                    best, best_j = alpha[n, i, j], j
            indices[n, i] = best_j
            if best_j >= 0:
                selected[n, i] = value[n, best_j]
    return selected, indices


def sinusoidal_table(length, depth, max_wavelength=10000.0):
    """PE[pos, 2i] = sin(pos / 10000^(2i/d)), PE[pos, 2i+1] = cos(pos / 10000^(2i/d)) for the
    positions 0 … length − 1 (the table of `positions.sinusoidal_encoding`)."""
    return sinusoidal_encoding(np.arange(length), depth, max_wavelength)


# ---- the labs' reshapes and layers, with the arguments that known mistakes change -------------


def split_heads(x, num_heads, layout="contiguous"):
    """(B, T, h·d) -> (B, h, T, d), head i owning the features i·d .. (i+1)·d - 1. The known
    wrong layouts: "interleaved" (head i gets features i, i+h, i+2h, ...), "reshaped" (a reshape
    straight to (B, h, T, d), which mixes time steps into the heads)."""
    x = as64(x)
    b, t, width = x.shape
    if layout == "reshaped":
        return x.reshape(b, num_heads, t, width // num_heads)
    if layout == "interleaved":
        return x.reshape(b, t, width // num_heads, num_heads).transpose(0, 3, 1, 2)
    return x.reshape(b, t, num_heads, width // num_heads).transpose(0, 2, 1, 3)


def merge_heads(x, layout="contiguous"):
    """(B, h, T, d) -> (B, T, h·d), the inverse of `split_heads` (same `layout`s; "reshaped"
    reshapes without transposing)."""
    x = as64(x)
    b, h, t, d = x.shape
    if layout == "reshaped":
        return x.reshape(b, t, h * d)
    if layout == "interleaved":
        return x.transpose(0, 2, 3, 1).reshape(b, t, d * h)
    return x.transpose(0, 2, 1, 3).reshape(b, t, h * d)


def flat_multi_head_attention(
    query,
    key,
    value,
    query_kernel,
    key_kernel,
    value_kernel,
    output_kernel=None,
    num_heads=1,
    key_dim=None,
    scale_dim=None,
    softmax_axis=-1,
    layout="contiguous",
):
    """The multi-head lab's layer: flat kernels (d, h·d_k) without biases, head i owning
    columns i·d_k .. (i+1)·d_k - 1 of each (or another `layout` of `split_heads`); scores
    divided by √scale_dim (default key_dim, the size of one head), softmax over
    `softmax_axis`; without an output kernel, the merged heads. By `multi_head_attention`."""

    def per_head(kernel):  # (d, h·d_k) -> (d, h, d_k)
        return split_heads(as64(kernel)[None], num_heads, layout)[0].transpose(1, 0, 2)

    kernels = {"query": query_kernel, "key": key_kernel, "value": value_kernel}
    weights = {f"{name}_kernel": per_head(kernel) for name, kernel in kernels.items()}
    if output_kernel is not None:  # rows (h·d_v) split like the heads: (h, d_v, d_out)
        weights["output_kernel"] = per_head(as64(output_kernel).T).transpose(1, 2, 0)
    if scale_dim is None:
        scale_dim = query_kernel.shape[-1] // num_heads if key_dim is None else key_dim
    out, _ = multi_head_attention(
        query, key, value, weights, scale_dim=scale_dim, softmax_axis=softmax_axis
    )
    return out


def hard_indices(scores, largest=True, first_on_ties=True, axis=-1):
    """(8.8): ĵ = argmax_j scores_j over `axis` (the keys), the first on ties. The known
    mistakes: the smallest (`largest=False`), the last on ties, another axis."""
    scores = as64(scores)
    if not largest:
        return np.argmin(scores, axis=axis)
    if first_on_ties:
        return np.argmax(scores, axis=axis)
    return scores.shape[axis] - 1 - np.argmax(np.flip(scores, axis), axis=axis)


def tied_maximum(scores):
    """Whether some query's largest score is tied (the first and the last argmax differ)."""
    last = hard_indices(scores, first_on_ties=False)
    return not np.array_equal(hard_indices(scores), last)


def hard_select(scores, value=None, largest=True, first_on_ties=True, axis=-1):
    """Hard attention's output: value[b, ĵ] for each query, ĵ = `hard_indices` (with the same
    arguments); without a value, the indices themselves."""
    indices = hard_indices(scores, largest, first_on_ties, axis)
    if value is None:
        return indices
    return np.take_along_axis(as64(value), indices[..., None], axis=1)


def soft_attention(scores, value):
    """softmax(scores) @ value: the average that hard attention replaces."""
    return ref.attend(ref.softmax(scores), value)


def straight_through(scores, value, soft_term_cancelled=True):
    """The straight-through estimator's forward value (e_ĵ + α - stop_gradient(α)) value, the
    hard selection; (e_ĵ + α) value where the soft term is not cancelled."""
    hard = hard_select(scores, value)
    return hard if soft_term_cancelled else hard + soft_attention(scores, value)


def sample_indices(weights, noise, boundary_to_next=True, cdf_axis=-1):
    """Inverse-CDF sampling: the number of c_j <= u (so u = c_j picks the next key), c the
    cumulative sum of the weights over the keys, clipped to Tk - 1. The known mistakes: c_j < u
    (`boundary_to_next=False`), the cumulative sum over another axis."""
    weights = as64(weights)
    cdf = np.cumsum(weights, axis=cdf_axis)
    u = as64(noise)[..., None]
    below = cdf <= u if boundary_to_next else cdf < u
    return np.minimum(below.sum(axis=-1), weights.shape[-1] - 1)


def sampling_problem(weights, output):
    """What is wrong with `output` (B, Tq) as samples of the weights (B, Tq, Tk): not whole
    numbers, not a key, or a key of zero weight; None when nothing is, or when its shape is
    wrong (the output check reports that)."""
    weights, indices = as64(weights), np.asarray(output)
    if indices.shape != weights.shape[:-1]:
        return None
    if not np.all(np.isfinite(indices)) or np.any(indices != np.round(indices)):
        return _("the indices are not whole numbers")
    indices = indices.astype(np.int64)
    outside = (indices < 0) | (indices >= weights.shape[-1])
    if outside.any():
        where = [int(i) for i in np.argwhere(outside)[0]]
        return _(
            "index {index} at {where} is not a key position (0 .. Tk-1)",
            index=indices[tuple(where)],
            where=where,
        )
    picked = np.take_along_axis(weights, indices[..., None], axis=-1)[..., 0]
    if np.any(picked <= 0):
        where = [int(i) for i in np.argwhere(picked <= 0)[0]]
        return _(
            "at {where} the sample is key {key}, whose weight is zero: a key of zero "
            "probability can never be drawn",
            where=where,
            key=indices[tuple(where)],
        )
    return None


def frequency_problem(weights, output, draws):
    """Where one α (weights[0, 0]) is sampled for `draws` queries or more: the key whose
    frequency among the samples `output` is furthest from its weight, if more than 0.05 away."""
    weights = as64(weights)
    if weights.shape[1] < draws or np.asarray(output).shape != weights.shape[:-1]:
        return None
    alpha = weights[0, 0]
    indices = np.asarray(output, np.float64)
    if np.any((indices < 0) | (indices >= alpha.size) | (indices != np.round(indices))):
        return None  # not keys at all: sampling_problem says so
    counts = np.bincount(indices.astype(np.int64).ravel(), minlength=alpha.size)
    frequencies = counts[: alpha.size] / counts.sum()
    worst = int(np.argmax(np.abs(frequencies - alpha)))
    if abs(frequencies[worst] - alpha[worst]) > 0.05:
        return _(
            "key {key} was drawn {frequency:.3f} of the time, but its weight is {weight:.3f}: "
            "inverse-CDF sampling draws each key with its probability",
            key=worst,
            frequency=frequencies[worst],
            weight=alpha[worst],
        )
    return None


# ---- Vaswani et al. 2017, Table 1, counted exactly ---------------------------------------------


def maximum_path_length(kind, n, k=None, round_up=True):
    """Layers from position 1 to position n: self-attention 1, recurrent n, causal convolutions
    of width k ⌈(n-1)/(k-1)⌉, dilated ones ⌈log_k n⌉ (counted with integers: the fewest L with
    k^L >= n). `round_up=False` rounds the last two down (a known mistake)."""
    if kind == "self_attention":
        return 1
    if kind == "recurrent":
        return n
    if kind == "convolution":
        return -(-(n - 1) // (k - 1)) if round_up else (n - 1) // (k - 1)
    layers, reach = 0, 1
    while (reach < n) if round_up else (reach * k <= n):
        reach *= k
        layers += 1
    return layers
