"""attnkit's Transformer blocks and grouped-query attention against PyTorch's, with our weights
copied into theirs, in float64. Run by tests/library/test_torch_crosscheck.py in a process of
its own when PyTorch is installed, and by hand on a machine that has it (any Keras backend):

    KERAS_BACKEND=jax python tests/support/torch_checks.py

- `TransformerEncoderBlock` (post-norm with ReLU, and pre-norm with GELU) against
  `torch.nn.TransformerEncoderLayer`, with a key padding mask and with a causal mask;
- `TransformerDecoderBlock` (post-norm, causal self-attention, cross-attention over an encoder
  sequence with padding) against `torch.nn.TransformerDecoderLayer`;
- `GroupedQueryAttention` (4 query heads sharing 2 key/value heads, and multi-query: 1) against
  `torch.nn.functional.scaled_dot_product_attention(..., enable_gqa=True)` (PyTorch ≥ 2.5),
  causal and with a boolean mask of shape (batch, Tq, Tk), the projections done in NumPy.

Positions that padding hides are left out of the comparison: PyTorch's fast path fills them
with its own values. Prints one line per check and "torch cross-checks: ok" when all agree to
TOLERANCE; exits with 1 at the first disagreement, saying where.
"""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import keras  # noqa: E402
import numpy as np  # noqa: E402
import torch  # noqa: E402

from attnkit import GroupedQueryAttention, TransformerDecoderBlock, TransformerEncoderBlock  # noqa: E402
from tests.support import layers  # noqa: E402
from tests.support.transformer_reference import as64  # noqa: E402

TOLERANCE = 1e-10
D_MODEL, HEADS, FFN = 8, 2, 7


def tensor(x):
    return torch.tensor(np.asarray(x, dtype=np.float64))


def agree(name, ours, theirs, keep=None):
    ours, theirs = as64(ours), np.asarray(theirs, dtype=np.float64)
    if keep is not None:
        ours, theirs = ours[keep], theirs[keep]
    error = float(np.abs(ours - theirs).max())
    print(f"{name}: max |attnkit - torch| = {error:.1e}")
    if not error <= TOLERANCE:
        sys.exit(f"{name}: attnkit and PyTorch differ by {error:.1e} (tolerance {TOLERANCE:g})")


def copy_attention(ours, theirs):
    """attnkit's (d, H, d_head) kernels into PyTorch's packed in_proj (3d, d) and out_proj."""
    kernels = [
        as64(getattr(ours, f"{n}_kernel")).reshape(D_MODEL, -1).T for n in ("query", "key", "value")
    ]
    biases = [as64(getattr(ours, f"{n}_bias")).reshape(-1) for n in ("query", "key", "value")]
    theirs.in_proj_weight.copy_(tensor(np.concatenate(kernels)))
    theirs.in_proj_bias.copy_(tensor(np.concatenate(biases)))
    theirs.out_proj.weight.copy_(tensor(as64(ours.output_kernel).reshape(-1, D_MODEL).T))
    theirs.out_proj.bias.copy_(tensor(as64(ours.output_bias)))


def copy_block(block, theirs, norm_names):
    with torch.no_grad():
        copy_attention(block.self_attention, theirs.self_attn)
        if block.__class__ is TransformerDecoderBlock:
            copy_attention(block.cross_attention, theirs.multihead_attn)
        feed_forward = block.feed_forward
        for ours, name in ((feed_forward.inner, "linear1"), (feed_forward.outer, "linear2")):
            getattr(theirs, name).weight.copy_(tensor(as64(ours.kernel).T))
            getattr(theirs, name).bias.copy_(tensor(as64(ours.bias)))
        for ours, name in norm_names:
            getattr(theirs, name).weight.copy_(tensor(as64(getattr(block, ours).gamma)))
            getattr(theirs, name).bias.copy_(tensor(as64(getattr(block, ours).beta)))
    return theirs.eval()


def encoder_checks(rng):
    x = rng.normal(size=(2, 5, D_MODEL))
    padding = np.array([[True] * 5, [True, True, True, False, False]])
    causal = np.tril(np.ones((5, 5), bool))
    for norm_first, activation in ((False, "relu"), (True, "gelu")):
        block = TransformerEncoderBlock(
            HEADS, FFN, norm_first=norm_first, activation=activation, epsilon=1e-5, dtype="float64"
        )
        block.build((2, 5, D_MODEL))
        layers.random_weights(block, rng, scale=0.4)
        theirs = torch.nn.TransformerEncoderLayer(
            D_MODEL,
            HEADS,
            FFN,
            dropout=0.0,
            activation=activation,
            batch_first=True,
            norm_first=norm_first,
        ).double()
        theirs = copy_block(
            block, theirs, (("self_attention_norm", "norm1"), ("feed_forward_norm", "norm2"))
        )
        kind = f"encoder block, {'pre' if norm_first else 'post'}-norm {activation}"
        with torch.no_grad():
            expected = theirs(tensor(x), src_key_padding_mask=torch.tensor(~padding)).numpy()
        agree(f"{kind}, padding mask", block(x, padding_mask=padding), expected, padding)
        with torch.no_grad():
            expected = theirs(tensor(x), src_mask=torch.tensor(~causal)).numpy()
        agree(f"{kind}, causal mask", block(x, attention_mask=causal), expected)


def decoder_checks(rng):
    x, encoder = rng.normal(size=(2, 4, D_MODEL)), rng.normal(size=(2, 3, D_MODEL))
    encoder_padding = np.array([[True, False, True], [True, True, True]])
    block = TransformerDecoderBlock(HEADS, FFN, epsilon=1e-5, dtype="float64")
    block.build((2, 4, D_MODEL), (2, 3, D_MODEL))
    layers.random_weights(block, rng, scale=0.4)
    theirs = torch.nn.TransformerDecoderLayer(
        D_MODEL, HEADS, FFN, dropout=0.0, batch_first=True
    ).double()
    norms = (
        ("self_attention_norm", "norm1"),
        ("cross_attention_norm", "norm2"),
        ("feed_forward_norm", "norm3"),
    )
    theirs = copy_block(block, theirs, norms)
    with torch.no_grad():
        expected = theirs(
            tensor(x),
            tensor(encoder),
            tgt_mask=torch.triu(torch.ones(4, 4, dtype=torch.bool), diagonal=1),
            memory_key_padding_mask=torch.tensor(~encoder_padding),
        ).numpy()
    ours = block(x, encoder, encoder_padding_mask=encoder_padding, use_causal_mask=True)
    agree("decoder block, post-norm relu, causal, encoder padding", ours, expected)


def project(x, weights, name):
    """(batch, T, d) through a (d, H, d_head) kernel and its bias: (batch, H, T, d_head)."""
    projected = np.einsum("btd,dhe->bhte", x, weights[f"{name}_kernel"])
    return tensor(projected + weights[f"{name}_bias"][None, :, None, :])


def output_projection(attended, weights):
    out = np.einsum("bhte,hed->btd", attended.numpy(), weights["output_kernel"])
    return out + weights["output_bias"]


def grouped_query_checks(rng):
    sdpa = torch.nn.functional.scaled_dot_product_attention
    x = rng.normal(size=(2, 5, D_MODEL))
    mask = rng.random((2, 5, 5)) > 0.4
    mask[..., 0] = True  # every query keeps a key: PyTorch gives NaN for a row with none
    for kv_heads in (2, 1):
        layer = GroupedQueryAttention(4, kv_heads, 3, dtype="float64")
        layer.build((2, 5, D_MODEL), (2, 5, D_MODEL))
        weights = layers.random_weights(layer, rng, scale=0.4)
        q, k, v = (project(x, weights, name) for name in ("query", "key", "value"))
        kind = f"grouped-query attention, 4 query heads on {kv_heads} key/value"
        attended = sdpa(q, k, v, is_causal=True, enable_gqa=True)
        expected = output_projection(attended, weights)
        agree(f"{kind}, causal", layer(x, x, use_causal_mask=True), expected)
        attended = sdpa(q, k, v, attn_mask=torch.tensor(mask[:, None]), enable_gqa=True)
        expected = output_projection(attended, weights)
        agree(f"{kind}, (batch, Tq, Tk) mask", layer(x, x, attention_mask=mask), expected)


def main():
    print(f"Keras backend {keras.backend.backend()}, PyTorch {torch.__version__}")
    rng = np.random.default_rng(20261127)
    encoder_checks(rng)
    decoder_checks(rng)
    grouped_query_checks(rng)
    print("torch cross-checks: ok")


if __name__ == "__main__":
    main()
