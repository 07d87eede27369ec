"""Exercise 8-4 — structured external memory: read by content, write by erase and add, a stack.

NNDL §8.5 and exercise 8-4: a memory-augmented network keeps its information in an external
memory M of N slots m_1 … m_N, which it reads and writes through soft (attention) weights, so
that everything stays differentiable. You write the two basic operations, reading by content
and writing by erasing and adding (Graves et al. 2014, §3), then a memory organised as a stack
whose push and pop are continuous: the neural stack of Grefenstette et al. 2015.

Grade your work with `grader check 8-4`. The functions are called directly (NumPy arrays in) and
through the small layers given below, which let the grader take gradients through your code:
outputs AND gradients (w.r.t. every input) are compared with the reference, in float64 and once in
float32. Shapes vary on purpose: batch 1 and several, N = 1, d = 1. Use `keras.ops` so that
gradients flow, and keep the names and signatures below.

Parts: memory_read 3, memory_write 3, stack_operations 2, neural_stack 2 — 10 points.
"""

import keras
from keras import ops

# --- reading and writing by content ------------------------------------------------------------


def memory_address(memory, query):
    """Content addressing: α_i = softmax_i(m_i · q), one weight per slot.

    memory (B, N, d): N slots of size d; query (B, d) -> α (B, N). For every example the N
    weights are positive and sum to one (the grader checks this).
    """
    scores = ops.einsum("bnd,bd->bn", memory, query)
    return ops.softmax(scores, axis=-1)


def memory_read(memory, query):
    """Content read: r = Σ_i α_i m_i with α = memory_address(memory, query).

    memory (B, N, d), query (B, d) -> r (B, d). The read is a convex combination of the slots,
    so each of its components lies between the smallest and the largest value of that
    component over the slots (the grader checks this). Gradients reach memory and query.
    """
    address = memory_address(memory, query)
    return ops.einsum("bn,bnd->bd", address, memory)


def memory_write(memory, weights, erase, add):
    """Erase-then-add write: m_i ← m_i ⊙ (1 − α_i e) + α_i a, for every slot i.

    memory (B, N, d); weights α (B, N), each in [0, 1] (e.g. from memory_address); erase e
    (B, d), entries in [0, 1]; add a (B, d) -> the new memory (B, N, d). A slot with α_i = 0
    is left exactly as it was (the grader checks this); a slot with α_i = 1 and e = 1 is
    replaced by a. Gradients reach all four inputs.
    """
    alpha = ops.expand_dims(weights, -1)
    added = memory + alpha * ops.expand_dims(add, 1)
    return added * (1.0 - alpha * ops.expand_dims(erase, 1))


class MemoryRead(keras.layers.Layer):
    """Given: lets the grader take gradients through your `memory_read`."""

    def call(self, memory, query):
        return memory_read(memory, query)


class MemoryWrite(keras.layers.Layer):
    """Given: lets the grader take gradients through your `memory_write`."""

    def call(self, memory, weights, erase, add):
        return memory_write(memory, weights, erase, add)


# --- a neural stack (Grefenstette et al. 2015) -------------------------------------------------
#
# The stack holds values v_1 … v_T (v_1 at the bottom, v_T on top) with strengths s_1 … s_T in
# [0, 1]: how much of each value is still on the stack. A push of strength d puts a new value on
# top with strength d; a pop of strength u removes u units of strength from the top down; a read
# takes one unit of strength from the top down. With strengths of 0 and 1 this is an ordinary
# stack; in between, everything is continuous, so a network can learn when to push and pop.
# In every array below, index 0 along the stack axis is the bottom and index -1 the top.


def stack_pop(strengths, pop):
    """Pop u units of strength from the top: s_i ← max(0, s_i − max(0, u − Σ_{j>i} s_j)).

    strengths (B, T), pop u (B,) -> the new strengths (B, T). Σ_{j>i} s_j is the strength
    above element i. The element on top loses up to u; what u has left after it goes to the
    element below, and so on. In total exactly min(u, Σ_i s_i) is removed, and no strength
    becomes negative (the grader checks this).
    """
    above = ops.sum(strengths, axis=-1, keepdims=True) - ops.cumsum(strengths, axis=-1)
    still_to_pop = ops.relu(ops.expand_dims(pop, -1) - above)
    return ops.relu(strengths - still_to_pop)


def stack_read(values, strengths):
    """Read one unit of strength from the top: r = Σ_i min(s_i, max(0, 1 − Σ_{j>i} s_j)) v_i.

    values (B, T, m), strengths (B, T) -> r (B, m). The top element counts with its whole
    strength if that is below 1; the elements below fill what is left of the one unit; the
    rest of the stack does not count.
    """
    above = ops.sum(strengths, axis=-1, keepdims=True) - ops.cumsum(strengths, axis=-1)
    share = ops.minimum(strengths, ops.relu(1.0 - above))
    return ops.einsum("bt,btm->bm", share, values)


def neural_stack(values, pushes, pops):
    """Run a neural stack over a sequence; return the read at every step.

    values (B, T, m), pushes d (B, T), pops u (B, T) -> reads (B, T, m). The stack starts
    empty. At step t: first pop u_t from the stack as it was after step t-1 (stack_pop), then
    push values[:, t] with strength d_t on top, then read (stack_read) and output the read.
    Use your stack_pop and stack_read; T is small, a Python loop over the steps is fine.
    """
    strengths = pushes[:, :0]
    reads = []
    for step in range(values.shape[1]):
        strengths = stack_pop(strengths, pops[:, step])
        strengths = ops.concatenate([strengths, pushes[:, step : step + 1]], axis=1)
        reads.append(stack_read(values[:, : step + 1], strengths))
    return ops.stack(reads, axis=1)


class NeuralStack(keras.layers.Layer):
    """Given: lets the grader take gradients through your `neural_stack`."""

    def call(self, values, pushes, pops):
        return neural_stack(values, pushes, pops)
