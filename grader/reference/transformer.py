"""Independent float64 NumPy references for one Transformer encoder block (lab
transformer-block): layer norm and RMSNorm, the position-wise feed-forward network, the
attention mask of padded (and causal) sequences, and the post-LN and pre-LN blocks. Loops over
tokens, heads and positions, from the formulas (Vaswani et al. 2017; Xiong et al. 2020; Zhang
and Sennrich 2019), not from attnkit's layers. Parameters are named like the grader's case
arrays; the arguments after the maths' own are what a known mistake changes (see
grader.vocabulary.spec.Mistake.of).
"""

import math

import numpy as np

from grader.reference.attention import softmax


def as64(x):
    """A float64 COPY of x: the grader's mutant search (grader.engine.search) runs edited
    copies of these functions on the case's own arrays, and an edit that writes into a view of
    an argument must not change the case."""
    return np.array(x, dtype=np.float64)


# What the lab's attention puts in place of a hidden score (a query whose every key is hidden
# then spreads its weight evenly, as `ops.where(mask, scores, -1e9)` does).
HIDDEN_SCORE = -1e9


def layer_norm(x, gamma, beta, epsilon=1e-5, ddof=0, axis=-1, epsilon_inside=True):
    """γ ⊙ (x − μ) / √(σ² + ε) + β over the last axis, token by token. Known mistakes: the
    variance divided by d − `ddof`, the statistics taken over another `axis`, ε added to the
    standard deviation (not `epsilon_inside` the root)."""
    x, gamma, beta = as64(x), as64(gamma), as64(beta)
    moved = np.moveaxis(x, axis, -1)
    out = np.zeros_like(moved)
    for index in np.ndindex(*moved.shape[:-1]):
        row = moved[index]
        centred = row - row.sum() / row.size
        with np.errstate(invalid="ignore", divide="ignore"):  # d = ddof = 1: the mistake's NaN
            variance = (centred**2).sum() / (row.size - ddof)
        spread = math.sqrt(variance + epsilon) if epsilon_inside else math.sqrt(variance) + epsilon
        out[index] = centred / spread
    return gamma * np.moveaxis(out, -1, axis) + beta


def rms_norm(x, gamma, epsilon=1e-6, centred=False, root=True):
    """γ ⊙ x / √(mean(x²) + ε) over the last axis. Known mistakes: the mean subtracted first
    (`centred`), the square root missing (not `root`)."""
    x, gamma = as64(x), as64(gamma)
    out = np.zeros_like(x)
    for index in np.ndindex(*x.shape[:-1]):
        row = x[index] - x[index].mean() if centred else x[index]
        mean_square = float(np.mean(row**2)) + epsilon
        out[index] = row / (math.sqrt(mean_square) if root else mean_square)
    return gamma * out


def feed_forward(x, ff_kernel_1, ff_bias_1, ff_kernel_2, ff_bias_2, activation="hidden"):
    """max(0, x W_1 + b_1) W_2 + b_2, token by token. Known mistakes: the ReLU `activation`
    "none" (missing) or "both" (on the output too)."""
    x = as64(x)
    out = np.zeros(x.shape[:-1] + (np.shape(ff_kernel_2)[-1],))
    for index in np.ndindex(*x.shape[:-1]):
        hidden = x[index] @ as64(ff_kernel_1) + as64(ff_bias_1)
        if activation != "none":
            hidden = np.maximum(hidden, 0.0)
        out[index] = hidden @ as64(ff_kernel_2) + as64(ff_bias_2)
        if activation == "both":
            out[index] = np.maximum(out[index], 0.0)
    return out


def attention_mask(lengths, steps, causal=False, padded="keys", kept_below=0, causal_keeps="<="):
    """(B, T, T) booleans: query i of sequence b may see key j where j < lengths[b] (and j ≤ i
    if `causal`). Known mistakes: the `padded` "queries" hidden instead of the keys, lengths
    off by `kept_below` (j < length + 1), the causal mask keeping ">=" (later keys)."""
    lengths = np.asarray(lengths).astype(np.int64)
    mask = np.zeros((len(lengths), steps, steps), bool)
    for b, length in enumerate(lengths):
        for i in range(steps):
            for j in range(steps):
                position = i if padded == "queries" else j
                kept = position < length + kept_below
                if causal:
                    kept = kept and (j <= i if causal_keeps == "<=" else j >= i)
                mask[b, i, j] = kept
    return mask


def self_attention(x, mask, query_kernel, key_kernel, value_kernel, output_kernel, num_heads):
    """Multi-head self-attention of x (B, T, d), head by head, hidden scores set to -1e9."""
    x = as64(x)
    batch, steps, features = x.shape
    depth = features // num_heads
    query, key, value = (x @ as64(w) for w in (query_kernel, key_kernel, value_kernel))
    merged = np.zeros_like(x)
    for b in range(batch):
        for h in range(num_heads):
            own = slice(h * depth, (h + 1) * depth)
            for i in range(steps):
                scores = np.array([query[b, i, own] @ key[b, j, own] for j in range(steps)])
                scores = np.where(mask[b, i], scores / math.sqrt(depth), HIDDEN_SCORE)
                merged[b, i, own] = softmax(scores) @ value[b, :, own]
    return merged @ as64(output_kernel)


def encoder_block(
    x,
    lengths,
    query_kernel,
    key_kernel,
    value_kernel,
    output_kernel,
    ff_kernel_1,
    ff_bias_1,
    ff_kernel_2,
    ff_bias_2,
    norm_1_gamma,
    norm_1_beta,
    norm_2_gamma,
    norm_2_beta,
    num_heads=1,
    norm_first=False,
    causal=False,
    epsilon=1e-5,
    padding=True,
    attention_residual=True,
    ffn_residual=True,
    residual_from="input",
    second_norm=True,
    **mask_mistakes,
):
    """One encoder block. Post-LN: h = LN_1(x + MHA(x)), out = LN_2(h + FFN(h)); pre-LN
    (`norm_first`): h = x + MHA(LN_1(x)), out = h + FFN(LN_2(h)). Known mistakes: no
    `padding` mask, a residual left out (`attention_residual`, `ffn_residual`), pre-LN's
    residual taken `residual_from` the "normalised" input, norm_1's γ and β used for both
    norms (not `second_norm`), and those of `attention_mask` (`mask_mistakes`)."""
    x = as64(x)
    steps = x.shape[1]
    kept = np.full(len(x), steps) if not padding else lengths
    mask = attention_mask(kept, steps, causal, **mask_mistakes)
    kernels = (query_kernel, key_kernel, value_kernel, output_kernel)

    def attend(y):
        return self_attention(y, mask, *kernels, num_heads)

    def ffn(y):
        return feed_forward(y, ff_kernel_1, ff_bias_1, ff_kernel_2, ff_bias_2)

    def norm_1(y):
        return layer_norm(y, norm_1_gamma, norm_1_beta, epsilon)

    def norm_2(y):
        if not second_norm:
            return norm_1(y)
        return layer_norm(y, norm_2_gamma, norm_2_beta, epsilon)

    if norm_first:
        if residual_from == "normalised":
            h = norm_1(x) + attend(norm_1(x))
        else:
            h = x + attend(norm_1(x))
        return h * ffn_residual + ffn(norm_2(h))
    h = norm_1(attend(x) + x * attention_residual)
    return norm_2(ffn(h) + h * ffn_residual)


def padded(lengths, x):
    """Whether some sequence is shorter than T (a padding mask changes something)."""
    return bool(np.any(np.asarray(lengths) < np.shape(x)[1]))


def several_tokens(x):
    """Whether T > 1 (a causal mask hides something)."""
    return np.shape(x)[1] > 1


def several_features(x):
    """Whether d > 1 (else a layer norm's output is β alone)."""
    return np.shape(x)[-1] > 1


def padded_lengths(lengths, steps):
    """Whether some sequence is shorter than `steps` (its padding can be hidden or not)."""
    return bool(np.any(np.asarray(lengths) < steps))
