"""Independent float64 NumPy references for the hard, multi-query, multi-head, self-attention
and position layers (loops and the book's own layouts, not the layers' code)."""

import math

import numpy as np

from grader.reference import attention as ref
from grader.reference.attention import as64


def linear(x, kernel, bias=None):
    """x W (+ b) over the last axis, with an explicit loop over positions."""
    x, kernel = as64(x), as64(kernel)
    out = np.zeros((*x.shape[:-1], kernel.shape[-1]))
    for idx in np.ndindex(*x.shape[:-1]):
        out[idx] = x[idx] @ kernel
    return out if bias is None else out + as64(bias)


def multi_head_attention(query, key, value, weights, mask=None):
    """MultiHead(Q, K, V) = [head_1; ...; head_H] W^O, one head at a time.

    `weights` holds the arrays of `keras.layers.MultiHeadAttention`'s layout:
    `query_kernel (d_q, H, d_k)`, `query_bias (H, d_k)` (biases optional), ...,
    `output_kernel (H, d_v, d_out)`. Returns (output, weights (B, H, Tq, Tk)).
    """
    num_heads = weights["query_kernel"].shape[1]
    heads, alphas = [], []
    for h in range(num_heads):

        def project(x, name, h=h):
            bias = weights.get(f"{name}_bias")
            return linear(x, weights[f"{name}_kernel"][:, h, :], None if bias is None else bias[h])

        q, k, v = project(query, "query"), project(key, "key"), project(value, "value")
        alpha = ref.masked_softmax(ref.scaled_dot_scores(q, k), mask)
        heads.append(ref.attend(alpha, v))
        alphas.append(alpha)
    concat = np.concatenate(heads, axis=-1)  # (B, Tq, H * d_v): head 1 first
    w_o = as64(weights["output_kernel"])
    w_o = w_o.reshape(w_o.shape[0] * w_o.shape[1], w_o.shape[2])
    return linear(concat, w_o, weights.get("output_bias")), np.stack(alphas, axis=1)


def self_attention_columns(x, w_q, w_k, w_v, keep=None, b_q=None, b_k=None, b_v=None):
    """NNDL (8.16)-(8.22) in the book's column layout, one example at a time.

    X ∈ R^{D_x × N}; Q = W_q X, K = W_k X, V = W_v X with W_q ∈ R^{D_k × D_x} (the transposes
    of the layer's row-layout kernels); H = V softmax(Kᵀ Q / √D_k), softmax over each column.
    `keep` (B, N_q, N_k) is True where query n may see key j. Returns H (B, N, D_v) and
    α (B, N, N), α[n, j] the weight of key j for query n.
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
        scores = (k.T @ q) / math.sqrt(d_k)  # (N_k, N_q): column n holds query n
        # The column-wise softmax is the row-wise softmax of the transpose.
        alpha_cols = ref.masked_softmax(scores.T, None if keep is None else keep[i]).T
        outs.append((v @ alpha_cols).T)  # H = V softmax(.) (D_v, N), back to rows
        alphas.append(alpha_cols.T)
    return np.stack(outs), np.stack(alphas)


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
    """PE[pos, 2i] = sin(pos / 10000^(2i/d)), PE[pos, 2i+1] = cos(pos / 10000^(2i/d))."""
    table = np.zeros((length, depth))
    for pos in range(length):
        for i in range((depth + 1) // 2):
            angle = pos / max_wavelength ** (2 * i / depth)
            table[pos, 2 * i] = math.sin(angle)
            if 2 * i + 1 < depth:
                table[pos, 2 * i + 1] = math.cos(angle)
    return table
