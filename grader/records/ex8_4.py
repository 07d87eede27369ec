"""Exercise 8-4: content read, erase/add write, and a neural stack (Grefenstette et al. 2015)."""

from __future__ import annotations

import numpy as np

from grader.engine import compare
from grader.engine.spec import FUNCTION, LAYER, Case, Exercise, Mistake, Part, Property

# (B, N, d): batch 1 and several, one slot, width 1, more slots than width and the reverse.
MEMORY_SHAPES = [(2, 5, 3), (1, 1, 1), (3, 4, 6), (1, 8, 2)]
# (B, T, m) of the stack: one element, width 1, several examples.
STACK_SHAPES = [(2, 5, 3), (1, 1, 1), (3, 4, 2), (1, 7, 1)]


def _label(b, n, d, dtype="float64", names=("B", "N", "d")):
    label = " ".join(f"{name}={size}" for name, size in zip(names, (b, n, d), strict=True))
    return label if dtype == "float64" else f"{label} {dtype}"


def _shapes(rng, fixed, hidden, count=3):
    if not hidden:
        return fixed
    return [tuple(int(s) for s in rng.integers(1, 8, size=3)) for _ in range(count)]


def read_cases(rng, hidden=False):
    cases = []
    for b, n, d in _shapes(rng, MEMORY_SHAPES, hidden):
        inputs = {"memory": rng.standard_normal((b, n, d)), "query": rng.standard_normal((b, d))}
        cases.append(Case("memory_address", FUNCTION, _label(b, n, d), inputs=inputs))
    for b, n, d, *dtype in _shapes(rng, MEMORY_SHAPES, hidden) + [(2, 4, 3, "float32")]:
        dtype = (dtype or ["float64"])[0]
        cases.append(
            Case(
                "MemoryRead",
                LAYER,
                _label(b, n, d, dtype),
                inputs={
                    "memory": rng.standard_normal((b, n, d)),
                    "query": rng.standard_normal((b, d)),
                },
                upstream=rng.standard_normal((b, d)),
                dtype=dtype,
            )
        )
    return cases


def _write_weights(rng, b, n):
    """Weights in [0, 1] with some exact zeros: slots that must be left as they were."""
    weights = rng.uniform(0.0, 1.0, size=(b, n))
    weights[rng.uniform(size=(b, n)) < 0.3] = 0.0
    return weights


def write_cases(rng, hidden=False):
    cases = []
    for b, n, d, *dtype in _shapes(rng, MEMORY_SHAPES, hidden) + [(2, 4, 3, "float32")]:
        dtype = (dtype or ["float64"])[0]
        cases.append(
            Case(
                "MemoryWrite",
                LAYER,
                _label(b, n, d, dtype),
                inputs={
                    "memory": rng.standard_normal((b, n, d)),
                    "weights": _write_weights(rng, b, n),
                    "erase": rng.uniform(0.0, 1.0, size=(b, d)),
                    "add": rng.standard_normal((b, d)),
                },
                upstream=rng.standard_normal((b, n, d)),
                dtype=dtype,
            )
        )
    # One slot fully overwritten (weight 1, erase all ones), the others untouched.
    b, n, d = (2, 4, 3)
    weights = np.zeros((b, n))
    weights[np.arange(b), rng.integers(0, n, size=b)] = 1.0
    cases.append(
        Case(
            "MemoryWrite",
            LAYER,
            "one slot overwritten (weight 1, erase 1), " + _label(b, n, d),
            inputs={
                "memory": rng.standard_normal((b, n, d)),
                "weights": weights,
                "erase": np.ones((b, d)),
                "add": rng.standard_normal((b, d)),
            },
            upstream=rng.standard_normal((b, n, d)),
        )
    )
    return cases


def stack_cases(rng, hidden=False):
    cases = []
    for b, t, _ in _shapes(rng, STACK_SHAPES, hidden):
        cases.append(
            Case(
                "stack_pop",
                FUNCTION,
                f"B={b} T={t}",
                inputs={
                    "strengths": rng.uniform(0.0, 1.0, size=(b, t)),
                    "pop": rng.uniform(0.0, 1.5, size=b),
                },
            )
        )
    if not hidden:
        strengths = rng.uniform(0.1, 0.9, size=(2, 4))
        for label, pop in (
            ("pop 0 (nothing changes)", np.zeros(2)),
            ("pop more than the whole stack (everything goes)", np.full(2, 4.0)),
        ):
            cases.append(
                Case(
                    "stack_pop",
                    FUNCTION,
                    f"{label}, B=2 T=4",
                    inputs={"strengths": strengths, "pop": pop},
                )
            )
    for b, t, m in _shapes(rng, STACK_SHAPES, hidden):
        cases.append(
            Case(
                "stack_read",
                FUNCTION,
                _label(b, t, m, names=("B", "T", "m")),
                inputs={
                    "values": rng.standard_normal((b, t, m)),
                    "strengths": rng.uniform(0.0, 0.8, size=(b, t)),
                },
            )
        )
    return cases


def neural_stack_cases(rng, hidden=False):
    cases = []
    for b, t, m, *dtype in _shapes(rng, STACK_SHAPES, hidden) + [(2, 5, 3, "float32")]:
        dtype = (dtype or ["float64"])[0]
        # Strengths away from 0 and 1, so that no max or min sits exactly at its kink.
        cases.append(
            Case(
                "NeuralStack",
                LAYER,
                _label(b, t, m, dtype, names=("B", "T", "m")),
                inputs={
                    "values": rng.standard_normal((b, t, m)),
                    "pushes": rng.uniform(0.05, 0.95, size=(b, t)),
                    "pops": rng.uniform(0.05, 0.95, size=(b, t)),
                },
                upstream=rng.standard_normal((b, t, m)),
                dtype=dtype,
            )
        )
    # Pushes and pops of exactly 0 and 1: an ordinary stack (values only, no gradients).
    b, t, m = (2, 8, 3) if not hidden else (1, int(rng.integers(4, 10)), 2)
    cases.append(
        Case(
            "neural_stack",
            FUNCTION,
            f"pushes and pops of 0 and 1 (an ordinary stack), B={b} T={t} m={m}",
            inputs={
                "values": rng.standard_normal((b, t, m)),
                "pushes": rng.integers(0, 2, size=(b, t)).astype(float),
                "pops": rng.integers(0, 2, size=(b, t)).astype(float),
            },
        )
    )
    return cases


# --- the reference in NumPy, and the known mistakes -------------------------------------------


def _softmax(scores, axis=-1):
    shifted = np.exp(scores - scores.max(axis=axis, keepdims=True))
    return shifted / shifted.sum(axis=axis, keepdims=True)


def _scores(case):
    return np.einsum("bnd,bd->bn", case.inputs["memory"], case.inputs["query"])


def _read_with(address):
    """The mistake for both targets: memory_address gives α, MemoryRead gives Σ α_i m_i."""

    def compute(case):
        alpha = address(case)
        if alpha is None:
            return None
        if case.target == "memory_address":
            return alpha
        return np.einsum("bn,bnd->bd", alpha, case.inputs["memory"])

    return compute


def _weights_sum_to_one(case, output):
    alpha = np.asarray(output, dtype=float)
    if alpha.shape != _scores(case).shape:
        return None  # a wrong shape is reported by the output check
    if np.any(alpha < -1e-12):
        return "some weights are negative: softmax weights are positive"
    if not np.allclose(alpha.sum(axis=-1), 1.0, rtol=0, atol=1e-6):
        return (
            "the weights of an example do not sum to one over the slots: the softmax must "
            "normalise over the N slots (the last axis)"
        )
    return None


def _convex(case, output):
    memory = case.inputs["memory"]
    read = np.asarray(output, dtype=float)
    if read.shape != memory.shape[::2]:
        return None
    slack = 1e-6 * max(1.0, float(np.abs(memory).max()))
    if np.all(read >= memory.min(axis=1) - slack) and np.all(read <= memory.max(axis=1) + slack):
        return None
    return (
        "the read lies outside the range of the slots: a read with weights that are positive "
        "and sum to one is a convex combination of the slots"
    )


def write(case, erase_weighted=True, add_weighted=True, erase=True, add_first=False):
    memory, alpha = case.inputs["memory"], case.inputs["weights"][..., None]
    e, a = case.inputs["erase"][:, None, :], case.inputs["add"][:, None, :]
    keep = 1.0 - (alpha * e if erase_weighted else e) if erase else 1.0
    added = alpha * a if add_weighted else a
    if add_first:
        return (memory + added) * keep
    return memory * keep + added


def _untouched_slots(case, output):
    memory, alpha = case.inputs["memory"], case.inputs["weights"]
    new = np.asarray(output, dtype=float)
    if new.shape != memory.shape:
        return None
    idle = alpha == 0.0
    if compare.matches(memory[idle], new[idle], case):
        return None
    return "a slot with write weight 0 changed: with α_i = 0 the slot must stay as it was"


def _above(strengths):
    """Σ_{j>i} s_j for every i, along the last axis (index -1 is the top)."""
    return np.cumsum(strengths[..., ::-1], axis=-1)[..., ::-1] - strengths


def _below(strengths):
    return np.cumsum(strengths, axis=-1) - strengths


def pop(strengths, u, above=_above, outer_clamp=True):
    removed = np.maximum(0.0, u[..., None] - above(strengths))
    left = strengths - removed
    return np.maximum(0.0, left) if outer_clamp else left


def read(values, strengths, above=_above, cap=True, inner_clamp=True):
    if not cap:
        return np.einsum("bt,btm->bm", strengths, values)
    room = 1.0 - above(strengths)
    share = np.minimum(strengths, np.maximum(0.0, room) if inner_clamp else room)
    return np.einsum("bt,btm->bm", share, values)


def run_stack(case, order="pop-push-read", carry=True, popping=True):
    values, pushes, pops = (case.inputs[k] for k in ("values", "pushes", "pops"))
    strengths = np.zeros((values.shape[0], 0))
    reads = []
    for t in range(values.shape[1]):
        if not carry:
            strengths = np.zeros((values.shape[0], 0))
            stored = values[:, t : t + 1]
        else:
            stored = values[:, : t + 1]
        u = pops[:, t] if popping else np.zeros(values.shape[0])
        pushed = pushes[:, t : t + 1]
        if order == "push-pop-read":
            strengths = pop(np.concatenate([strengths, pushed], axis=1), u)
            reads.append(read(stored, strengths))
        elif order == "pop-read-push":
            strengths = pop(strengths, u)
            reads.append(read(stored[:, :-1], strengths))
            strengths = np.concatenate([strengths, pushed], axis=1)
        else:
            strengths = np.concatenate([pop(strengths, u), pushed], axis=1)
            reads.append(read(stored, strengths))
    return np.stack(reads, axis=1)


def _stack_target(target, compute):
    """A stack mistake for one target: pop(strengths, u) or read(values, strengths)."""

    def mistake(case):
        if case.target != target:
            return None
        if target == "stack_pop":
            return compute(case.inputs["strengths"], case.inputs["pop"])
        return compute(case.inputs["values"], case.inputs["strengths"])

    return mistake


def _pop_removes_what_it_should(case, output):
    strengths, u = case.inputs["strengths"], case.inputs["pop"]
    new = np.asarray(output, dtype=float)
    if new.shape != strengths.shape:
        return None
    if np.any(new < -1e-9) or np.any(new > strengths + 1e-9):
        return "a strength went negative or grew: a pop only removes strength, down to 0"
    removed = strengths.sum(axis=-1) - new.sum(axis=-1)
    if not np.allclose(removed, np.minimum(u, strengths.sum(axis=-1)), rtol=0, atol=1e-6):
        return (
            "a pop of strength u must remove exactly min(u, Σ s_i) in total: u if the stack "
            "holds that much, else everything"
        )
    return None


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
                Property("weights sum to one", _weights_sum_to_one, ("memory_address",)),
                Property("a convex combination of the slots", _convex, ("MemoryRead",)),
            ),
            mistakes=(
                Mistake(
                    "weights not normalised",
                    "The raw scores m_i · q were used as weights: a softmax over the slots "
                    "turns them into weights that are positive and sum to one.",
                    _read_with(_scores),
                ),
                Mistake(
                    "softmax over the batch",
                    "The softmax normalises over the batch axis: it must normalise over the N "
                    "slots of each example (the last axis of the scores).",
                    _read_with(
                        lambda case: (
                            _softmax(_scores(case), axis=0)
                            if case.inputs["memory"].shape[0] > 1
                            else None
                        )
                    ),
                ),
                Mistake(
                    "query ignored",
                    "Every slot got the same weight 1/N: the weights must depend on how well "
                    "each slot matches the query, softmax(m_i · q).",
                    _read_with(
                        lambda case: np.full(_scores(case).shape, 1.0 / _scores(case).shape[1])
                    ),
                ),
                Mistake(
                    "scaled by √d",
                    "You divided the scores by √d: this read uses the plain dot product m_i · q.",
                    _read_with(
                        lambda case: _softmax(
                            _scores(case) / np.sqrt(case.inputs["query"].shape[-1])
                        )
                    ),
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
                Mistake(
                    "added before erasing",
                    "You added first and erased after, (m_i + α_i a) ⊙ (1 − α_i e), which "
                    "erases part of what was just written: erase first, then add.",
                    lambda case: write(case, add_first=True),
                ),
                Mistake(
                    "erase not weighted",
                    "The erase ignores the write weights, m_i ⊙ (1 − e): every slot is erased, "
                    "even those with α_i = 0. Erase by α_i e.",
                    lambda case: write(case, erase_weighted=False),
                ),
                Mistake(
                    "add not weighted",
                    "The add ignores the write weights, + a: every slot gets a, even those with "
                    "α_i = 0. Add α_i a.",
                    lambda case: write(case, add_weighted=False),
                ),
                Mistake(
                    "nothing erased",
                    "This is m_i + α_i a: the erase step m_i ⊙ (1 − α_i e) is missing.",
                    lambda case: write(case, erase=False),
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
                Property("a pop removes min(u, Σ s)", _pop_removes_what_it_should, ("stack_pop",)),
            ),
            mistakes=(
                Mistake(
                    "every element pops u",
                    "Every element lost u: a pop takes u from the top element first and passes "
                    "on only what is left, max(0, u − Σ_{j>i} s_j), to the elements below.",
                    _stack_target("stack_pop", lambda s, u: np.maximum(0.0, s - u[..., None])),
                ),
                Mistake(
                    "popped from the bottom",
                    "The strength was removed from the bottom of the stack (index 0) upwards: "
                    "the top is the last index, so sum the strengths above, j > i.",
                    _stack_target("stack_pop", lambda s, u: pop(s, u, above=_below)),
                ),
                Mistake(
                    "strengths below zero",
                    "Some strengths are negative: clamp s_i − max(0, u − Σ_{j>i} s_j) at 0, a "
                    "pop cannot remove more than an element holds.",
                    _stack_target("stack_pop", lambda s, u: pop(s, u, outer_clamp=False)),
                ),
                Mistake(
                    "read not capped at one unit",
                    "This is Σ s_i v_i, the whole stack: a read takes one unit of strength from "
                    "the top, min(s_i, max(0, 1 − Σ_{j>i} s_j)) of each element.",
                    _stack_target("stack_read", lambda v, s: read(v, s, cap=False)),
                ),
                Mistake(
                    "read from the bottom",
                    "The read took its unit of strength from the bottom (index 0) upwards: the "
                    "top is the last index, so sum the strengths above, j > i.",
                    _stack_target("stack_read", lambda v, s: read(v, s, above=_below)),
                ),
                Mistake(
                    "negative read weights",
                    "Once the unit is used up, 1 − Σ_{j>i} s_j is negative: clamp it at 0, "
                    "min(s_i, max(0, 1 − Σ_{j>i} s_j)), or deep elements count negatively.",
                    _stack_target("stack_read", lambda v, s: read(v, s, inner_clamp=False)),
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
                Mistake(
                    "read before the push",
                    "The read at step t does not see values[:, t]: pop, then push, then read.",
                    lambda case: run_stack(case, order="pop-read-push"),
                ),
                Mistake(
                    "pushed before popping",
                    "You pushed v_t and then popped, so the pop removes the new value first: "
                    "pop the stack of step t-1, then push.",
                    lambda case: run_stack(case, order="push-pop-read"),
                ),
                Mistake(
                    "strengths not carried over",
                    "Each step started from an empty stack: carry the strengths (and the "
                    "values) from one step to the next.",
                    lambda case: run_stack(case, carry=False),
                ),
                Mistake(
                    "pops ignored",
                    "Nothing was ever popped: apply stack_pop with u_t at every step.",
                    lambda case: run_stack(case, popping=False),
                ),
            ),
        ),
    ),
)
