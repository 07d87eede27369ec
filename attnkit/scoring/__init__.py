"""Score functions s(q, k) of NNDL 8.2: each maps queries and keys to `(B, Tq, Tk)` scores."""

from attnkit.scoring.additive import AdditiveScore
from attnkit.scoring.bilinear import BilinearScore
from attnkit.scoring.cosine import CosineScore
from attnkit.scoring.dot import DotScore, ScaledDotScore
from attnkit.scoring.location import LocationScore
from attnkit.scoring.registry import get_score

__all__ = [
    "AdditiveScore",
    "BilinearScore",
    "CosineScore",
    "DotScore",
    "LocationScore",
    "ScaledDotScore",
    "get_score",
]
