"""A class's submissions: one entry per student, unpacked safely, scanned before anything runs.

An entry is a folder or a `.zip`; the student id is its name (without `.zip`), whatever it
holds (see `student_id`; files are named after it with grader.engine.untrusted.file_stem, text
shows it through that module's escapers). Archives are
opened with limits and without trusting their paths: no member may land outside the scratch
folder (zip-slip), symbolic links are never created or followed, and sizes and counts are
capped. Folders are copied file by file, skipping links. Nothing here runs submitted code.
"""

from __future__ import annotations

import ast
import hashlib
import os
import shutil
import stat
import zipfile
from dataclasses import dataclass, field, replace
from pathlib import Path, PurePosixPath

from grader.engine.filenames import as_utf8, near_names

MAX_FILES = 2000
MAX_BYTES = 64 * 2**20
FORBIDDEN_PACKAGES = ("attnkit", "solutions", "grader")
IGNORED_PARTS = {"__MACOSX", "__pycache__", ".git"}


class UnsafeSubmission(ValueError):
    """The entry cannot be unpacked safely (or at all); the message says why."""


@dataclass
class Student:
    id: str
    entry: Path
    flags: list[str] = field(default_factory=list)

    @property
    def is_zip(self) -> bool:
        return self.entry.suffix.lower() == ".zip"


def discover(submissions: Path) -> list[Student]:
    if not submissions.is_dir():
        raise FileNotFoundError(f"{submissions} is not a folder of submissions")
    students = []
    for entry in sorted(submissions.iterdir()):
        if entry.name.startswith(".") or entry.is_symlink():
            continue
        if entry.is_dir():
            students.append(Student(student_id(entry.name), entry))
        elif entry.suffix.lower() == ".zip":
            students.append(Student(student_id(entry.stem), entry))
    return students


def student_id(name: str) -> str:
    """A folder's name as a student id that can be written as UTF-8: a byte the file system's
    encoding could not decode is written `\\xNN` instead of being lost (or stopping a writer)."""
    return name.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")


def fingerprint(student: Student) -> str:
    """A hash of what the student handed in, to notice a changed submission on resume."""
    digest = hashlib.sha256()
    paths = (
        [student.entry]
        if student.entry.is_file()
        else sorted(p for p in student.entry.rglob("*") if p.is_file() and not p.is_symlink())
    )
    for path in paths:
        digest.update(os.fsencode(path.relative_to(student.entry.parent)))  # any bytes
        try:
            digest.update(path.read_bytes())
        except OSError as error:  # unreadable: unpacking will say so; the stamp stays stable
            digest.update(f"unreadable: {error.errno}".encode())
    return digest.hexdigest()


def unpack(student: Student, destination: Path) -> None:
    """Copy or extract the submission into `destination` (an empty folder)."""
    destination.mkdir(parents=True, exist_ok=True)
    try:
        if student.is_zip:
            _extract_zip(student.entry, destination)
        else:
            _copy_folder(student.entry, destination)
    except OSError as error:  # unreadable files, special files: this student's entry only
        name = Path(error.filename).name if getattr(error, "filename", None) else student.id
        raise UnsafeSubmission(
            f"{student.entry.name}: {name} could not be copied ({error.strerror or error}); "
            "hand in plain, readable files"
        ) from None


def _extract_zip(archive: Path, destination: Path) -> None:
    try:
        with zipfile.ZipFile(archive) as bundle:
            members = bundle.infolist()
            if len(members) > MAX_FILES:
                raise UnsafeSubmission(
                    f"{archive.name} holds {len(members)} files (at most {MAX_FILES})"
                )
            total = 0
            for member in members:
                target = _safe_target(member.filename, destination, archive.name)
                if target is None:
                    continue
                mode = member.external_attr >> 16
                if stat.S_ISLNK(mode):
                    raise UnsafeSubmission(
                        f"{archive.name} contains a symbolic link "
                        f"({member.filename}); links are not accepted"
                    )
                if member.is_dir():
                    target.mkdir(parents=True, exist_ok=True)
                    continue
                target.parent.mkdir(parents=True, exist_ok=True)
                with bundle.open(member) as source, open(target, "wb") as sink:
                    while chunk := source.read(2**16):  # count real bytes, not the header's
                        total += len(chunk)
                        if total > MAX_BYTES:
                            raise UnsafeSubmission(
                                f"{archive.name} unpacks to more than {MAX_BYTES // 2**20} MiB"
                            )
                        sink.write(chunk)
    except (zipfile.BadZipFile, zipfile.LargeZipFile, EOFError, NotImplementedError) as error:
        raise UnsafeSubmission(f"{archive.name} is not a readable zip archive: {error}") from None


def _safe_target(name: str, destination: Path, archive: str) -> Path | None:
    path = PurePosixPath(name.replace("\\", "/"))
    if path.is_absolute() or ".." in path.parts or (path.parts and ":" in path.parts[0]):
        raise UnsafeSubmission(
            f"{archive} has a member that points outside the archive "
            f"({name!r}); such archives are refused"
        )
    if not path.parts or IGNORED_PARTS & set(path.parts):
        return None
    target = destination.joinpath(*path.parts)
    if not target.resolve().is_relative_to(destination.resolve()):
        raise UnsafeSubmission(f"{archive} member {name!r} escapes the scratch folder")
    return target


def _copy_folder(source: Path, destination: Path) -> None:
    count, total = 0, 0
    for path in sorted(source.rglob("*")):
        relative = path.relative_to(source)
        if IGNORED_PARTS & set(relative.parts) or path.is_symlink():
            continue
        target = destination / relative
        if path.is_dir():
            target.mkdir(parents=True, exist_ok=True)
            continue
        if not path.is_file():  # a FIFO, socket or device: never opened
            continue
        count, total = count + 1, total + path.stat().st_size
        if count > MAX_FILES or total > MAX_BYTES:
            raise UnsafeSubmission(
                f"{source.name} has more than {MAX_FILES} files or {MAX_BYTES // 2**20} MiB"
            )
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(path, target)


@dataclass(frozen=True)
class ExerciseFile:
    """Where a submission's file for one exercise is, or why there is none to grade."""

    path: Path | None
    problem: str = ""
    # No file of that name at all (flagged `missing-`, where several are `unusable-`).
    missing: bool = False
    # The file graded was handed in under this near name (flagged `renamed-`).
    renamed_from: str = ""


def find_exercise_file(scratch: Path, filename: str) -> ExerciseFile:
    """The one file of that name anywhere inside, or None and the reason. A notebook of the
    same stem (`ex8_2.ipynb`) will do instead: its code is written out as the file to grade.
    Where there is neither, the one file of a near name (`Ex8_2 (1).py`, see
    grader.engine.filenames) is graded as that file. Source saved as UTF-16 is graded as the
    UTF-8 it holds. `scratch` is a copy: the file to grade may be written into it."""
    found = sorted(p for p in scratch.rglob(filename) if p.is_file())
    notebook = Path(filename).stem + ".ipynb"
    notebooks = sorted(p for p in scratch.rglob(notebook) if p.is_file())
    if found and notebooks:
        return ExerciseFile(
            None, f"both {filename} and {notebook}: hand in exactly one of them, the one to grade"
        )
    if notebooks:
        found = notebooks
    renamed = ""
    if not found:
        near = near_names(scratch, filename, IGNORED_PARTS)
        names = ", ".join(p.relative_to(scratch).as_posix() for p in near)
        if len(near) > 1:
            return ExerciseFile(
                None,
                f"no {filename}, and several files of a near name ({names}): name the "
                f"one to grade {filename}",
            )
        if not near:
            return ExerciseFile(
                None, f"no {filename} (or {notebook}) in the submission", missing=True
            )
        renamed, found = names, near
        if near[0].suffix.lower() == ".ipynb":
            notebooks = near
        else:
            found = [near[0].with_name(filename)]
            shutil.copyfile(near[0], found[0])
    if len(found) > 1:
        names = ", ".join(str(p.relative_to(scratch)) for p in found)
        return ExerciseFile(
            None, f"several files named {found[0].name} ({names}): keep exactly one"
        )
    if notebooks:
        chosen = _code_of_notebook(found[0], filename)
    else:
        chosen = ExerciseFile(found[0])
        converted = as_utf8(found[0].read_bytes())
        if converted is not None:
            found[0].write_bytes(converted)
    return replace(chosen, renamed_from=renamed) if renamed and chosen.path else chosen


def _code_of_notebook(notebook: Path, filename: str) -> ExerciseFile:
    """The notebook's code cells written out next to it as `filename` (grader.notebook.extract:
    magics and shell escapes are never run); a notebook that does not parse is the problem."""
    from grader.notebook.extract import NotebookError, notebook_code

    try:
        code = notebook_code(notebook.read_bytes(), notebook.name)
    except NotebookError as error:
        return ExerciseFile(None, str(error))
    target = notebook.with_name(filename)
    target.write_text(code, encoding="utf-8")
    return ExerciseFile(target)


def scan(path: Path) -> list[str]:
    """Flags for code that reaches for the kit's own answers. Parses; never runs the code."""
    try:
        tree = ast.parse(path.read_bytes(), filename=str(path))
    except (SyntaxError, ValueError):
        return []
    flags = set()
    for node in ast.walk(tree):
        names = []
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names = [node.module]
        elif isinstance(node, ast.Call) and node.args and isinstance(node.args[0], ast.Constant):
            function = (
                node.func.attr
                if isinstance(node.func, ast.Attribute)
                else getattr(node.func, "id", "")
            )
            if function in ("__import__", "import_module") and isinstance(node.args[0].value, str):
                names = [node.args[0].value]
        for name in names:
            if name.split(".")[0] in FORBIDDEN_PACKAGES:
                flags.add(f"imports-{name.split('.')[0]}")
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            text = node.value.replace("\\", "/")
            if "solutions/" in text or text.rstrip("/").endswith("solutions"):
                flags.add("opens-solutions")
    return sorted(flags)
