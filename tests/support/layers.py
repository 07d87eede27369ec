"""Test support for the layers: random masks and weights, and finite-difference gradients."""

import numpy as np

from grader.reference import attention as ref
from grader.reference.attention import as64


def numeric_gradient(f, x, eps=1e-6):
    """Central finite differences of the scalar function f at x (float64)."""
    x = as64(x).copy()
    grad = np.zeros_like(x)
    for idx in np.ndindex(*x.shape):
        old = x[idx]
        x[idx] = old + eps
        up = f(x)
        x[idx] = old - eps
        down = f(x)
        x[idx] = old
        grad[idx] = (up - down) / (2 * eps)
    return grad


MASK_KINDS = [
    "value_mask",
    "key_lengths",
    "attention_mask_2d",
    "attention_mask_3d",
    "causal",
    "query_mask",
    "all",
]


def random_masks(kind, rng, b, tq, tk, query_mask_hides_weights=True):
    """Keyword arguments of an attention call and the (B, Tq, Tk) keep-mask they mean.

    With `query_mask_hides_weights=False` (`attnkit.Attention`, which keeps Keras's
    convention: a masked query is attended as usual and its output set to zero), the
    `query_mask` is left out of the keep-mask (it is in the keyword arguments)."""
    kwargs, keep = {}, np.ones((b, tq, tk), bool)
    if kind in ("value_mask", "all"):
        kwargs["value_mask"] = rng.random((b, tk)) > 0.3
        keep &= kwargs["value_mask"][:, None, :]
    if kind in ("key_lengths", "all"):
        kwargs["key_lengths"] = np.array([tk - 1, 0, tk][:b], "int32")
        keep &= ref.length_mask(kwargs["key_lengths"], tk)[:, None, :]
    if kind == "attention_mask_2d":
        kwargs["attention_mask"] = rng.random((tq, tk)) > 0.3
        keep &= kwargs["attention_mask"][None]
    if kind in ("attention_mask_3d", "all"):
        kwargs["attention_mask"] = rng.random((b, tq, tk)) > 0.3
        keep &= kwargs["attention_mask"]
    if kind in ("causal", "all"):
        kwargs["use_causal_mask"] = True
        keep &= ref.causal_mask(tq, tk)[None]
    if kind in ("query_mask", "all"):
        kwargs["query_mask"] = rng.random((b, tq)) > 0.3
        if query_mask_hides_weights:
            keep &= kwargs["query_mask"][:, :, None]
    return kwargs, keep


#: The projections of a MultiHeadAttention (attnkit's or Keras's), by their sub-layers' names.
_PROJECTIONS = {
    "query": "query",
    "key": "key",
    "value": "value",
    "gate": "gate",
    "attention_output": "output",
}


def weight_name(weight):
    """A weight's name, prefixed by its projection's for a MultiHeadAttention's `EinsumDense`
    sub-layers (`query/kernel` is `query_kernel`, `attention_output/bias` is `output_bias`)."""
    parts = weight.path.split("/")
    if len(parts) >= 2 and parts[-2] in _PROJECTIONS:
        return f"{_PROJECTIONS[parts[-2]]}_{weight.name}"
    return weight.name


def random_weights(layer, rng, scale=0.5):
    """Assigns N(0, scale²) values to every weight of a built layer; returns them by name
    (`weight_name`).

    The values returned are the ones the layer holds (rounded to its variable dtype), as
    float64.
    """
    values = {}
    for w in layer.weights:
        value = rng.normal(scale=scale, size=tuple(w.shape)).astype(w.dtype)
        w.assign(value)
        values[weight_name(w)] = as64(value)
    return values
