"""Exercise 8-6: the Hopfield network, with the energy checked on every trajectory received."""

from __future__ import annotations

import numpy as np

from grader.engine.spec import FUNCTION, Case, Exercise, Mistake, Part, Property

# Networks whose fields are exact in float64 whatever the order of the sums: Hebbian weights of
# 1, 2, 4 or 8 patterns (multiples of 1/N, N a power of two) and integer weights. Fields of
# exactly 0 then happen (the tie rule matters) and no rounding can turn a tie into a sign.
# "real" networks have Gaussian weights: no ties, no exact arithmetic needed.
KINDS = ("hebbian", "integer", "real")


def _signs(rng, shape):
    return rng.choice(np.array([-1.0, 1.0]), size=shape)


def _network(rng, kind, units, patterns=2):
    if kind == "hebbian":
        stored = _signs(rng, (patterns, units))
        weights = np.einsum("pi,pj->ij", stored, stored) / patterns
    elif kind == "integer":
        weights = np.triu(rng.integers(-2, 3, size=(units, units)).astype(np.float64), 1)
        weights = weights + weights.T
    else:
        half = rng.standard_normal((units, units))
        weights = 0.5 * (half + half.T)
    weights[np.diag_indices(units)] = 0.0
    return weights


def _bias(rng, kind, units):
    if kind == "real":
        return 0.5 * rng.standard_normal(units)
    # Integers or halves: exact, so that ties stay ties.
    return rng.integers(-2, 3, size=units) / (1.0 if kind == "integer" else 2.0)


def _state_shape(batch, units):
    return (units,) if batch == 0 else (batch, units)


def _count(number, word):
    return f"{number} {word}" + ("" if number == 1 else "s")


def _describe(kind, units, batch, bias, patterns=None, extra=""):
    network = f"{kind} W" + (f" ({_count(patterns, 'pattern')})" if kind == "hebbian" else "")
    states = "one state" if batch == 0 else f"batch of {batch}"
    return f"M={units}, {network}, {states}" + (", with bias" if bias else "") + extra


def _dynamics_case(rng, target, kind, units, batch, bias, order, patterns=2, note=""):
    inputs = {
        "W": _network(rng, kind, units, patterns),
        "state": _signs(rng, _state_shape(batch, units)),
        "order": np.asarray(order, dtype=np.int64),
    }
    if bias:
        inputs["bias"] = _bias(rng, kind, units)
    label = _describe(kind, units, batch, bias, patterns, f", {_count(len(order), 'update')}{note}")
    return Case(target, FUNCTION, label, inputs=inputs)


def _sweeps(rng, units, count):
    return np.concatenate([rng.permutation(units) for _ in range(count)])


def _random_setting(rng):
    """Hidden cases: a random kind, size, batch and bias."""
    kind = KINDS[int(rng.integers(len(KINDS)))]
    units = int(rng.integers(2, 13))
    batch = int(rng.choice([0, 1, 3, 5]))
    patterns = int(rng.choice([1, 2, 4, 8]))
    return kind, units, batch, bool(rng.integers(2)), patterns


# --- cases -----------------------------------------------------------------------------------


def hebbian_cases(rng, hidden=False):
    # (N patterns, M units): never N = M, so that dividing by the wrong one is told apart.
    if hidden:
        sizes = []
        for count, units in rng.integers(1, 12, size=(3, 2)):
            sizes.append((int(count), int(units) + (1 if count == units else 0)))
    else:
        sizes = [(3, 8), (1, 5), (2, 6), (5, 12), (6, 4), (4, 1)]
    return [
        Case(
            "hebbian_weights",
            FUNCTION,
            f"{_count(count, 'pattern')} of {_count(units, 'unit')}",
            inputs={"patterns": _signs(rng, (count, units))},
        )
        for count, units in sizes
    ]


def energy_cases(rng, hidden=False):
    if hidden:
        settings = [_random_setting(rng) for _ in range(3)]
    else:
        # (kind, units, batch, bias, patterns)
        settings = [
            ("hebbian", 6, 0, False, 3),
            ("integer", 8, 4, False, 2),
            ("real", 5, 0, True, 2),
            ("real", 7, 3, True, 2),
            ("real", 1, 0, True, 2),
            ("hebbian", 10, 5, True, 2),
        ]
    cases = []
    for kind, units, batch, bias, patterns in settings:
        inputs = {
            "W": _network(rng, kind, units, patterns),
            "state": _signs(rng, _state_shape(batch, units)),
        }
        if bias:
            inputs["bias"] = _bias(rng, kind, units)
        cases.append(
            Case("energy", FUNCTION, _describe(kind, units, batch, bias, patterns), inputs=inputs)
        )
    return cases


def update_cases(rng, hidden=False):
    if hidden:
        cases = []
        for _ in range(4):
            kind, units, batch, bias, patterns = _random_setting(rng)
            order = rng.permutation(units)
            cases.append(
                _dynamics_case(rng, "async_update", kind, units, batch, bias, order, patterns)
            )
        return cases
    return [
        _dynamics_case(rng, "async_update", "hebbian", 8, 0, False, rng.permutation(8)),
        _dynamics_case(rng, "async_update", "integer", 6, 4, True, rng.permutation(6)),
        _dynamics_case(rng, "async_update", "real", 7, 3, True, rng.permutation(7)),
        _dynamics_case(
            rng,
            "async_update",
            "integer",
            5,
            0,
            False,
            rng.integers(0, 5, size=7),
            note=" (units repeated and left out)",
        ),
        _dynamics_case(rng, "async_update", "hebbian", 10, 5, False, rng.permutation(10), 4),
        _dynamics_case(rng, "async_update", "real", 1, 0, True, [0]),
    ]


def trajectory_cases(rng, hidden=False):
    """Many trajectories: each case runs three random sweeps over a batch of states."""
    if hidden:
        settings = [_random_setting(rng) for _ in range(6)]
    else:
        settings = [
            ("hebbian", 8, 6, False, 2),
            ("integer", 6, 6, True, 2),
            ("real", 9, 6, True, 2),
            ("integer", 10, 0, False, 2),
            ("hebbian", 12, 6, True, 4),
            ("real", 5, 0, False, 2),
            ("integer", 4, 6, True, 2),
            ("hebbian", 7, 3, False, 8),
        ]
    return [
        _dynamics_case(
            rng, "async_trajectory", kind, units, batch, bias, _sweeps(rng, units, 3), patterns
        )
        for kind, units, batch, bias, patterns in settings
    ]


def recall_cases(rng, hidden=False):
    if hidden:
        settings = [(*_random_setting(rng)[:3], int(rng.integers(1, 5))) for _ in range(3)]
        settings = [(kind, units + 6, batch, sweeps) for kind, units, batch, sweeps in settings]
    else:
        # (kind, units, batch, sweeps)
        settings = [
            ("hebbian", 16, 4, 3),
            ("hebbian", 24, 3, 2),
            ("integer", 8, 4, 4),
            ("real", 10, 0, 1),
            ("integer", 12, 0, 3),
        ]
    cases = []
    for kind, units, batch, sweeps in settings:
        if kind == "hebbian":
            count = 2 if units < 20 else 4
            stored = _signs(rng, (count, units))
            weights = np.einsum("pi,pj->ij", stored, stored) / count
            weights[np.diag_indices(units)] = 0.0
            # Probes: stored patterns with a fifth of their units flipped.
            picks = stored[rng.integers(count, size=max(batch, 1))]
            flips = np.where(rng.random(picks.shape) < 0.2, -1.0, 1.0)
            probes = (picks * flips).reshape(_state_shape(batch, units))
            label = f"M={units}, {count} stored patterns, probes with a fifth flipped"
        else:
            weights = _network(rng, kind, units)
            probes = _signs(rng, _state_shape(batch, units))
            label = _describe(kind, units, batch, False)
        cases.append(
            Case(
                "recall",
                FUNCTION,
                f"{label}, {_count(sweeps, 'sweep')}",
                inputs={"W": weights, "state": probes},
                params={"sweeps": sweeps},
            )
        )
    return cases


# --- the dynamics, right and wrong, in NumPy -------------------------------------------------


def _field_bias(case):
    units = case.inputs["W"].shape[0]
    return case.inputs.get("bias", np.zeros(units))


def _run(case, order=None, tie="keep", stale=False, bias=True, record=False):
    """Asynchronous updates of the case's state(s) over `order` (the case's by default).

    tie: "keep" (right), "zero" (np.sign: sgn(0) = 0), "plus" (sgn(0) = +1) or "reversed"
    (s_i ← −sgn(h_i), the old value kept on a tie).
    stale: every field from the starting state (a synchronous update).
    """
    w = case.inputs["W"]
    b = _field_bias(case) if bias else np.zeros(w.shape[0])
    s = np.array(case.inputs["state"], dtype=np.float64)
    start = s.copy()
    path = [s.copy()]
    for i in case.inputs["order"] if order is None else order:
        h = np.einsum("...j,j->...", start if stale else s, w[i]) + b[i]
        if tie == "zero":
            s[..., i] = np.sign(h)
        elif tie == "reversed":
            s[..., i] = np.where(h == 0, s[..., i], -np.sign(h))
        elif tie == "plus":
            s[..., i] = np.where(h >= 0, 1.0, -1.0)
        else:
            s[..., i] = np.where(h == 0, s[..., i], np.sign(h))
        path.append(s.copy())
    return np.stack(path) if record else s


def _dynamics_mistakes(record):
    """The known mistakes of asynchronous dynamics, for updates (record=False) or trajectories."""

    def order_ignored(case):
        units, steps = case.inputs["W"].shape[0], case.inputs["order"].size
        return _run(case, order=np.arange(steps) % units, record=record)

    def bias_ignored(case):
        return _run(case, bias=False, record=record) if "bias" in case.inputs else None

    return (
        Mistake(
            "fields from the old state (a synchronous update)",
            "Every field was computed from the state BEFORE the updates: asynchronous means "
            "each unit's field uses the current state, with the units updated before it "
            "already changed (a synchronous update can raise the energy and oscillate).",
            lambda case: _run(case, stale=True, record=record),
        ),
        Mistake(
            "sgn(0) = 0",
            "Some units became 0: np.sign(0) is 0. When the field is exactly 0, keep the "
            "unit's old value (the tie rule).",
            lambda case: _run(case, tie="zero", record=record),
        ),
        Mistake(
            "ties set to +1",
            "Units whose field is exactly 0 were set to +1: the tie rule keeps the old value.",
            lambda case: _run(case, tie="plus", record=record),
        ),
        Mistake(
            "update against the field",
            "Units took the sign OPPOSITE to their field: s_i ← +1 when h_i > 0 and −1 when "
            "h_i < 0, so that each unit agrees with its field (this is what lowers the energy).",
            lambda case: _run(case, tie="reversed", record=record),
        ),
        Mistake(
            "order ignored",
            "The units were updated as 0, 1, 2, … in turn: update order[0], then order[1], "
            "and so on.",
            order_ignored,
        ),
        Mistake(
            "bias ignored",
            "The bias is missing from the field: h_i = Σ_j w_ij s_j + b_i.",
            bias_ignored,
        ),
    )


def _energies(case, states):
    w = case.inputs["W"]
    e = -0.5 * np.einsum("...i,ij,...j->...", states, w, states)
    if "bias" in case.inputs:
        e = e - np.einsum("...i,i->...", states, case.inputs["bias"])
    return e


def _rise(before, after, tolerance):
    """The first index (flattened over a batch) where `after` exceeds `before`, or None."""
    grew = np.argwhere(np.ravel(after - before) > tolerance)
    return int(grew[0][0]) if grew.size else None


def _tolerance(energies):
    return 1e-9 * max(1.0, float(np.max(np.abs(energies), initial=0.0)))


def _unreadable(output, shape, what):
    if output.shape != shape:
        return f"the energy cannot be checked: {what} has shape {output.shape}, expected {shape}"
    if output.dtype.kind not in "biuf" or not np.all(np.isfinite(output)):
        return f"the energy cannot be checked: {what} holds NaN or infinite values"
    return None


def trajectory_energy(case, output):
    """E(trajectory[t + 1]) ≤ E(trajectory[t]) for every t and every batch row."""
    state, order = case.inputs["state"], case.inputs["order"]
    problem = _unreadable(output, (order.size + 1, *state.shape), "the trajectory")
    if problem:
        return problem
    energies = _energies(case, output.astype(np.float64)).reshape(order.size + 1, -1)
    tolerance = _tolerance(energies)
    for step in range(order.size):
        row = _rise(energies[step], energies[step + 1], tolerance)
        if row is not None:
            where = f" in batch row {row}" if state.ndim > 1 else ""
            return (
                f"the energy rose from {energies[step, row]:.6g} to {energies[step + 1, row]:.6g}"
                f" at step {step + 1} (the update of unit {int(order[step])}){where}: an "
                "asynchronous update never raises E = −½ sᵀWs − bᵀs"
            )
    return None


def final_energy(case, output):
    """E(output) ≤ E(state) for every batch row (async_update and recall)."""
    state = case.inputs["state"]
    problem = _unreadable(output, state.shape, "the result")
    if problem:
        return problem
    before = np.atleast_1d(_energies(case, state))
    after = np.atleast_1d(_energies(case, output.astype(np.float64)))
    row = _rise(before, after, _tolerance(np.concatenate([before, after])))
    if row is None:
        return None
    where = f" in batch row {row}" if state.ndim > 1 else ""
    return (
        f"the energy rose from {before[row]:.6g} to {after[row]:.6g}{where}: asynchronous "
        "updates never raise E = −½ sᵀWs − bᵀs"
    )


def _synchronous_recall(case, sweeps):
    w, s = case.inputs["W"], np.array(case.inputs["state"], dtype=np.float64)
    for _ in range(sweeps):
        h = np.einsum("...j,ij->...i", s, w)
        s = np.where(h == 0, s, np.sign(h))
    return s


def _recall(case, sweeps, tie="keep"):
    units = case.inputs["W"].shape[0]
    order = np.tile(np.arange(units), sweeps)
    return _run(case, order=order, tie=tie)


def _hebbian(case, divide_by="patterns", zero_diagonal=True):
    x = case.inputs["patterns"]
    count, units = x.shape
    total = np.einsum("pi,pj->ij", x, x)
    if divide_by == "patterns":
        total = total / count
    elif divide_by == "units":
        total = total / units
    if zero_diagonal:
        total[np.diag_indices(units)] = 0.0
    return total


def _states_and_bias(case):
    s, w = case.inputs["state"], case.inputs["W"]
    quadratic = np.einsum("...i,ij,...j->...", s, w, s)
    linear = np.einsum("...i,i->...", s, case.inputs["bias"]) if "bias" in case.inputs else None
    return quadratic, linear


def _energy_mistake(quadratic_factor, linear_factor, needs_bias=False):
    def compute(case):
        quadratic, linear = _states_and_bias(case)
        if linear is None:
            return None if needs_bias else quadratic_factor * quadratic
        return quadratic_factor * quadratic + linear_factor * linear

    return compute


ENERGY_PROPERTY = Property("energy never rises", final_energy)

RECORD = Exercise(
    id="8-6",
    title="Hopfield network: Hebbian weights, energy, asynchronous updates",
    file="ex8_6.py",
    section="NNDL 8.6.1 (Hopfield network)",
    timeout=15.0,
    summary=(
        "Store ±1 patterns in a Hopfield network with the Hebbian rule (1/N over the N "
        "patterns, zero diagonal), write its energy E = −½ sᵀWs − bᵀs, and run it: "
        "asynchronous updates one unit at a time (the field's sign, the old value kept on a "
        "tie), the trajectory of states they pass through, and recall from a corrupted probe. "
        "Besides comparing values with the reference, the grader recomputes the energy of "
        "every state your dynamics return and checks that it never rises (NNDL exercise 8-6)."
    ),
    parts=(
        Part(
            name="hebbian_weights",
            points=2,
            targets=("hebbian_weights",),
            make_cases=hebbian_cases,
            description="hebbian_weights: W = (1/N) Σ x xᵀ, zero diagonal.",
            mistakes=(
                Mistake(
                    "diagonal kept",
                    "The diagonal is not 0: a unit has no connection to itself, set w_ii = 0 "
                    "(with it, the energy is no longer sure to fall).",
                    lambda case: _hebbian(case, zero_diagonal=False),
                ),
                Mistake(
                    "divided by the number of units",
                    "You divided by M, the number of units: NNDL's rule divides by N, the "
                    "number of patterns (the first axis of `patterns`).",
                    lambda case: _hebbian(case, divide_by="units"),
                ),
                Mistake(
                    "not divided by N",
                    "This is Σ_n x xᵀ: divide by N, the number of patterns.",
                    lambda case: _hebbian(case, divide_by=None),
                ),
            ),
        ),
        Part(
            name="energy",
            points=2,
            targets=("energy",),
            make_cases=energy_cases,
            description="energy: −½ sᵀWs − bᵀs, one state or a batch.",
            mistakes=(
                Mistake(
                    "sign flipped",
                    "This is +½ sᵀWs + bᵀs: the energy has a minus sign, so that the "
                    "stored patterns are its minima.",
                    _energy_mistake(0.5, 1.0),
                ),
                Mistake(
                    "½ missing",
                    "This is −sᵀWs − bᵀs: the quadratic term has a factor ½ (each pair i, j "
                    "is counted twice in sᵀWs).",
                    _energy_mistake(-1.0, -1.0),
                ),
                Mistake(
                    "bias sign flipped",
                    "The bias term has the wrong sign: E = −½ sᵀWs − bᵀs.",
                    _energy_mistake(-0.5, 1.0, needs_bias=True),
                ),
                Mistake(
                    "bias halved",
                    "The ½ applies to the quadratic term only: E = −½ sᵀWs − bᵀs, not "
                    "−½ (sᵀWs + bᵀs).",
                    _energy_mistake(-0.5, -0.5, needs_bias=True),
                ),
            ),
        ),
        Part(
            name="async_update",
            points=2,
            targets=("async_update",),
            make_cases=update_cases,
            description="async_update: one unit at a time in the given order, ties kept.",
            mistakes=_dynamics_mistakes(record=False),
            properties=(ENERGY_PROPERTY,),
        ),
        Part(
            name="async_trajectory",
            points=3,
            targets=("async_trajectory",),
            make_cases=trajectory_cases,
            description="async_trajectory: the state after every single-unit update; the "
            "energy of each is checked never to rise.",
            mistakes=(
                Mistake(
                    "the same array appended",
                    "Every row is the final state: the list holds the same array again and "
                    "again, changed in place. Append a copy of the state after each update.",
                    lambda case: np.broadcast_to(
                        _run(case), (case.inputs["order"].size + 1, *case.inputs["state"].shape)
                    ),
                ),
                *_dynamics_mistakes(record=True),
            ),
            properties=(Property("energy never rises", trajectory_energy),),
        ),
        Part(
            name="recall",
            points=1,
            targets=("recall",),
            make_cases=recall_cases,
            description="recall: `sweeps` asynchronous sweeps in the order 0..M−1.",
            mistakes=(
                Mistake(
                    "one sweep only",
                    "This is the state after one sweep: make `sweeps` sweeps.",
                    lambda case: _recall(case, 1) if case.params["sweeps"] > 1 else None,
                ),
                Mistake(
                    "synchronous updates",
                    "All units were updated at once (s ← sgn(W s)): recall updates them one at "
                    "a time, each from the current state.",
                    lambda case: _synchronous_recall(case, case.params["sweeps"]),
                ),
                Mistake(
                    "sgn(0) = 0",
                    "Some units became 0: np.sign(0) is 0. When the field is exactly 0, keep "
                    "the unit's old value.",
                    lambda case: _recall(case, case.params["sweeps"], tie="zero"),
                ),
            ),
            properties=(ENERGY_PROPERTY,),
        ),
    ),
)
