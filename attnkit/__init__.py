"""attnkit: Keras 3 attention layers for the attention chapter of NNDL (chapter 8)."""

from attnkit.attention import (
    Attention,
    attention_mask,
    causal_mask,
    combine_masks,
    large_negative_number,
    length_mask,
    masked_softmax,
)
from attnkit.scoring import (
    AdditiveScore,
    BilinearScore,
    CosineScore,
    DotScore,
    LocationScore,
    ScaledDotScore,
    get_score,
)

__version__ = "0.1.0"

__all__ = [
    "AdditiveScore",
    "Attention",
    "BilinearScore",
    "CosineScore",
    "DotScore",
    "LocationScore",
    "ScaledDotScore",
    "__version__",
    "attention_mask",
    "causal_mask",
    "combine_masks",
    "get_score",
    "large_negative_number",
    "length_mask",
    "masked_softmax",
]
