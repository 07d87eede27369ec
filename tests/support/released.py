"""One student kit per test process, made as `grader release student` makes it (about 25 s of
CPU here: the references' outputs written into the kit, then the answer probe), and a copy of
it for each test file that needs one. tests/conftest.py runs those files on one worker."""

from __future__ import annotations

import atexit
import functools
import shutil
import tempfile
from pathlib import Path

from grader.instructor.course.release import release_student


@functools.cache
def _made_once() -> Path:
    # Under /tmp, where an ordinary user may enter (pytest's own folders are 0700): the Actions
    # runner's user reads its copy.
    folder = Path(tempfile.mkdtemp(prefix="attnkit-released-", dir="/tmp"))
    atexit.register(shutil.rmtree, folder, ignore_errors=True)
    return release_student(folder / "attnkit-student")


def student_kit_copy(target: Path) -> Path:
    """A copy at `target` of the kit `grader release student` writes (made once per process:
    each test file may change its copy)."""
    shutil.copytree(_made_once(), target, symlinks=True)
    return target
