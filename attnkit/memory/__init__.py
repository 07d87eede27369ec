"""External memory (NNDL 8.5-8.6): memory read/write, MemN2N, NTM, Hopfield networks."""

from attnkit.memory.hopfield import HopfieldNetwork
from attnkit.memory.memn2n import EndToEndMemoryNetwork, position_encoding
from attnkit.memory.modern_hopfield import ModernHopfield
from attnkit.memory.ntm import (
    NeuralTuringMachine,
    NTMCell,
    circular_shift,
    content_addressing,
    interpolate,
    sharpen,
)
from attnkit.memory.read_write import memory_address, memory_read, memory_write

__all__ = [
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
    "position_encoding",
    "sharpen",
]
