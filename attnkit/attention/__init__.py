"""Attention pooling (NNDL 8.2), self-attention (NNDL 8.3) and the one mask path."""

from attnkit.attention.additive_attention import AdditiveAttention
from attnkit.attention.attention import Attention
from attnkit.attention.blockwise import blockwise_attention
from attnkit.attention.hard import HardAttention
from attnkit.attention.masking import (
    Masks,
    attention_mask,
    causal_mask,
    combine_masks,
    large_negative_number,
    length_mask,
    masked_softmax,
)
from attnkit.attention.multi_head import MultiHeadAttention, multi_head_scaled_dot_attention
from attnkit.attention.multi_query import MultiQueryAttention
from attnkit.attention.self_attention import MultiHeadSelfAttention, SelfAttention

__all__ = [
    "AdditiveAttention",
    "Attention",
    "HardAttention",
    "Masks",
    "MultiHeadAttention",
    "MultiHeadSelfAttention",
    "MultiQueryAttention",
    "SelfAttention",
    "attention_mask",
    "blockwise_attention",
    "causal_mask",
    "combine_masks",
    "large_negative_number",
    "length_mask",
    "masked_softmax",
    "multi_head_scaled_dot_attention",
]
