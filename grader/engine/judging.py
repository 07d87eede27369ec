"""Judging: what a child reported for a part, compared with the expected outputs, becomes a
PartResult (checks, the mistake recognised, the status)."""

from __future__ import annotations

import numpy as np

from grader.engine import compare
from grader.engine.protocol import CASE_NOT_IMPLEMENTED, OK, CaseOutput, read_case_outputs
from grader.engine.results import (
    ERROR,
    FAILED,
    NOT_IMPLEMENTED,
    PASSED,
    TIMEOUT,
    CheckResult,
    PartResult,
)
from grader.engine.spec import LAYER, Case
from grader.engine.text import printable
from grader.sandbox.processes import CRASHED, GRADER_FAILED, TIMED_OUT, Outcome

GRADER_FAILED_WORDS = (
    "not graded: the grader itself failed here, not your code; it will be graded again"
)


def judge_part(part, cases, expected, outcome: Outcome, timeout: float) -> PartResult:
    if outcome.state == GRADER_FAILED:
        return grader_failure(part, outcome.problem + _instructor_tail(outcome))
    if outcome.state == TIMED_OUT:
        message = (
            f"stopped after {timeout:g} s without finishing: an endless loop, or far too "
            "much work for these small inputs"
        )
        return PartResult(
            part.name,
            part.points,
            TIMEOUT,
            [CheckResult(part.name, False, message)],
            summary=message,
        )
    try:
        if outcome.state == CRASHED:
            raise ValueError(outcome.problem)
        if outcome.meta.get("import_error"):
            info = outcome.meta["import_error"]
            message = _error_words(
                CaseOutput(
                    "error",
                    **{k: printable(info.get(k, "")) for k in ("exception", "message", "where")},
                )
            )
            message = "could not import the file: " + message
            return PartResult(
                part.name,
                part.points,
                ERROR,
                [CheckResult("import", False, message)],
                summary=message,
            )
        received = read_case_outputs(outcome, len(cases))
    except Exception as error:  # noqa: BLE001 - whatever a child reported is its own doing
        if not isinstance(error, ValueError):
            error = ValueError("the process reported a malformed result")
        message = f"crashed: {error}"
        if outcome.log_tail.strip():
            message += "; its last output:\n" + printable(outcome.log_tail.strip()[-600:])
        return PartResult(
            part.name, part.points, ERROR, [CheckResult(part.name, False, message)], summary=message
        )

    checks = []
    for case, want, got in zip(cases, expected, received, strict=True):
        checks.extend(judge_case(part, case, want, got))
    statuses = {got.status for got in received}
    if all(check.passed for check in checks):
        status = PASSED
    elif statuses == {CASE_NOT_IMPLEMENTED} or (
        CASE_NOT_IMPLEMENTED in statuses
        and "error" not in statuses
        and all(c.passed for c in checks if not c.message.startswith("not implemented"))
    ):
        status = NOT_IMPLEMENTED
    elif "error" in statuses:
        status = ERROR
    else:
        status = FAILED
    return PartResult(part.name, part.points, status, checks)


def grader_failure(part, detail: str) -> PartResult:
    """A part the grader could not grade: no score, the student told so, the detail kept for
    the instructor."""
    return PartResult(
        part.name,
        part.points,
        ERROR,
        [CheckResult(part.name, False, GRADER_FAILED_WORDS)],
        summary=GRADER_FAILED_WORDS,
        grader_error=detail or "unknown",
    )


def _instructor_tail(outcome: Outcome) -> str:
    tail = outcome.log_tail.strip()
    return f"; its log ends:\n{tail[-1500:]}" if tail else ""


def judge_case(part, case: Case, want: CaseOutput, got: CaseOutput) -> list[CheckResult]:
    prefix = f"{case.target}: " if len(part.targets) > 1 else ""
    if got.status == CASE_NOT_IMPLEMENTED:
        message = "not implemented yet" + (f" ({got.message})" if got.message else "")
        return [CheckResult(f"{prefix}{case.label}", False, message)]
    if got.status != OK:
        return [CheckResult(f"{prefix}{case.label}", False, _error_words(got))]
    if got.output is None:
        return [CheckResult(f"{prefix}output, {case.label}", False, "no output was reported")]
    hidden = case.hidden
    checks = [
        _check(
            f"{prefix}output, {case.label}",
            compare.difference(want.output, got.output, case, part.mistakes),
            hidden,
        )
    ]
    if case.kind == LAYER:
        dtype_problem = compare.dtype_difference(case, got.dtype)
        checks.append(_check(f"{prefix}dtype, {case.label}", dtype_problem, hidden))
        for name, grad in want.grads.items():
            wrt = name.split(":", 1)[-1]
            found = got.grads.get(name)
            if found is None:
                problem = compare.Difference(f"no gradient with respect to {wrt} came back")
            else:
                problem = compare.gradient_difference(grad, found, case, wrt)
            checks.append(_check(f"{prefix}gradient wrt {wrt}, {case.label}", problem, hidden))
    for prop in part.properties:
        if not prop.targets or case.target in prop.targets:
            broken = prop.check(case, np.asarray(got.output))
            checks.append(
                CheckResult(
                    f"{prefix}{prop.name}, {case.label}",
                    broken is None,
                    broken or "",
                    "property: " + prop.name if broken else None,
                )
            )
    return checks


def _check(name: str, problem: compare.Difference | None, hidden: bool = False) -> CheckResult:
    if problem is None:
        return CheckResult(name, True)
    return CheckResult(name, False, problem.text(reveal=not hidden), problem.mistake)


def _error_words(output: CaseOutput) -> str:
    words = f"{output.exception}: {output.message}" if output.exception else output.message
    return words + (f" [{output.where}]" if output.where else "")
