"""The Transformer's blocks (Vaswani et al. 2017; NNDL 8.3) and their parts."""

from attnkit.transformer.decoder import TransformerDecoderBlock
from attnkit.transformer.encoder import TransformerEncoderBlock
from attnkit.transformer.feed_forward import FeedForward
from attnkit.transformer.norms import LayerNorm, RMSNorm

__all__ = [
    "FeedForward",
    "LayerNorm",
    "RMSNorm",
    "TransformerDecoderBlock",
    "TransformerEncoderBlock",
]
