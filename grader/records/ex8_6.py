"""Exercise 8-6: the Hopfield network, with the energy checked on every trajectory received."""

from __future__ import annotations

from grader.engine import sampling as draw
from grader.engine import selectors as on
from grader.reference import hopfield as ref
from grader.reference.hopfield import KINDS, Setting, counted, random_signs
from grader.vocabulary.spec import FUNCTION, Case, Exercise, Mistake, Part, Property

# fmt: off
# N patterns of M units: never N = M, so that dividing by the wrong one is told apart.
HEBBIAN = [dict(N=3, M=8), dict(N=1, M=5), dict(N=2, M=6), dict(N=5, M=12), dict(N=6, M=4),
           dict(N=4, M=1)]
ENERGY = [Setting("hebbian", 6, patterns=3), Setting("integer", 8, batch=4),
          Setting("real", 5, bias=True), Setting("real", 7, batch=3, bias=True),
          Setting("real", 1, bias=True), Setting("hebbian", 10, batch=5, bias=True)]
UPDATE = [Setting("hebbian", 8), Setting("integer", 6, batch=4, bias=True),
          Setting("real", 7, batch=3, bias=True), Setting("integer", 5, repeats=7),
          Setting("hebbian", 10, batch=5, patterns=4), Setting("real", 1, bias=True),
          # Orders of another length than the state (shorter, and longer with repeats): one
          # update per entry of `order`, not a fixed number.
          Setting("real", 8, batch=4, repeats=3),
          Setting("real", 4, batch=5, bias=True, repeats=11)]
TRAJECTORY = [Setting("hebbian", 8, batch=6), Setting("integer", 6, batch=6, bias=True),
              Setting("real", 9, batch=6, bias=True), Setting("integer", 10),
              Setting("hebbian", 12, batch=6, bias=True, patterns=4), Setting("real", 5),
              Setting("integer", 4, batch=6, bias=True), Setting("hebbian", 7, batch=3, patterns=8)]
RECALL = [Setting("hebbian", 16, batch=4, sweeps=3), Setting("hebbian", 24, batch=3, sweeps=2),
          Setting("integer", 8, batch=4, sweeps=4), Setting("real", 10, sweeps=1),
          Setting("integer", 12, sweeps=3)]
# Hidden cases: a random kind, size, batch, patterns stored (in Hebbian networks) and bias.
RANDOM = dict(kind=KINDS, units=range(2, 13), batch=(0, 1, 3, 5), patterns=(1, 2, 4, 8),
              bias=(False, True))
# fmt: on


def hebbian_cases(rng, hidden=False):
    sizes = (
        [draw.pick(rng, N=range(1, 12), M=range(1, 12)) for _ in range(3)] if hidden else HEBBIAN
    )
    cases = []
    for size in sizes:
        n, m = size["N"], size["M"] + (size["N"] == size["M"])  # never N = M
        label = f"{counted(n, 'pattern')} of {counted(m, 'unit')}"
        inputs = {"patterns": random_signs(rng, (n, m))}
        cases.append(Case("hebbian_weights", FUNCTION, label, inputs=inputs))
    return cases


def energy_cases(rng, hidden=False):
    settings = [Setting(**draw.pick(rng, **RANDOM)) for _ in range(3)] if hidden else ENERGY
    return [Case("energy", FUNCTION, s.label(), inputs=s.inputs(rng)) for s in settings]


def dynamics_case(rng, target, setting):
    order = setting.order(rng)
    return Case(target, FUNCTION, setting.label(order), inputs=setting.inputs(rng, order))


def update_cases(rng, hidden=False):
    # Hidden: each random setting is drawn just before its case (a generator); half the orders
    # are not one sweep: units repeated and left out, shorter or longer than the state.
    orders = dict(repeats=(0, 1, 5, 30))
    drawn = (Setting(**draw.pick(rng, **RANDOM, **orders)) for _ in range(6))
    settings = drawn if hidden else UPDATE
    return [dynamics_case(rng, "async_update", s) for s in settings]


def trajectory_cases(rng, hidden=False):
    """Many trajectories: each case runs three random sweeps (over a batch of states)."""
    settings = [Setting(**draw.pick(rng, **RANDOM)) for _ in range(6)] if hidden else TRAJECTORY
    return [dynamics_case(rng, "async_trajectory", s._replace(sweeps=3)) for s in settings]


def recall_cases(rng, hidden=False):
    settings = RECALL
    if hidden:
        settings = [Setting(**draw.pick(rng, **RANDOM, sweeps=range(1, 5))) for _ in range(3)]
        settings = [s._replace(units=s.units + 6, bias=False) for s in settings]
    cases = []
    for setting in settings:
        W, probes, label = setting.probes(rng)
        label += f", {counted(setting.sweeps, 'sweep')}"
        inputs, params = {"W": W, "state": probes}, {"sweeps": setting.sweeps}
        cases.append(Case("recall", FUNCTION, label, inputs=inputs, params=params))
    return cases


# The energy of what the dynamics return is recomputed: it must never rise.
ENERGY_NEVER_RISES = Property("energy never rises", on.check_of(ref.final_energy_problem))
ENERGY_ALONG_TRAJECTORY = Property("energy never rises", on.check_of(ref.trajectory_energy_problem))
WITH_BIAS = on.has_input("bias")
# fmt: off
DIAGONAL_KEPT = ("The diagonal is not 0: a unit has no connection to itself, set w_ii = 0 (with "
                 "it, the energy is no longer sure to fall).")
BY_UNITS = ("You divided by M, the number of units: NNDL's rule divides by N, the number of "
            "patterns (the first axis of `patterns`).")
NOT_DIVIDED = "This is Σ_n x xᵀ: divide by N, the number of patterns."
SIGN_FLIPPED = ("This is +½ sᵀWs + bᵀs: the energy has a minus sign, so that the stored patterns "
                "are its minima.")
HALF_MISSING = ("This is −sᵀWs − bᵀs: the quadratic term has a factor ½ (each pair i, j is counted "
                "twice in sᵀWs).")
BIAS_SIGN = "The bias term has the wrong sign: E = −½ sᵀWs − bᵀs."
BIAS_HALVED = "The ½ applies to the quadratic term only: E = −½ sᵀWs − bᵀs, not −½ (sᵀWs + bᵀs)."
STALE = ("Every field was computed from the state BEFORE the updates: asynchronous means each "
         "unit's field uses the current state, with the units updated before it already changed "
         "(a synchronous update can raise the energy and oscillate).")
SIGN_ZERO = ("Some units became 0: np.sign(0) is 0. When the field is exactly 0, keep the unit's "
             "old value")
TIES_PLUS = "Units whose field is exactly 0 were set to +1: the tie rule keeps the old value."
AGAINST = ("Units took the sign OPPOSITE to their field: s_i ← +1 when h_i > 0 and −1 when h_i < "
           "0, so that each unit agrees with its field (this is what lowers the energy).")
ORDER_IGNORED = ("The units were updated as 0, 1, 2, … in turn: update order[0], then order[1], "
                 "and so on.")
BIAS_IGNORED = "The bias is missing from the field: h_i = Σ_j w_ij s_j + b_i."
SAME_ARRAY = ("Every row is the final state: the list holds the same array again and again, "
              "changed in place. Append a copy of the state after each update.")
ONE_SWEEP = "This is the state after one sweep: make `sweeps` sweeps."
SYNCHRONOUS = ("All units were updated at once (s ← sgn(W s)): recall updates them one at a time, "
               "each from the current state.")
# fmt: on


def dynamics_mistakes(run):
    """The known mistakes of asynchronous dynamics, for `async_update` or `async_trajectory`."""
    return (
        Mistake.of("fields from the old state (a synchronous update)", STALE, run, stale=True),
        Mistake.of("sgn(0) = 0", SIGN_ZERO + " (the tie rule).", run, tie="zero"),
        Mistake.of("ties set to +1", TIES_PLUS, run, tie="plus"),
        Mistake.of("update against the field", AGAINST, run, tie="reversed"),
        Mistake.of("order ignored", ORDER_IGNORED, run, in_turn=True),
        Mistake.of("bias ignored", BIAS_IGNORED, run, when=WITH_BIAS, bias=None),
    )


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
            make_cases=hebbian_cases,
            description="hebbian_weights: W = (1/N) Σ x xᵀ, zero diagonal.",
            mistakes=(
                Mistake.of("diagonal kept", DIAGONAL_KEPT, ref.hebbian, zero_diagonal=False),
                Mistake.of(
                    "divided by the number of units", BY_UNITS, ref.hebbian, divide_by="units"
                ),
                Mistake.of("not divided by N", NOT_DIVIDED, ref.hebbian, divide_by=None),
            ),
        ),
        Part(
            name="energy",
            points=2,
            make_cases=energy_cases,
            description="energy: −½ sᵀWs − bᵀs, one state or a batch.",
            mistakes=(
                Mistake.of("sign flipped", SIGN_FLIPPED, ref.energy_of, quadratic=0.5, linear=1),
                Mistake.of("½ missing", HALF_MISSING, ref.energy_of, quadratic=-1.0),
                Mistake.of("bias sign flipped", BIAS_SIGN, ref.energy_of, linear=1, when=WITH_BIAS),
                Mistake.of("bias halved", BIAS_HALVED, ref.energy_of, linear=-0.5, when=WITH_BIAS),
            ),
        ),
        Part(
            name="async_update",
            points=2,
            make_cases=update_cases,
            description="async_update: one unit at a time in the given order, ties kept.",
            mistakes=dynamics_mistakes(ref.async_update),
            properties=(ENERGY_NEVER_RISES,),
        ),
        Part(
            name="async_trajectory",
            points=3,
            make_cases=trajectory_cases,
            description="async_trajectory: the state after every single-unit update; the "
            "energy of each is checked never to rise.",
            mistakes=(
                Mistake.of(
                    "the same array appended", SAME_ARRAY, ref.async_trajectory, copied=False
                ),
                *dynamics_mistakes(ref.async_trajectory),
            ),
            properties=(ENERGY_ALONG_TRAJECTORY,),
        ),
        Part(
            name="recall",
            points=1,
            make_cases=recall_cases,
            description="recall: `sweeps` asynchronous sweeps in the order 0..M−1.",
            mistakes=(
                Mistake.of(
                    "one sweep only",
                    ONE_SWEEP,
                    ref.recall,
                    when=on.param_is_not("sweeps", 1),
                    sweeps=1,
                ),
                Mistake.of("synchronous updates", SYNCHRONOUS, ref.recall, synchronous=True),
                Mistake.of("sgn(0) = 0", SIGN_ZERO + ".", ref.recall, tie="zero"),
            ),
            properties=(ENERGY_NEVER_RISES,),
        ),
    ),
)
