"""An exercise file handed in under a near name, and a file saved in an encoding Python cannot
read: both recognised from the file's name and first bytes, never by running it.

A near name is the exercise's file name up to case, spaces and hyphens for underscores, and
the copy marks browsers and file managers add ("ex8_2 (1).py", "Ex8-2 copy.py"). `grader check`
names such a file in its message (the student renames it); the batch and the Gradescope
autograder grade it when it is the only one, and tell the instructor (grader.instructor).
"""

from __future__ import annotations

import re
from pathlib import Path

# "ex8_2 (1).py" from a browser's second download, "ex8_2 copy.py" / "ex8_2 copy 2.py" from
# a file manager, "ex8_2(1).py".
_COPY_MARK = re.compile(r"(?:\s*\(\d+\)|\s+copy(?:\s+\d+)?)$", re.IGNORECASE)
SUFFIXES = (".py", ".ipynb")
# The byte order marks UTF-16 source starts with (little- and big-endian).
_UTF16_MARKS = (b"\xff\xfe", b"\xfe\xff")


def name_key(name: str) -> str:
    """ "Ex8-2 (1).py" -> "ex8_2.py": a file name as compared with the exercise's."""
    path = Path(name)
    stem = _COPY_MARK.sub("", path.stem).strip()
    return re.sub(r"[\s\-]+", "_", stem).lower() + path.suffix.lower()


def near_names(folder: Path, filename: str, ignored=frozenset(), anywhere=True) -> list[Path]:
    """The files in `folder` (at any depth if `anywhere`; none inside a folder named in
    `ignored`) whose name is near `filename` or near its notebook (`ex8_2.ipynb`) without being
    either exactly."""
    wanted = {name_key(Path(filename).stem + suffix) for suffix in SUFFIXES}
    exact = {Path(filename).stem + suffix for suffix in SUFFIXES}
    found = []
    for path in sorted(folder.rglob("*") if anywhere else folder.iterdir()):
        relative = path.relative_to(folder).parts
        if ignored & set(relative) or path.name in exact or path.is_symlink() or not path.is_file():
            continue
        if path.suffix.lower() in SUFFIXES and name_key(path.name) in wanted:
            found.append(path)
    return found


def not_utf8(data: bytes) -> str:
    """The encoding a file's bytes are in when Python cannot read them as source ("UTF-16"),
    else "": Windows PowerShell's `>` and some editors save UTF-16."""
    if data.startswith(_UTF16_MARKS):
        return "UTF-16"
    sample = data[:4096]
    if b"\x00" not in sample:
        return ""
    # UTF-16 without its mark: mostly ASCII text, so one byte of each pair is NUL, never both.
    even, odd, pairs = sample[0::2].count(0), sample[1::2].count(0), len(sample) // 2
    return "UTF-16" if min(even, odd) == 0 and max(even, odd) > 0.4 * pairs else "binary"


def as_utf8(data: bytes) -> bytes | None:
    """UTF-16 source (with its byte order mark) as UTF-8, or None where it is not that."""
    if not data.startswith(_UTF16_MARKS):
        return None
    try:
        return data.decode("utf-16").encode("utf-8")
    except UnicodeDecodeError:
        return None
