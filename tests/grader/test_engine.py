"""The pieces under every exercise: comparison, stubs made from solutions, fixtures, bundles."""

import numpy as np
import pytest

from grader.engine import compare
from grader.engine.references import FixtureReference, LiveReference, write_fixture
from grader.grading import grade
from grader.instructor.course.stubs import MarkerError, make_stub, package_dir, sync_stubs
from grader.records import EXERCISES
from grader.vocabulary.bundle import BundleError, load_bundle, save_bundle
from grader.vocabulary.spec import FUNCTION, LAYER, Case


def case(dtype="float64", kind=LAYER):
    return Case("X", kind, "label", dtype=dtype)


@pytest.mark.parametrize("dtype,noise", [("float64", 1e-12), ("float32", 1e-5)])
def test_rounding_differences_pass(dtype, noise):
    rng = np.random.default_rng(0)
    expected = rng.standard_normal((3, 4, 5)) * 10
    received = expected * (1 + noise * rng.standard_normal(expected.shape))
    assert compare.difference(expected, received, case(dtype)) is None


def test_infinite_values_compare_without_a_warning_and_never_widen_the_tolerance():
    """Two infinities differ by NaN: no NumPy warning may reach the instructor's console. An
    infinite expected value is met by itself only, and does not make every other value close
    (it used to scale the tolerance to infinity)."""
    import warnings

    expected = np.array([[1.0, -np.inf], [np.inf, 2.0]])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert compare.close(expected, expected.copy(), case()).all()
        received = np.array([[1.0, np.inf], [1e300, 7.0]])
        assert compare.close(expected, received, case()).tolist() == [[True, False], [False, False]]
        assert not compare.matches(expected, received, case())


@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_a_real_error_fails_and_points_at_the_worst_element(dtype):
    expected = np.zeros((2, 3))
    received = expected.copy()
    received[1, 2] = 0.5
    found = compare.difference(expected, received, case(dtype))
    assert found is not None
    assert "at index [1, 2]: expected 0, received 0.5" in found.text()
    assert "1 of 6 values differ" in found.text()
    assert "0.5" not in found.text(reveal=False)  # hidden cases keep expected values secret


def test_shape_errors_name_a_transpose():
    expected = np.ones((2, 3, 5))
    found = compare.difference(expected, np.ones((2, 5, 3)), case())
    assert found.mistake == "transposed"
    found = compare.difference(expected, np.ones((2, 15)), case())
    assert found.mistake is None and "expected shape (2, 3, 5), received (2, 15)" in found.message


def test_constant_factor_and_non_finite_values_are_named():
    expected = np.arange(1.0, 7.0).reshape(2, 3)
    assert "2 times the expected" in compare.difference(expected, 2 * expected, case()).message
    received = expected.copy()
    received[0, 1] = np.nan
    assert "NaN or infinite" in compare.difference(expected, received, case()).message


def test_zero_gradient_is_reported_as_cut():
    expected = np.ones((2, 2))
    found = compare.gradient_difference(expected, np.zeros((2, 2)), case(), "query")
    assert found.mistake == "gradient cut"
    assert compare.gradient_difference(np.zeros((2, 2)), np.zeros((2, 2)), case(), "q") is None


def test_dtype_is_checked_for_layers_only():
    assert compare.dtype_difference(case("float32"), "float64").mistake == "dtype changed"
    assert compare.dtype_difference(case("float32"), "float32") is None
    assert compare.dtype_difference(case("float32", FUNCTION), "float64") is None


def test_stub_replaces_solution_blocks_and_keeps_the_rest():
    source = (
        "def f(x):\n"
        '    """Doc."""\n'
        "    # BEGIN SOLUTION: square it\n"
        "    return x * x\n"
        "    # END SOLUTION\n"
        "\n"
        "GIVEN = 1\n"
    )
    assert make_stub(source, "8-9") == (
        'def f(x):\n    """Doc."""\n    raise NotImplementedError("Exercise 8-9: square it")\n'
        "\nGIVEN = 1\n"
    )


@pytest.mark.parametrize(
    "source",
    [
        "# BEGIN SOLUTION\nx = 1\n",
        "x = 1\n# END SOLUTION\n",
        "# BEGIN SOLUTION\n# BEGIN SOLUTION\n# END SOLUTION\n",
    ],
)
def test_unbalanced_markers_are_errors(source):
    with pytest.raises(MarkerError):
        make_stub(source, "8-9")


def test_shipped_stubs_match_their_solutions():
    stale = sync_stubs(write=False)
    assert stale == [], f"run `grader stubs` to regenerate: {stale}"


def test_drift_is_detected(tmp_path):
    record = EXERCISES["8-2"]
    (tmp_path / record.file).write_text("# edited by hand\n")
    stale = sync_stubs(exercises=tmp_path, write=False, ids=["8-2"])
    assert stale == [tmp_path / record.file, tmp_path / "ex8_2.ipynb"]  # the notebook is missing


def test_every_solution_file_has_marked_answers():
    for record in EXERCISES.values():
        source = (package_dir("solutions") / record.file).read_text()
        assert source.count("# BEGIN SOLUTION") >= len(record.parts)


def test_bundles_round_trip_and_refuse_pickled_objects(tmp_path):
    save_bundle(tmp_path / "b.npz", {"a": [1, "two"]}, {"x": np.arange(3.0)})
    meta, arrays = load_bundle(tmp_path / "b.npz")
    assert meta == {"a": [1, "two"]} and np.array_equal(arrays["x"], [0.0, 1.0, 2.0])

    np.savez(tmp_path / "evil.npz", x=np.array([object()], dtype=object))
    with pytest.raises(BundleError):
        load_bundle(tmp_path / "evil.npz")
    (tmp_path / "junk.npz").write_bytes(b"not a zip file")
    with pytest.raises(BundleError):
        load_bundle(tmp_path / "junk.npz")


@pytest.mark.ex8_2
def test_fixture_file_grades_like_the_live_reference(tmp_path):
    fixture = tmp_path / "8-2.npz"
    write_fixture(EXERCISES["8-2"], 3, fixture, LiveReference(package_dir("solutions")))
    wrong = tmp_path / "wrong"
    wrong.mkdir()
    (wrong / "ex8_2.py").write_text("def bilinear_asymmetry(W):\n    return W.T - W\n")
    for submission in (package_dir("solutions"), wrong):
        live = grade("8-2", submission, seed=3)
        fixed = grade("8-2", submission, seed=3, reference=FixtureReference(fixture))
        assert fixed.to_dict() == live.to_dict()
    assert (
        grade("8-2", package_dir("solutions"), seed=3, reference=FixtureReference(fixture)).score
        == 10.0
    )


def test_seeds_change_the_cases_but_not_their_shapes_list():
    from grader.engine.cases import make_cases

    record = EXERCISES["8-2"]
    first, again, other = (make_cases(record, seed) for seed in (0, 0, 1))
    query = [c.inputs["query"] for c in first["ScaledDotScore"]]
    assert all(
        np.array_equal(a, c.inputs["query"])
        for a, c in zip(query, again["ScaledDotScore"], strict=True)
    )
    assert not np.allclose(query[0], other["ScaledDotScore"][0].inputs["query"])
    upstreams = [c.upstream for c in first["BilinearScore"]]
    assert all(np.any(u != 1.0) for u in upstreams)  # never all ones


def test_a_property_is_checked_on_the_received_output():
    from grader.engine.judging import judge_case
    from grader.vocabulary.protocol import CaseOutput
    from grader.vocabulary.spec import Part, Property
    from grader.vocabulary.status import CaseStatus

    ok = CaseStatus.OK

    def never_rises(case, output):
        rises = np.flatnonzero(np.diff(output) > 0)
        return f"the energy rose at step {rises[0] + 1}" if rises.size else None

    part = Part(
        "p",
        1,
        make_cases=lambda rng: [],
        targets=("f",),
        properties=(Property("energy never rises", never_rises),),
    )
    case = Case("f", FUNCTION, "trajectory")
    falling = np.array([3.0, 2.0, 1.0])
    good = judge_case(part, case, CaseOutput(ok, output=falling), CaseOutput(ok, output=falling))
    assert all(c.passed for c in good) and len(good) == 2
    rising = np.array([3.0, 4.0, 1.0])
    bad = judge_case(part, case, CaseOutput(ok, output=falling), CaseOutput(ok, output=rising))
    failed = [c for c in bad if not c.passed and c.name.startswith("energy never rises")]
    assert failed and failed[0].message == "the energy rose at step 1"


def test_written_parts_are_reported_apart_and_never_scored(tmp_path):
    from grader.engine.results import ExerciseResult
    from grader.grading import ANSWER_PLACEHOLDER, written_answers
    from grader.vocabulary.spec import Exercise, WrittenPart

    record = Exercise(
        "8-9",
        "t",
        "ex8_9.py",
        "s",
        "x",
        parts=(),
        written=(WrittenPart("comparison", 2, "Compare."),),
    )
    assert written_answers(record, tmp_path)[0]["status"] == "missing"
    (tmp_path / "answers").mkdir()
    (tmp_path / "answers" / "8-9.md").write_text(f"# 8-9\n{ANSWER_PLACEHOLDER}\n\n")
    assert written_answers(record, tmp_path)[0]["status"] == "missing"
    (tmp_path / "answers" / "8-9.md").write_text(f"{ANSWER_PLACEHOLDER}\nSelf-attention ...\n")
    answers = written_answers(record, tmp_path)
    assert answers == [
        {
            "name": "comparison",
            "max_score": 2.0,
            "status": "written",
            "answer_file": "answers/8-9.md",
        }
    ]
    result = ExerciseResult("8-9", [], for_instructor=answers)
    assert result.to_dict()["max_score"] == 0.0 and result.to_dict()["for_instructor"] == answers
