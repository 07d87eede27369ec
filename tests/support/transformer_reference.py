"""Float64 NumPy references of the Transformer layers, written from the papers' formulas (not from
attnkit's code): rotary positions, ALiBi, grouped-query attention, the normalizations, the
feed-forward networks and whole encoder and decoder blocks, reading a built layer's weights."""

import math

import keras
import numpy as np

from grader.reference.attention import masked_softmax
from grader.reference.positions import rotary


def as64(x):
    return np.asarray(keras.ops.convert_to_numpy(x), dtype=np.float64)


# ------------------------------------------------------------------ positions
def rotate(x, positions, base=10000.0, pairing="halves", scaling=1.0):
    """x `(B, T, ..., d)` rotated pair by pair; positions `(T,)` or `(B, T)`, divided by
    `scaling`: the grader's float64 rotary reference, which the positions lab grades with."""
    return rotary(as64(x), np.asarray(positions, np.float64) / scaling, base, pairing)


def alibi_slopes(n):
    """Press et al. 2022, section 3: for n a power of two, the geometric sequence that starts at
    2^(-8/n) with that ratio; otherwise the slopes of the closest smaller power of two, then the
    odd-numbered slopes of twice that many heads."""
    if n & (n - 1) == 0:
        start = 2.0 ** (-8.0 / n)
        return [start ** (h + 1) for h in range(n)]
    power = 1 << (n.bit_length() - 1)
    doubled = alibi_slopes(2 * power)
    return alibi_slopes(power) + [doubled[k] for k in range(0, 2 * power, 2)][: n - power]


def alibi_bias(num_heads, tq, tk, query_start=0, bidirectional=False):
    slopes = np.array(alibi_slopes(num_heads))
    i = np.arange(tq)[:, None] + query_start
    j = np.arange(tk)[None, :]
    distance = np.abs(i - j) if bidirectional else (i - j)
    return -slopes[:, None, None] * distance[None]


# ------------------------------------------------------------------ attention
def gqa_weights(layer):
    """The eight (or four) weights of a GroupedQueryAttention, float64, by role."""
    names = ["query_kernel", "query_bias", "key_kernel", "key_bias"]
    names += ["value_kernel", "value_bias", "output_kernel", "output_bias"]
    return {n: None if getattr(layer, n) is None else as64(getattr(layer, n)) for n in names}


def grouped_query_attention(
    query,
    key,
    value,
    w,
    keep=None,
    *,
    rotary=None,
    query_positions=None,
    key_positions=None,
    alibi_start=None,
):
    """Heads computed one at a time, key/value head g used by query heads g*r … g*r + r − 1
    (the K/V heads repeated). `keep` broadcasts to (B, H, Tq, Tk). `rotary`: (base, pairing).

    Returns (output (B, Tq, d_out), weights (B, H, Tq, Tk))."""
    query, key, value = as64(query), as64(key), as64(value)

    def project(x, kernel, bias):
        y = np.einsum("btd,dhk->bthk", x, kernel)
        return y if bias is None else y + bias

    q = project(query, w["query_kernel"], w["query_bias"])
    k = project(key, w["key_kernel"], w["key_bias"])
    v = project(value, w["value_kernel"], w["value_bias"])
    if rotary is not None:
        base, pairing = rotary
        q = rotate(q, query_positions, base, pairing)
        k = rotate(k, key_positions, base, pairing)
    b, tq, h, d = q.shape
    tk, g = k.shape[1], k.shape[2]
    k = np.repeat(k, h // g, axis=2)
    v = np.repeat(v, h // g, axis=2)
    scores = np.einsum("bqhd,bkhd->bhqk", q, k) / math.sqrt(d)
    if alibi_start is not None:
        scores = scores + alibi_bias(h, tq, tk, alibi_start)[None]
    keep = np.ones((b, h, tq, tk), bool) if keep is None else np.broadcast_to(keep, scores.shape)
    weights = masked_softmax(scores, keep)
    heads = np.einsum("bhqk,bkhd->bqhd", weights, v)
    out = np.einsum("bqhd,hdo->bqo", heads, w["output_kernel"])
    if w["output_bias"] is not None:
        out = out + w["output_bias"]
    return out, weights


def causal(tq, tk, start=0):
    return np.arange(tk)[None, :] <= np.arange(tq)[:, None] + start


# ------------------------------------------------------------------ block parts
def layer_norm(x, layer):
    gamma, beta, eps = as64(layer.gamma), as64(layer.beta), layer.epsilon
    mean = x.mean(-1, keepdims=True)
    var = ((x - mean) ** 2).mean(-1, keepdims=True)
    return (x - mean) / np.sqrt(var + eps) * gamma + beta


def rms_norm(x, layer):
    return x / np.sqrt((x**2).mean(-1, keepdims=True) + layer.epsilon) * as64(layer.scale)


def norm(x, layer):
    return layer_norm(x, layer) if hasattr(layer, "gamma") else rms_norm(x, layer)


def dense(x, layer):
    y = x @ as64(layer.kernel)
    return y if layer.bias is None else y + as64(layer.bias)


_erf = np.vectorize(math.erf)


def feed_forward(x, layer):
    hidden = dense(x, layer.inner)
    if layer.activation == "relu":
        hidden = np.maximum(hidden, 0.0)
    elif layer.activation == "gelu":
        hidden = 0.5 * hidden * (1.0 + _erf(hidden / math.sqrt(2.0)))
    else:
        gate = dense(x, layer.gate)
        hidden = gate / (1.0 + np.exp(-gate)) * hidden
    return dense(hidden, layer.outer)


def _sublayer(x, block, norm_layer, f):
    if block.norm_first:
        return x + f(norm(x, norm_layer))
    return norm(x + f(x), norm_layer)


def _self_attention_keep(block, b, t, padding, extra, causal_mask):
    keep = np.ones((b, 1, t, t), bool)
    if padding is not None:
        keep = keep & padding[:, None, None, :] & padding[:, None, :, None]
    if causal_mask:
        keep = keep & causal(t, t)
    if block.sliding_window is not None:
        i, j = np.arange(t)[:, None], np.arange(t)[None, :]
        keep = keep & (np.abs(i - j) < block.sliding_window)
    if extra is not None:
        extra = np.asarray(extra, bool)
        keep = keep & (extra[:, None] if extra.ndim == 3 else extra)
    return keep


def _self_attention(x, block, keep):
    t = x.shape[1]
    rotary = (block.rotary_max_wavelength, block.rotary_pairing) if block.use_rotary else None
    return grouped_query_attention(
        x,
        x,
        x,
        gqa_weights(block.self_attention),
        keep,
        rotary=rotary,
        query_positions=np.arange(t),
        key_positions=np.arange(t),
    )[0]


def encoder_block(x, block, padding=None, attention_mask=None):
    """A TransformerEncoderBlock in float64 (no dropout)."""
    x = as64(x)
    b, t, _ = x.shape
    keep = _self_attention_keep(block, b, t, padding, attention_mask, False)
    x = _sublayer(x, block, block.self_attention_norm, lambda h: _self_attention(h, block, keep))
    return _sublayer(
        x, block, block.feed_forward_norm, lambda h: feed_forward(h, block.feed_forward)
    )


def decoder_block(x, block, encoder=None, decoder_padding=None, encoder_padding=None):
    """A TransformerDecoderBlock in float64 (no dropout), causal."""
    x = as64(x)
    b, t, _ = x.shape
    keep = _self_attention_keep(block, b, t, decoder_padding, None, True)
    x = _sublayer(x, block, block.self_attention_norm, lambda h: _self_attention(h, block, keep))
    if encoder is not None:
        encoder = as64(encoder)
        cross_keep = np.ones((b, 1, t, encoder.shape[1]), bool)
        if decoder_padding is not None:
            cross_keep = cross_keep & decoder_padding[:, None, :, None]
        if encoder_padding is not None:
            cross_keep = cross_keep & encoder_padding[:, None, None, :]
        weights = gqa_weights(block.cross_attention)
        x = _sublayer(
            x,
            block,
            block.cross_attention_norm,
            lambda h: grouped_query_attention(h, encoder, encoder, weights, cross_keep)[0],
        )
    return _sublayer(
        x, block, block.feed_forward_norm, lambda h: feed_forward(h, block.feed_forward)
    )
