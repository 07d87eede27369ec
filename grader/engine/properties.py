"""Properties between two runs of a submission: what attention must do, checked on outputs.

A record declares them as `Relation`s of a part (grader.vocabulary.spec): each makes, in the
grader's process, a variant of a case; the child runs the variant like any other case; the grader
then checks that the two outputs are related as the chapter says they must be, and explains in
its words when they are not:

- `masked_keys_changed`: changing what a mask hides changes no output ("your mask leaks");
- `keys_permuted`: attention pooling is a weighted SUM over the keys: shuffling the keys (with
  their values) changes nothing;
- `queries_permuted`: self-attention without positions is permutation-equivariant: permuting
  its inputs permutes its outputs;
- `batch_alone`: each example graded alone gives what it gave in the batch (nothing may be
  summed or normalised across the batch axis);
- `positions_shifted`: a rotary embedding's scores ⟨rot(q, m), rot(k, n)⟩ depend on the offset
  m − n only: every position shifted by one constant leaves the score of every two tokens as
  it was.

And one property of a single run, on a layer's gradients (a `Property` with `gradients=True`):

- `gradients_sane`: every gradient finite, and zero with respect to what a mask hides.

Every tolerance is the one outputs are compared with (grader.engine.compare.matches), or, for
an "exactly zero" or "sums to one", the rounding of the case's dtype at the magnitude of the
values involved (grader.vocabulary.rounding): a correct solution written another way
never loses a point to rounding.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from grader.engine.compare import judgeable, matches
from grader.engine.results import PROPERTY, CheckResult
from grader.i18n import N_, _, tr
from grader.vocabulary.labels import label_text, shown_label
from grader.vocabulary.protocol import CaseOutput
from grader.vocabulary.rounding import rounding
from grader.vocabulary.spec import Case, Property, Relation
from grader.vocabulary.status import CaseStatus


def add_variants(part, cases: list[Case], rng) -> None:
    """Append to `cases` the variant each relation of `part` makes of each of them."""
    count = len(cases)
    for relation in part.relations:
        for index in range(count):
            case = cases[index]
            if case.raises or (relation.targets and case.target not in relation.targets):
                continue
            variant = relation.vary(case, rng)
            if variant is not None:
                variant.variant_of, variant.relation = index, relation.name
                variant.label = f"{case.label}, {relation.name}"
                cases.append(variant)


def judge_relations(
    part, cases: list[Case], received: list[CaseOutput], expected: list[CaseOutput]
) -> list[CheckResult]:
    """A check per variant whose case and itself both answered soundly (real numbers of the
    expected shape, finite where the reference's are: grader.engine.compare.judgeable):
    whether the relation holds. A relation is silent on an unsound output, whose own check
    (its shape, its NaN) says what to fix first."""
    relations = {relation.name: relation for relation in part.relations}
    checks = []
    for variant, got, want in zip(cases, received, expected, strict=True):
        relation = relations.get(variant.relation)
        if relation is None or not 0 <= variant.variant_of < len(cases):
            continue
        base, base_got = cases[variant.variant_of], received[variant.variant_of]
        if CaseStatus.OK not in (got.status,) or base_got.status != CaseStatus.OK:
            continue  # the case's own check says why it gave no answer
        if not (
            judgeable(expected[variant.variant_of].output, base_got.output)
            and judgeable(want.output, got.output)
        ):
            continue
        broken = relation.check(base, np.asarray(base_got.output), variant, np.asarray(got.output))
        prefix = f"{base.target}: " if len(part.targets) > 1 else ""
        shown = _("{name}, {label}", name=tr(relation.name), label=shown_label(base.label))
        check = CheckResult(
            prefix + shown,
            broken is None,
            broken or "",
            PROPERTY + relation.name if broken else None,
        )
        check.hidden = base.hidden
        checks.append(check)
    return checks


def _copy(case: Case, **inputs) -> Case:
    return replace(
        case,
        inputs={**case.inputs, **inputs},
        weights=dict(case.weights),
        params=dict(case.params),
        variant_of=-1,
        relation="",
    )


def _same_shape(output, other) -> bool:
    return np.shape(output) == np.shape(other)


def batch_alone(names: tuple[str, ...] = ()):
    """Example 0 of a batch of two or more, alone: `names` (default: every input) sliced to
    their first entry along axis 0, and the upstream gradient with them."""

    def vary(case, rng):
        sliced = names or tuple(case.inputs)
        batch = np.shape(case.inputs[sliced[0]])[0] if np.ndim(case.inputs[sliced[0]]) else 0
        if batch < 2 or any(np.shape(case.inputs[n])[:1] != (batch,) for n in sliced):
            return None
        variant = _copy(case, **{name: case.inputs[name][:1].copy() for name in sliced})
        if case.upstream is not None:
            variant.upstream = case.upstream[:1].copy()
        return variant

    def check(case, output, variant, alone):
        if np.ndim(output) == 0 or np.shape(alone)[1:] != np.shape(output)[1:] or len(alone) != 1:
            return None  # the output check reports a wrong shape
        if matches(output[:1].astype(float), alone.astype(float), case):
            return None
        batch = np.shape(case.inputs[names[0] if names else next(iter(case.inputs))])[0]
        return _(
            "example 0 alone gives another output than it did in a batch of {batch}: the "
            "examples of a batch must not see each other; something sums, averages or takes "
            "a softmax across the batch axis (axis 0)",
            batch=batch,
        )

    return Relation(label_text(N_("examples independent of the batch")), vary, check)


def _permutation(size: int, rng) -> np.ndarray:
    order = rng.permutation(size)
    return order if size < 2 or (order != np.arange(size)).any() else np.roll(order, 1)


def keys_permuted(names: tuple[str, ...], axis: int = 1):
    """The keys shuffled: the inputs `names` (keys, values and whatever goes with each key)
    permuted alike along `axis`; the output must not change."""

    def vary(case, rng):
        size = np.shape(case.inputs[names[0]])[axis]
        if size < 2:
            return None
        order = _permutation(size, rng)
        return _copy(case, **{n: np.take(case.inputs[n], order, axis=axis) for n in names})

    def check(case, output, variant, shuffled):
        if not _same_shape(output, shuffled) or matches(output, shuffled, case):
            return None
        return _(
            "shuffling the keys together with their values changed the output: attention "
            "pooling is a weighted sum over the keys, whose order must not matter; a key "
            "is being matched with another key's value, or the weights are taken over the "
            "wrong axis"
        )

    return Relation(label_text(N_("keys in any order")), vary, check)


def queries_permuted(names: tuple[str, ...], axis: int = 1, out_axis: int = 1, when=None):
    """Self-attention without positions: the inputs `names` permuted along `axis`; the output
    must be the original output permuted alike (along `out_axis`). `when(case)` limits it
    (not where a causal mask makes the order matter)."""

    def vary(case, rng):
        size = np.shape(case.inputs[names[0]])[axis]
        if size < 2 or (when is not None and not when(case)):
            return None
        order = _permutation(size, rng)
        variant = _copy(case, **{n: np.take(case.inputs[n], order, axis=axis) for n in names})
        if case.upstream is not None:
            variant.upstream = np.take(case.upstream, order, axis=out_axis)
        return variant

    def check(case, output, variant, permuted):
        if not _same_shape(output, permuted):
            return None
        order = _order_of(case.inputs[names[0]], variant.inputs[names[0]], axis)
        if order is None:
            return None  # not a permutation of this case: nothing to compare
        expected = np.take(output, order, axis=out_axis)
        if matches(expected, permuted, case):
            return None
        return _(
            "permuting the positions of the inputs did not permute the outputs alike: "
            "self-attention without positional encodings is permutation-equivariant, so "
            "something in your code depends on where a position is (a mask, a cumulative sum, "
            "a position term)"
        )

    return Relation(label_text(N_("permutation-equivariant")), vary, check)


def _order_of(original, permuted, axis) -> list[int] | None:
    """The permutation that made `permuted` from `original` along `axis` (its entries are
    random reals, so each slice is found by its values), or None if it is not one."""
    first = np.moveaxis(np.asarray(original), axis, 0)
    second = np.moveaxis(np.asarray(permuted), axis, 0)
    found = [np.flatnonzero([np.array_equal(row, s) for s in first]) for row in second]
    return [int(f[0]) for f in found] if all(len(f) for f in found) else None


def masked_keys_changed(names: tuple[str, ...], masked, axis: int = 1):
    """What a mask hides, changed: the inputs `names` at the key positions `masked(case)`
    (a bool array of shape (B, Tk): key j of example b is masked for EVERY query) replaced by
    other values; no output may change."""

    def vary(case, rng):
        hidden = np.asarray(masked(case), bool)
        if not hidden.any():
            return None
        changed = {}
        for name in names:
            array = np.array(case.inputs[name], dtype=np.float64)
            moved = np.moveaxis(array, axis, 1)
            noise = 3.0 + 5.0 * rng.standard_normal(moved.shape)
            moved[hidden] = noise[hidden]
            changed[name] = np.moveaxis(moved, 1, axis)
        return _copy(case, **changed)

    def check(case, output, variant, other):
        if not _same_shape(output, other) or matches(output, other, case):
            return None
        hidden = np.asarray(masked(case), bool)
        diff = np.abs(np.asarray(output, float) - np.asarray(other, float))
        where = np.unravel_index(int(np.argmax(diff)), diff.shape)
        example = int(where[0])
        key = int(np.flatnonzero(hidden[example])[0]) if hidden[example].any() else None
        query = _("query {index}", index=int(where[1])) if len(where) > 2 else _("the output")
        return _(
            "output at {query} of example {example} changed when masked key {key} changed: "
            "your mask leaks (a masked key must get exactly zero weight, so its score and value "
            "can change nothing)",
            query=query,
            example=example,
            key=key,
        )

    return Relation(label_text(N_("masked keys change nothing")), vary, check)


def future_changed(name: str, axis: int = 1, out_axis: int = 1):
    """Under a causal mask: the input `name` at the last position changed; the outputs at
    every earlier position (which must not see it) must not change."""

    def vary(case, rng):
        array = np.array(case.inputs[name], dtype=np.float64)
        if array.shape[axis] < 2:
            return None
        moved = np.moveaxis(array, axis, 0)
        moved[-1] = 3.0 + 5.0 * rng.standard_normal(moved[-1].shape)
        return _copy(case, **{name: np.moveaxis(moved, 0, axis)})

    def check(case, output, variant, other):
        if not _same_shape(output, other):
            return None
        last = np.shape(output)[out_axis] - 1
        before = np.take(output, range(last), axis=out_axis)
        after = np.take(other, range(last), axis=out_axis)
        if matches(before, after, case):
            return None
        diff = np.abs(np.moveaxis(before - after, out_axis, 0).reshape(last, -1)).max(axis=1)
        query = int(np.argmax(diff))
        return _(
            "output at query {query} changed when the future key {last} changed: your mask "
            "leaks (under a causal mask, position i sees positions j <= i only)",
            query=query,
            last=last,
        )

    return Relation(label_text(N_("the future changes nothing")), vary, check)


def positions_shifted(name: str = "positions", token_axis: int = 1):
    """A rotary embedding: every position (the input or param `name`, a case's integers)
    shifted by one drawn constant; the scores ⟨out[t], out[s]⟩ of every two tokens (along
    `token_axis`, features the last axis; per example and head) must not change, since the
    score of two rotated vectors depends only on the offset of their positions."""

    def positions_of(case):
        return np.asarray(case.inputs[name] if name in case.inputs else case.params[name])

    def vary(case, rng):
        shift = int(rng.integers(3, 40))
        shifted = positions_of(case) + shift
        if name in case.inputs:
            return _copy(case, **{name: shifted.astype(np.asarray(case.inputs[name]).dtype)})
        variant = _copy(case)
        variant.params[name] = shifted.tolist()
        return variant

    def scores(output):
        tokens = np.moveaxis(np.asarray(output, dtype=np.float64), token_axis, -2)
        return tokens @ np.swapaxes(tokens, -1, -2)

    def check(case, output, variant, shifted):
        if not _same_shape(output, shifted) or np.ndim(output) < 2:
            return None
        if matches(scores(output), scores(shifted), case):
            return None
        offset = positions_of(variant).ravel()[0] - positions_of(case).ravel()[0]
        return _(
            "adding {shift} to every position changed the scores between the rotated tokens: "
            "a rotary embedding turns each pair of features by an angle proportional to its "
            "position, so the score ⟨rot(q, m), rot(k, n)⟩ of two positions depends only on "
            "their offset m − n; something in your code is not a rotation (cos and sin paired "
            "with the wrong features or signs) or depends on the position another way",
            shift=int(offset),
        )

    return Relation(label_text(N_("scores depend only on the offset")), vary, check)


def gradients_sane(masked=None, key_axes: dict[str, int] | None = None) -> Property:
    """A layer's gradients: finite everywhere (also for fully masked rows), and, where
    `masked(case)` (a bool array of shape (B, Tk): key j of example b masked for every query)
    hides keys, exactly zero with respect to each input of `key_axes` (its name: its key axis)
    at those keys: a masked key gets weight exactly zero, so nothing flows back to it."""

    def check(case, grads):
        try:
            grads = {key: np.asarray(grad, dtype=np.float64) for key, grad in grads.items()}
        except (TypeError, ValueError):
            return None  # not numbers: the gradient checks say so
        for key, grad in grads.items():
            bad = int((~np.isfinite(grad)).sum())
            if bad:
                wrt = key.split(":", 1)[-1]
                return _(
                    "the gradient with respect to {wrt} has {bad} entries "
                    "that are nan or inf: a softmax of a row filled with -inf, or a division by "
                    "a sum of zero weights, gives nan in the backward pass even where the "
                    "forward pass was repaired; fill masked scores with a large negative number",
                    wrt=wrt,
                    bad=bad,
                )
        hidden = None if masked is None else np.asarray(masked(case), bool)
        if hidden is None or not hidden.any():
            return None
        for name, axis in (key_axes or {}).items():
            grad = grads.get(f"input:{name}")
            if grad is None or np.shape(grad) != np.shape(case.inputs[name]):
                continue  # the gradient checks say what is missing or misshapen
            moved = np.moveaxis(grad, axis, 1)
            leaked = moved[hidden].reshape(int(hidden.sum()), -1)
            # Zero up to rounding at the gradient's own magnitude: a softmax that subtracts a
            # maximum taken over the masked keys too leaves 8e-17 there, and is right.
            nonzero = np.abs(leaked) > rounding(case.dtype, grad)
            if np.any(nonzero):
                row = int(np.flatnonzero(np.any(nonzero, axis=1))[0])
                example, key = (int(i) for i in np.argwhere(hidden)[row])
                size = float(np.abs(leaked[row]).max())
                return _(
                    "the gradient with respect to {name} at masked key {key} of example "
                    "{example} is {size}, not 0: a masked key must get exactly zero "
                    "weight, so no gradient may reach it (mask the scores before the softmax, "
                    "with a fill that makes its weight exactly 0)",
                    name=name,
                    key=key,
                    example=example,
                    size=f"{size:.3g}",
                )
        return None

    return Property(N_("gradients finite, zero at masked keys"), check, gradients=True)
