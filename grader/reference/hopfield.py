"""Hopfield networks: Hebbian weights, energy, the asynchronous sign update; random networks
for the grader's cases; the modern (continuous) Hopfield update and its retrieval."""

from typing import NamedTuple

import numpy as np

from grader.i18n import N_, _
from grader.reference.attention import as64, attend, masked_softmax, softmax
from grader.vocabulary.labels import label_texts

# The words of this module's case labels, translated where shown (grader.vocabulary.labels).
LABEL_TEXTS = label_texts(
    N_("{patterns} pattern of {units} unit"),
    N_("{patterns} pattern of {units} units"),
    N_("{patterns} patterns of {units} unit"),
    N_("{patterns} patterns of {units} units"),
    N_("hebbian W"),
    N_("integer W"),
    N_("real W"),
    N_("({count} pattern)"),
    N_("({count} patterns)"),
    N_("one state"),
    N_("batch of {size}"),
    N_("with bias"),
    N_("{count} update"),
    N_("{count} updates"),
    N_("(units repeated and left out)"),
    N_("{count} stored patterns"),
    N_("probes with a fifth flipped"),
    N_("{count} sweep"),
    N_("{count} sweeps"),
)


def hebbian(patterns, divide_by="patterns", zero_diagonal=True):
    """w_ij = (1/N) Σ_n x_i x_j for i ≠ j, w_ii = 0. The known mistakes: divided by the number
    of units M (`divide_by="units"`) or by nothing (None), the diagonal kept."""
    patterns = as64(patterns)
    count, m = patterns.shape
    divisor = {"patterns": count, "units": m, None: 1}[divide_by]
    w = np.zeros((m, m))
    for i in range(m):
        for j in range(m):
            if i != j or not zero_diagonal:
                w[i, j] = sum(patterns[n, i] * patterns[n, j] for n in range(count)) / divisor
    return w


def energy(state, w, b):
    """E = −½ Σ_ij w_ij s_i s_j − Σ_i b_i s_i for one state."""
    state, w, b = as64(state), as64(w), as64(b)
    m = len(state)
    pair = sum(w[i, j] * state[i] * state[j] for i in range(m) for j in range(m))
    return -0.5 * pair - float(np.dot(b, state))


def energies(states, w, b):
    """E for a batch of states (N, m): −½ Σ_ij w_ij s_i s_j − Σ_i b_i s_i, vectorised."""
    return energy_of(w, states, b)


def sign_keep(field, current):
    return 1.0 if field > 0 else (-1.0 if field < 0 else current)


# ---- the exercise's functions, named like its arrays, with the known mistakes as switches ----


def energy_of(W, state, bias=None, quadratic=-0.5, linear=-1.0):
    """E = −½ sᵀWs − bᵀs for one state (M,) or any batch (..., M): the factors of the two terms
    are `quadratic` and `linear` (b = 0 when bias is None)."""
    s = as64(state)
    e = quadratic * np.einsum("...i,ij,...j->...", s, as64(W), s)
    return e if bias is None else e + linear * np.einsum("...i,i->...", s, as64(bias))


def _new_value(field, current, tie):
    """A unit's new value: the sign of its field, and on a tie (field 0) what `tie` says: "keep"
    the old value (right), "zero" (np.sign), "plus" (+1), or "reversed" (−sgn(h), kept on a tie)."""
    if tie == "zero":
        return np.sign(field)
    if tie == "plus":
        return np.where(field >= 0, 1.0, -1.0)
    return np.where(field == 0, current, -np.sign(field) if tie == "reversed" else np.sign(field))


def async_trajectory(
    W, state, order, bias=None, tie="keep", stale=False, copied=True, in_turn=False
):
    """Every state (K + 1, ...) of asynchronous updates of unit order[0], order[1], …: unit i
    takes the sign of h_i = Σ_j w_ij s_j + b_i (see `_new_value` for `tie`). The known mistakes:
    `stale`, every field from the starting state (a synchronous update); not `copied`, every row
    the final state; `in_turn`, the units 0, 1, 2, … in turn for as many updates as `order`."""
    w = as64(W)
    b = np.zeros(len(w)) if bias is None else as64(bias)
    s = np.array(state, dtype=np.float64)
    start, path = s.copy(), [s.copy()]
    for i in np.arange(np.size(order)) % len(w) if in_turn else order:
        h = np.einsum("...j,j->...", start if stale else s, w[i]) + b[i]
        s[..., i] = _new_value(h, s[..., i], tie)
        path.append(s.copy())
    return np.stack(path) if copied else np.broadcast_to(s, (len(path), *s.shape))


def async_update(W, state, order, bias=None, tie="keep", stale=False, in_turn=False):
    """The state after the asynchronous updates of `async_trajectory`."""
    return async_trajectory(W, state, order, bias, tie, stale, in_turn=in_turn)[-1]


def recall(W, state, sweeps, tie="keep", synchronous=False):
    """`sweeps` asynchronous sweeps in the order 0..M−1; `synchronous`: all units at once."""
    if not synchronous:
        return async_update(W, state, np.tile(np.arange(len(W)), sweeps), tie=tie)
    s = np.array(state, dtype=np.float64)
    for _sweep in range(sweeps):
        h = np.einsum("...j,ij->...i", s, as64(W))
        s = np.where(h == 0, s, np.sign(h))
    return s


def _first_rise(W, path, bias=None):
    """Where the energy first rises along `path` (K + 1, ...) of states: (step t, batch row
    (flattened), E before, E after) of the first E(path[t + 1]) > E(path[t]) beyond rounding
    (1e-9 of the largest |E| on the path), or None where it never rises."""
    energies = np.reshape(energy_of(W, path, bias), (len(path), -1))
    tolerance = 1e-9 * max(1.0, float(np.max(np.abs(energies), initial=0.0)))
    for step in range(len(path) - 1):
        grew = np.argwhere(energies[step + 1] - energies[step] > tolerance)
        if grew.size:
            row = int(grew[0][0])
            return step, row, energies[step, row], energies[step + 1, row]
    return None


def _energy_problem(W, state, output, bias=None, order=None):
    """What is wrong (None: nothing) with what dynamics returned from `state`: the trajectory
    (K + 1, ...) of the updates in `order` when given, else the final state(s). The energy must
    never rise, in any batch row."""
    trajectory = order is not None
    shape = (np.size(order) + 1, *np.shape(state)) if trajectory else np.shape(state)
    if output.shape != shape:
        return _(_CANNOT_CHECK[trajectory, "shape"], shape=output.shape, expected=shape)
    if output.dtype.kind not in "biuf" or not np.all(np.isfinite(output)):
        return _(_CANNOT_CHECK[trajectory, "finite"])
    path = output.astype(np.float64)
    rise = _first_rise(W, path if trajectory else np.stack([state, path]), bias)
    if rise is None:
        return None
    step, row, before, after = rise
    template = _ROSE[trajectory, np.ndim(state) > 1]
    unit = int(order[step]) if trajectory else None
    return _(template, before=before, after=after, row=row, step=step + 1, unit=unit)


# The messages of `_energy_problem`, chosen at run time: (a trajectory?, what is wrong) and
# (a trajectory?, a batch of states?); each a whole sentence, so that a translation reads well.
_CANNOT_CHECK = {
    (True, "shape"): N_(
        "the energy cannot be checked: the trajectory has shape {shape}, expected {expected}"
    ),
    (False, "shape"): N_(
        "the energy cannot be checked: the result has shape {shape}, expected {expected}"
    ),
    (True, "finite"): N_(
        "the energy cannot be checked: the trajectory holds NaN or infinite values"
    ),
    (False, "finite"): N_("the energy cannot be checked: the result holds NaN or infinite values"),
}
_ROSE = {
    (False, False): N_(
        "the energy rose from {before:.6g} to {after:.6g}: asynchronous updates never raise "
        "E = −½ sᵀWs − bᵀs"
    ),
    (False, True): N_(
        "the energy rose from {before:.6g} to {after:.6g} in batch row {row}: asynchronous "
        "updates never raise E = −½ sᵀWs − bᵀs"
    ),
    (True, False): N_(
        "the energy rose from {before:.6g} to {after:.6g} at step {step} (the update of unit "
        "{unit}): an asynchronous update never raises E = −½ sᵀWs − bᵀs"
    ),
    (True, True): N_(
        "the energy rose from {before:.6g} to {after:.6g} at step {step} (the update of unit "
        "{unit}) in batch row {row}: an asynchronous update never raises E = −½ sᵀWs − bᵀs"
    ),
}


def trajectory_energy_problem(W, state, order, output, bias=None):
    """What is wrong (None: nothing) with a trajectory `output` (K + 1, ...) from `state`: E
    must never rise from one state to the next."""
    return _energy_problem(W, state, output, bias, order)


def final_energy_problem(W, state, output, bias=None):
    """What is wrong (None: nothing) with the state(s) `output` that asynchronous updates made
    from `state`: E must not have risen."""
    return _energy_problem(W, state, output, bias)


# ---- random networks, for the grader's cases ------------------------------------------------

# Networks whose fields are exact in float64 whatever the order of the sums: Hebbian weights of
# 1, 2, 4 or 8 patterns (multiples of 1/N, N a power of two) and integer weights. Fields of
# exactly 0 then happen (the tie rule matters) and no rounding can turn a tie into a sign.
# "real" networks have Gaussian weights: no ties, no exact arithmetic needed.
KINDS = ("hebbian", "integer", "real")


def random_signs(rng, shape):
    return rng.choice(np.array([-1.0, 1.0]), size=shape)


def counted(number, word):
    """ "1 pattern", "3 patterns"."""
    return f"{number} {word}" + ("" if number == 1 else "s")


class Setting(NamedTuple):
    """A random network and its state(s): `kind` (KINDS) of `units` units, `batch` states (0:
    one state (M,)), a bias or not, `patterns` stored (Hebbian kind); updated in `sweeps` random
    sweeps, or (`repeats` > 0) in a random order of `repeats` units, repeated and left out."""

    kind: str
    units: int
    batch: int = 0
    bias: bool = False
    patterns: int = 2
    sweeps: int = 1
    repeats: int = 0

    def weights(self, rng):
        units = self.units
        if self.kind == "hebbian":
            return hebbian(random_signs(rng, (self.patterns, units)))
        if self.kind == "integer":
            weights = np.triu(rng.integers(-2, 3, size=(units, units)).astype(np.float64), 1)
            weights = weights + weights.T
        else:
            half = rng.standard_normal((units, units))
            weights = 0.5 * (half + half.T)
        weights[np.diag_indices(units)] = 0.0
        return weights

    @property
    def shape(self):
        return (self.units,) if self.batch == 0 else (self.batch, self.units)

    def states(self, rng):
        return random_signs(rng, self.shape)

    def order(self, rng):
        if self.repeats:
            return rng.integers(0, self.units, size=self.repeats)
        return np.concatenate([rng.permutation(self.units) for _ in range(self.sweeps)])

    def inputs(self, rng, order=None):
        """W, state, the order (if given) and the bias (if any): exact integers or halves but in
        "real" networks, so that ties stay ties."""
        inputs = {"W": self.weights(rng), "state": self.states(rng)}
        if order is not None:
            inputs["order"] = np.asarray(order, dtype=np.int64)
        if self.bias and self.kind == "real":
            inputs["bias"] = 0.5 * rng.standard_normal(self.units)
        elif self.bias:
            inputs["bias"] = rng.integers(-2, 3, size=self.units) / (
                1.0 if self.kind == "integer" else 2.0
            )
        return inputs

    def label(self, order=None):
        """ "M=8, hebbian W (2 patterns), batch of 4, with bias, 8 updates"."""
        stored = f" ({counted(self.patterns, 'pattern')})" if self.kind == "hebbian" else ""
        states = "one state" if self.batch == 0 else f"batch of {self.batch}"
        label = f"M={self.units}, {self.kind} W{stored}, {states}" + ", with bias" * self.bias
        if order is not None:
            label += f", {counted(len(order), 'update')}"
            label += " (units repeated and left out)" * bool(self.repeats)
        return label

    def probes(self, rng):
        """W and probes for recall, and their label: Hebbian, stored patterns (2; 4 from 20
        units) with a fifth of their units flipped; other kinds, random states."""
        if self.kind != "hebbian":
            return self.weights(rng), self.states(rng), self.label()
        count = 2 if self.units < 20 else 4
        stored = random_signs(rng, (count, self.units))
        picks = stored[rng.integers(count, size=max(self.batch, 1))]
        flips = np.where(rng.random(picks.shape) < 0.2, -1.0, 1.0)
        probes = (picks * flips).reshape(self.shape)
        label = f"M={self.units}, {count} stored patterns, probes with a fifth flipped"
        return hebbian(stored), probes, label


# ---- modern Hopfield networks (Ramsauer et al. 2020, eq. 3) ---------------------------------


def retrieve(X, xi, beta=1.0, steps=1, axis=0, beta_outside=False):
    """`steps` updates ξ ← X softmax(β Xᵀ ξ) of the states ξ (d,) or (d, M), the patterns the
    columns of X (d, N), the softmax over the patterns (axis 0). The known mistakes: a softmax
    over the states (axis -1), β multiplying the result instead of the scores."""
    X, xi = as64(X), as64(xi)
    for _step in range(steps):
        xi = X @ softmax((1.0 if beta_outside else beta) * (X.T @ xi), axis)
    return beta * xi if beta_outside else xi


def hopfield_attention(
    queries, patterns, beta=1.0, axis=-1, beta_outside=False, keep=None, return_weights=False
):
    """softmax(β Q Pᵀ) P for queries (B, M, d) and patterns (B, N, d), the softmax over the
    patterns (the last axis) and only over the kept ones (`keep` (B, N); none kept gives zeros);
    the known mistakes as in `retrieve`. With `return_weights`, (result, weights)."""
    scores = (1.0 if beta_outside else beta) * np.einsum("bmd,bnd->bmn", queries, patterns)
    weights = masked_softmax(scores, None if keep is None else as64(keep)[:, None, :] > 0, axis)
    result = attend(weights, patterns)
    result = beta * result if beta_outside else result
    return (result, weights) if return_weights else result


def scaled_dot_product_attention(queries, patterns):
    """softmax(Q Pᵀ / √d) P: the Transformer's attention, keys = values = the patterns (the
    Hopfield update with β = 1/√d)."""
    return hopfield_attention(queries, patterns, beta=1.0 / np.sqrt(np.shape(queries)[-1]))


def retrieval_errors(X, start, result):
    """For each state: the stored pattern closest to its start, and the distance of the result
    from it relative to its norm."""
    start2, result2 = start.reshape(len(start), -1), result.reshape(len(start), -1)
    nearest = np.argmax(X.T @ start2, axis=0)
    targets = X[:, nearest]
    errors = np.linalg.norm(result2 - targets, axis=0) / np.linalg.norm(targets, axis=0)
    return nearest, errors


def retrieval_problem(X, xi, beta, output):
    """What is wrong (None: nothing) with states `output` that updates with a large β made from
    the corrupted patterns ξ: each must land (to 1%) on the stored pattern closest to its start."""
    output = np.asarray(output, dtype=np.float64)
    if output.shape != np.shape(xi):
        return None  # the shape check already says what is wrong
    nearest, errors = retrieval_errors(X, xi, output)
    worst = int(np.argmax(errors))
    if errors[worst] <= 0.01:
        return None
    return _(
        "state {state}, a corrupted copy of stored pattern {pattern}, ended {error:.3g}·‖x‖ "
        "away from it: with β = {beta:g} the softmax weights are almost one-hot on the closest "
        "pattern, so the update should land on it",
        state=worst,
        pattern=int(nearest[worst]),
        error=errors[worst],
        beta=beta,
    )


def corrupted_patterns(rng, d, N, M, beta, steps, flips):
    """Stored ±1/√d patterns X (d, N) and M copies of them with `flips` signs flipped (ξ (d,)
    when M = 1), drawn again (200 tries at most) until `steps` updates bring each back to its
    pattern (to 0.1%)."""
    for _attempt in range(200):
        X = rng.choice([-1.0, 1.0], size=(d, N)) / np.sqrt(d)
        sources = rng.choice(N, size=M, replace=M > N)
        start = X[:, sources].copy()
        for column in range(M):
            start[rng.choice(d, size=flips, replace=False), column] *= -1.0
        nearest, errors = retrieval_errors(X, start, retrieve(X, start, beta, steps))
        if np.array_equal(nearest, sources) and errors.max() < 1e-3:
            break
    return X, start[:, 0] if M == 1 else start
