"""Exercise 8-5: memory-network hops and NTM addressing, the two ways to use an external memory."""

from __future__ import annotations

import numpy as np

from grader.engine.spec import FUNCTION, LAYER, Case, Exercise, Mistake, Part, WrittenPart

# (B, n, d): batch 1 and several, one slot, width 1.
HOP_SHAPES = [(2, 5, 4), (1, 1, 1), (3, 2, 6), (1, 7, 3), (4, 3, 1)]
# (B, n, d, hops)
READ_SHAPES = [(2, 5, 4, 2), (1, 1, 1, 3), (3, 4, 2, 1), (2, 6, 3, 5)]
READ_LAYER_SHAPES = [(2, 4, 3, 3, "float64"), (1, 3, 2, 1, "float64"), (2, 5, 3, 2, "float32")]
# (B, N, W): one slot, width 1, a wide key.
CONTENT_SHAPES = [(2, 5, 4), (1, 1, 3), (3, 4, 1), (1, 6, 8), (2, 3, 2)]
# (B, N) for interpolate and sharpen.
GATE_SHAPES = [(2, 5), (1, 1), (3, 4), (1, 7)]
# (B, N, 2k + 1): N = 2 wraps at once, N smaller than the number of offsets, 5 offsets.
SHIFT_SHAPES = [(2, 6, 3), (1, 2, 3), (2, 7, 5), (1, 1, 3), (2, 3, 5)]
# (B, N, W, 2k + 1)
NTM_SHAPES = [(2, 6, 4, 3), (1, 1, 1, 3), (3, 5, 2, 3), (1, 8, 3, 5), (2, 2, 3, 3)]
NTM_LAYER_SHAPES = [(2, 5, 3, 3, "float64"), (1, 4, 2, 5, "float64"), (2, 6, 3, 3, "float32")]


def _sizes(rng, count, width=3, high=9):
    return [tuple(int(n) for n in rng.integers(1, high, size=width)) for _ in range(count)]


def _softmax(x, axis=-1):
    shifted = np.exp(x - np.max(x, axis=axis, keepdims=True))
    return shifted / np.sum(shifted, axis=axis, keepdims=True)


def _distribution(rng, shape, spread=1.5):
    """Random rows of positive weights that sum to 1, as an addressing step would give."""
    return _softmax(spread * rng.standard_normal(shape))


# --- cases -----------------------------------------------------------------------------------


def _memn2n_inputs(rng, b, n, d):
    return {
        "query": rng.standard_normal((b, d)),
        "memory_in": rng.standard_normal((b, n, d)),
        "memory_out": rng.standard_normal((b, n, d)),
    }


def hop_cases(rng, hidden=False):
    shapes = _sizes(rng, 3) if hidden else HOP_SHAPES
    return [
        Case("memn2n_hop", FUNCTION, f"B={b} n={n} d={d}", inputs=_memn2n_inputs(rng, b, n, d))
        for b, n, d in shapes
    ]


def read_cases(rng, hidden=False):
    if hidden:
        shapes = [(*size, int(rng.integers(1, 6))) for size in _sizes(rng, 3)]
        layer_shapes = [(*size, int(rng.integers(1, 5)), "float64") for size in _sizes(rng, 1)]
        layer_shapes.append((*_sizes(rng, 1)[0], int(rng.integers(1, 5)), "float32"))
    else:
        shapes, layer_shapes = READ_SHAPES, READ_LAYER_SHAPES
    cases = [
        Case(
            "memn2n_read",
            FUNCTION,
            f"B={b} n={n} d={d} hops={hops}",
            inputs=_memn2n_inputs(rng, b, n, d),
            params={"hops": hops},
        )
        for b, n, d, hops in shapes
    ]
    for b, n, d, hops, dtype in layer_shapes:
        cases.append(
            Case(
                "MemN2NRead",
                LAYER,
                f"B={b} n={n} d={d} hops={hops}" + ("" if dtype == "float64" else f" {dtype}"),
                inputs=_memn2n_inputs(rng, b, n, d),
                params={"hops": hops},
                upstream=rng.standard_normal((b, d)),
                dtype=dtype,
            )
        )
    return cases


def _content_inputs(rng, b, n, w, beta_range=(0.5, 8.0)):
    return {
        "memory": rng.standard_normal((b, n, w)),
        "key": 2.0 * rng.standard_normal((b, w)),
        "beta": rng.uniform(*beta_range, size=b),
    }


def content_cases(rng, hidden=False):
    shapes = _sizes(rng, 3) if hidden else CONTENT_SHAPES
    cases = [
        Case(
            "content_weights", FUNCTION, f"B={b} N={n} W={w}", inputs=_content_inputs(rng, b, n, w)
        )
        for b, n, w in shapes
    ]
    cases.append(
        Case(
            "content_weights",
            FUNCTION,
            "B=2 N=6 W=4, beta about 1000 (numerical stability)",
            inputs=_content_inputs(rng, 2, 6, 4, beta_range=(800.0, 1200.0)),
        )
    )
    return cases


def gate_cases(rng, hidden=False):
    cases = []
    for b, n in _sizes(rng, 2, width=2) if hidden else GATE_SHAPES:
        cases.append(
            Case(
                "interpolate",
                FUNCTION,
                f"B={b} N={n}",
                inputs={
                    "w_content": _distribution(rng, (b, n)),
                    "w_previous": _distribution(rng, (b, n)),
                    "gate": rng.uniform(0.0, 1.0, size=b),
                },
            )
        )
    for b, n in _sizes(rng, 2, width=2) if hidden else GATE_SHAPES:
        cases.append(
            Case(
                "sharpen",
                FUNCTION,
                f"B={b} N={n}",
                inputs={
                    "weights": _distribution(rng, (b, n)),
                    "gamma": rng.uniform(1.2, 5.0, size=b),
                },
            )
        )
    return cases


def shift_cases(rng, hidden=False):
    if hidden:
        shapes = [(b, n, 2 * int(rng.integers(1, 3)) + 1) for b, n in _sizes(rng, 3, width=2)]
        one_hot_slots = int(rng.integers(3, 9))
    else:
        shapes, one_hot_slots = SHIFT_SHAPES, 5
    cases = [
        Case(
            "circular_shift",
            FUNCTION,
            f"B={b} N={n}, {offsets} offsets",
            inputs={
                "weights": _distribution(rng, (b, n)),
                "shift": _distribution(rng, (b, offsets)),
            },
        )
        for b, n, offsets in shapes
    ]
    cases.append(
        Case(
            "circular_shift",
            FUNCTION,
            f"B=3 N={one_hot_slots}, one-hot shifts: rows are offsets -1, 0, +1",
            inputs={"weights": _distribution(rng, (3, one_hot_slots)), "shift": np.eye(3)},
        )
    )
    return cases


def _ntm_inputs(rng, b, n, w, offsets):
    return {
        "memory": rng.standard_normal((b, n, w)),
        "key": 2.0 * rng.standard_normal((b, w)),
        "beta": rng.uniform(0.5, 5.0, size=b),
        "gate": rng.uniform(0.05, 0.95, size=b),
        "w_previous": _distribution(rng, (b, n)),
        "shift": _distribution(rng, (b, offsets)),
        "gamma": rng.uniform(1.2, 4.0, size=b),
    }


def ntm_cases(rng, hidden=False):
    if hidden:
        shapes = [(*size, 2 * int(rng.integers(1, 3)) + 1) for size in _sizes(rng, 3)]
        layer_shapes = [(*_sizes(rng, 1)[0], 3, "float64"), (*_sizes(rng, 1)[0], 3, "float32")]
    else:
        shapes, layer_shapes = NTM_SHAPES, NTM_LAYER_SHAPES
    cases = [
        Case(
            "ntm_address",
            FUNCTION,
            f"B={b} N={n} W={w}, {offsets} offsets",
            inputs=_ntm_inputs(rng, b, n, w, offsets),
        )
        for b, n, w, offsets in shapes
    ]
    for b, n, w, offsets, dtype in layer_shapes:
        cases.append(
            Case(
                "NTMAddressing",
                LAYER,
                f"B={b} N={n} W={w}, {offsets} offsets"
                + ("" if dtype == "float64" else f" {dtype}"),
                inputs=_ntm_inputs(rng, b, n, w, offsets),
                upstream=rng.standard_normal((b, n)),
                dtype=dtype,
            )
        )
    return cases


# --- known mistakes, recomputed in NumPy from a case ---------------------------------------


def _hop(query, memory_in, memory_out, residual=True):
    weights = _softmax(np.einsum("bd,bnd->bn", query, memory_in))
    read = np.einsum("bn,bnd->bd", weights, memory_out)
    return query + read if residual else read


def _hops(case, count):
    query = case.inputs["query"]
    for _ in range(max(count, 0)):
        query = _hop(query, case.inputs["memory_in"], case.inputs["memory_out"])
    return query


def _hop_without_softmax(case):
    query, memory_in, memory_out = (case.inputs[k] for k in ("query", "memory_in", "memory_out"))
    return query + np.einsum("bn,bnd->bd", np.einsum("bd,bnd->bn", query, memory_in), memory_out)


def _norms(x):
    return np.sqrt(np.sum(x * x, axis=-1))


def _content(memory, key, beta, normalise_rows=True, normalise_key=True, use_beta=True, axis=-1):
    scores = np.einsum("bnw,bw->bn", memory, key)
    if normalise_rows:
        scores = scores / _norms(memory)
    if normalise_key:
        scores = scores / _norms(key)[:, None]
    if use_beta:
        scores = beta[:, None] * scores
    return _softmax(scores, axis=axis)


def _content_mistake(**options):
    def compute(case):
        return _content(case.inputs["memory"], case.inputs["key"], case.inputs["beta"], **options)

    return compute


def _content_wrong_axis(case):
    if case.inputs["memory"].shape[0] == 1:
        return None
    return _content_mistake(axis=0)(case)


def _interpolate(w_content, w_previous, gate):
    return gate[:, None] * w_content + (1.0 - gate[:, None]) * w_previous


def _shift(weights, shift, direction=1, wrap=True, centre=True):
    """Σ_j shift[:, j] w_(i − direction·o_j) with o_j = j − k (centred) or j."""
    k = shift.shape[-1] // 2 if centre else 0
    slots = weights.shape[-1]
    out = np.zeros_like(weights)
    for j in range(shift.shape[-1]):
        offset = direction * (j - k)
        if wrap:
            moved = np.roll(weights, offset, axis=-1)
        else:
            moved = np.zeros_like(weights)
            if abs(offset) < slots:
                if offset >= 0:
                    moved[:, offset:] = weights[:, : slots - offset]
                else:
                    moved[:, :offset] = weights[:, -offset:]
        out += shift[:, j : j + 1] * moved
    return out


def _hard_shift(weights, shift):
    k = shift.shape[-1] // 2
    best = np.argmax(shift, axis=-1) - k
    return np.stack([np.roll(row, int(o)) for row, o in zip(weights, best, strict=True)])


def _sharpen(weights, gamma, renormalise=True):
    raised = weights ** gamma[:, None]
    return raised / raised.sum(axis=-1, keepdims=True) if renormalise else raised


def _only(target, compute):
    return lambda case: compute(case) if case.target == target else None


def _chain(case, skip=(), sharpen_first=False, gate_swapped=False):
    """The NTM addressing chain of a case, with steps skipped, swapped or misordered."""
    x = case.inputs
    focus = _content(x["memory"], x["key"], x["beta"])
    if "interpolate" not in skip:
        gate = 1.0 - x["gate"] if gate_swapped else x["gate"]
        focus = _interpolate(focus, x["w_previous"], gate)
    if sharpen_first:
        return _shift(_sharpen(focus, x["gamma"]), x["shift"])
    if "shift" not in skip:
        focus = _shift(focus, x["shift"])
    if "sharpen" not in skip:
        focus = _sharpen(focus, x["gamma"])
    return focus


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
            targets=("memn2n_hop",),
            make_cases=hop_cases,
            description="memn2n_hop: q + Σ softmax(a_iᵀq) c_i, over many shapes.",
            mistakes=(
                Mistake(
                    "query not added",
                    "This is o = Σ p_i c_i alone: the hop returns the NEXT query, q + o.",
                    lambda case: _hop(*case.inputs.values(), residual=False),
                ),
                Mistake(
                    "read from the addressing memory",
                    "The weighted sum read memory_in: the weights p come from memory_in (A), "
                    "but what is read is memory_out (C).",
                    lambda case: _hop(case.inputs["query"], *[case.inputs["memory_in"]] * 2),
                ),
                Mistake(
                    "memories swapped",
                    "memory_in and memory_out are swapped: score the query against memory_in, "
                    "read memory_out.",
                    lambda case: _hop(
                        case.inputs["query"], case.inputs["memory_out"], case.inputs["memory_in"]
                    ),
                ),
                Mistake(
                    "softmax missing",
                    "The raw scores a_iᵀq were used as weights: p = softmax(scores) over the n "
                    "slots, so that the weights are positive and sum to 1.",
                    _hop_without_softmax,
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
                Mistake(
                    "one hop too few",
                    "This is the query after hops - 1 hops: make exactly `hops` hops.",
                    lambda case: _hops(case, case.params["hops"] - 1),
                ),
                Mistake(
                    "one hop too many",
                    "This is the query after hops + 1 hops: make exactly `hops` hops.",
                    lambda case: _hops(case, case.params["hops"] + 1),
                ),
                Mistake(
                    "query never updated",
                    "Every hop read with the FIRST query, so the result is that of one hop: "
                    "give each hop the query that the previous hop returned.",
                    lambda case: _hops(case, 1) if case.params["hops"] > 1 else None,
                ),
            ),
        ),
        Part(
            name="content_weights",
            points=2,
            targets=("content_weights",),
            make_cases=content_cases,
            description="content_weights: softmax(β cos(k, M_i)) over the N rows, stable.",
            mistakes=(
                Mistake(
                    "beta forgotten",
                    "This is softmax(cos(k, M_i)): the key strength β is missing; multiply "
                    "each batch row's cosines by its β before the softmax.",
                    _content_mistake(use_beta=False),
                ),
                Mistake(
                    "dot product instead of cosine",
                    "You used the dot products kᵀM_i: the cosine divides them by ‖k‖ ‖M_i‖.",
                    _content_mistake(normalise_rows=False, normalise_key=False),
                ),
                Mistake(
                    "rows not normalised",
                    "Only the key's norm was divided out: the cosine divides by ‖M_i‖ too, "
                    "row by row.",
                    _content_mistake(normalise_rows=False),
                ),
                Mistake(
                    "key not normalised",
                    "Only the rows' norms were divided out: the cosine divides by ‖k‖ too.",
                    _content_mistake(normalise_key=False),
                ),
                Mistake(
                    "softmax on the wrong axis",
                    "The softmax ran over the batch axis: it normalises over the N memory rows "
                    "(the last axis) of each batch row.",
                    _content_wrong_axis,
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
                Mistake(
                    "gate swapped",
                    "This is g w_prev + (1 − g) w^c: g weighs the CONTENT weights (g = 1 keeps "
                    "them), 1 − g the previous ones.",
                    _only(
                        "interpolate",
                        lambda case: _interpolate(
                            case.inputs["w_content"],
                            case.inputs["w_previous"],
                            1.0 - case.inputs["gate"],
                        ),
                    ),
                ),
                Mistake(
                    "not renormalised",
                    "This is w^γ: after raising to the power γ, divide each row by its sum "
                    "Σ_j w_j^γ so that it sums to 1 again.",
                    _only(
                        "sharpen",
                        lambda case: _sharpen(
                            case.inputs["weights"], case.inputs["gamma"], renormalise=False
                        ),
                    ),
                ),
                Mistake(
                    "softmax instead of a power",
                    "This is softmax(γ w): sharpening raises each weight to the power γ, "
                    "w_i^γ / Σ_j w_j^γ (it equals softmax(γ log w), not softmax(γ w)).",
                    _only(
                        "sharpen",
                        lambda case: _softmax(
                            case.inputs["gamma"][:, None] * case.inputs["weights"]
                        ),
                    ),
                ),
                Mistake(
                    "gamma not applied",
                    "The weights came back unchanged: raise them to the power γ, then renormalise.",
                    _only("sharpen", lambda case: case.inputs["weights"]),
                ),
            ),
        ),
        Part(
            name="circular_shift",
            points=2,
            targets=("circular_shift",),
            make_cases=shift_cases,
            description="circular_shift: w̃_i = Σ_o s_o w_(i−o) mod N, offsets −k..k.",
            mistakes=(
                Mistake(
                    "shifted the wrong way",
                    "The focus moved the wrong way: offset +1 (the LAST entry of s) moves the "
                    "weight of slot i to slot i + 1, i.e. w̃_i = Σ_o s_o w_(i − o), not "
                    "w_(i + o).",
                    lambda case: _shift(*case.inputs.values(), direction=-1),
                ),
                Mistake(
                    "no wrap-around",
                    "Weight shifted past either end was lost: the memory is a ring, indices "
                    "wrap around modulo N (a circular, not a zero-padded, convolution).",
                    lambda case: _shift(*case.inputs.values(), wrap=False),
                ),
                Mistake(
                    "offsets not centred",
                    "shift[:, j] was read as offset j: the 2k + 1 entries are the offsets "
                    "−k, …, +k, so entry j is offset j − k (entry k is 'no shift').",
                    lambda case: _shift(*case.inputs.values(), centre=False),
                ),
                Mistake(
                    "hard shift",
                    "You rolled the weights by the most likely offset only: the shift is a "
                    "distribution, every offset contributes its probability times the rolled "
                    "weights.",
                    lambda case: _hard_shift(*case.inputs.values()),
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
                Mistake(
                    "interpolation skipped",
                    "These weights ignore the gate and the previous weights: interpolate "
                    "w^c with w_prev before shifting.",
                    lambda case: _chain(case, skip=("interpolate",)),
                ),
                Mistake(
                    "gate swapped",
                    "The gate weighs the previous weights: w^g = g w^c + (1 − g) w_prev.",
                    lambda case: _chain(case, gate_swapped=True),
                ),
                Mistake(
                    "shift skipped",
                    "No circular shift was applied: shift the interpolated weights before "
                    "sharpening them.",
                    lambda case: _chain(case, skip=("shift",)),
                ),
                Mistake(
                    "sharpening skipped",
                    "The weights were not sharpened: the last step is w^γ / Σ w^γ.",
                    lambda case: _chain(case, skip=("sharpen",)),
                ),
                Mistake(
                    "sharpened before the shift",
                    "The steps are out of order: shift first, then sharpen (sharpening undoes "
                    "the blur of the shift).",
                    lambda case: _chain(case, sharpen_first=True),
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
