"""Exercise 8-6 graded end to end: what the reference's grading checks, correct alternatives,
planted mistakes, and dynamics that raise the energy caught by the energy property
(tests/grader/test_records.py grades the reference and the stub)."""

import numpy as np
import pytest

from grader.engine.cases import make_cases
from grader.grading import grade
from grader.instructor.course.stubs import package_dir
from grader.records import get_exercise
from grader.reference.hopfield import energy_of
from tests.grader.test_records import HIDDEN_SEEDS
from tests.support import grading as grading_helpers
from tests.support.grading import failures, reference_result
from tests.support.planting import from_table

pytestmark = pytest.mark.ex8_6

EXERCISE = "8-6"
REFERENCE = (package_dir("solutions") / "ex8_6.py").read_text(encoding="utf-8")
ENERGY_CHECK = "energy never rises"
RECORD = get_exercise(EXERCISE)
# The record's energy properties: along a trajectory, and from a state to the one returned.
trajectory_energy = RECORD.part("async_trajectory").properties[0].check
final_energy = RECORD.part("async_update").properties[0].check


def submit(tmp_path, body: str) -> str:
    return grading_helpers.submit(tmp_path, EXERCISE, body)


def messages(part):
    return [(check.name, check.message) for check in failures(part)][:3]


def override(function: str, *lines: str) -> str:
    """The reference with `function` redefined (same signature) by `lines`."""
    signature = next(line for line in REFERENCE.splitlines() if line.startswith(f"def {function}("))
    return REFERENCE + "\n\n" + signature + "\n" + "\n".join("    " + line for line in lines) + "\n"


def test_the_energy_is_checked_on_many_trajectories_public_and_hidden():
    trajectory = reference_result(EXERCISE, HIDDEN_SEEDS[EXERCISE]).part("async_trajectory")
    energy_checks = [c for c in trajectory.checks if c.name.startswith(ENERGY_CHECK)]
    assert len(energy_checks) >= 12 and any("hidden" in c.name for c in energy_checks)


def test_the_cases_hold_many_trajectories_with_ties():
    record = get_exercise(EXERCISE)
    for seed, hidden_seed in ((0, None), (1, 2)):
        cases = make_cases(record, seed, hidden_seed)["async_trajectory"]
        trajectories = sum(
            case.inputs["state"].shape[0] if case.inputs["state"].ndim > 1 else 1 for case in cases
        )
        assert trajectories >= 30
        assert all(case.inputs["order"].size >= 2 * case.inputs["W"].shape[0] for case in cases)
        for case in cases:
            w = case.inputs["W"]
            assert np.array_equal(w, w.T) and not np.any(np.diag(w))
    # Integer networks make fields of exactly 0, so that the tie rule is tested.
    labels = [case.label for case in make_cases(record, 0)["async_trajectory"]]
    assert sum("integer W" in label for label in labels) >= 2


# --- the energy property, on outputs made by hand ------------------------------------------


def _trajectory_case():
    return make_cases(RECORD, 0)["async_trajectory"][3]  # one state, integer weights


def _reference_trajectory(case):
    from solutions.ex8_6 import async_trajectory

    return async_trajectory(*case.inputs.values())


def test_the_energy_property_accepts_the_reference_and_names_the_step_that_rose():
    case = _trajectory_case()
    path = _reference_trajectory(case)
    assert trajectory_energy(case, path) is None
    energies = energy_of(case.inputs["W"], path)
    step = next(t for t in range(1, len(path)) if energies[t] < energies[t - 1])
    rising = path.copy()
    rising[step] = path[step - 1]  # undo one descent: from step to step + 1 the energy rises
    rising[step - 1] = path[step]
    message = trajectory_energy(case, rising)
    assert message.startswith(f"the energy rose from {energies[step]:.6g} to")
    assert f"at step {step}" in message and "never raises" in message


def test_the_energy_property_explains_outputs_it_cannot_read():
    case = _trajectory_case()
    path = _reference_trajectory(case)
    assert "expected" in trajectory_energy(case, path[1:])
    broken = path.copy()
    broken[2, 0] = np.nan
    assert "NaN" in trajectory_energy(case, broken)
    update_case = make_cases(RECORD, 0)["async_update"][1]  # a batch, with bias
    state = update_case.inputs["state"]
    cut = final_energy(update_case, -state[:, :1])
    assert cut == (
        f"the energy cannot be checked: the result has shape {state[:, :1].shape}, "
        f"expected {state.shape}"
    )


# --- correct alternatives ------------------------------------------------------------------

ALTERNATIVE_LOOPS = """
def hebbian_weights(patterns):
    count, units = patterns.shape
    W = np.zeros((units, units))
    for x in patterns:
        W += np.outer(x, x)
    W /= count
    return W - np.diag(np.diag(W))

def energy(W, state, bias=None):
    s = np.asarray(state, dtype=float)
    e = -0.5 * np.sum(s * (s @ W), axis=-1)
    return e if bias is None else e - np.sum(s * bias, axis=-1)

def _step(W, s, i, bias):
    h = s @ W[:, i] + (0.0 if bias is None else bias[i])
    s = s.copy()
    s[..., i] = np.select([h > 0, h < 0], [1.0, -1.0], default=s[..., i])
    return s

def async_update(W, state, order, bias=None):
    s = np.array(state, dtype=float)
    for i in order:
        s = _step(W, s, i, bias)
    return s

def async_trajectory(W, state, order, bias=None):
    # every prefix of the order again: quadratic work, but right
    return np.stack([async_update(W, state, order[:t], bias) for t in range(len(order) + 1)])

def recall(W, state, sweeps):
    s = np.array(state, dtype=float)
    for _ in range(sweeps):
        new = async_update(W, s, range(s.shape[-1]))
        if np.array_equal(new, s):
            break  # a fixed point: more sweeps change nothing
        s = new
    return s
"""

ALTERNATIVE_KERAS = """
def hebbian_weights(patterns):
    x = ops.convert_to_tensor(patterns)
    units = x.shape[1]
    return ops.matmul(ops.transpose(x), x) / x.shape[0] * (1.0 - ops.eye(units, dtype=x.dtype))

def energy(W, state, bias=None):
    s = ops.convert_to_tensor(state)
    e = -0.5 * ops.sum(ops.matmul(s, W) * s, axis=-1)
    return e if bias is None else e - ops.sum(s * bias, axis=-1)

def async_trajectory(W, state, order, bias=None):
    W = ops.convert_to_tensor(W)
    units = W.shape[0]
    s = ops.convert_to_tensor(state)
    b = ops.zeros((units,), dtype=W.dtype) if bias is None else ops.convert_to_tensor(bias)
    states = [s]
    for i in order:
        i = int(i)
        onehot = ops.one_hot(i, units, dtype=s.dtype)
        h = ops.sum(s * W[i], axis=-1) + b[i]
        old = ops.sum(s * onehot, axis=-1)
        new = ops.where(h > 0, ops.ones_like(h), ops.where(h < 0, -ops.ones_like(h), old))
        s = s + ops.expand_dims(new - old, -1) * onehot
        states.append(s)
    return ops.stack(states)

def async_update(W, state, order, bias=None):
    return async_trajectory(W, state, order, bias)[-1]

def recall(W, state, sweeps):
    return async_update(W, state, np.tile(np.arange(np.shape(W)[0]), sweeps))
"""


@pytest.mark.parametrize(
    "body", [ALTERNATIVE_LOOPS, ALTERNATIVE_KERAS], ids=["numpy-loops", "keras-ops"]
)
def test_correct_alternatives_score_full_marks(tmp_path, body):
    result = grade(EXERCISE, submit(tmp_path, body), hidden_seed=5)
    assert result.score == 10.0, [(p.name, messages(p)) for p in result.parts]


# --- planted mistakes ----------------------------------------------------------------------

COPY = "x = np.asarray(patterns, dtype=float)"
STATES = "s, b = np.array(state, dtype=float), np.zeros(len(W)) if bias is None else bias"
QUADRATIC = "q = np.einsum('...i,ij,...j->...', s, W, s)"


FIELD = "h = s @ W[i] + b[i]"


def dynamics(update, loop="for i in order:", field=FIELD, before=()):
    """The lines of async_update: a loop over the units, with this field and this update."""
    return (STATES, *before, loop, "    " + field, "    " + update, "return s")


def trajectory(update, loop="for i in order:", field=FIELD, before=(), copy=".copy()"):
    """The lines of async_trajectory, the same loop recording each state (copied or not)."""
    return (
        STATES,
        *before,
        f"path = [s{copy}]",
        loop,
        "    " + field,
        "    " + update,
        f"    path.append(s{copy})",
        "return np.stack(path)",
    )


STALE = {"field": "h = start @ W[i] + b[i]", "before": ("start = s.copy()",)}


KEEP = "s[..., i] = np.where(h > 0, 1.0, np.where(h < 0, -1.0, s[..., i]))"
WRONG_SIGN = "s[..., i] = np.where(h > 0, -1.0, np.where(h < 0, 1.0, s[..., i]))"
SIGN = "s[..., i] = np.sign(h)"
TIES_UP = "s[..., i] = np.where(h >= 0, 1.0, -1.0)"

PLANTED = [
    # (part, submission, the named mistake, a phrase of the feedback)
    (
        "hebbian_weights",
        override("hebbian_weights", COPY, "return x.T @ x / len(x)"),
        "diagonal kept",
        "set w_ii = 0",
    ),
    (
        "hebbian_weights",
        override("hebbian_weights", COPY, "return x.T @ x / x.shape[1] * (1 - np.eye(x.shape[1]))"),
        "divided by the number of units",
        "N, the number of patterns",
    ),
    (
        "hebbian_weights",
        override("hebbian_weights", COPY, "return x.T @ x * (1 - np.eye(x.shape[1]))"),
        "not divided by N",
        "divide by N",
    ),
    (
        "energy",
        override("energy", STATES, QUADRATIC, "return 0.5 * q + s @ b"),
        "sign flipped",
        "has a minus sign",
    ),
    (
        "energy",
        override("energy", STATES, QUADRATIC, "return -q - s @ b"),
        "½ missing",
        "counted twice",
    ),
    (
        "energy",
        override("energy", STATES, QUADRATIC, "return -0.5 * q + s @ b"),
        "bias sign flipped",
        "wrong sign",
    ),
    (
        "energy",
        override("energy", STATES, QUADRATIC, "return -0.5 * (q + s @ b)"),
        "bias halved",
        "quadratic term only",
    ),
    (
        "async_update",
        override("async_update", *dynamics(KEEP, **STALE)),
        "fields from the old state (a synchronous update)",
        "uses the current state",
    ),
    ("async_update", override("async_update", *dynamics(SIGN)), "sgn(0) = 0", "np.sign(0) is 0"),
    (
        "async_update",
        override("async_update", *dynamics(TIES_UP)),
        "ties set to +1",
        "keeps the old value",
    ),
    (
        "async_update",
        override("async_update", *dynamics(KEEP, loop="for i in range(len(W)):")),
        "order ignored",
        "update order[0], then order[1]",
    ),
    (
        "async_update",
        override("async_update", *dynamics(KEEP, field="h = s @ W[i]")),
        "bias ignored",
        "bias is missing",
    ),
    (
        "async_update",
        override("async_update", *dynamics(WRONG_SIGN)),
        "update against the field",
        "the energy rose from",
    ),
    (
        "async_trajectory",
        override("async_trajectory", *trajectory(KEEP, copy="")),
        "the same array appended",
        "Append a copy",
    ),
    (
        "async_trajectory",
        override("async_trajectory", *trajectory(SIGN)),
        "sgn(0) = 0",
        "np.sign(0) is 0",
    ),
    (
        "async_trajectory",
        override("async_trajectory", *trajectory(TIES_UP)),
        "ties set to +1",
        "keeps the old value",
    ),
    (
        "async_trajectory",
        override(
            "async_trajectory", *trajectory(KEEP, loop="for i in np.arange(len(order)) % len(W):")
        ),
        "order ignored",
        "update order[0], then order[1]",
    ),
    (
        "async_trajectory",
        override("async_trajectory", *trajectory(KEEP, field="h = s @ W[i]")),
        "bias ignored",
        "bias is missing",
    ),
    (
        "recall",
        override("recall", "return async_update(W, state, np.arange(len(W)))"),
        "one sweep only",
        "after one sweep",
    ),
    (
        "recall",
        override(
            "recall",
            "s = np.array(state, dtype=float)",
            "for _ in range(sweeps):",
            "    h = s @ W",
            "    s = np.where(h > 0, 1.0, np.where(h < 0, -1.0, s))",
            "return s",
        ),
        "synchronous updates",
        "one at a time",
    ),
    (
        "recall",
        override(
            "recall",
            "s = np.array(state, dtype=float)",
            "for i in np.tile(np.arange(len(W)), sweeps):",
            "    s[..., i] = np.sign(s @ W[i])",
            "return s",
        ),
        "sgn(0) = 0",
        "np.sign(0) is 0",
    ),
]


STALE_TRAJECTORY = override("async_trajectory", *trajectory(KEEP, **STALE))
WRONG_SIGN_TRAJECTORY = override("async_trajectory", *trajectory(WRONG_SIGN))


def planted():
    """Every planted mistake of this exercise (graded by tests/grader/test_records.py)."""
    energy_rose = ("the energy rose from", " at step ", "(the update of unit ")
    synchronous = "fields from the old state (a synchronous update)"
    return from_table(
        [
            *PLANTED,
            ("async_trajectory", STALE_TRAJECTORY, synchronous, energy_rose),
            ("async_trajectory", WRONG_SIGN_TRAJECTORY, "update against the field", energy_rose),
        ]
    )
