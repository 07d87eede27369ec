"""The score layers under test, each with random weights and its NumPy reference."""

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

import attnkit
from grader.reference import attention as ref

UNITS = 3
MAX_KEYS = 6


@dataclass(frozen=True)
class ScoreCase:
    id: str
    make: Callable  # (**layer kwargs) -> layer
    weights: Callable  # (rng, d_q, d_k) -> {weight name: array}
    reference: Callable  # (q, k, weights) -> float64 scores (B, Tq, Tk)
    same_size: bool  # whether d_q must equal d_k

    def __str__(self):
        return self.id


CASES = [
    ScoreCase(
        "dot",
        lambda **kw: attnkit.DotScore(**kw),
        lambda rng, dq, dk: {},
        lambda q, k, w: ref.dot_scores(q, k),
        True,
    ),
    ScoreCase(
        "scaled_dot",
        lambda **kw: attnkit.ScaledDotScore(**kw),
        lambda rng, dq, dk: {},
        lambda q, k, w: ref.scaled_dot_scores(q, k),
        True,
    ),
    ScoreCase(
        "bilinear",
        lambda **kw: attnkit.BilinearScore(**kw),
        lambda rng, dq, dk: {"kernel": rng.normal(size=(dq, dk))},
        lambda q, k, w: ref.bilinear_scores(q, k, w["kernel"]),
        False,
    ),
    ScoreCase(
        "additive",
        lambda **kw: attnkit.AdditiveScore(UNITS, **kw),
        lambda rng, dq, dk: {
            "query_kernel": rng.normal(size=(dq, UNITS)),
            "key_kernel": rng.normal(size=(dk, UNITS)),
            "score_vector": rng.normal(size=(UNITS,)),
        },
        lambda q, k, w: ref.additive_scores(
            q, k, w["query_kernel"], w["key_kernel"], w["score_vector"]
        ),
        False,
    ),
    ScoreCase(
        "cosine",
        lambda **kw: attnkit.CosineScore(**kw),
        lambda rng, dq, dk: {},
        lambda q, k, w: ref.cosine_scores(q, k),
        True,
    ),
    ScoreCase(
        "cosine_fixed",
        lambda **kw: attnkit.CosineScore(sharpness=2.5, **kw),
        lambda rng, dq, dk: {},
        lambda q, k, w: ref.cosine_scores(q, k, 2.5),
        True,
    ),
    ScoreCase(
        "cosine_learned",
        lambda **kw: attnkit.CosineScore(sharpness="learned", **kw),
        lambda rng, dq, dk: {"sharpness": np.array(1.7)},
        lambda q, k, w: ref.cosine_scores(q, k, w["sharpness"]),
        True,
    ),
    ScoreCase(
        "location",
        lambda **kw: attnkit.LocationScore(MAX_KEYS, **kw),
        lambda rng, dq, dk: {"kernel": rng.normal(size=(dq, MAX_KEYS))},
        lambda q, k, w: ref.location_scores(q, w["kernel"], np.shape(k)[1]),
        False,
    ),
]

CASE_IDS = [case.id for case in CASES]

# (batch, Tq, Tk, d_q, d_k): batch 1, Tq != Tk, d = 1, d_q != d_k.
SHAPES = [
    (1, 1, 1, 1, 1),
    (2, 3, 5, 4, 4),
    (3, 4, 2, 6, 3),
    (2, 5, 3, 1, 2),
]


def shapes_for(case):
    """The shapes a case supports (d_k = d_q for the scores that need equal sizes)."""
    out = []
    for b, tq, tk, dq, dk in SHAPES:
        shape = (b, tq, tk, dq, dq if case.same_size else dk)
        if shape not in out:
            out.append(shape)
    return out


def set_weights_by_name(layer, values):
    """Assigns every weight of `layer` by its name; the names must match exactly."""
    names = sorted(w.name for w in layer.weights)
    assert names == sorted(values), f"weights {names}, expected {sorted(values)}"
    for w in layer.weights:
        w.assign(np.asarray(values[w.name], dtype=w.dtype))


def built_score(case, rng, dq, dk, **layer_kwargs):
    """A score layer built for d_q, d_k, with random weights; returns (layer, weights)."""
    layer = case.make(**layer_kwargs)
    layer.build((None, None, dq), (None, None, dk))
    weights = case.weights(rng, dq, dk)
    set_weights_by_name(layer, weights)
    return layer, weights
