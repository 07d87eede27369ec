"""Lab mha: multi-head attention: splitting and merging heads, and the layer itself."""

from __future__ import annotations

import numpy as np

from grader.engine.spec import FUNCTION, LAYER, Case, Exercise, Mistake, Part

# (B, T, h, d): one head, one step, several of each.
HEAD_SHAPES = [(2, 3, 4, 2), (1, 1, 1, 1), (2, 5, 3, 4), (1, 4, 2, 3), (3, 2, 1, 5)]
# (B, Tq, Tk, d_q, d_k, d_v, num_heads, key_dim, value_dim, output_dim); None: the default.
MHA_SHAPES = [
    (2, 3, 5, 6, 4, 5, 2, 3, None, None),
    (1, 1, 1, 2, 2, 2, 1, 1, None, None),
    (2, 4, 3, 8, 8, 8, 4, 2, 3, 5),
    (1, 2, 6, 4, 3, 2, 3, 4, 2, None),
]


def _random_heads(rng, count):
    return [
        tuple(int(v) for v in (*rng.integers(1, 5, size=2), *rng.integers(1, 5, size=2)))
        for _ in range(count)
    ]


def split_cases(rng, hidden=False):
    shapes = _random_heads(rng, 3) if hidden else HEAD_SHAPES
    return [
        Case(
            "split_heads",
            FUNCTION,
            f"x of shape {(b, t, h * d)}, num_heads={h}",
            inputs={"x": rng.standard_normal((b, t, h * d))},
            params={"num_heads": h},
        )
        for b, t, h, d in shapes
    ]


def merge_cases(rng, hidden=False):
    shapes = _random_heads(rng, 3) if hidden else HEAD_SHAPES
    return [
        Case(
            "merge_heads",
            FUNCTION,
            f"x of shape {(b, h, t, d)}",
            inputs={"x": rng.standard_normal((b, h, t, d))},
        )
        for b, t, h, d in shapes
    ]


def _kernel(rng, rows, columns):
    return rng.standard_normal((rows, columns)) / np.sqrt(rows)


def _mha_case(rng, sizes, dtype="float64"):
    b, tq, tk, d_q, d_k, d_v, h, key_dim, value_dim, output_dim = sizes
    params = {"num_heads": h, "key_dim": key_dim}
    label = f"B={b} Tq={tq} Tk={tk} d_q={d_q} d_k={d_k} d_v={d_v}, heads={h} key_dim={key_dim}"
    if value_dim is not None:
        params["value_dim"] = value_dim
        label += f" value_dim={value_dim}"
    if output_dim is not None:
        params["output_dim"] = output_dim
        label += f" output_dim={output_dim}"
    if dtype != "float64":
        label += f" {dtype}"
    width_v = h * (value_dim or key_dim)
    out = output_dim or d_q
    return Case(
        "MultiHeadAttention",
        LAYER,
        label,
        inputs={
            "query": rng.standard_normal((b, tq, d_q)),
            "key": rng.standard_normal((b, tk, d_k)),
            "value": rng.standard_normal((b, tk, d_v)),
        },
        params=params,
        weights={
            "query_kernel": _kernel(rng, d_q, h * key_dim),
            "key_kernel": _kernel(rng, d_k, h * key_dim),
            "value_kernel": _kernel(rng, d_v, width_v),
            "output_kernel": _kernel(rng, width_v, out),
        },
        upstream=rng.standard_normal((b, tq, out)),
        dtype=dtype,
    )


def mha_cases(rng, hidden=False):
    if hidden:
        shapes = []
        for _ in range(3):
            b, tq, tk, d_q, d_k, d_v, h, key_dim = (int(v) for v in rng.integers(1, 6, size=8))
            value_dim = int(rng.integers(1, 6)) if rng.random() < 0.5 else None
            output_dim = int(rng.integers(1, 6)) if rng.random() < 0.5 else None
            shapes.append((b, tq, tk, d_q, d_k, d_v, h, key_dim, value_dim, output_dim))
    else:
        shapes = MHA_SHAPES
    cases = [_mha_case(rng, sizes) for sizes in shapes]
    cases.append(_mha_case(rng, (2, 3, 4, 6, 6, 6, 2, 3, None, None), dtype="float32"))
    return cases


# --- known mistakes, recomputed in NumPy ---------------------------------------------------


def _split(x, h, interleaved=False):
    b, t, width = x.shape
    if interleaved:
        return x.reshape(b, t, width // h, h).transpose(0, 3, 1, 2)
    return x.reshape(b, t, h, width // h).transpose(0, 2, 1, 3)


def _merge(x, interleaved=False):
    b, h, t, d = x.shape
    if interleaved:
        return x.transpose(0, 2, 3, 1).reshape(b, t, d * h)
    return x.transpose(0, 2, 1, 3).reshape(b, t, h * d)


def _split_reshaped(case):
    x, h = case.inputs["x"], case.params["num_heads"]
    b, t, width = x.shape
    if h == 1 or t == 1:
        return None
    return x.reshape(b, h, t, width // h)


def _split_interleaved(case):
    x, h = case.inputs["x"], case.params["num_heads"]
    if h == 1 or x.shape[-1] == h:
        return None
    return _split(x, h, interleaved=True)


def _merge_reshaped(case):
    x = case.inputs["x"]
    b, h, t, d = x.shape
    if h == 1 or t == 1:
        return None
    return x.reshape(b, t, h * d)


def _merge_interleaved(case):
    x = case.inputs["x"]
    if x.shape[1] == 1 or x.shape[-1] == 1:
        return None
    return _merge(x, interleaved=True)


def _softmax(scores, axis=-1):
    shifted = np.exp(scores - scores.max(axis=axis, keepdims=True))
    return shifted / shifted.sum(axis=axis, keepdims=True)


def _mha(case, scale=None, axis=-1, heads=None, interleaved=False, project_output=True):
    """The layer in NumPy; the keyword arguments plant one mistake each."""
    w = case.weights
    h = case.params["num_heads"] if heads is None else heads
    key_dim = case.params["key_dim"]
    q = _split(case.inputs["query"] @ w["query_kernel"], h, interleaved)
    k = _split(case.inputs["key"] @ w["key_kernel"], h, interleaved)
    v = _split(case.inputs["value"] @ w["value_kernel"], h, interleaved)
    scores = q @ k.transpose(0, 1, 3, 2)
    if scale is None:
        scores = scores / np.sqrt(key_dim)
    elif scale:
        scores = scores / np.sqrt(scale)
    merged = _merge(_softmax(scores, axis=axis) @ v, interleaved)
    return merged @ w["output_kernel"] if project_output else merged


def _heads(case):
    return case.params["num_heads"]


def _when(condition, compute):
    return lambda case: compute(case) if condition(case) else None


def _no_output_projection(case):
    kernel = case.weights["output_kernel"]
    return _mha(case, project_output=False) if kernel.shape[0] == kernel.shape[1] else None


def _interleaved_differs(case):
    key_dim = case.params["key_dim"]
    value_dim = case.params.get("value_dim", key_dim)
    return _heads(case) > 1 and max(key_dim, value_dim) > 1


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
            targets=("split_heads",),
            make_cases=split_cases,
            description="split_heads: (B, T, h·d) -> (B, h, T, d), head i owning features "
            "i·d .. (i+1)·d - 1.",
            mistakes=(
                Mistake(
                    "reshaped straight to (B, h, T, d)",
                    "The shape is right but the values are not: a reshape straight to "
                    "(B, h, T, d) mixes time steps into the heads. Reshape to (B, T, h, d), "
                    "then transpose.",
                    _split_reshaped,
                ),
                Mistake(
                    "heads interleaved",
                    "Head i got features i, i+h, i+2h, ... (a reshape to (B, T, d, h)); head i "
                    "owns the contiguous features i·d .. (i+1)·d - 1: reshape to (B, T, h, d).",
                    _split_interleaved,
                ),
            ),
        ),
        Part(
            name="merge_heads",
            points=1,
            targets=("merge_heads",),
            make_cases=merge_cases,
            description="merge_heads: (B, h, T, d) -> (B, T, h·d), the inverse of split_heads.",
            mistakes=(
                Mistake(
                    "reshaped without transposing",
                    "A reshape of (B, h, T, d) straight to (B, T, h·d) mixes heads and time "
                    "steps: transpose to (B, T, h, d) first.",
                    _merge_reshaped,
                ),
                Mistake(
                    "heads interleaved",
                    "The features came out as (d, h) rather than (h, d): head i must fill "
                    "features i·d .. (i+1)·d - 1.",
                    _merge_interleaved,
                ),
            ),
        ),
        Part(
            name="MultiHeadAttention",
            points=5,
            targets=("MultiHeadAttention",),
            make_cases=mha_cases,
            description="MultiHeadAttention.call: outputs and gradients w.r.t. query, key, "
            "value and the four kernels.",
            mistakes=(
                Mistake(
                    "scaled by the total width",
                    "The scores were divided by √(h·key_dim); each head divides by √key_dim, "
                    "the size of its own queries and keys.",
                    _when(
                        lambda c: _heads(c) > 1,
                        lambda c: _mha(c, scale=_heads(c) * c.params["key_dim"]),
                    ),
                ),
                Mistake(
                    "scale forgotten",
                    "The 1/√key_dim scale of the scores is missing.",
                    _when(lambda c: c.params["key_dim"] > 1, lambda c: _mha(c, scale=0)),
                ),
                Mistake(
                    "softmax over the queries",
                    "The softmax normalises over the queries; it must run over the keys, the "
                    "last axis of each head's (Tq, Tk) scores.",
                    _when(lambda c: c.inputs["query"].shape[1] > 1, lambda c: _mha(c, axis=-2)),
                ),
                Mistake(
                    "heads not split",
                    "This is one attention over all h·key_dim features (the heads were never "
                    "split): split the projections into h heads and attend in each.",
                    _when(lambda c: _heads(c) > 1, lambda c: _mha(c, heads=1)),
                ),
                Mistake(
                    "heads interleaved",
                    "Head i got features i, i+h, i+2h, ... of each projection; head i owns the "
                    "contiguous features i·key_dim .. (i+1)·key_dim - 1.",
                    _when(_interleaved_differs, lambda c: _mha(c, interleaved=True)),
                ),
                Mistake(
                    "output projection missing",
                    "The merged heads were returned without the output projection W_O "
                    "(output_kernel).",
                    _no_output_projection,
                ),
            ),
        ),
    ),
)
