"""How far rounding alone may take a float computation: what an "exactly zero" or a "sums to one"
is met up to. Shared by the maths that check a case's properties (grader.reference) and the
engine's own properties (grader.engine.properties), so both forgive rounding alike."""

import numpy as np

ROUNDING_ULPS = 64


def rounding(dtype, *values) -> float:
    """The most a property may let rounding account for: ROUNDING_ULPS of `dtype`'s epsilon,
    at the magnitude of the values involved (at least 1). An "exactly zero" or "sums to one"
    of a docstring is met up to this, so that no correct solution written another way (a
    softmax that subtracts a maximum taken over masked keys too, which leaves 8e-17 in their
    gradient) loses a point to rounding, while any real leak (a weight of 1e-3) is far above."""
    finite = [
        np.abs(np.asarray(v, dtype=np.float64))[np.isfinite(np.asarray(v, dtype=np.float64))]
        for v in values
    ]
    scale = max([1.0] + [float(v.max()) for v in finite if v.size])
    return ROUNDING_ULPS * float(np.finfo(np.dtype(str(dtype))).eps) * scale
