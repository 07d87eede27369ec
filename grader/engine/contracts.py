"""Contract checks: what a docstring promises besides the value returned.

Two kinds, judged in the grader's process on what a child reported:

- a case that must raise (`Case.raises`, "ValueError"): the documented error for an argument
  the function does not accept. Returning a value, or raising something else, fails it with the
  docstring's promise (`Case.promise`) in the message;
- inputs left unchanged: the child reports every input as the call left it; an input that
  differs from what the grader sent (a function that writes into its argument in place) fails
  the case, whatever it returned. Only a change is reported, so that the checks of a correct
  submission read as before.
"""

from __future__ import annotations

import numpy as np

from grader.engine.results import CheckResult
from grader.i18n import N_, _, tr
from grader.vocabulary.protocol import CaseOutput
from grader.vocabulary.spec import LAYER, Case
from grader.vocabulary.status import CaseStatus


def judge_raises(case: Case, got: CaseOutput, name: str) -> CheckResult:
    """The check of a case that must raise `case.raises`."""
    if got.status == CaseStatus.NOT_IMPLEMENTED:
        message = _("not implemented yet") + (f" ({got.message})" if got.message else "")
        return CheckResult(name, False, message, cause=got.status)
    if got.status == CaseStatus.OK:
        return CheckResult(
            name,
            False,
            _(
                "no {error} was raised, a value was returned: {promise}",
                error=case.raises,
                promise=tr(case.promise),
            ),
        )
    if got.exception == case.raises and got.limit is None:
        return CheckResult(name, True)
    return CheckResult(
        name,
        False,
        _(
            "raised {raised}, not {error}: {promise}",
            raised=got.error_words(),
            error=case.raises,
            promise=tr(case.promise),
        ),
        cause=got.status,
        limit=got.limit,
    )


def expected_statuses(case: Case, got: CaseOutput) -> CaseStatus:
    """The status of a case as the part's status counts it: a case that must raise and did
    raise something counts as one that answered (its check says whether it was the right
    error), so that it never turns the part into an error."""
    if case.raises and got.status == CaseStatus.ERROR:
        return CaseStatus.OK
    return got.status


def changed_inputs(case: Case, got: CaseOutput, name: str) -> list[CheckResult]:
    """A failing check for each input the call changed (none when all are as sent)."""
    checks = []
    for input_name, sent in case.inputs.items():
        sent = np.asarray(sent, dtype=case.dtype) if case.kind == LAYER else np.asarray(sent)
        left = got.after.get(input_name)
        if left is None:
            problem = _("was not reported back after the call")
        else:
            problem = _change(sent, np.asarray(left))
        if problem:
            checks.append(
                CheckResult(
                    name,
                    False,
                    _(
                        "the argument `{name}` was changed by the call ({problem}): the "
                        "caller's array must stay as it was. Return a new one instead of "
                        "writing into it: with keras.ops, ops.slice_update, ops.where or "
                        "ops.concatenate make a new tensor (and keep gradients); with NumPy, "
                        "write into a copy (`{name} = np.array({name})`)",
                        name=input_name,
                        problem=problem,
                    ),
                    N_("argument changed in place"),
                )
            )
    return checks


def precision_lost(case: Case, got: CaseOutput, name: str) -> list[CheckResult]:
    """A failing check when a function given float64 arrays (and none of lower precision)
    returned floats of lower precision: a float32 answer to a float64 question loses half its
    digits. Integer answers (counts, indices) are not floats and pass."""
    floats = [np.asarray(v).dtype for v in case.inputs.values() if np.asarray(v).dtype.kind == "f"]
    if case.kind == LAYER or not floats or any(d != np.float64 for d in floats):
        return []
    received = np.dtype(got.dtype) if got.dtype in _FLOAT_NAMES else None
    if received is None or received.itemsize >= 8:
        return []
    return [
        CheckResult(
            name,
            False,
            _(
                "returned {dtype} for float64 inputs: compute in the dtype of the inputs "
                "(a float32 constant or a cast to float32 loses half the digits)",
                dtype=got.dtype,
            ),
            N_("precision lost"),
        )
    ]


_FLOAT_NAMES = ("float16", "float32", "float64")


def _change(sent: np.ndarray, left: np.ndarray) -> str:
    """How `left` differs from `sent` in plain words, or "" when it does not."""
    if left.shape != sent.shape:
        return _("its shape went from {before} to {after}", before=sent.shape, after=left.shape)
    sent, left = sent.astype(np.float64), left.astype(np.float64)
    same = (left == sent) | (np.isnan(left) & np.isnan(sent))
    if bool(np.all(same)):
        return ""
    where = tuple(int(i) for i in np.unravel_index(int(np.argmax(~same)), same.shape))
    return _(
        "{count} of {size} entries differ; at index {index} it was {before:g}, it is now {after:g}",
        count=int((~same).sum()),
        size=sent.size,
        index=list(where),
        before=sent[where],
        after=left[where],
    )
