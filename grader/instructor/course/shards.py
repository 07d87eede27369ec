"""Which shard of a class each student is graded in, when a class is graded in N parts on N
machines (`grader batch --shard K/N`, then `grader gather`).

A student's shard is a hash of their id alone (SHA-256 of the id's UTF-8, its first 8 bytes as
a number, modulo N). So, for the same N, the split is the same on every rerun and every
machine, it does not depend on the order the students are listed or found in, and a student
added later lands in one shard without moving anyone else. A different N is a different split.
"""

from __future__ import annotations

import hashlib
import re

from grader.i18n import _

SHARD = re.compile(r"^\s*(\d+)\s*/\s*(\d+)\s*$")


def shard_of(student_id: str, count: int) -> int:
    """The shard (0 … count−1) that grades `student_id`."""
    if count < 1:
        raise ValueError(
            _("a class is split in at least 1 shard. Received: count={count}", count=count)
        )
    digest = hashlib.sha256(student_id.encode("utf-8", "surrogateescape")).digest()
    return int.from_bytes(digest[:8], "big") % count


def parse_shard(text: str) -> tuple[int, int]:
    """`"K/N"` as (K, N), K counted from 0 as Slurm's array task id and Kubernetes' completion
    index count; ValueError saying what is wrong otherwise."""
    found = SHARD.match(text or "")
    if not found:
        raise ValueError(
            _(
                "give the shard as K/N, e.g. 0/4 (K from 0 to N-1). Received: {text}",
                text=repr(text),
            )
        )
    index, count = int(found.group(1)), int(found.group(2))
    if count < 1:
        raise ValueError(
            _("N (the number of shards) must be at least 1. Received: {text}", text=repr(text))
        )
    if index >= count:
        raise ValueError(
            _(
                "K counts from 0 to N-1, so {index}/{count} names no shard (the last is "
                "{last}/{count}). Received: {text}",
                index=index,
                count=count,
                last=count - 1,
                text=repr(text),
            )
        )
    return index, count
