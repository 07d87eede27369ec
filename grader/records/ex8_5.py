"""Exercise 8-5: memory-network hops and NTM addressing, the two ways to use an external memory."""

from __future__ import annotations

import numpy as np

from grader.engine import sampling as draw
from grader.engine import selectors as on
from grader.i18n import N_
from grader.reference import memory as ref
from grader.vocabulary.labels import label_texts
from grader.vocabulary.spec import FUNCTION, LAYER, Exercise, Mistake, Part, WrittenPart

# The words of this module's case labels, translated where shown (grader.vocabulary.labels).
LABEL_TEXTS = label_texts(
    N_("beta about 1000 (numerical stability)"),
    N_("beta = 0 in row 0 (uniform weights)"),
    N_("{count} offsets"),
    N_("one-hot shifts: rows are offsets -1"),
)

# Batch 1 and several, one slot, width 1.
HOP_SHAPES = [(2, 5, 4), (1, 1, 1), (3, 2, 6), (1, 7, 3), (4, 3, 1)]
READ_SHAPES = [(2, 5, 4, 2), (1, 1, 1, 3), (3, 4, 2, 1), (2, 6, 3, 5)]
READ_LAYER_SHAPES = [(2, 4, 3, 3, "float64"), (1, 3, 2, 1, "float64"), (2, 5, 3, 2, "float32")]
# One slot, width 1, a wide key.
CONTENT_SHAPES = [(2, 5, 4), (1, 1, 3), (3, 4, 1), (1, 6, 8), (2, 3, 2)]
GATE_SHAPES = [(2, 5), (1, 1), (3, 4), (1, 7)]
# N = 2 wraps at once, N smaller than the number of offsets, 5 offsets.
SHIFT_SHAPES = [(2, 6, 3), (1, 2, 3), (2, 7, 5), (1, 1, 3), (2, 3, 5)]
# Offsets beyond the ring (k > N: offset ±3 on 2 slots, ±4 on 3), in every draw: they must wrap
# modulo N, which a slice by the raw offset does not.
WIDE_SHIFTS = [(2, 2, 7), (1, 3, 9)]
NTM_SHAPES = [(2, 6, 4, 3), (1, 1, 1, 3), (3, 5, 2, 3), (1, 8, 3, 5), (2, 2, 3, 3)]
NTM_LAYER_SHAPES = [(2, 5, 3, 3, "float64"), (1, 4, 2, 5, "float64"), (2, 6, 3, 3, "float32")]

HOP = dict(query="B d", memory_in="B n d", memory_out="B n d")
CONTENT = dict(memory="B N W", key=draw.scaled_normal(2.0, "B W"), beta=draw.uniform(0.5, 8.0, "B"))
INTERPOLATE = dict(w_content=draw.distribution("B N"), w_previous=draw.distribution("B N"))
INTERPOLATE |= dict(gate=draw.uniform(0.0, 1.0, "B"))
SHARPEN = dict(weights=draw.distribution("B N"), gamma=draw.uniform(1.2, 5.0, "B"))
SHIFT = dict(weights=draw.distribution("B N"), shift=draw.distribution("B offsets"))
NTM = CONTENT | dict(beta=draw.uniform(0.5, 5.0, "B"), gate=draw.uniform(0.05, 0.95, "B"))
NTM |= dict(w_previous=draw.distribution("B N"), shift=draw.distribution("B offsets"))
NTM |= dict(gamma=draw.uniform(1.2, 4.0, "B"))
OFFSETS = "B={B} N={N} W={W}, {offsets} offsets"


def _sizes(rng, count, size=3):
    return draw.random_shapes(rng, count, size, high=9)


def _offsets(rng):
    return 2 * int(rng.integers(1, 3)) + 1


def hop_cases(rng, hidden=False):
    shapes = draw.shapes_for(rng, hidden, HOP_SHAPES, 3, 3, high=9)
    return draw.drawn_cases(rng, "memn2n_hop", FUNCTION, "B n d", shapes, HOP)


def read_cases(rng, hidden=False):
    shapes, layer_shapes = READ_SHAPES, READ_LAYER_SHAPES
    if hidden:
        shapes = [(*size, int(rng.integers(1, 6))) for size in _sizes(rng, 3)]
        dtypes = ("float64", "float32")
        layer_shapes = [(*_sizes(rng, 1)[0], int(rng.integers(1, 5)), d) for d in dtypes]
    names, hops = "B n d hops", ("hops",)
    cases = draw.drawn_cases(rng, "memn2n_read", FUNCTION, names, shapes, HOP, params=hops)
    layers = draw.drawn_cases(rng, "MemN2NRead", LAYER, names, layer_shapes, HOP, "B d", hops)
    return cases + layers


def _first_beta_zero(rng, dims):
    beta = rng.uniform(0.5, 8.0, size=dims["B"])
    beta[0] = 0.0
    return beta


def _key_near_a_row(rng, cases):
    """The key of each example made a noisy copy of one of its memory rows, so that β K is
    near β (about 1000 in these cases: an exp() of it overflows unless the softmax is stable)."""
    for case in cases:
        memory = case.inputs["memory"]
        rows = rng.integers(0, memory.shape[1], size=memory.shape[0])
        near = memory[np.arange(memory.shape[0]), rows]
        case.inputs["key"] = near + 0.05 * rng.standard_normal(near.shape)
    return cases


def content_cases(rng, hidden=False):
    shapes = draw.shapes_for(rng, hidden, CONTENT_SHAPES, 3, 3, high=9)
    cases = draw.drawn_cases(rng, "content_weights", FUNCTION, "B N W", shapes, CONTENT)
    large = CONTENT | dict(beta=draw.uniform(800.0, 1200.0, "B"))
    label = "{dims}, beta about 1000 (numerical stability)"
    cases += _key_near_a_row(
        rng,
        draw.drawn_cases(
            rng, "content_weights", FUNCTION, "B N W", [(2, 6, 4)], large, label=label
        ),
    )
    # The docstring allows β = 0 (uniform weights): the first row gets it, the others not.
    some_zero = CONTENT | dict(beta=_first_beta_zero)
    label = "{dims}, beta = 0 in row 0 (uniform weights)"
    return cases + draw.drawn_cases(
        rng, "content_weights", FUNCTION, "B N W", [(4, 5, 3)], some_zero, label=label
    )


def gate_cases(rng, hidden=False):
    shapes = draw.shapes_for(rng, hidden, GATE_SHAPES, 2, 2, high=9)
    cases = draw.drawn_cases(rng, "interpolate", FUNCTION, "B N", shapes, INTERPOLATE)
    shapes = draw.shapes_for(rng, hidden, GATE_SHAPES, 2, 2, high=9)
    return cases + draw.drawn_cases(rng, "sharpen", FUNCTION, "B N", shapes, SHARPEN)


def shift_cases(rng, hidden=False):
    shapes, slots = SHIFT_SHAPES, 5
    if hidden:
        shapes = [(b, n, _offsets(rng)) for b, n in _sizes(rng, 3, size=2)]
        slots = int(rng.integers(3, 9))
    label = "B={B} N={N}, {offsets} offsets"
    cases = draw.drawn_cases(
        rng, "circular_shift", FUNCTION, "B N offsets", [*shapes, *WIDE_SHIFTS], SHIFT, label=label
    )
    one_hot = SHIFT | dict(shift=np.eye(3))
    label = "{dims}, one-hot shifts: rows are offsets -1, 0, +1"
    return cases + draw.drawn_cases(
        rng, "circular_shift", FUNCTION, "B N", [(3, slots)], one_hot, label=label
    )


def ntm_cases(rng, hidden=False):
    shapes, layer_shapes = NTM_SHAPES, NTM_LAYER_SHAPES
    if hidden:
        shapes = [(*size, _offsets(rng)) for size in _sizes(rng, 3)]
        layer_shapes = [(*_sizes(rng, 1)[0], 3, dtype) for dtype in ("float64", "float32")]
    names = "B N W offsets"
    shapes = [*shapes, (2, 2, 3, 7)]  # offsets beyond the ring (k > N)
    cases = draw.drawn_cases(rng, "ntm_address", FUNCTION, names, shapes, NTM, label=OFFSETS)
    # β about 1000, as content_weights allows: an exp() of β K overflows unless stable.
    large = NTM | dict(beta=draw.uniform(800.0, 1200.0, "B"))
    label = OFFSETS + ", beta about 1000 (numerical stability)"
    cases += _key_near_a_row(
        rng,
        draw.drawn_cases(rng, "ntm_address", FUNCTION, names, [(2, 6, 4, 3)], large, label=label),
    )
    return cases + draw.drawn_cases(
        rng, "NTMAddressing", LAYER, names, layer_shapes, NTM, "B N", label=OFFSETS
    )


RECORD = Exercise(
    id="8-5",
    title="Memory-network hops and NTM addressing",
    file="ex8_5.py",
    section="NNDL 8.5.1-8.5.2 (end-to-end memory network, neural Turing machine)",
    timeout=15.0,
    summary=(
        "Write the two ways chapter 8 reads an external memory, so that they can be compared: "
        "the hops of an end-to-end memory network (softmax over the addressing memory, read "
        "the output memory, add to the query, repeat) and the addressing of a neural Turing "
        "machine (cosine content weights with a key strength, interpolation with the previous "
        "weights, circular shift, sharpening). Then compare the two schemes in words in "
        "answers/8-5.md."
    ),
    parts=(
        Part(
            name="memn2n_hop",
            points=2,
            make_cases=hop_cases,
            description="memn2n_hop: q + Σ softmax(a_iᵀq) c_i, over many shapes.",
            mistakes=(
                Mistake.of(
                    "query not added",
                    "This is o = Σ p_i c_i alone: the hop returns the NEXT query, q + o.",
                    ref.memn2n_hop,
                    residual=False,
                ),
                Mistake.of(
                    "read from the addressing memory",
                    "The weighted sum read memory_in: the weights p come from memory_in (A), "
                    "but what is read is memory_out (C).",
                    ref.memn2n_hop,
                    memory_out=on.input_named("memory_in"),
                ),
                Mistake.of(
                    "memories swapped",
                    "memory_in and memory_out are swapped: score the query against memory_in, "
                    "read memory_out.",
                    ref.memn2n_hop,
                    **on.swapped("memory_in", "memory_out"),
                ),
                Mistake.of(
                    "softmax missing",
                    "The raw scores a_iᵀq were used as weights: p = softmax(scores) over the n "
                    "slots, so that the weights are positive and sum to 1.",
                    ref.memn2n_hop,
                    normalised=False,
                ),
            ),
        ),
        Part(
            name="memn2n_read",
            points=1,
            targets=("memn2n_read", "MemN2NRead"),
            make_cases=read_cases,
            description="memn2n_read: K hops, values and gradients (through MemN2NRead).",
            mistakes=(
                Mistake.of(
                    "one hop too few",
                    "This is the query after hops - 1 hops: make exactly `hops` hops.",
                    ref.memn2n_read,
                    extra_hops=-1,
                ),
                Mistake.of(
                    "one hop too many",
                    "This is the query after hops + 1 hops: make exactly `hops` hops.",
                    ref.memn2n_read,
                    extra_hops=1,
                ),
                Mistake.of(
                    "query never updated",
                    "Every hop read with the FIRST query, so the result is that of one hop: "
                    "give each hop the query that the previous hop returned.",
                    ref.memn2n_read,
                    when=on.param_is_not("hops", 1),
                    hops=1,
                ),
            ),
        ),
        Part(
            name="content_weights",
            points=2,
            make_cases=content_cases,
            description="content_weights: softmax(β cos(k, M_i)) over the N rows, stable.",
            mistakes=(
                Mistake.of(
                    "beta forgotten",
                    "This is softmax(cos(k, M_i)): the key strength β is missing; multiply "
                    "each batch row's cosines by its β before the softmax.",
                    ref.content_weights,
                    beta=1.0,
                ),
                Mistake.of(
                    "dot product instead of cosine",
                    "You used the dot products kᵀM_i: the cosine divides them by ‖k‖ ‖M_i‖.",
                    ref.content_weights,
                    row_norms=False,
                    key_norm=False,
                ),
                Mistake.of(
                    "rows not normalised",
                    "Only the key's norm was divided out: the cosine divides by ‖M_i‖ too, "
                    "row by row.",
                    ref.content_weights,
                    row_norms=False,
                ),
                Mistake.of(
                    "key not normalised",
                    "Only the rows' norms were divided out: the cosine divides by ‖k‖ too.",
                    ref.content_weights,
                    key_norm=False,
                ),
                Mistake.of(
                    "softmax on the wrong axis",
                    "The softmax ran over the batch axis: it normalises over the N memory rows "
                    "(the last axis) of each batch row.",
                    ref.content_weights,
                    when=on.several("memory", axis=0),
                    axis=0,
                ),
            ),
        ),
        Part(
            name="interpolate and sharpen",
            points=1,
            targets=("interpolate", "sharpen"),
            make_cases=gate_cases,
            description="interpolate: g w^c + (1 − g) w_prev; sharpen: w^γ / Σ w^γ.",
            mistakes=(
                Mistake.of(
                    "gate swapped",
                    "This is g w_prev + (1 − g) w^c: g weighs the CONTENT weights (g = 1 keeps "
                    "them), 1 − g the previous ones.",
                    ref.interpolate,
                    targets=("interpolate",),
                    gate=on.complement("gate"),
                ),
                Mistake.of(
                    "not renormalised",
                    "This is w^γ: after raising to the power γ, divide each row by its sum "
                    "Σ_j w_j^γ so that it sums to 1 again.",
                    ref.sharpen,
                    targets=("sharpen",),
                    renormalise=False,
                ),
                Mistake.of(
                    "softmax instead of a power",
                    "This is softmax(γ w): sharpening raises each weight to the power γ, "
                    "w_i^γ / Σ_j w_j^γ (it equals softmax(γ log w), not softmax(γ w)).",
                    ref.sharpen,
                    targets=("sharpen",),
                    power=False,
                ),
                Mistake.of(
                    "gamma not applied",
                    "The weights came back unchanged: raise them to the power γ, then renormalise.",
                    ref.sharpen,
                    targets=("sharpen",),
                    gamma=1.0,
                    renormalise=False,
                ),
            ),
        ),
        Part(
            name="circular_shift",
            points=2,
            make_cases=shift_cases,
            description="circular_shift: w̃_i = Σ_o s_o w_(i−o) mod N, offsets −k..k.",
            mistakes=(
                Mistake.of(
                    "shifted the wrong way",
                    "The focus moved the wrong way: offset +1 (the LAST entry of s) moves the "
                    "weight of slot i to slot i + 1, i.e. w̃_i = Σ_o s_o w_(i − o), not "
                    "w_(i + o).",
                    ref.circular_shift,
                    direction=-1,
                ),
                Mistake.of(
                    "no wrap-around",
                    "Weight shifted past either end was lost: the memory is a ring, indices "
                    "wrap around modulo N (a circular, not a zero-padded, convolution).",
                    ref.circular_shift,
                    wrap=False,
                ),
                Mistake.of(
                    "offsets beyond the ring not wrapped",
                    "An offset as large as the ring or larger (|o| ≥ N, when the shift has more "
                    "than 2N + 1 entries) left the weights where they were: the memory is a "
                    "ring, so shift by o mod N (a slice by the raw offset does not wrap).",
                    ref.circular_shift,
                    beyond_ring=False,
                ),
                Mistake.of(
                    "offsets not centred",
                    "shift[:, j] was read as offset j: the 2k + 1 entries are the offsets "
                    "−k, …, +k, so entry j is offset j − k (entry k is 'no shift').",
                    ref.circular_shift,
                    centred=False,
                ),
                Mistake.of(
                    "hard shift",
                    "You rolled the weights by the most likely offset only: the shift is a "
                    "distribution, every offset contributes its probability times the rolled "
                    "weights.",
                    ref.circular_shift,
                    hard=True,
                ),
            ),
        ),
        Part(
            name="ntm_address",
            points=2,
            targets=("ntm_address", "NTMAddressing"),
            make_cases=ntm_cases,
            description="ntm_address: the four steps chained, values and gradients "
            "(through NTMAddressing).",
            mistakes=(
                Mistake.of(
                    "interpolation skipped",
                    "These weights ignore the gate and the previous weights: interpolate "
                    "w^c with w_prev before shifting.",
                    ref.ntm_address,
                    steps=("shift", "sharpen"),
                ),
                Mistake.of(
                    "gate swapped",
                    "The gate weighs the previous weights: w^g = g w^c + (1 − g) w_prev.",
                    ref.ntm_address,
                    gate=on.complement("gate"),
                ),
                Mistake.of(
                    "shift skipped",
                    "No circular shift was applied: shift the interpolated weights before "
                    "sharpening them.",
                    ref.ntm_address,
                    steps=("interpolate", "sharpen"),
                ),
                Mistake.of(
                    "sharpening skipped",
                    "The weights were not sharpened: the last step is w^γ / Σ w^γ.",
                    ref.ntm_address,
                    steps=("interpolate", "shift"),
                ),
                Mistake.of(
                    "sharpened before the shift",
                    "The steps are out of order: shift first, then sharpen (sharpening undoes "
                    "the blur of the shift).",
                    ref.ntm_address,
                    steps=("interpolate", "sharpen", "shift"),
                ),
            ),
        ),
    ),
    written=(
        WrittenPart(
            name="comparison",
            points=3,
            prompt=(
                "Compare how the end-to-end memory network and the neural Turing machine "
                "operate on their external memory (NNDL exercise 8-5): what is alike, what "
                "differs. Cover addressing (content only, or content and location: what do "
                "the gate, the shift and the sharpening add?), reading and writing (read-only "
                "memory filled from the input, or a memory read and written at every step), "
                "multiple hops against one read per time step, and what each scheme is good "
                "for."
            ),
        ),
    ),
)
