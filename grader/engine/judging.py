"""Judging: what a child reported for a part, compared with the expected outputs, becomes a
PartResult (checks, the mistake recognised, the status).

The status of a part is decided on the case statuses the child reported and the run state the
scheduler saw (grader.vocabulary.status), never on the words of a message. A part with nothing to
compare (it could not load, import or finish, or the grader failed) is one failing check that
says why: `part_failure`.
"""

from __future__ import annotations

import traceback
from dataclasses import replace

import numpy as np

from grader.engine import compare, contracts, framework_errors, properties, search, training
from grader.engine.results import PROPERTY, CheckResult, PartResult
from grader.i18n import N_, _, tr
from grader.sandbox import child  # noqa: F401 - registers the words its reports are in
from grader.sandbox.limits import limit_in_log
from grader.vocabulary.labels import shown_label, shown_report
from grader.vocabulary.protocol import (
    CaseOutput,
    MalformedReport,
    Outcome,
    import_failure,
    read_case_outputs,
)
from grader.vocabulary.spec import LAYER, Case
from grader.vocabulary.status import CaseStatus, Limit, RunState, Status
from grader.vocabulary.text import one_line, printable, without_framework_logs

GRADER_FAILED_WORDS = N_(
    "not graded: the grader itself failed here, not your code; it will be graded again"
)


def judge_part_or_fail(part, cases, expected, outcome: Outcome, timeout: float, source=None):
    """`judge_part`, where a failure of the grader's own code (a bug of ours, on whatever the
    child answered) is that part's `grader_failure`: never a zero, never the other parts' loss
    (on Gradescope it once failed the whole submission: r8 red team)."""
    try:
        return judge_part(part, cases, expected, outcome, timeout, source)
    except Exception:  # noqa: BLE001 - a bug of ours must not become a student's zero
        return grader_failure(part, traceback.format_exc(limit=5))


def judge_part(part, cases, expected, outcome: Outcome, timeout: float, source=None) -> PartResult:
    """`source`: the submitted file, read (parsed, never run) to say where an error's code is."""
    if outcome.state == RunState.GRADER_FAILED:
        return grader_failure(part, outcome.problem + _instructor_tail(outcome))
    if outcome.state == RunState.TIMED_OUT and outcome.importing:
        message = _(
            "the file never finished loading: code at its top level (outside every function "
            "and class) ran for {seconds:g} s; a loop or a long call left outside a function? "
            "No part can run until the file loads",
            seconds=timeout,
        )
        return part_failure(part, Status.TIMEOUT, message)
    if outcome.state == RunState.TIMED_OUT:
        message = _(
            "stopped after {seconds:g} s without finishing: an endless loop, or far too much "
            "work for these small inputs",
            seconds=timeout,
        )
        return part_failure(part, Status.TIMEOUT, message)
    try:
        if outcome.state == RunState.CRASHED:
            raise ValueError(shown_report(outcome.problem))
        failure = import_failure(outcome)
        if failure is not None:
            message = _("could not import the file: ") + _reported_words(failure)
            return part_failure(part, Status.ERROR, message, "import", limit=failure.limit)
        received = read_case_outputs(outcome, len(cases))
    except Exception as error:  # noqa: BLE001 - whatever a child reported is its own doing
        if not isinstance(error, ValueError):
            error = ValueError(_("the process reported a malformed result"))
        message = _("crashed: {error}", error=error)
        tail = outcome.log_tail.strip()[-2000:]
        last = one_line(without_framework_logs(tail).strip()[-600:])
        if last:
            message += _("; its last output:") + " " + last
        limit = limit_in_log(printable(tail[-600:])) if tail else None
        failed = part_failure(part, Status.ERROR, message, limit=limit)
        if isinstance(error, MalformedReport):
            failed.report_refused = str(error)
        return failed

    per_case = [
        judge_case(part, case, want, got, source)
        for case, want, got in zip(cases, expected, received, strict=True)
    ]
    if part.training is None:  # a trained model's answers are no function to search slips in
        _unearned_named(part, cases, expected, received, per_case)
        _unearned_ratios(part, cases, expected, received, per_case)
        _searched(part, cases, expected, received, per_case)
    checks = []
    for index, case_checks in enumerate(per_case):
        for check in case_checks:
            check.case = index
            checks.append(check)
    checks += properties.judge_relations(part, cases, received, expected)
    statuses = {
        contracts.expected_statuses(case, got) for case, got in zip(cases, received, strict=True)
    }
    status = _status(checks, statuses)
    return PartResult(part.name, part.points, status, checks)


# The differences a mistake found by search may replace: none but that values differ, or a
# guess that needs less evidence than a search's (a constant factor, all zeros).
_REPLACEABLE = frozenset({None, "constant factor", "all zeros", "NaN"})


def _searched(part, cases, expected, received, per_case) -> None:
    """Where a case's output check says no more than that values differ, a mistake found by
    grader.engine.search that reproduces every failing output says what it is."""
    unexplained = [
        i
        for i, case_checks in enumerate(per_case)
        if case_checks
        and not case_checks[0].passed
        and case_checks[0].cause is None
        and case_checks[0].mistake in _REPLACEABLE
        and received[i].output is not None
    ]
    partly_named = _partly_named(part, cases, received, per_case)
    if not unexplained and not partly_named:
        return
    wanted = [want.output for want in expected]
    given = [got.output for got in received]
    found = search.explain(part, cases, wanted, given)
    outputs = [i for i, checks in enumerate(per_case) if _output_compared(cases[i], checks)]
    failing = [i for i in outputs if not per_case[i][0].passed]
    passing = [i for i in outputs if per_case[i][0].passed]
    where = search.first_example_only(wanted, given, cases, failing)
    if where is None and not _not_finite(wanted, given, failing):
        # A case feature that splits failing from passing cases names where to look; not for
        # values that overflow (NaN, inf where the expected are finite): larger cases hold
        # larger values, so the feature would be a coincidence of the sizes, and the NaN's
        # own words say more.
        where = search.separating(cases, failing, passing)
    for i in unexplained:
        hit = found.get(i)
        check = per_case[i][0]
        if hit is not None and check.mistake == "NaN" and hit.kind == "term dropped":
            continue  # a shift dropped (s − max): the NaN's own words say it, and plainer
        if hit is None:
            if where:
                check.message = _("{where}; {message}", where=where, message=check.message)
            continue
        _tell(check, hit)
    # A searched mistake reproduces every failing case of its target; a named one that
    # reproduces only some was a coincidence of those cases' numbers (another base that is
    # the square of the given one), and the one explanation of all of them replaces it.
    replaced = {
        i: per_case[i][0].mistake
        for i in partly_named
        if i in found and found[i].kind != "term dropped"
    }
    for i in replaced:
        _tell(per_case[i][0], found[i])
    # A case's variant (the same inputs moved, for a property) told as the replaced mistake
    # is told as its case now is.
    for i, case in enumerate(cases):
        base = case.variant_of
        checks = per_case[i]
        if base in replaced and checks and not checks[0].passed:
            if checks[0].mistake == replaced[base]:
                _tell(checks[0], found[base])


def _not_finite(wanted, given, failing) -> bool:
    """Whether some failing output holds NaN or an infinity where the expected one is finite."""
    for i in failing:
        try:
            want = np.asarray(wanted[i], dtype=np.float64)
            got = np.asarray(given[i], dtype=np.float64)
        except (TypeError, ValueError):
            continue
        if want.shape == got.shape and np.any(np.isfinite(want) & ~np.isfinite(got)):
            return True
    return False


def _tell(check, hit) -> None:
    explanation = hit.explanation
    if check.mistake == "NaN":  # the slip reproduces the NaN exactly: say that it makes them
        explanation = _("{explanation}: this is what makes the NaN values", explanation=explanation)
    check.mistake = search.describe(hit)
    check.message = (
        _("{message} ({detail})", message=explanation, detail=check.detail)
        if check.detail and not check.hidden
        else explanation
    )


def _partly_named(part, cases, received, per_case) -> list[int]:
    """The failing cases told as a record's named mistake whose target has another failing
    case where that mistake's output is not the student's."""
    mistakes = {mistake.name: mistake for mistake in part.mistakes}
    failing: dict[str, list[int]] = {}
    for i, checks in enumerate(per_case):
        if _output_compared(cases[i], checks) and not checks[0].passed:
            if received[i].output is not None:
                failing.setdefault(cases[i].target, []).append(i)
    partial = []
    for indices in failing.values():
        for name in {per_case[i][0].mistake for i in indices} & set(mistakes):
            shown = [i for i in indices if per_case[i][0].mistake == name]
            if any(
                _not_reproduced(mistakes[name], cases[i], received[i].output)
                for i in indices
                if i not in shown
            ):
                partial += shown
    return partial


def _not_reproduced(mistake, case, got) -> bool:
    """Whether the mistake computes this case and its output is not the student's (a mistake
    of another target, or one that cannot compute the case, says nothing either way). Where
    the record names it only on some cases (`when`: elsewhere it gives the expected output),
    it is still computed: a student it explains passes those."""
    if mistake.targets and case.target not in mistake.targets:
        return False
    try:
        candidate = mistake.compute(case)
    except Exception:  # noqa: BLE001 - a mistake that cannot compute this case says nothing
        return False
    return candidate is not None and not compare.same_output(candidate, got, case)


def _unearned_named(part, cases, expected, received, per_case) -> None:
    """Withdraw a record's named mistake that the part's other failing cases contradict. A
    mistake is named on a case where its output is the student's; on another failing case of
    the same target where the mistake shows (its output differs from the expected one) and the
    student's output is not its output, the student's computation is not that mistake, and its
    words on the first case were a coincidence of that case's numbers (2 is the truncated
    ratio and the linear count's ratio at once; softmax(-u²/h²) and softmax(-u²/2h) agree at
    h = 2). A withdrawn mistake leaves the plain difference (and any other diagnosis, a
    search's) in its place. A passing case contradicts nothing: a record's mistake may stand
    for a slip in one branch of the computation (one setting), which cases of another setting
    pass."""
    mistakes = {mistake.name: mistake for mistake in part.mistakes}
    compared = [
        i
        for i, checks in enumerate(per_case)
        if _output_compared(cases[i], checks)
        and received[i].output is not None
        and expected[i].output is not None
    ]
    named = {per_case[i][0].mistake for i in compared} & set(mistakes)
    for name in named:
        mistake = mistakes[name]
        shown = [i for i in compared if per_case[i][0].mistake == name]
        targets = {cases[i].target for i in shown}
        contradicted = sum(
            _contradicts(mistake, cases[i], expected[i].output, received[i].output)
            for i in compared
            if i not in shown and not per_case[i][0].passed and cases[i].target in targets
        )
        # Withdrawn when it is contradicted on as many failing cases as it explains: a mistake
        # the student made shows on most cases, and may miss an extreme one where the student's
        # code differs from it in another, harmless way (an underflow, an order with repeats);
        # a coincidence of one case's numbers is contradicted by the rest.
        if contradicted < len(shown):
            continue
        others = tuple(m for m in part.mistakes if m.name != name)
        for i in shown:
            problem = compare.difference(
                expected[i].output, received[i].output, cases[i], others, part.recompute
            )
            check = per_case[i][0]
            replaced = _check(check.name, problem, cases[i].hidden)
            replaced.hidden = cases[i].hidden
            per_case[i][0] = replaced


def _contradicts(mistake, case, want, got) -> bool:
    """Whether the case shows `mistake` (its output differs from the expected one there) and
    the student's output is not its output."""
    try:
        candidate = mistake.output(case)
    except Exception:  # noqa: BLE001 - a mistake that cannot compute this case says nothing
        return False
    if candidate is None:
        return False
    try:
        candidate = np.asarray(candidate, dtype=np.float64)
        want = np.asarray(want, dtype=np.float64)
        got = np.asarray(got, dtype=np.float64)
    except (TypeError, ValueError):
        return False
    if candidate.shape != want.shape or compare.matches(want, candidate, case):
        return False
    return got.shape != candidate.shape or not compare.matches(candidate, got, case)


def _output_compared(case, checks) -> bool:
    """Whether the case's first check compared an output (not a contract, not an error)."""
    return bool(checks) and not case.raises and case.variant_of < 0 and checks[0].cause is None


def _unearned_ratios(part, cases, expected, received, judged) -> None:
    """Withdraw a ratio ("every value is 1.33 times the expected one", a scale by another size)
    that the part's failing cases do not share. With several failing checks of one kind (the
    output, or the gradient with respect to one input) of one target, a ratio is earned only
    when at least two of them show it and every one that could (grader.engine.diagnosis.
    ratio_evidence) shows the same; a ratio on one case alone is a coincidence of its numbers.
    A withdrawn ratio leaves the plain difference (and any other diagnosis) in its place."""
    groups: dict[tuple, list] = {}
    for case, want, got, found in zip(cases, expected, received, judged, strict=True):
        if case.raises or got.status != CaseStatus.OK or got.output is None:
            continue
        for index, check in enumerate(found):
            if check.passed:
                continue
            wanted, given, wrt = _compared(check, want, got, case)
            if wanted is None:
                continue
            groups.setdefault((case.target, wrt), []).append(
                (case, wanted, given, found, index, check)
            )
    for (_target, wrt), failing in groups.items():
        if len(failing) < 2:
            continue
        shown = [
            (_ratio_key(check, wanted, given), check)
            for _case, wanted, given, _found, _index, check in failing
            if compare.diagnosis.ratio_evidence(wanted)
        ]
        keys = {key for key, _check in shown}
        if len(shown) >= 2 and len(keys) == 1 and None not in keys:
            continue
        for case, wanted, given, found, index, check in failing:
            if check.mistake not in compare.RATIOS:
                continue
            if wrt is None:
                problem = compare.difference(
                    wanted, given, case, part.mistakes, part.recompute, ratio=False
                )
            else:
                problem = compare.gradient_difference(
                    wanted, given, case, wrt.split(":", 1)[-1], ratio=False
                )
            replaced = _check(check.name, problem, case.hidden)
            replaced.hidden = case.hidden
            found[index] = replaced


def _compared(check: CheckResult, want, got, case):
    """(expected, received, None) for a case's output check, (expected, received, wrt) for one
    of its gradient checks, or (None, None, None)."""
    label = shown_label(case.label)
    prefix = check.name[: -len(label)] if check.name.endswith(label) else ""
    if prefix.endswith(_("output, {label}", label="")):
        return want.output, got.output, None
    for name, grad in want.grads.items():
        wrt = name.split(":", 1)[-1]
        if check.name.endswith(_("gradient wrt {wrt}, {label}", wrt=wrt, label=label)):
            found = got.grads.get(name)
            return (grad, found, name) if found is not None else (None, None, None)
    return None, None, None


def _ratio_key(check: CheckResult, expected, received):
    """What a ratio diagnosis says, for comparing it across cases: its name, and for a constant
    factor the factor (to three digits); None when the check names no ratio."""
    if check.mistake not in compare.RATIOS:
        return None
    if check.mistake != "constant factor":
        return check.mistake
    factor = compare.fitted_factor(expected, received)
    return (check.mistake, None if factor is None else float(f"{factor:.3g}"))


def _status(checks: list[CheckResult], statuses: set[CaseStatus]) -> Status:
    """Passed when every check passed; not implemented when the cases that ran were all right
    and the others not implemented; an error when a case raised; else failed."""
    if all(check.passed for check in checks):
        return Status.PASSED
    if CaseStatus.NOT_IMPLEMENTED in statuses and (
        statuses == {CaseStatus.NOT_IMPLEMENTED}
        or (
            CaseStatus.ERROR not in statuses
            and all(c.passed for c in checks if c.cause != CaseStatus.NOT_IMPLEMENTED)
        )
    ):
        return Status.NOT_IMPLEMENTED
    if CaseStatus.ERROR in statuses:
        return Status.ERROR
    return Status.FAILED


def part_failure(
    part,
    status: Status,
    message: str,
    check: str | None = None,
    *,
    limit: Limit | None = None,
    grader_error: str = "",
) -> PartResult:
    """A part with nothing to compare: one failing check (named `check`, or after the part)
    that says why."""
    return PartResult(
        part.name,
        part.points,
        status,
        [CheckResult(check or part.name, False, message, limit=limit)],
        summary=message,
        grader_error=grader_error,
    )


def cannot_load(part, problem: str) -> PartResult:
    """A part of a file that cannot be graded at all (missing, not parsable, unsafe)."""
    return part_failure(part, Status.ERROR, problem, "load")


def grader_failure(part, detail: str) -> PartResult:
    """A part the grader could not grade: no score, the student told so, the detail kept for
    the instructor."""
    return part_failure(
        part, Status.ERROR, tr(GRADER_FAILED_WORDS), grader_error=detail or "unknown"
    )


def _instructor_tail(outcome: Outcome) -> str:
    tail = outcome.log_tail.strip()
    return f"; its log ends:\n{tail[-1500:]}" if tail else ""


def judge_case(part, case: Case, want: CaseOutput, got: CaseOutput, source=None) -> list:
    """The checks of one case: the output, and for a layer its dtype and gradients, and the
    part's properties; or one failing check when the case gave no answer."""
    checks = _judge_case(part, case, want, got, source)
    for check in checks:
        check.hidden = case.hidden
    return checks


def _judge_case(part, case: Case, want: CaseOutput, got: CaseOutput, source=None) -> list:
    prefix = f"{case.target}: " if len(part.targets) > 1 else ""
    # The label in the language in use; the case keeps its English one.
    label = shown_label(case.label)
    if case.raises:
        return [contracts.judge_raises(case, got, f"{prefix}raises {case.raises}, {label}")]
    if got.status == CaseStatus.NOT_IMPLEMENTED:
        message = _("not implemented yet") + (f" ({got.message})" if got.message else "")
        return [CheckResult(f"{prefix}{label}", False, message, cause=got.status)]
    if got.status != CaseStatus.OK:
        raw = _reported_words(got)
        explained = framework_errors.explain(
            got.exception, got.message, got.where, case, source, got.frames
        )
        return [
            CheckResult(
                f"{prefix}{label}",
                False,
                explained or raw,
                cause=got.status,
                limit=got.limit,
                raw=raw if explained else "",
            )
        ]
    if got.output is None:
        return [
            CheckResult(
                prefix + _("output, {label}", label=label), False, _("no output was reported")
            )
        ]
    if part.training is not None:
        return training.checks(part, case, want, got, prefix, label)
    hidden = case.hidden
    output_problem = compare.difference(
        want.output, got.output, case, part.mistakes, part.recompute
    )
    output_right = output_problem is None
    checks = [_check(prefix + _("output, {label}", label=label), output_problem, hidden)]
    unchanged = prefix + _("arguments unchanged, {label}", label=label)
    checks += contracts.changed_inputs(case, got, unchanged)
    # With an output of the wrong shape (an empty one, say) its dtype says nothing worth
    # reading first, and no gradient could be taken: the output check says what is wrong.
    shaped = np.shape(got.output) == np.shape(want.output)
    if shaped:
        checks += contracts.precision_lost(case, got, prefix + _("dtype, {label}", label=label))
    if case.kind == LAYER:
        dtype_problem = compare.dtype_difference(case, got.dtype)
        checks.append(_check(prefix + _("dtype, {label}", label=label), dtype_problem, hidden))
        for name, grad in want.grads.items() if shaped else ():
            wrt = name.split(":", 1)[-1]
            found = got.grads.get(name)
            if found is None:
                problem = compare.Difference(
                    _("no gradient with respect to {wrt} came back", wrt=wrt)
                )
            else:
                problem = compare.gradient_difference(
                    grad,
                    found,
                    case,
                    wrt,
                    output_right,
                    flat=lambda wrt=wrt: search.forward_is_flat(part, case, wrt, want.output),
                )
            name = prefix + _("gradient wrt {wrt}, {label}", wrt=wrt, label=label)
            checks.append(_check(name, problem, hidden))
    # A property is judged on a sound output only: of the expected shape, real numbers, finite
    # where the reference's is. Otherwise the output check above says what is wrong, and a
    # property that broke only because of it would be read first and mislead.
    sound = compare.judgeable(want.output, got.output)
    for prop in part.properties:
        if not sound:
            break
        if prop.gradients and (case.kind != LAYER or not got.grads):
            continue  # no gradients: the gradient checks above say why
        if not prop.targets or case.target in prop.targets:
            given = dict(got.grads) if prop.gradients else np.asarray(got.output)
            broken = prop.check(case, given)
            checks.append(
                CheckResult(
                    f"{prefix}{tr(prop.name)}, {label}",
                    broken is None,
                    broken or "",
                    PROPERTY + prop.name if broken else None,
                )
            )
    return checks


def _reported_words(got: CaseOutput) -> str:
    """A failure's words as the student reads them, its message (made in the child, which does
    not know the student's language) translated where it is one of the sandbox's."""
    translated = shown_report(got.message)
    if translated == got.message:
        return got.error_words()
    return replace(got, message=translated).error_words()


def _check(name: str, problem: compare.Difference | None, hidden: bool = False) -> CheckResult:
    if problem is None:
        return CheckResult(name, True)
    detail = problem.detail if not hidden else ""
    return CheckResult(name, False, problem.text(reveal=not hidden), problem.mistake, detail=detail)
