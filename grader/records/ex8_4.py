"""Exercise 8-4: content read, erase/add write, and a neural stack (Grefenstette et al. 2015)."""

from __future__ import annotations

import numpy as np

from grader.engine import compare
from grader.engine import sampling as draw
from grader.engine import selectors as on
from grader.i18n import N_, _
from grader.reference import memory as ref
from grader.vocabulary.labels import label_texts
from grader.vocabulary.spec import FUNCTION, LAYER, Case, Exercise, Mistake, Part, Property

# The words of this module's case labels, translated where shown (grader.vocabulary.labels).
LABEL_TEXTS = label_texts(
    N_("one slot overwritten (weight 1, erase 1)"),
    N_("pushes and pops of 0 and 1 (an ordinary stack)"),
    N_("pop 0 (nothing changes)"),
    N_("pop more than the whole stack (everything goes)"),
)

# Batch 1 and several, one slot, width 1, more slots than width and the reverse.
MEMORY, MEMORY_SHAPES = "B N d", [(2, 5, 3), (1, 1, 1), (3, 4, 6), (1, 8, 2)]
# The stack: one element, width 1, several examples.
STACK, STACK_SHAPES = "B T m", [(2, 5, 3), (1, 1, 1), (3, 4, 2), (1, 7, 1)]
READ = dict(memory="B N d", query="B d")
# Write weights in [0, 1] with some exact zeros: slots that must be left as they were.
WRITE = dict(memory="B N d", weights=draw.uniform(0.0, 1.0, "B N", zeros=0.3))
WRITE |= dict(erase=draw.uniform(0.0, 1.0, "B d"), add="B d")
POP = dict(strengths=draw.uniform(0.0, 1.0, "B T"), pop=draw.uniform(0.0, 1.5, "B"))
# Popping nothing, and more than the whole stack (the same strengths, public cases only).
EDGE_POPS = {"pop 0 (nothing changes)": 0.0}
EDGE_POPS |= {"pop more than the whole stack (everything goes)": 4.0}
# Pushes and pops away from 0 and 1, so that no max or min sits exactly at its kink.
PUSH_POP = dict(values="B T m", pushes=draw.uniform(0.05, 0.95, "B T"))
PUSH_POP |= dict(pops=draw.uniform(0.05, 0.95, "B T"))
ADDRESS = dict(address_only=on.target_is("memory_address"))  # α itself, or the read Σ α_i m_i


def _shapes(rng, hidden, public, float32=()):
    return draw.shapes_for(rng, hidden, public, 3, 3, high=8) + list(float32)


def read_cases(rng, hidden=False):
    cases = draw.drawn_cases(
        rng, "memory_address", FUNCTION, MEMORY, _shapes(rng, hidden, MEMORY_SHAPES), READ
    )
    shapes = _shapes(rng, hidden, MEMORY_SHAPES, [(2, 4, 3, "float32")])
    return cases + draw.drawn_cases(rng, "MemoryRead", LAYER, MEMORY, shapes, READ, upstream="B d")


def write_cases(rng, hidden=False):
    shapes = _shapes(rng, hidden, MEMORY_SHAPES, [(2, 4, 3, "float32")])
    cases = draw.drawn_cases(rng, "MemoryWrite", LAYER, MEMORY, shapes, WRITE, upstream="B N d")
    # One slot fully overwritten (weight 1, erase all ones), the others untouched.
    overwrite = WRITE | dict(weights=np.eye(4)[rng.integers(0, 4, size=2)], erase=np.ones((2, 3)))
    label = "one slot overwritten (weight 1, erase 1), {dims}"
    return cases + draw.drawn_cases(
        rng, "MemoryWrite", LAYER, MEMORY, [(2, 4, 3)], overwrite, upstream="B N d", label=label
    )


def stack_cases(rng, hidden=False):
    shapes = _shapes(rng, hidden, STACK_SHAPES)
    cases = draw.drawn_cases(rng, "stack_pop", FUNCTION, STACK, shapes, POP, label="B={B} T={T}")
    if not hidden:
        strengths = rng.uniform(0.1, 0.9, size=(2, 4))
        for label, pop in EDGE_POPS.items():
            inputs = {"strengths": strengths, "pop": np.full(2, pop)}
            cases.append(Case("stack_pop", FUNCTION, f"{label}, B=2 T=4", inputs=inputs))
    read = dict(values="B T m", strengths=draw.uniform(0.0, 0.8, "B T"))
    return cases + draw.drawn_cases(
        rng, "stack_read", FUNCTION, STACK, _shapes(rng, hidden, STACK_SHAPES), read
    )


def neural_stack_cases(rng, hidden=False):
    shapes = _shapes(rng, hidden, STACK_SHAPES, [(2, 5, 3, "float32")])
    cases = draw.drawn_cases(rng, "NeuralStack", LAYER, STACK, shapes, PUSH_POP, upstream="B T m")
    # Pushes and pops of exactly 0 and 1: an ordinary stack (values only, no gradients).
    ordinary = [(1, int(rng.integers(4, 10)), 2)] if hidden else [(2, 8, 3)]
    inputs = dict(values="B T m", pushes=draw.coin_flips("B T"), pops=draw.coin_flips("B T"))
    label = "pushes and pops of 0 and 1 (an ordinary stack), {dims}"
    return cases + draw.drawn_cases(
        rng, "neural_stack", FUNCTION, STACK, ordinary, inputs, label=label
    )


def _untouched_slots(case, output):
    memory, new = case.inputs["memory"], np.asarray(output, dtype=float)
    idle = case.inputs["weights"] == 0.0
    if new.shape != memory.shape or compare.matches(memory[idle], new[idle], case):
        return None
    return _("a slot with write weight 0 changed: with α_i = 0 the slot must stay as it was")


RECORD = Exercise(
    id="8-4",
    title="Structured external memory: read, write and a neural stack",
    file="ex8_4.py",
    section="NNDL 8.5 (structured external memory); Graves et al. 2014 §3; "
    "Grefenstette et al. 2015",
    timeout=15.0,
    summary=(
        "Read an external memory by content (r = Σ softmax(m_i·q) m_i), write it by erasing and "
        "adding (m_i ← m_i ⊙ (1 − α_i e) + α_i a), then build a memory organised as a stack "
        "with continuous push and pop strengths, the neural stack of Grefenstette et al."
    ),
    parts=(
        Part(
            name="memory_read",
            points=3,
            targets=("memory_address", "MemoryRead"),
            make_cases=read_cases,
            description="memory_address: α = softmax(M q) over the slots; memory_read: Σ α_i "
            "m_i, values and gradients w.r.t. memory and query.",
            properties=(
                Property(
                    "weights sum to one", on.check_of(ref.address_problem), ("memory_address",)
                ),
                Property(
                    "a convex combination of the slots",
                    on.check_of(ref.read_problem),
                    ("MemoryRead",),
                ),
            ),
            mistakes=(
                Mistake.of(
                    "weights not normalised",
                    "The raw scores m_i · q were used as weights: a softmax over the slots "
                    "turns them into weights that are positive and sum to one.",
                    ref.memory_read,
                    weighting="scores",
                    **ADDRESS,
                ),
                Mistake.of(
                    "softmax over the batch",
                    "The softmax normalises over the batch axis: it must normalise over the N "
                    "slots of each example (the last axis of the scores).",
                    ref.memory_read,
                    when=on.several("memory", axis=0),
                    axis=0,
                    **ADDRESS,
                ),
                Mistake.of(
                    "query ignored",
                    "Every slot got the same weight 1/N: the weights must depend on how well "
                    "each slot matches the query, softmax(m_i · q).",
                    ref.memory_read,
                    weighting="uniform",
                    **ADDRESS,
                ),
                Mistake.of(
                    "scaled by √d",
                    "You divided the scores by √d: this read uses the plain dot product m_i · q.",
                    ref.memory_read,
                    scaled=True,
                    **ADDRESS,
                ),
            ),
        ),
        Part(
            name="memory_write",
            points=3,
            targets=("MemoryWrite",),
            make_cases=write_cases,
            description="memory_write: m_i ⊙ (1 − α_i e) + α_i a, values and gradients w.r.t. "
            "memory, weights, erase and add.",
            properties=(Property("slots with weight 0 unchanged", _untouched_slots),),
            mistakes=(
                Mistake.of(
                    "added before erasing",
                    "You added first and erased after, (m_i + α_i a) ⊙ (1 − α_i e), which "
                    "erases part of what was just written: erase first, then add.",
                    ref.memory_write,
                    add_first=True,
                ),
                Mistake.of(
                    "erase not weighted",
                    "The erase ignores the write weights, m_i ⊙ (1 − e): every slot is erased, "
                    "even those with α_i = 0. Erase by α_i e.",
                    ref.memory_write,
                    erase_weights=1.0,
                ),
                Mistake.of(
                    "add not weighted",
                    "The add ignores the write weights, + a: every slot gets a, even those with "
                    "α_i = 0. Add α_i a.",
                    ref.memory_write,
                    add_weights=1.0,
                ),
                Mistake.of(
                    "nothing erased",
                    "This is m_i + α_i a: the erase step m_i ⊙ (1 − α_i e) is missing.",
                    ref.memory_write,
                    erase_weights=0.0,
                ),
            ),
        ),
        Part(
            name="stack_operations",
            points=2,
            targets=("stack_pop", "stack_read"),
            make_cases=stack_cases,
            description="stack_pop: remove u from the top down; stack_read: one unit of "
            "strength from the top down.",
            properties=(
                Property("a pop removes min(u, Σ s)", on.check_of(ref.pop_problem), ("stack_pop",)),
            ),
            mistakes=(
                Mistake.of(
                    "every element pops u",
                    "Every element lost u: a pop takes u from the top element first and passes "
                    "on only what is left, max(0, u − Σ_{j>i} s_j), to the elements below.",
                    ref.stack_pop,
                    targets=("stack_pop",),
                    passed_on=False,
                ),
                Mistake.of(
                    "popped from the bottom",
                    "The strength was removed from the bottom of the stack (index 0) upwards: "
                    "the top is the last index, so sum the strengths above, j > i.",
                    ref.stack_pop,
                    targets=("stack_pop",),
                    from_bottom=True,
                ),
                Mistake.of(
                    "strengths below zero",
                    "Some strengths are negative: clamp s_i − max(0, u − Σ_{j>i} s_j) at 0, a "
                    "pop cannot remove more than an element holds.",
                    ref.stack_pop,
                    targets=("stack_pop",),
                    clamp=False,
                ),
                Mistake.of(
                    "read not capped at one unit",
                    "This is Σ s_i v_i, the whole stack: a read takes one unit of strength from "
                    "the top, min(s_i, max(0, 1 − Σ_{j>i} s_j)) of each element.",
                    ref.stack_read,
                    targets=("stack_read",),
                    capped=False,
                ),
                Mistake.of(
                    "read from the bottom",
                    "The read took its unit of strength from the bottom (index 0) upwards: the "
                    "top is the last index, so sum the strengths above, j > i.",
                    ref.stack_read,
                    targets=("stack_read",),
                    from_bottom=True,
                ),
                Mistake.of(
                    "negative read weights",
                    "Once the unit is used up, 1 − Σ_{j>i} s_j is negative: clamp it at 0, "
                    "min(s_i, max(0, 1 − Σ_{j>i} s_j)), or deep elements count negatively.",
                    ref.stack_read,
                    targets=("stack_read",),
                    clamp=False,
                ),
            ),
        ),
        Part(
            name="neural_stack",
            points=2,
            targets=("NeuralStack", "neural_stack"),
            make_cases=neural_stack_cases,
            description="neural_stack: pop, push, read at every step; values and gradients "
            "w.r.t. values, pushes and pops.",
            mistakes=(
                Mistake.of(
                    "read before the push",
                    "The read at step t does not see values[:, t]: pop, then push, then read.",
                    ref.neural_stack,
                    steps=("pop", "read", "push"),
                ),
                Mistake.of(
                    "pushed before popping",
                    "You pushed v_t and then popped, so the pop removes the new value first: "
                    "pop the stack of step t-1, then push.",
                    ref.neural_stack,
                    steps=("push", "pop", "read"),
                ),
                Mistake.of(
                    "strengths not carried over",
                    "Each step started from an empty stack: carry the strengths (and the "
                    "values) from one step to the next.",
                    ref.neural_stack,
                    carry=False,
                ),
                Mistake.of(
                    "pops ignored",
                    "Nothing was ever popped: apply stack_pop with u_t at every step.",
                    ref.neural_stack,
                    pops=0.0,
                ),
            ),
        ),
    ),
)
