"""Attention pooling (NNDL 8.2) and the one mask path shared by every layer."""

from attnkit.attention.attention import Attention
from attnkit.attention.masking import (
    attention_mask,
    causal_mask,
    combine_masks,
    large_negative_number,
    length_mask,
    masked_softmax,
)

__all__ = [
    "Attention",
    "attention_mask",
    "causal_mask",
    "combine_masks",
    "large_negative_number",
    "length_mask",
    "masked_softmax",
]
