"""attnkit: Keras 3 attention layers for the attention chapter of NNDL (chapter 8)."""

from attnkit.alibi import AlibiBias
from attnkit.attention import (
    AdditiveAttention,
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
from attnkit.attention.grouped_query import GroupedQueryAttention
from attnkit.hierarchical import HierarchicalAttention
from attnkit.kernel_regression import NadarayaWatson, ParametricNadarayaWatson
from attnkit.memory import (
    EndToEndMemoryNetwork,
    HopfieldNetwork,
    ModernHopfield,
    NeuralTuringMachine,
    NTMCell,
    circular_shift,
    content_addressing,
    interpolate,
    memory_address,
    memory_read,
    memory_write,
    sharpen,
)
from attnkit.pointer import PointerNetwork
from attnkit.position import LearnedPositionEmbedding, SinusoidalPositionEncoding
from attnkit.rotary import RotaryEmbedding
from attnkit.scoring import (
    AdditiveScore,
    BilinearScore,
    CosineScore,
    DotScore,
    LocationScore,
    ScaledDotScore,
    get_score,
)
from attnkit.seq2seq import BahdanauDecoder, LuongAttention
from attnkit.structured import StructuredAttention
from attnkit.transformer import (
    FeedForward,
    LayerNorm,
    RMSNorm,
    TransformerDecoderBlock,
    TransformerEncoderBlock,
)
from attnkit.viz import plot_attention

__version__ = "0.1.0"

__all__ = [
    "AlibiBias",
    "FeedForward",
    "GroupedQueryAttention",
    "LayerNorm",
    "RMSNorm",
    "RotaryEmbedding",
    "TransformerDecoderBlock",
    "TransformerEncoderBlock",
    "BahdanauDecoder",
    "HierarchicalAttention",
    "LuongAttention",
    "NadarayaWatson",
    "ParametricNadarayaWatson",
    "PointerNetwork",
    "StructuredAttention",
    "plot_attention",
    "EndToEndMemoryNetwork",
    "HopfieldNetwork",
    "ModernHopfield",
    "NTMCell",
    "NeuralTuringMachine",
    "circular_shift",
    "content_addressing",
    "interpolate",
    "memory_address",
    "memory_read",
    "memory_write",
    "sharpen",
    "AdditiveAttention",
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
