"""Lab transformer-block graded end to end: the grader's float64 NumPy reference agrees with the
solution, the gradients are checked, a correct alternative, and planted mistakes. Full marks and
the stub: tests/grader/test_records.py."""

import numpy as np
import pytest

from grader.engine.references import default_reference
from grader.grading import grade
from grader.records import get_exercise
from grader.reference import transformer as ref
from grader.vocabulary.spec import call_with_case
from tests.grader.test_records import HIDDEN_SEEDS
from tests.support.grading import assert_full_marks, reference_result, submit
from tests.support.planting import from_table, patched_solution

pytestmark = pytest.mark.labs

LAB = "transformer-block"
REFERENCES = {
    "layer_norm": ref.layer_norm,
    "rms_norm": ref.rms_norm,
    "feed_forward": ref.feed_forward,
    "attention_mask": ref.attention_mask,
    "TransformerEncoderBlock": ref.encoder_block,
}


def test_the_numpy_reference_agrees_with_the_solution_on_every_case():
    """grader.reference.transformer (loops from the formulas) and the keras.ops solution are
    written apart: the mistakes the record recomputes with the one are errors of the other.
    The solution's outputs are those its graded run computed (in a child: Keras is never
    imported here, where the grader forks)."""
    reference_result(LAB, HIDDEN_SEEDS[LAB])  # the run that memoises the solution's outputs
    record = get_exercise(LAB)
    seeds = (0, HIDDEN_SEEDS[LAB])
    live = default_reference(record)
    cases = live.cases(record, seeds)
    expected = live.expected(record, seeds, cases, None)
    for part in record.parts:
        for case, got in zip(cases[part.name], expected[part.name], strict=True):
            want = call_with_case(REFERENCES[case.target], case)
            tolerance = 1e-10 if case.dtype == "float64" else 1e-4
            np.testing.assert_allclose(got.output, want, rtol=tolerance, atol=tolerance)


def test_the_reference_is_checked_on_gradients_and_both_masks():
    result = reference_result(LAB, HIDDEN_SEEDS[LAB])
    names = [check.name for part in result.parts for check in part.checks]
    for wrt in ("x", "norm_2_gamma", "ff_kernel_1", "query_kernel"):
        assert any(name.startswith(f"gradient wrt {wrt}, ") for name in names), wrt
    assert any("causal=True, lengths=" in name for name in names)


# The norms with ops.var and rsqrt, the feed-forward with einsum, the mask from lengths compared
# as floats and built by multiplying 0/1 masks; the block as given.
ALTERNATIVE_FUNCTIONS = {
    "layer_norm": """
    centred = x - ops.mean(x, axis=-1, keepdims=True)
    return centred * ops.rsqrt(ops.var(x, axis=-1, keepdims=True) + epsilon) * gamma + beta
""",
    "rms_norm": """
    return x * ops.rsqrt(ops.mean(x * x, axis=-1, keepdims=True) + epsilon) * gamma
""",
    "feed_forward": """
    hidden = ops.maximum(ops.einsum("...d,df->...f", x, ff_kernel_1) + ff_bias_1, 0.0)
    return ops.einsum("...f,fd->...d", hidden, ff_kernel_2) + ff_bias_2
""",
    "attention_mask": """
    j = ops.cast(ops.arange(steps), "float32")
    keys = ops.cast(j[None, None, :] < ops.cast(lengths, "float32")[:, None, None], "float32")
    allowed = keys * ops.ones((1, steps, 1))
    if causal:
        allowed = allowed * ops.cast(j[None, :] <= j[:, None], "float32")[None]
    return allowed > 0.5
""",
}


def alternative():
    return replaced_source(ALTERNATIVE_FUNCTIONS)


def replaced_source(bodies):
    source = patched_solution(LAB)
    for name, body in bodies.items():
        start = source.index("    # BEGIN SOLUTION", source.index(f"def {name}("))
        end = source.index("    # END SOLUTION", start)
        source = source[:start] + body.lstrip("\n") + source[end:]
    return source


def test_correct_alternative_scores_full_marks(tmp_path):
    assert_full_marks(grade(LAB, submit(tmp_path, LAB, alternative(), header="")))


BLOCK_ORDER = ("if self.norm_first:", "if not self.norm_first:")
NORM_1_TWICE = (
    "return layer_norm(y, self.norm_2_gamma, self.norm_2_beta, self.epsilon)",
    "return self.norm_1(y)",
)
MASK_CALL = "mask = attention_mask(lengths, ops.shape(x)[1], self.causal)"

# (part, mistake, the phrases of the feedback, an (old, new) patch of the solution)
PATCHES = [
    (
        "attention_mask",
        "mask difference",
        "in the rows of padding queries",
        (
            "mask = ops.broadcast_to(keys_kept[:, None, :], "
            "(ops.shape(keys_kept)[0], steps, steps))",
            "mask = ops.logical_and(keys_kept[:, None, :], keys_kept[:, :, None])",
        ),
    ),
    (
        "layer_norm",
        "variance with d − 1",
        "divides by d",
        (
            "variance = ops.mean(ops.square(x - mean), axis=-1, keepdims=True)",
            "variance = ops.sum(ops.square(x - mean), axis=-1, keepdims=True) / (x.shape[-1] - 1)",
        ),
    ),
    (
        "layer_norm",
        "normalised over the tokens",
        "over its own features",
        (
            "mean = ops.mean(x, axis=-1, keepdims=True)\n"
            "    variance = ops.mean(ops.square(x - mean), axis=-1, keepdims=True)",
            "mean = ops.mean(x, axis=-2, keepdims=True)\n"
            "    variance = ops.mean(ops.square(x - mean), axis=-2, keepdims=True)",
        ),
    ),
    (
        "layer_norm",
        "ε outside the square root",
        "inside the square root",
        ("/ ops.sqrt(variance + epsilon)", "/ (ops.sqrt(variance) + epsilon)"),
    ),
    (
        "rms_norm",
        "mean subtracted",
        "with no centring",
        (
            "mean_square = ops.mean(ops.square(x), axis=-1, keepdims=True)",
            "x = x - ops.mean(x, axis=-1, keepdims=True)\n"
            "    mean_square = ops.mean(ops.square(x), axis=-1, keepdims=True)",
        ),
    ),
    (
        "rms_norm",
        "square root missing",
        "divide by its square root",
        ("ops.sqrt(mean_square + epsilon)", "(mean_square + epsilon)"),
    ),
    (
        "feed_forward",
        "ReLU missing",
        "apply max(0, ·)",
        (
            "ops.relu(ops.matmul(x, ff_kernel_1) + ff_bias_1)",
            "ops.matmul(x, ff_kernel_1)+ff_bias_1",
        ),
    ),
    (
        "feed_forward",
        "ReLU on the output",
        "only the hidden layer",
        (
            "return ops.matmul(hidden, ff_kernel_2) + ff_bias_2",
            "return ops.relu(ops.matmul(hidden, ff_kernel_2) + ff_bias_2)",
        ),
    ),
    (
        "attention_mask",
        "queries padded instead of keys",
        "padding hides the keys",
        ("broadcast_to(keys_kept[:, None, :],", "broadcast_to(keys_kept[:, :, None],"),
    ),
    (
        "attention_mask",
        "length off by one",
        "key j is real where j < length",
        ("positions[None, :] < ops.cast", "positions[None, :] <= ops.cast"),
    ),
    (
        "attention_mask",
        "causal mask reversed",
        "the keys j ≤ i",
        ("positions[None, :] <= positions[:, None]", "positions[None, :] >= positions[:, None]"),
    ),
    ("post-LN block", "pre-LN instead of post-LN", "AFTER each residual sum", BLOCK_ORDER),
    (
        "post-LN block",
        "attention residual missing",
        "the residual keeps x",
        ("h = self.norm_1(x + self.attend(x, mask))", "h = self.norm_1(self.attend(x, mask))"),
    ),
    (
        "post-LN block",
        "feed-forward residual missing",
        "out = LN_2(h + FFN(h))",
        (
            "return self.norm_2(h + self.ffn(h))",
            "return self.norm_2(self.ffn(h))",
        ),
    ),
    ("post-LN block", "norm_1 used twice", "a layer norm of its own", NORM_1_TWICE),
    ("pre-LN block", "post-LN instead of pre-LN", "INPUT is normalised", BLOCK_ORDER),
    (
        "pre-LN block",
        "residual from the normalised input",
        "adds the block's input itself",
        (
            "h = x + self.attend(self.norm_1(x), mask)",
            "x = self.norm_1(x)\n            h = x + self.attend(x, mask)",
        ),
    ),
    (
        "pre-LN block",
        "feed-forward residual missing",
        "out = h + FFN(LN_2(h))",
        (
            "return h + self.ffn(self.norm_2(h))",
            "return self.ffn(self.norm_2(h))",
        ),
    ),
    ("pre-LN block", "norm_1 used twice", "a layer norm of its own", NORM_1_TWICE),
    (
        # Both residuals from the normalised input: the same slip in two places, found by the
        # search as one operator applied twice.
        "pre-LN block",
        None,
        "the same mistake in two places: the residual adds the input after the layer norm",
        (
            "h = x + self.attend(self.norm_1(x), mask)\n            return h + self.ffn(",
            "h = self.norm_1(x) + self.attend(self.norm_1(x), mask)\n"
            "            return self.norm_2(h) + self.ffn(",
        ),
    ),
    (
        "masked block",
        "padding ignored",
        "build the mask from the lengths",
        (MASK_CALL, MASK_CALL.replace("(lengths,", "(ops.ones_like(lengths) * ops.shape(x)[1],")),
    ),
    (
        "masked block",
        "causal mask ignored",
        "pass self.causal",
        (MASK_CALL, MASK_CALL.replace("self.causal)", "False)")),
    ),
]

# (part, the submitted source, the named mistake, the phrases of its feedback)
PLANTED = [
    (part, patched_solution(LAB, patch), mistake, phrase)
    for part, mistake, phrase, patch in PATCHES
]


def planted():
    """Every planted mistake of this exercise (graded by tests/grader/test_records.py)."""
    return from_table(PLANTED)
