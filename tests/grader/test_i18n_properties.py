"""The verdicts of the records' properties reach a Chinese-speaking student in Chinese (issue 18).

Every Property of every part is checked, in the grader's own process (no sandbox, no solution
run), on the part's public cases with deliberately wrong outputs: each made from an output of
the right shape (the part's recomputed reference where it has one, its known mistakes' outputs,
a layer's upstream gradient, which has the output's shape) by negating it, adding one, zeroing
it, putting a NaN in it, reversing an axis, ... Every verdict collected under `speaking("zh")`
must hold no English sentence (`english_sentences` of test_chinese_output). The contract cases'
promises are checked the same way, and two verdicts keep their exact English text.
"""

from __future__ import annotations

import numpy as np
import pytest

from grader.engine.cases import make_cases
from grader.engine.judging import judge_case
from grader.i18n import speaking, tr
from grader.records import EXERCISES, get_exercise
from grader.reference import heads, seq2seq
from grader.vocabulary.protocol import CaseOutput
from grader.vocabulary.spec import FUNCTION, Case, call_with_case
from grader.vocabulary.status import CaseStatus
from tests.grader.test_chinese_output import english_sentences

# (record, property) that none of the wrong outputs below makes fail: none today; one added
# here must say why.
NO_VERDICT_EXPECTED: set[tuple[str, str]] = set()


def _bases(part, case) -> list[np.ndarray]:
    """Outputs of the right shape for `case`, made in this process."""
    found = []
    recompute = part.recompute
    if recompute is not None and (not recompute.targets or case.target in recompute.targets):
        found.append(call_with_case(recompute.function, case))
    for mistake in part.mistakes:
        try:
            found.append(mistake.output(case))
        except Exception:  # noqa: BLE001 - a mistake that does not apply to this case
            continue
    if case.upstream is not None:
        found.append(case.upstream)
    arrays = []
    for base in found:
        if base is None or isinstance(base, (tuple, list, dict)):
            continue
        base = np.asarray(base)
        if base.dtype.kind in "biuf":
            arrays.append(base.astype(np.float64))
    return arrays


def _wrong(base: np.ndarray) -> list[np.ndarray]:
    """Outputs near `base` that break one property or another."""
    variants = [base, -base, base + 1.0, base * 2.0, np.zeros_like(base), -base - 1.0]
    variants += [base + 100.0, np.ones_like(base)]
    if base.ndim:
        nan = base.copy()
        nan.flat[0] = np.nan
        variants += [nan, base[..., ::-1], np.flip(base, 0)]
        spread = base.copy()
        spread.flat[0] += 0.5
        variants.append(spread)
        if base.ndim >= 2:  # the same index twice in a row (pointer decoding)
            repeated = base.copy()
            repeated[..., -1] = repeated[..., 0]
            variants.append(repeated)
    return variants


def _verdicts(record, part, prop, cases) -> list[str]:
    found = []
    for case in cases:
        if prop.targets and case.target not in prop.targets:
            continue
        if prop.gradients:
            names = [f"input:{name}" for name in case.inputs] or ["input:x"]
            given = [{name: np.full((2, 3), np.nan) for name in names}]
        else:
            given = [w for base in _bases(part, case) for w in _wrong(base)]
        for output in given:
            try:
                with np.errstate(all="ignore"):
                    verdict = prop.check(case, output)
            except Exception:  # noqa: BLE001 - a shape the check does not take
                continue
            if verdict:
                found.append(verdict)
    return found


def _all_verdicts(language: str) -> dict[tuple[str, str, str], list[str]]:
    verdicts = {}
    with speaking(language):
        for record in EXERCISES.values():
            cases = make_cases(record, 0)
            for part in record.parts:
                for prop in part.properties:
                    key = (record.id, part.name, prop.name)
                    verdicts.setdefault(key, []).extend(
                        _verdicts(record, part, prop, cases[part.name])
                    )
    return verdicts


@pytest.fixture(scope="module")
def verdicts():
    return _all_verdicts("zh")


def test_every_property_gives_a_verdict_on_some_wrong_output(verdicts):
    silent = {(r, p) for (r, part, p), found in verdicts.items() if not found}
    assert silent == NO_VERDICT_EXPECTED


def test_property_verdicts_are_chinese(verdicts):
    english = {
        key: (text, english_sentences(text))
        for key, found in verdicts.items()
        for text in found
        if english_sentences(text)
    }
    assert not english


def test_the_same_verdicts_in_english_are_english_sentences(verdicts):
    """The detector sees what an untranslated verdict would look like: the same wrong outputs
    give, in English, verdicts that are English sentences, for every property."""
    in_english = _all_verdicts("en")
    assert in_english.keys() == verdicts.keys()
    untranslated = {
        key
        for key, found in in_english.items()
        if not found or not all(english_sentences(text) for text in found)
    }
    assert untranslated == set()


def test_contract_promises_are_chinese():
    promises = {
        case.promise
        for record in EXERCISES.values()
        for cases in make_cases(record, 0).values()
        for case in cases
        if case.promise
    }
    assert len(promises) >= 3  # ex8_1, ex8_3, lab_nw
    with speaking("zh"):
        shown = {promise: tr(promise) for promise in promises}
    assert {p: t for p, t in shown.items() if t == p or english_sentences(t)} == {}


def test_english_verdicts_are_unchanged():
    with speaking("en"):
        padded = seq2seq.rows_are_distributions(
            np.array([1, 2]), np.array([[[0.75, 0.25]], [[0.5, 0.5]]])
        )
        outside = heads.sampling_problem(np.full((1, 2, 3), 1 / 3), np.array([[0, 7]]))
    assert padded == (
        "example 0, output step 1 gives weight 0.25 to source position 1, which is padding "
        "(length 1): padded positions must get weight 0"
    )
    assert outside == "index 7 at [0, 1] is not a key position (0 .. Tk-1)"


def test_contract_check_names_follow_the_language():
    """An argument changed in place and float32 for float64 inputs, named in Chinese."""
    asymmetry = get_exercise("8-2").parts[3]
    case = Case("bilinear_asymmetry", FUNCTION, "W (3, 3)", inputs={"kernel": np.eye(3)})
    want = CaseOutput(CaseStatus.OK, np.eye(3))
    got = CaseOutput(CaseStatus.OK, np.eye(3), after={"kernel": 2 * np.eye(3)}, dtype="float32")
    names = {}
    for language in ("en", "zh"):
        with speaking(language):
            names[language] = sorted(check.name for check in judge_case(asymmetry, case, want, got))
    assert "arguments unchanged, W (3, 3)" in names["en"]
    assert "dtype, W (3, 3)" in names["en"]
    assert "参数未被修改，W (3, 3)" in names["zh"]
    assert "dtype，W (3, 3)" in names["zh"]
