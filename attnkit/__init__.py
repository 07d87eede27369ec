"""attnkit: Keras 3 attention layers for the attention chapter of NNDL (chapter 8)."""

from attnkit.attention import (
    Attention,
    HardAttention,
    MultiHeadAttention,
    MultiHeadSelfAttention,
    MultiQueryAttention,
    SelfAttention,
    attention_mask,
    blockwise_attention,
    causal_mask,
    combine_masks,
    large_negative_number,
    length_mask,
    masked_softmax,
    multi_head_scaled_dot_attention,
)
from attnkit.position import LearnedPositionEmbedding, SinusoidalPositionEncoding
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
    "HardAttention",
    "LearnedPositionEmbedding",
    "MultiHeadAttention",
    "MultiHeadSelfAttention",
    "MultiQueryAttention",
    "SelfAttention",
    "SinusoidalPositionEncoding",
    "BilinearScore",
    "CosineScore",
    "DotScore",
    "LocationScore",
    "ScaledDotScore",
    "__version__",
    "attention_mask",
    "blockwise_attention",
    "causal_mask",
    "combine_masks",
    "get_score",
    "large_negative_number",
    "length_mask",
    "masked_softmax",
    "multi_head_scaled_dot_attention",
]
