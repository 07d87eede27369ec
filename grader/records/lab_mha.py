"""Lab mha: multi-head attention: splitting and merging heads, and the layer itself."""

from __future__ import annotations

from grader.engine import properties as relations
from grader.engine import sampling as draw
from grader.engine import selectors as on
from grader.reference import heads as ref
from grader.vocabulary.spec import FUNCTION, Case, Exercise, Mistake, Part, Recompute

# One head, one step, several of each; hidden checks draw (B, T) then (h, d) in [1, 5).
HEADS = draw.Dims(
    "B T h d",
    ((2, 3, 4, 2), (1, 1, 1, 1), (2, 5, 3, 4), (1, 4, 2, 3), (3, 2, 1, 5)),
    (("B T", 1, 5), ("h d", 1, 5)),
)
# The layer's sizes, then its settings (None: the default); one more case in float32.
SIZES, SETTINGS = "B Tq Tk d_q d_k d_v".split(), ("num_heads", "key_dim", "value_dim", "output_dim")
LAYERS = [
    (2, 3, 5, 6, 4, 5, 2, 3, None, None),
    (1, 1, 1, 2, 2, 2, 1, 1, None, None),
    (2, 4, 3, 8, 8, 8, 4, 2, 3, 5),
    (1, 2, 6, 4, 3, 2, 3, 4, 2, None),
]
FLOAT32 = (2, 3, 4, 6, 6, 6, 2, 3, None, None)
INPUTS = {"query": "B Tq d_q", "key": "B Tk d_k", "value": "B Tk d_v"}
# Drawn N(0, 1/fan-in); hk = h·key_dim, hv = h·value_dim, o = output_dim.
KERNELS = dict(query_kernel="d_q hk", key_kernel="d_k hk", value_kernel="d_v hv")
KERNELS["output_kernel"] = "hv o"


def head_case(target):
    """split_heads gets x (B, T, h·d) and num_heads, merge_heads x (B, h, T, d)."""

    def make(rng, dims):
        b, t, h, d = dims.values()
        if target == "split_heads":
            shape, params, shown = (b, t, h * d), {"num_heads": h}, f", num_heads={h}"
        else:
            shape, params, shown = (b, h, t, d), {}, ""
        x = {"x": rng.standard_normal(shape)}
        return Case(target, FUNCTION, f"x of shape {shape}{shown}", x, params)

    return make


def mha_case(rng, row):
    d_q, h, key_dim, value_dim, output_dim = row[3], *row[6:]
    dims = dict(zip(SIZES, row, strict=False))
    params = {name: size for name, size in zip(SETTINGS, row[6:], strict=True) if size is not None}
    shown = {"heads" if name == "num_heads" else name: size for name, size in params.items()}
    label = f"{draw.dims_label(**dims)}, {draw.dims_label(**shown)}"
    dims |= {"hk": h * key_dim, "hv": h * (value_dim or key_dim), "o": output_dim or d_q}
    fields = dict(weights=KERNELS, fan_in=tuple(KERNELS), params=params, label=label)
    return draw.layer_case("MultiHeadAttention", rng, dims, INPUTS, "B Tq o", **fields)


def layer_sizes(rng):
    """Sizes in [1, 6), then value_dim and output_dim, each drawn half the time."""
    sizes = tuple(int(size) for size in rng.integers(1, 6, size=8))
    return sizes + (draw.optional_size(rng, 1, 6), draw.optional_size(rng, 1, 6))


SEVERAL_HEADS = on.param_is_not("num_heads", 1)

RECORD = Exercise(
    id="mha",
    title="Lab: Multi-head attention: split, attend per head, merge, project",
    file="lab_mha.py",
    section="NNDL 8.2.1.3 (8.11), 8.3 multi-head self-attention; Vaswani 2017",
    timeout=15.0,
    summary=(
        "Multi-head attention runs h scaled dot-product attentions in h projection spaces at "
        "once. Write the reshapes that split a projection into heads and merge them back, then "
        "the layer: project, split, attend per head with the per-head scale 1/√d_k, merge and "
        "project, with gradients to all four kernels."
    ),
    parts=(
        Part(
            name="split_heads",
            points=2,
            make_cases=HEADS.cases(head_case("split_heads")),
            description="split_heads: (B, T, h·d) -> (B, h, T, d), head i owning features "
            "i·d .. (i+1)·d - 1.",
            mistakes=(
                Mistake.of(
                    "reshaped straight to (B, h, T, d)",
                    "The shape is right but the values are not: a reshape straight to "
                    "(B, h, T, d) mixes time steps into the heads. Reshape to (B, T, h, d), "
                    "then transpose.",
                    ref.split_heads,
                    when=on.all_of(SEVERAL_HEADS, on.several("x", 1)),
                    layout="reshaped",
                ),
                Mistake.of(
                    "heads interleaved",
                    "Head i got features i, i+h, i+2h, ... (a reshape to (B, T, d, h)); head i "
                    "owns the contiguous features i·d .. (i+1)·d - 1: reshape to (B, T, h, d).",
                    ref.split_heads,
                    when=on.all_of(
                        SEVERAL_HEADS, on.differ(on.param("num_heads"), on.size_of("x"))
                    ),
                    layout="interleaved",
                ),
            ),
        ),
        Part(
            name="merge_heads",
            points=1,
            make_cases=HEADS.cases(head_case("merge_heads")),
            description="merge_heads: (B, h, T, d) -> (B, T, h·d), the inverse of split_heads.",
            mistakes=(
                Mistake.of(
                    "reshaped without transposing",
                    "A reshape of (B, h, T, d) straight to (B, T, h·d) mixes heads and time "
                    "steps: transpose to (B, T, h, d) first.",
                    ref.merge_heads,
                    when=on.all_of(on.several("x", 1), on.several("x", 2)),
                    layout="reshaped",
                ),
                Mistake.of(
                    "heads interleaved",
                    "The features came out as (d, h) rather than (h, d): head i must fill "
                    "features i·d .. (i+1)·d - 1.",
                    ref.merge_heads,
                    when=on.all_of(on.several("x", 1), on.several("x", -1)),
                    layout="interleaved",
                ),
            ),
        ),
        Part(
            name="MultiHeadAttention",
            points=5,
            recompute=Recompute(
                ref.flat_multi_head_attention, tuple(KERNELS), ("scale_dim", "key_dim")
            ),
            make_cases=draw.rows_cases(mha_case, LAYERS, layer_sizes, float32=FLOAT32),
            relations=(relations.keys_permuted(("key", "value")), relations.batch_alone()),
            description="MultiHeadAttention.call: outputs and gradients w.r.t. query, key, "
            "value and the four kernels.",
            mistakes=(
                Mistake.of(
                    "scaled by the total width",
                    "The scores were divided by √(h·key_dim); each head divides by √key_dim, "
                    "the size of its own queries and keys.",
                    ref.flat_multi_head_attention,
                    when=SEVERAL_HEADS,
                    scale_dim=on.size_of("query_kernel"),
                ),
                Mistake.of(
                    "scale forgotten",
                    "The 1/√key_dim scale of the scores is missing.",
                    ref.flat_multi_head_attention,
                    when=on.param_is_not("key_dim", 1),
                    scale_dim=1,
                ),
                Mistake.of(
                    "softmax over the queries",
                    "The softmax normalises over the queries; it must run over the keys, the "
                    "last axis of each head's (Tq, Tk) scores.",
                    ref.flat_multi_head_attention,
                    when=on.several("query", 1),
                    softmax_axis=-2,
                ),
                Mistake.of(
                    "heads not split",
                    "This is one attention over all h·key_dim features (the heads were never "
                    "split): split the projections into h heads and attend in each.",
                    ref.flat_multi_head_attention,
                    when=SEVERAL_HEADS,
                    num_heads=1,
                ),
                Mistake.of(
                    "heads interleaved",
                    "Head i got features i, i+h, i+2h, ... of each projection; head i owns the "
                    "contiguous features i·key_dim .. (i+1)·key_dim - 1.",
                    ref.flat_multi_head_attention,
                    when=lambda case: (
                        case.params["num_heads"] > 1
                        and max(case.params["key_dim"], case.params.get("value_dim", 1)) > 1
                    ),
                    layout="interleaved",
                ),
                Mistake.of(
                    "output projection missing",
                    "The merged heads were returned without the output projection W_O "
                    "(output_kernel).",
                    ref.flat_multi_head_attention,
                    when=on.square("output_kernel"),
                    output_kernel=None,
                ),
            ),
        ),
    ),
)
