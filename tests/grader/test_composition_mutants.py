"""Mistakes in how a block is put together (issue 47), found from the reference as the other
mutants are: a function of a sum applied to one term only (a post-LN block that normalises the
sub-layer's output before the residual sum), and what is written taken from another input (a
cache whose value half holds the key). Real files, graded as students' are."""

from __future__ import annotations

import pytest

from grader.grading import grade
from grader.kit import KIT

pytestmark = pytest.mark.labs


def first_failing(tmp_path, exercise, filename, old, new, part):
    source = (KIT / "solutions" / filename).read_text(encoding="utf-8")
    assert old in source
    (tmp_path / filename).write_text(source.replace(old, new), encoding="utf-8")
    (found,) = grade(exercise, tmp_path, seed=0, parts=[part]).parts
    return next(check for check in found.checks if not check.passed)


def test_a_norm_applied_to_the_sublayer_alone_is_named(tmp_path):
    check = first_failing(
        tmp_path,
        "transformer-block",
        "lab_transformer_block.py",
        "h = self.norm_1(x + self.attend(x, mask))\n        return self.norm_2(h + self.ffn(h))",
        "h = x + self.norm_1(self.attend(x, mask))\n        return h + self.norm_2(self.ffn(h))",
        "post-LN block",
    )
    assert "applied to one term of the sum only" in check.message
    assert "norm_1" in check.message and "norm_2" in check.message


def test_a_cache_whose_value_half_holds_the_key_is_named(tmp_path):
    check = first_failing(
        tmp_path,
        "kv-cache",
        "lab_kv_cache.py",
        "update = ops.stack([key, value], axis=1)",
        "update = ops.stack([key, key], axis=1)",
        "update_cache",
    )
    assert check.message.startswith("you used key where the formula has value")
