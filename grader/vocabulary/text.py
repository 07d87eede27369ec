"""Text that came from a child, made safe to print and to show a student."""

from __future__ import annotations

import re

from grader.vocabulary.untrusted import clean

_ANSI = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]")


_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f]")


# An absolute path (POSIX or Windows) of two or more folders, not inside a word or a formula.
_PATH = re.compile(r"(?<![\w.])(?:[A-Za-z]:)?(?:[/\\][^\s/\\:'\"<>|,;()\[\]]+){2,}")


_FRAME = re.compile(r'^\s*File "[^"]*", line \d+')


# What TensorFlow and its libraries log on their own (absl/glog lines: "E0000 00:00:1795.. 6243
# cuda_platform.cc:52] ..."), which says nothing about the student's code.
_FRAMEWORK_LOG = re.compile(
    r"^(?:[IWEF]\d{4} \d+:\d+:\d+\.\d+\s+\d+ [\w.+-]+:\d+\].*"
    r"|WARNING: All log messages before absl::InitializeLog\(\) is called.*)$"
)


def without_framework_logs(text: str) -> str:
    """`text` without the lines TensorFlow and its libraries log by themselves."""
    return "\n".join(line for line in text.split("\n") if not _FRAMEWORK_LOG.match(line))


def printable(text, limit: int = 2000) -> str:
    """Text from a child, safe to print and to show a student: no terminal escapes or control
    characters, no traceback frames and no file paths (of the grader's, or anyone's: a file is
    named by its name alone)."""
    return scrub(clean(text, limit=10 * limit + 10_000))[:limit]


# How a line break inside a child's text is shown: as the two characters a Python string
# writes it with, so that it reads as part of the text and never starts a line of a page.
SHOWN_NEWLINE = "\\n"


def one_line(text, limit: int = 2000) -> str:
    """`printable(text)` on one line: each line break inside it shown as `\\n`, so that what a
    child wrote stays inside the one line (a bullet, a cell, a row) the grader puts it in."""
    kept = printable(text, limit).strip("\n")
    return kept.replace("\n", SHOWN_NEWLINE)[:limit]


def scrub(text: str) -> str:
    """`text` without traceback frames, and with every absolute path cut to its last name."""
    kept, skip_code = [], False
    for line in text.split("\n"):
        if line.startswith("Traceback (most recent call last)"):
            continue
        if _FRAME.match(line):
            skip_code = True
            continue
        if skip_code and line.startswith("    "):
            skip_code = False
            continue
        skip_code = False
        kept.append(line)
    return _PATH.sub(lambda m: re.split(r"[/\\]", m.group(0))[-1], "\n".join(kept))
