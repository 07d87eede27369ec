"""Lab transformer-block: one Transformer encoder block, its norms, feed-forward, masks and
residuals, graded on outputs and gradients (post-LN and pre-LN, padding and causal masks)."""

from __future__ import annotations

import numpy as np

from grader.engine import sampling as draw
from grader.engine import selectors as on
from grader.reference import transformer as ref
from grader.vocabulary.spec import FUNCTION, Case, Exercise, Mistake, Part

# (B, T, d, epsilon): a token of two features, one feature (the output is β alone), a large ε
# (where ε outside the root is told apart), a batch of matrices.
NORMS = draw.Dims(
    "B T d epsilon",
    ((2, 3, 4, 1e-5), (1, 1, 2, 1e-5), (2, 4, 3, 0.5), (1, 2, 1, 1e-5), (3, 2, 5, 0.1)),
    (("B T d", 1, 6),),
    derived={"epsilon": lambda row: (1e-5, 0.1, 0.5)[row["d"] % 3]},
    float32=(2, 3, 6, 1e-5),
)
FEED_FORWARD = draw.Dims(
    "B T d f",
    ((2, 3, 4, 6), (1, 1, 1, 1), (2, 4, 3, 2)),
    (("B T d f", 1, 7),),
    float32=(2, 3, 4, 5),
)
# (B, T, causal): lengths drawn in [1, T], the first sequence of length 1, the second padded.
MASKS = ((3, 5, False), (3, 5, True), (1, 1, True), (2, 4, True), (4, 3, False))
# The block's sizes (B, T, heads, head size, f), then norm_first and causal; float32 last.
BLOCK_SIZES = ((2, 4, 2, 2, 6), (1, 1, 1, 2, 3), (2, 5, 3, 2, 4), (1, 3, 1, 4, 5))
FLOAT32_SIZES = (2, 3, 2, 2, 5)
WEIGHTS = {name: "d d" for name in ("query_kernel", "key_kernel", "value_kernel")}
WEIGHTS |= {"output_kernel": "d d", "ff_kernel_1": "d f", "ff_bias_1": "f"}
WEIGHTS |= {"ff_kernel_2": "f d", "ff_bias_2": "d"}
WEIGHTS |= {f"norm_{i}_{kind}": "d" for i in (1, 2) for kind in ("gamma", "beta")}
FAN_IN = ("query_kernel", "key_kernel", "value_kernel", "output_kernel")
FAN_IN += ("ff_kernel_1", "ff_kernel_2")


def norm_case(target):
    def make(rng, row):
        dims = {"B": row["B"], "T": row["T"], "d": row["d"]}
        arrays = draw.normal(rng, dims, x="B T d", gamma="d", beta="d")
        if target == "rms_norm":
            del arrays["beta"]
        label = f"{draw.dims_label(**dims)}, epsilon={row['epsilon']}"
        return Case(target, FUNCTION, label, arrays, {"epsilon": row["epsilon"]})

    return make


def feed_forward_case(rng, row):
    shapes = dict(x="B T d", ff_kernel_1="d f", ff_bias_1="f", ff_kernel_2="f d", ff_bias_2="d")
    arrays = draw.normal(rng, row, ("ff_kernel_1", "ff_kernel_2"), **shapes)
    return Case("feed_forward", FUNCTION, draw.dims_label(**row), arrays)


def mask_cases(rng, hidden=False):
    rows = MASKS
    if hidden:
        rows = [
            (int(rng.integers(1, 5)), int(rng.integers(1, 7)), bool(rng.random() < 0.5))
            for _ in range(3)
        ]
    cases = []
    for batch, steps, causal in rows:
        lengths = draw.padded_lengths(rng, batch, steps)
        label = f"B={batch} T={steps} lengths={lengths.astype(int).tolist()}, causal={causal}"
        params = {"steps": steps, "causal": causal}
        cases.append(Case("attention_mask", FUNCTION, label, {"lengths": lengths}, params))
    return cases


def block_case(rng, sizes, norm_first, causal, padding, dtype="float64"):
    batch, steps, heads, depth, hidden = sizes
    dims = {"B": batch, "T": steps, "d": heads * depth, "f": hidden}
    lengths = draw.padded_lengths(rng, batch, steps) if padding else np.full(batch, float(steps))
    shown = {"B": batch, "T": steps, "d": heads * depth, "heads": heads, "f": hidden}
    label = draw.dims_label(**shown) + f", norm_first={norm_first}, causal={causal}"
    label += f", lengths={lengths.astype(int).tolist()}" * padding
    params = {"num_heads": heads, "ff_dim": hidden, "norm_first": norm_first, "causal": causal}
    inputs = {"x": "B T d", "lengths": lengths}
    fields = dict(params=params, label=label, dtype=dtype, lengthless=("lengths",))
    case = draw.layer_case(
        "TransformerEncoderBlock", rng, dims, inputs, "B T d", WEIGHTS, fan_in=FAN_IN, **fields
    )
    if dtype == "float32":
        case.label += " float32"
    return case


def block_sizes(rng):
    """Heads of two features or more: a block of one feature outputs LN_2's β alone."""
    batch, steps, heads, depth, hidden = (
        int(v) for v in rng.integers((1, 1, 1, 2, 1), (4, 6, 4, 4, 7))
    )
    return batch, steps, heads, depth, hidden


def block_cases(norm_first=None):
    """Unmasked blocks of one norm order; or (`norm_first` None) masked blocks of both orders,
    padded, causal and both."""

    def make_cases(rng, hidden=False):
        sizes = [block_sizes(rng) for _ in range(3)] if hidden else list(BLOCK_SIZES)
        if norm_first is None:
            settings = [(i % 2 == 0, i % 3 != 1, i % 3 != 2) for i in range(len(sizes))]
            if not hidden:
                sizes[1] = (2, 3, 1, 2, 3)  # a batch to pad where the others are one token
        else:
            settings = [(norm_first, False, False)] * len(sizes)
        cases = [
            block_case(rng, size, *setting) for size, setting in zip(sizes, settings, strict=True)
        ]
        last = (norm_first, False, False) if norm_first is not None else (True, True, True)
        cases.append(block_case(rng, FLOAT32_SIZES, *last, dtype="float32"))
        return cases

    return make_cases


PADDED = on.given(ref.padded)
CAUSAL_SEVERAL = on.all_of(on.param_is("causal", True), on.given(ref.several_tokens))
SEVERAL_FEATURES = on.given(ref.several_features)
SECOND_NORM = Mistake.of(
    "norm_1 used twice",
    "Both norms used norm_1_gamma and norm_1_beta: the feed-forward sub-layer has a layer norm "
    "of its own, with norm_2_gamma and norm_2_beta.",
    ref.encoder_block,
    second_norm=False,
)
ORDER_EXPLAINED = (
    "Post-LN (norm_first=False): h = LN_1(x + MHA(x)), out = LN_2(h + FFN(h)); pre-LN "
    "(norm_first=True): h = x + MHA(LN_1(x)), out = h + FFN(LN_2(h))."
)

RECORD = Exercise(
    id="transformer-block",
    title="Lab: Transformer block: norms, feed-forward, residuals and masks",
    file="lab_transformer_block.py",
    section="NNDL 8.3 (self-attention); Vaswani 2017 (the Transformer); Xiong 2020 (pre-LN)",
    timeout=20.0,
    summary=(
        "Write the parts of one Transformer encoder block: layer norm and RMSNorm, the "
        "feed-forward network, the attention mask of padded and causal sequences, and the block "
        "itself with its two residual sub-layers, post-LN and pre-LN, graded on its outputs and "
        "on its gradients with respect to the input and all twelve weights."
    ),
    parts=(
        Part(
            name="layer_norm",
            points=2,
            make_cases=draw.in_dtype(NORMS.cases(norm_case("layer_norm"))),
            description="layer_norm: γ ⊙ (x − μ) / √(σ² + ε) + β over the last axis, with the "
            "biased variance.",
            mistakes=(
                Mistake.of(
                    "variance with d − 1",
                    "The variance was divided by d − 1 (np.var's ddof=1, the unbiased "
                    "estimate): a layer norm divides by d, the number of features.",
                    ref.layer_norm,
                    when=SEVERAL_FEATURES,
                    ddof=1,
                ),
                Mistake.of(
                    "normalised over the tokens",
                    "The mean and variance were taken over the tokens (axis −2): a layer norm "
                    "normalises each token over its own features, the last axis.",
                    ref.layer_norm,
                    when=on.several("x", -2),
                    axis=-2,
                ),
                Mistake.of(
                    "ε outside the square root",
                    "This is (x − μ) / (σ + ε): ε is added to the variance, inside the square "
                    "root, √(σ² + ε).",
                    ref.layer_norm,
                    when=on.param_is_not("epsilon", 1e-5),
                    epsilon_inside=False,
                ),
            ),
        ),
        Part(
            name="rms_norm",
            points=1,
            make_cases=draw.in_dtype(NORMS.cases(norm_case("rms_norm"))),
            description="rms_norm: γ ⊙ x / √(mean(x²) + ε) over the last axis.",
            mistakes=(
                Mistake.of(
                    "mean subtracted",
                    "The mean was subtracted first, as in a layer norm: RMSNorm divides x "
                    "itself by its root mean square, with no centring.",
                    ref.rms_norm,
                    when=SEVERAL_FEATURES,
                    centred=True,
                ),
                Mistake.of(
                    "square root missing",
                    "x was divided by the mean square: divide by its square root, √(mean(x²) + ε).",
                    ref.rms_norm,
                    root=False,
                ),
            ),
        ),
        Part(
            name="feed_forward",
            points=1,
            make_cases=draw.in_dtype(FEED_FORWARD.cases(feed_forward_case)),
            description="feed_forward: max(0, x W_1 + b_1) W_2 + b_2 for every token.",
            mistakes=(
                Mistake.of(
                    "ReLU missing",
                    "The two layers were applied with no activation between them (one linear "
                    "map): apply max(0, ·) to the hidden layer x W_1 + b_1.",
                    ref.feed_forward,
                    activation="none",
                ),
                Mistake.of(
                    "ReLU on the output",
                    "The output went through a ReLU too: only the hidden layer has an "
                    "activation; the output x W_2 + b_2 is added to the residual as it is.",
                    ref.feed_forward,
                    activation="both",
                ),
            ),
        ),
        Part(
            name="attention_mask",
            points=2,
            make_cases=mask_cases,
            description="attention_mask: (B, T, T), True where j < length and, if causal, j ≤ i.",
            mistakes=(
                Mistake.of(
                    "queries padded instead of keys",
                    "The mask hid the padded QUERIES (rows i ≥ length): padding hides the keys, "
                    "mask[b, i, j] = j < lengths[b], so that no real token attends to padding.",
                    ref.attention_mask,
                    when=on.given(ref.padded_lengths),
                    padded="queries",
                ),
                Mistake.of(
                    "length off by one",
                    "The mask keeps key j = length: positions count from 0, and key j is real "
                    "where j < length.",
                    ref.attention_mask,
                    when=on.given(ref.padded_lengths),
                    kept_below=1,
                ),
                Mistake.of(
                    "causal mask reversed",
                    "The causal mask kept the keys j ≥ i, the later positions: query i may see "
                    "the keys j ≤ i, itself and the earlier ones.",
                    ref.attention_mask,
                    when=on.all_of(on.param_is("causal", True), on.param_is_not("steps", 1)),
                    causal_keeps=">=",
                ),
            ),
        ),
        Part(
            name="post-LN block",
            points=2,
            targets=("TransformerEncoderBlock",),
            make_cases=block_cases(norm_first=False),
            description="TransformerEncoderBlock, norm_first=False, no padding: outputs and "
            "gradients.",
            mistakes=(
                Mistake.of(
                    "pre-LN instead of post-LN",
                    "This is the pre-LN block: with norm_first=False the norm comes AFTER each "
                    "residual sum. " + ORDER_EXPLAINED,
                    ref.encoder_block,
                    norm_first=True,
                ),
                Mistake.of(
                    "attention residual missing",
                    "The attention's output was normalised without the block's input added: "
                    "h = LN_1(x + MHA(x)), the residual keeps x.",
                    ref.encoder_block,
                    attention_residual=False,
                ),
                Mistake.of(
                    "feed-forward residual missing",
                    "The feed-forward's output was normalised without h added: "
                    "out = LN_2(h + FFN(h)).",
                    ref.encoder_block,
                    ffn_residual=False,
                ),
                SECOND_NORM,
            ),
        ),
        Part(
            name="pre-LN block",
            points=2,
            targets=("TransformerEncoderBlock",),
            make_cases=block_cases(norm_first=True),
            description="TransformerEncoderBlock, norm_first=True, no padding: outputs and "
            "gradients.",
            mistakes=(
                Mistake.of(
                    "post-LN instead of pre-LN",
                    "This is the post-LN block: with norm_first=True each sub-layer's INPUT is "
                    "normalised and the residual sum is left as it is. " + ORDER_EXPLAINED,
                    ref.encoder_block,
                    norm_first=False,
                ),
                Mistake.of(
                    "residual from the normalised input",
                    "The residual added LN_1(x) to the attention's output: pre-LN adds the "
                    "block's input itself, h = x + MHA(LN_1(x)), so that x passes through "
                    "unchanged.",
                    ref.encoder_block,
                    residual_from="normalised",
                ),
                Mistake.of(
                    "feed-forward residual missing",
                    "The output is FFN(LN_2(h)) alone: out = h + FFN(LN_2(h)).",
                    ref.encoder_block,
                    ffn_residual=False,
                ),
                SECOND_NORM,
            ),
        ),
        Part(
            name="masked block",
            points=2,
            targets=("TransformerEncoderBlock",),
            make_cases=block_cases(),
            description="TransformerEncoderBlock with padded sequences and causal=True, "
            "post-LN and pre-LN: outputs and gradients.",
            mistakes=(
                Mistake.of(
                    "padding ignored",
                    "The real tokens attended to the padding: build the mask from the lengths "
                    "(attention_mask) and pass it to the attention.",
                    ref.encoder_block,
                    when=PADDED,
                    padding=False,
                ),
                Mistake.of(
                    "causal mask ignored",
                    "With causal=True every token attended to the later ones too: pass "
                    "self.causal to attention_mask.",
                    ref.encoder_block,
                    when=CAUSAL_SEVERAL,
                    causal=False,
                ),
            ),
        ),
    ),
)
