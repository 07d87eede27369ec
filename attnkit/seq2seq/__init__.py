"""Sequence-to-sequence attention (NNDL 8.2; Bahdanau 2015, Luong 2015)."""

from attnkit.seq2seq.bahdanau import BahdanauDecoder
from attnkit.seq2seq.luong import LuongAttention

__all__ = ["BahdanauDecoder", "LuongAttention"]
