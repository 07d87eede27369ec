"""What a student reads: the most useful line first, each problem once, the cause before the
symptom, and the same verdict as `grader batch` (grader.engine.feedback, grader check)."""

import json

import numpy as np
from click.testing import CliRunner

from grader.cli import main
from grader.engine import compare, feedback
from grader.engine.judging import judge_case
from grader.engine.results import CheckResult, ExerciseResult, PartResult
from grader.records import get_exercise
from grader.report import render
from grader.vocabulary.protocol import CaseOutput
from grader.vocabulary.spec import LAYER, Case
from grader.vocabulary.status import CaseStatus, Status


def differ(name, total=36):
    return CheckResult(name, False, f"{total} of {total} values differ from the reference (x)")


def test_the_named_mistake_comes_first_even_behind_many_failed_checks():
    checks = [differ(f"output, case {i}") for i in range(8)]
    checks += [differ(f"gradient wrt memory, case {i}") for i in range(8)]
    checks.append(
        CheckResult(
            "output, case 9",
            False,
            "You pushed v_t and then popped. (at index [0]: expected 1, received 2)",
            mistake="push before pop",
            detail="at index [0]: expected 1, received 2",
        )
    )
    part = PartResult("neural_stack", 2, Status.FAILED, checks)
    lines = feedback.part_lines(part, width=200)
    assert lines[0].strip().startswith("You pushed v_t and then popped.")
    assert "expected 1, received 2" in lines[0]
    # Values that differ are one problem however many cases show them; gradients that differ
    # behind a wrong output are not a problem of their own.
    assert len(lines) == 2 and "1 more problem" in lines[1]
    assert not any("gradient" in line for line in lines)


def test_a_diagnosis_comes_before_values_differ_and_an_output_before_its_gradient():
    cut = CheckResult("gradient wrt key, case 1", False, "the gradient ... is zero", "gradient cut")
    factor = CheckResult("output, case 2", False, "every value is 2 times", "constant factor")
    part = PartResult("p", 1, Status.FAILED, [differ("output, case 0"), cut, factor])
    assert [c.name for c in feedback.problems(part)] == [
        "output, case 2",
        "gradient wrt key, case 1",
        "output, case 0",
    ]


def test_a_syntax_error_is_shown_once_not_once_per_part():
    record = get_exercise("8-2")
    message = "ex8_2.py, line 5: SyntaxError: invalid syntax — fix it and run again"
    parts = [
        PartResult(p.name, p.points, Status.ERROR, [CheckResult("load", False, message)])
        for p in record.parts
    ]
    text = render(record, ExerciseResult("8-2", parts, submission="ex8_2.py"), color=False)
    assert text.count("SyntaxError") == 1
    assert text.index("SyntaxError") < text.index("ScaledDotScore")


def test_a_scalar_that_differs_gives_its_two_values_not_one_of_one():
    case = Case("dot_product_variance", "function", "default variances")
    found = compare.difference(np.float64(4.0), np.float64(1.0), case)
    assert "1 of 1" not in found.text() and "expected 4, received 1" in found.text()
    assert "4" not in found.text(reveal=False)  # a hidden case still keeps its values


def test_lines_are_wrapped_to_the_terminal_width():
    long = CheckResult("output, case", False, "word " * 60)
    lines = feedback.part_lines(PartResult("p", 1, Status.FAILED, [long]), width=80)
    assert len(lines) > 1 and all(len(line) <= 80 for line in lines)


def test_no_gradient_claim_when_the_output_has_the_wrong_shape():
    case = Case("ScaledDotScore", LAYER, "B=2", {"query": np.zeros((2, 3))})
    want = CaseOutput(CaseStatus.OK, np.zeros((2, 3, 5)), {"input:query": np.ones((2, 3))})
    got = CaseOutput(CaseStatus.OK, np.zeros((2, 5, 3)), {}, dtype="float64")
    part = get_exercise("8-2").part("ScaledDotScore")
    checks = judge_case(part, case, want, got)
    assert not any("gradient" in check.name for check in checks)
    assert "last two axes are swapped" in checks[0].message


def test_a_part_that_calls_another_failing_part_says_fix_that_one_first(tmp_path):
    source = tmp_path / "lab_mha.py"
    source.write_text(
        "def split_heads(x, num_heads):\n    return x\n\n"
        "def merge_heads(x):\n    return x\n\n"
        "class MultiHeadAttention:\n    def call(self, q):\n        return split_heads(q, 2)\n",
        encoding="utf-8",
    )
    record = get_exercise("mha")
    statuses = {"split_heads": Status.FAILED, "merge_heads": Status.FAILED}
    parts = [
        PartResult(p.name, p.points, statuses.get(p.name, Status.FAILED), [differ("output, c")])
        for p in record.parts
    ]
    result = ExerciseResult("mha", parts, submission=str(source))
    # merge_heads fails too, but the layer never calls it: only split_heads is the cause.
    assert feedback.causes(record, result) == {"MultiHeadAttention": ["split_heads"]}
    text = render(record, result, color=False, width=200)
    layer = text[text.index("MultiHeadAttention  0/5") :].splitlines()
    assert layer[1].strip().startswith("fix split_heads first: MultiHeadAttention calls it")


def named(name, mistake, words):
    return CheckResult(name, False, f"{words} (at index [0])", mistake, detail="at index [0]")


def test_a_parts_own_named_mistake_comes_before_fix_that_one_first():
    """The layer inherits split_heads' failure and has a bug of its own: its own recognised
    mistake is what it can act on now, read first, with where it shows."""
    own = named("output, B=2", "scale missing", "You forgot to divide by √d_k.")
    part = PartResult("MultiHeadAttention", 5, Status.FAILED, [differ("output, B=1"), own])
    cause = feedback.cause_words("MultiHeadAttention", ["split_heads"])
    lines = feedback.part_lines(part, [cause], width=300, own={"scale missing"})
    lines = [line.strip() for line in lines]
    assert lines[0].startswith("You forgot to divide by √d_k.") and "at index [0]" in lines[0]
    assert lines[1].startswith("fix split_heads first")
    # Without a recognised mistake of its own, the cause still leads.
    plain = PartResult("MultiHeadAttention", 5, Status.FAILED, [differ("output, B=1")])
    assert feedback.part_lines(plain, [cause], width=300)[0].strip().startswith("fix split_heads")


def test_every_recognised_mistake_is_shown_never_behind_n_more_problems():
    mistakes = [
        named("output, case 1", "push before pop", "You pushed v_t and then popped."),
        named("output, case 2", "property: energy never rises", "The energy rose."),
        named("gradient wrt x, case 3", "gradient cut", "Something cuts the gradient."),
    ]
    part = PartResult("p", 1, Status.FAILED, [differ("output, case 0"), *mistakes])
    text = "\n".join(feedback.part_lines(part, width=300))
    for words in ("You pushed v_t", "The energy rose.", "Something cuts the gradient."):
        assert words in text
    # Only the unrecognised difference is left for --verbose.
    assert "1 more problem" in text and "values differ" not in text
    record = get_exercise("8-4")
    parts = [PartResult("neural_stack", 2, Status.FAILED, part.checks)]
    default = render(record, ExerciseResult("8-4", parts, submission="ex8_4.py"), color=False)
    assert all(words in default for words in ("You pushed v_t", "The energy rose."))


SOLVED_BUT_IMPORTS_ATTNKIT = """import attnkit
import numpy as np


def dot_product_variance(d, var_q=1.0, var_k=1.0):
    return np.float64(d * var_q * var_k)


def scaled_dot_product_variance(d, var_q=1.0, var_k=1.0):
    return np.float64(var_q * var_k)
"""


def test_check_grades_the_current_folder_loudly_with_the_verdict_of_batch(tmp_path, monkeypatch):
    (tmp_path / "ex8_2.py").write_text(SOLVED_BUT_IMPORTS_ATTNKIT, encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    runner = CliRunner()
    done = runner.invoke(main, ["check", "8-2", "--part", "variances", "--timeout", "20"])
    assert done.exit_code == 1, done.output
    # The student's own file, not the kit's exercises/ex8_2.py, and said so.
    assert f"graded file: {tmp_path / 'ex8_2.py'}" in done.stdout
    # Batch blocks `import attnkit` and flags it: so does check, with the same 0.
    # (Wrapped to the terminal's width, which differs between machines: words, not lines.)
    words = " ".join(done.stdout.split())
    assert "Score: 0/2" in words and "importing 'attnkit' is not allowed" in words
    assert "batch flag: imports-attnkit" in done.stderr
    # The closing hint repeats the student's own options.
    assert "run `grader check 8-2 --part variances --timeout 20` again" in done.stdout
    data = json.loads(
        runner.invoke(main, ["check", "8-2", "--part", "variances", "--format", "json"]).stdout
    )
    assert data["flags"] == ["imports-attnkit"] and data["score"] == 0.0


def test_batch_feedback_reads_as_check_does_a_named_mistake_first(tmp_path):
    """A named mistake behind many failing checks (every case, output and gradients): the
    batch's feedback file shows it first, once, as `grader check` does."""
    from grader.grading import grade
    from grader.instructor.outputs import gradebook, student_feedback
    from tests.support.planting import plant

    folder = plant(
        tmp_path / "alice",
        "8-2",
        ("return scores / ops.sqrt(ops.cast(depth, scores.dtype))", "return scores"),
    )
    result = grade("8-2", folder, parts=["ScaledDotScore"])
    part = result.part("ScaledDotScore")
    assert sum(not check.passed for check in part.checks) > 5
    document = gradebook.student_document("alice", [result], [], 5, 0, "stamp")
    # The feedback is written from the result file, as a batch (and a rerun) does.
    document = json.loads(json.dumps(document))
    path = tmp_path / "alice.md"
    student_feedback.write_feedback(path, document, [get_exercise("8-2")])
    lines = path.read_text("utf-8").splitlines()
    under = lines[lines.index("- **ScaledDotScore** 0/3 — failed") + 1 :]
    problem_lines = [line[4:] for line in under if line.startswith("  - ")]
    record = get_exercise("8-2")
    check_lines = render(record, result, color=False, width=100_000).splitlines()
    shown = check_lines[check_lines.index("  ✗ ScaledDotScore  0/3  failed") + 1 :]
    assert problem_lines == [line.strip() for line in shown if line.startswith("      ")]
    assert "scale" in problem_lines[0] and "√d" in problem_lines[0].replace("sqrt(d)", "√d")
    assert len(problem_lines) <= 2 and "values differ" not in problem_lines[0]


def test_wrapping_counts_display_columns_and_matches_textwrap_on_latin_text():
    """A Chinese character takes two columns: lines stay within the terminal's width (they
    were 131 columns wide on a 100-column terminal), and break between characters; Latin
    text wraps exactly as textwrap wraps it."""
    import random
    import textwrap

    from grader.engine.feedback import wrap
    from grader.i18n import display_width

    chinese = (
        "参数 query 被调用修改了（24 个元素中有 24 个不同；在索引 [0, 0, 0] 处原为 0.12573）："
        "请在副本上计算；调用者的数组必须保持原样，否则评分会认为你的代码改变了输入。" * 3
    )
    for width in (60, 80, 100):
        lines = wrap(chinese, width)
        assert len(lines) > 1
        assert all(display_width(line) <= width for line in lines), lines
        assert "".join(line.strip() for line in lines).replace(" ", "") == chinese.replace(" ", "")
        assert not any(line.strip().startswith(("，", "。", "；", "）")) for line in lines)
    words = "the argument query was changed by (24 of [0, 0.12573): work on a copy".split()
    generator = random.Random(0)
    for _ in range(300):
        text = "  ".join(generator.choice(words) for _ in range(generator.randint(0, 40)))
        for width in (60, 100):
            expected = textwrap.wrap(
                text,
                width=max(60, width - 1),
                initial_indent="      ",
                subsequent_indent="        ",
                break_on_hyphens=False,
            )
            assert wrap(text, width) == (expected or ["      "])


def test_fix_the_called_part_first_comes_before_a_recognition_that_is_not_the_parts_own():
    """A part that fails because it calls a broken part (issue 49): a generic recognition on
    it (a property, an argument changed) may be the broken part's own showing through, so
    "fix X first" comes before it; a mistake the record declares for this part stays first."""
    generic = CheckResult("output", False, "the argument `cache` was changed", "argument changed")
    declared = CheckResult("output", False, "the mask is applied after the softmax", "late mask")
    before = [feedback.cause_words("incremental_attention", ["update_cache"])]
    part = PartResult("incremental_attention", 3, Status.FAILED, [generic])
    lines = [line.strip() for line in feedback.part_lines(part, before, width=200)]
    assert lines[0].startswith("fix update_cache first"), lines
    part = PartResult("incremental_attention", 3, Status.FAILED, [declared, generic])
    lines = feedback.part_lines(part, before, width=200, own={"late mask"})
    lines = [line.strip() for line in lines]
    assert "mask is applied after the softmax" in lines[0]
    assert lines[1].startswith("fix update_cache first"), lines


def test_no_advice_presents_a_numpy_copy_as_the_only_way_to_leave_an_argument_unchanged():
    """One piece of advice per mistake (issue 49): every message that tells the student to
    copy with NumPy also gives the keras.ops way, so that no two lines of a run disagree on
    whether a tensor may be written in place (a cache in a Keras decoder may not)."""
    from babel.messages.pofile import read_po

    from grader.kit import KIT

    with open(KIT / "grader" / "locale" / "attnkit.pot", "rb") as handle:
        catalog = read_po(handle)
    texts = [str(message.id) for message in catalog if message.id]
    from grader.records import EXERCISES

    for record in EXERCISES.values():  # every record's named mistakes
        texts += [m.explanation for part in record.parts for m in part.mistakes]
    copying = [text for text in texts if "np.array(" in text or "np.copy(" in text]
    assert copying, "the check looks at nothing"
    assert all("ops." in text for text in copying), [t for t in copying if "ops." not in t]


def test_the_tables_of_contradictory_advice_name_real_mistakes():
    """tests/support/advice.py's opposite mistakes are every record's named mistakes: a renamed
    one would leave its row checking nothing."""
    from grader.records import EXERCISES
    from tests.support.advice import unknown_opposites

    assert not unknown_opposites(EXERCISES)


def test_the_run_that_opened_issue_49_is_found_to_contradict_itself(tmp_path):
    """The check over every planted mistake's run (tests/grader/test_records.py) finds the run
    issue 49 reported: update_cache told to copy with NumPy only, incremental_attention (which
    calls it) that a tensor cannot be written in place, a generic line before "fix
    update_cache first"; and the same run as the grader writes it now agrees with itself."""
    from tests.support.advice import conflicting_advice

    record = get_exercise("kv-cache")
    submission = tmp_path / record.file
    submission.write_text(
        "def update_cache(cache, key, value, cache_update_index):\n    return cache\n\n"
        "def incremental_attention(query, key, value, max_length):\n"
        "    return update_cache(query, key, value, 0)\n",
        encoding="utf-8",
    )
    numpy_only = (
        "the argument `cache` was changed by the call: the caller's array must stay as it "
        "was. Work on a copy (`cache = np.array(cache)`)"
    )
    tensor = (
        "a tensor cannot be changed in place (x[i] = ...): build a new one instead, with "
        "ops.where, ops.concatenate or ops.stack (or ops.slice_update)."
    )

    def run(update_message, generic_ahead):
        update = CheckResult("arguments unchanged", False, update_message, "argument changed")
        incremental = [CheckResult("output", False, tensor)]
        if generic_ahead:  # a recognition that is not incremental_attention's own mistake
            incremental.insert(0, CheckResult("output", False, update_message, "ahead"))
        return ExerciseResult(
            record.id,
            [
                PartResult("update_cache", 3, Status.FAILED, [update]),
                PartResult("incremental_attention", 3, Status.FAILED, incremental),
            ],
            submission=str(submission),
        )

    found = conflicting_advice(record, run(numpy_only, generic_ahead=False))
    assert len(found) == 1 and "NumPy copy" in found[0], found
    both_ways = numpy_only.replace("Work on", "With keras.ops, ops.slice_update; with NumPy,")
    assert conflicting_advice(record, run(both_ways, generic_ahead=False)) == []
    # The grader puts "fix update_cache first" ahead of a recognition not the part's own, so
    # the order the check looks for holds in what the renderer writes.
    assert conflicting_advice(record, run(both_ways, generic_ahead=True)) == []


def test_the_advice_check_finds_opposite_mistakes_and_a_generic_line_before_fix_first():
    from tests.support.advice import conflicts

    record = get_exercise("kv-cache")
    own = record.part("incremental_attention").mistakes[0].explanation
    fix = "fix update_cache first: incremental_attention calls it, and it fails its own checks"
    generic = "the argument `cache` was changed by the call [arguments unchanged]"
    assert conflicts(record, {"incremental_attention": [fix, generic]}, {}) == []
    assert conflicts(record, {"incremental_attention": [f"{own} [output]", fix]}, {}) == []
    found = conflicts(record, {"incremental_attention": [generic, fix]}, {})
    assert len(found) == 1 and "comes before 'fix update_cache first" in found[0], found
    named = {"attend_cached": {"later positions not masked", "own position masked"}}
    assert conflicts(record, {}, named) == [
        "attend_cached names both 'later positions not masked' and 'own position masked'"
    ]
