"""A class's submissions: one entry per student, unpacked safely, scanned before anything runs.

An entry is a folder or a `.zip`; the student id is its name (without `.zip`), whatever it
holds (see `student_id`; files are named after it with grader.vocabulary.untrusted.file_stem, text
shows it through that module's escapers). An LMS's "download all submissions" is taken as it
comes (`lms_students`): Canvas's loose files and Moodle's folders are grouped per student, the
newest of a re-uploaded file kept, a zip among them unpacked. Archives are
opened with limits and without trusting their paths: no member may land outside the scratch
folder (zip-slip), symbolic links are never created or followed, and sizes and counts are
capped. Folders are copied file by file through grader.engine.safe_files: a link, hard link
or special file is never followed nor copied, but remembered (`refused`), so that the exercise
whose file it was scores 0 with the reason. Derived files (a notebook's code, UTF-8 of UTF-16,
a near name's copy) are written only into that copy. Nothing here runs submitted code.
"""

from __future__ import annotations

import ast
import hashlib
import os
import re
import stat
import zipfile
from dataclasses import dataclass, field, replace
from pathlib import Path, PurePosixPath

from grader.engine import safe_files
from grader.engine.filenames import SUFFIXES, as_utf8, name_key
from grader.i18n import N_, _, tr

MAX_FILES = 2000
MAX_BYTES = 64 * 2**20
FORBIDDEN_PACKAGES = ("attnkit", "solutions", "grader")
IGNORED_PARTS = {"__MACOSX", "__pycache__", ".git"}


class UnsafeSubmission(ValueError):
    """The entry cannot be unpacked safely (or at all); the message says why."""


class NoStudents(ValueError):
    """No student could be found in the folder; the message says which layouts were expected."""


# What `discover` expects, said when it finds no student at all.
LAYOUTS = N_(
    "no student found in {folder}. Expected one of: one folder or .zip per student (its name "
    "is the student id); a Canvas download, loose files named "
    "login_userid_submissionid_file.py (login_late_... when late); a Moodle download, one "
    "folder per student named 'Full Name_id_assignsubmission_file_' (or loose files named "
    "'Full Name_id_assignsubmission_file_file.py')."
)
# Canvas: <login or name, no underscore>[_late]_<user id>_<submission/attachment id>_<file>,
# the file's name with -N before its suffix for the Nth re-upload of that name.
CANVAS_FILE = re.compile(
    r"^(?P<name>[^_]+?)(?P<late>_late)?_(?P<user>\d+)_(?P<number>\d+)_(?P<file>.+)$",
    re.IGNORECASE,
)
CANVAS_AGAIN = re.compile(r"^(?P<stem>.+)-(?P<again>\d+)(?P<suffix>\.[^.]*)?$")
# Moodle: <Full Name>_<participant id>_assignsubmission_<plugin>_ (a folder per student and
# plugin), or, without "download submissions in folders", that prefix before each file's name.
MOODLE_ENTRY = re.compile(
    r"^(?P<name>.+)_(?P<user>\d+)_assignsubmission_(?P<plugin>[a-z]+)_(?P<file>.*)$"
)


@dataclass
class Student:
    id: str
    entry: Path
    flags: list[str] = field(default_factory=list)
    # A student of an LMS download: what they handed in, as (name in the submission, path)
    # pairs; a folder's name is "" (its files go to the top), a zip is unpacked into a folder.
    files: tuple[tuple[str, Path], ...] = ()
    # The LMS whose download they came from ("canvas", "moodle"; "" for a folder or zip of
    # their own), and Canvas's own word on their lateness: its `_late` mark on what is graded.
    lms: str = ""
    marked_late: bool = False

    @property
    def is_zip(self) -> bool:
        return not self.files and self.entry.suffix.lower() == ".zip"

    def paths(self) -> list[Path]:
        """The files and folders handed in, as they lie in the class folder."""
        return [path for _, path in self.files] if self.files else [self.entry]


def discover(submissions: Path) -> list[Student]:
    """Every student in the folder: its folders and zips, and an LMS download's files grouped
    per student. None at all is an error (NoStudents) that says what was expected, so that a
    download in a layout we do not know is never graded as an empty class."""
    if not submissions.is_dir():
        raise FileNotFoundError(_("{path} is not a folder of submissions", path=submissions))
    students, loose = [], []
    for entry in sorted(submissions.iterdir()):
        lms_entry = MOODLE_ENTRY.match(entry.name) or (
            entry.is_file() and not entry.is_symlink() and CANVAS_FILE.match(entry.name)
        )
        # A hidden file or folder is no student's, but an LMS's entry is whatever its name:
        # Moodle names a student ".." "…_assignsubmission_file_" as they are.
        if entry.name.startswith(".") and not lms_entry:
            continue
        if lms_entry:
            loose.append(entry)
        elif entry.is_symlink():  # graded as refused (unpack says why), never dropped in silence
            students.append(Student(student_id(entry.name), entry))
        elif entry.is_dir():
            students.append(Student(student_id(entry.name), entry))
        elif entry.suffix.lower() == ".zip":
            students.append(Student(student_id(entry.stem), entry))
    students += lms_students(loose, {s.id for s in students})
    if not students:
        raise NoStudents(tr(LAYOUTS).format(folder=submissions))
    return sorted(students, key=lambda s: s.id)


def lms_students(entries: list[Path], taken: set[str]) -> list[Student]:
    """Canvas's and Moodle's downloads, one Student per person: named as the LMS names them
    (Canvas's login, Moodle's full name), with the LMS's user id after it where two people
    share a name (or a folder of the class already has it)."""
    people: dict[tuple[str, str], list[tuple[str, Path, tuple[int, int]]]] = {}
    systems: dict[tuple[str, str], str] = {}
    for entry in entries:
        moodle = MOODLE_ENTRY.match(entry.name)
        if moodle:
            key = (moodle["name"], moodle["user"])
            name = moodle["file"] if moodle["file"] else ""
            people.setdefault(key, []).append((name, entry, (0, 0)))
            systems[key] = "moodle"
            continue
        canvas = CANVAS_FILE.match(entry.name)
        key = (canvas["name"], canvas["user"])  # `_late` is Canvas's word; --course decides
        people.setdefault(key, []).append((canvas["file"], entry, (0, int(canvas["number"]))))
        systems[key] = "canvas"
    names: dict[str, int] = {}
    for name, _entry in people:
        names[name] = names.get(name, 0) + 1
    students = []
    for (name, user), handed in sorted(people.items()):
        shown = student_id(name)
        if names[name] > 1 or shown in taken:
            shown = student_id(f"{name}_{user}")
        files = _newest(handed)
        marked = any(
            (match := CANVAS_FILE.match(path.name)) is not None and bool(match["late"])
            for _name, path in files
        )
        system = systems[(name, user)]
        students.append(
            Student(
                shown,
                files[0][1],
                files=tuple(files),
                lms=system,
                marked_late=system == "canvas" and marked,
            )
        )
    return students


def _newest(handed: list[tuple[str, Path, tuple[int, int]]]) -> list[tuple[str, Path]]:
    """One file per name: Canvas names the Nth re-upload of `ex8_2.py` `ex8_2-N.py`; the
    highest N (then the highest submission id) is the newest, graded under the plain name. A
    `-N` is taken as that mark only where the plain name is an exercise's file or another file
    of the student's, so that a file the student named `ex8-2.py` keeps its name."""
    from grader.records import EXERCISES

    wanted = {name_key(Path(r.file).stem + s) for r in EXERCISES.values() for s in SUFFIXES}
    plain_names = {name for name, _path, _order in handed}
    newest: dict[str, tuple[tuple[int, int], Path]] = {}
    for name, path, (_kind, number) in handed:
        again = CANVAS_AGAIN.match(name) if name else None
        order = (0, number)
        if again:
            plain = again["stem"] + (again["suffix"] or "")
            if name_key(plain) in wanted or plain in plain_names:
                name, order = plain, (int(again["again"]), number)
        key = name or str(path)  # every Moodle folder is kept
        if key not in newest or order > newest[key][0]:
            newest[key] = (order, path)
    return sorted(
        ((name if name != str(path) else "", path) for name, (_, path) in newest.items()),
        key=lambda pair: (pair[0], str(pair[1])),
    )


def sharing_a_file(students: list[Student]) -> set[str]:
    """The students whose folder holds a file that is also in a classmate's: one file under
    two names (a hard link), which only someone with access to the class folder could make.
    Both are graded (the file is read like any other); the instructor is asked to look."""
    owners: dict[tuple[int, int], set[str]] = {}
    for student in students:
        if student.is_zip or student.entry.is_symlink() or not student.entry.is_dir():
            continue
        try:
            found = safe_files.entries(student.entry)
        except OSError:
            continue
        for entry in found:
            if stat.S_ISREG(entry.info.st_mode) and entry.info.st_nlink > 1:
                inode = (entry.info.st_dev, entry.info.st_ino)
                owners.setdefault(inode, set()).add(student.id)
    return {sid for ids in owners.values() if len(ids) > 1 for sid in ids}


def student_id(name: str) -> str:
    """A folder's name as a student id that can be written as UTF-8: a byte the file system's
    encoding could not decode is written `\\xNN` instead of being lost (or stopping a writer)."""
    return name.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")


def fingerprint(student: Student) -> str:
    """A hash of what the student handed in, to notice a changed submission on resume. Read as
    `unpack` reads it: never through a link, never a FIFO (the reason stands for such a file)."""
    digest = hashlib.sha256()
    for shown, entry in student.files or (("", student.entry),):
        digest.update(os.fsencode(shown) + b"\0")  # the name it is graded under
        _digest_entry(digest, entry)
    return digest.hexdigest()


def _digest_entry(digest, entry: Path) -> None:
    if entry.is_symlink():
        digest.update(b"link: " + os.fsencode(os.readlink(entry)))
        return
    top = PurePosixPath(entry.name)
    names = (
        [top]
        if entry.is_file()
        else [top / e.path for e in safe_files.entries(entry) if not e.is_dir]
    )
    for name in names:
        digest.update(os.fsencode(str(name)))  # a name of any bytes
        try:
            digest.update(safe_files.read_under(entry.parent, name))
        except safe_files.RefusedFile as error:  # unpacking will say so; the stamp stays stable
            digest.update(f"refused: {error}".encode())


def unpack(student: Student, destination: Path) -> dict[str, str]:
    """Copy or extract the submission into `destination` (an empty folder the grader made);
    the files not copied (links, special files: path -> why), for `find_exercise_file`."""
    destination.mkdir(parents=True, exist_ok=True)
    for entry in student.paths():
        if entry.is_symlink():
            raise UnsafeSubmission(
                _(
                    "{name} is a symbolic link, not a submission: hand in the folder (or .zip) "
                    "itself",
                    name=entry.name,
                )
            )
    try:
        if student.files:
            return _unpack_download(student, destination)
        if student.is_zip:
            _extract_zip(student.entry, destination)
            return {}
        return copy_folder(student.entry, destination)
    except OSError as error:  # unreadable files, special files: this student's entry only
        name = Path(error.filename).name if getattr(error, "filename", None) else student.id
        raise UnsafeSubmission(
            _(
                "{entry}: {name} could not be copied ({error}); hand in plain, readable files",
                entry=student.entry.name,
                name=name,
                error=error.strerror or error,
            )
        ) from None


def _unpack_download(student: Student, destination: Path) -> dict[str, str]:
    """An LMS student's files under the names they handed in, folders' files at the top; a zip
    among them (the whole work in one archive, as students often upload it) unpacked into a
    folder of its name, so that the exercise files inside are found like any others."""
    refused = {}
    for name, entry in student.files:
        if name:
            try:
                data = safe_files.read_plain_path(entry)
            except safe_files.RefusedFile as error:
                refused[name] = str(error)
                continue
            if name.lower().endswith(".zip"):
                _extract_zip(entry, destination / Path(name).stem)
            else:
                safe_files.write_new(destination, name, data)
            continue
        refused.update(copy_folder(entry, destination))
    for archive in sorted(destination.iterdir()):
        if archive.is_file() and archive.suffix.lower() == ".zip" and not archive.is_symlink():
            target = destination / archive.stem
            if not target.exists():
                _extract_zip(archive, target)
    return refused


def _extract_zip(archive: Path, destination: Path) -> None:
    try:
        with zipfile.ZipFile(archive) as bundle:
            members = bundle.infolist()
            if len(members) > MAX_FILES:
                raise UnsafeSubmission(
                    _(
                        "{name} holds {count} files (at most {most})",
                        name=archive.name,
                        count=len(members),
                        most=MAX_FILES,
                    )
                )
            total = 0
            for member in members:
                target = _safe_target(member.filename, destination, archive.name)
                if target is None:
                    continue
                mode = member.external_attr >> 16
                if stat.S_ISLNK(mode):
                    raise UnsafeSubmission(
                        _(
                            "{name} contains a symbolic link ({member}); links are not accepted",
                            name=archive.name,
                            member=member.filename,
                        )
                    )
                if member.is_dir():
                    target.mkdir(parents=True, exist_ok=True)
                    continue
                target.parent.mkdir(parents=True, exist_ok=True)
                chunks = []
                with bundle.open(member) as source:
                    while chunk := source.read(2**16):  # count real bytes, not the header's
                        total += len(chunk)
                        if total > MAX_BYTES:
                            raise UnsafeSubmission(
                                _(
                                    "{name} unpacks to more than {size} MiB",
                                    name=archive.name,
                                    size=MAX_BYTES // 2**20,
                                )
                            )
                        chunks.append(chunk)
                try:
                    safe_files.write_new(target.parent, target.name, b"".join(chunks))
                except FileExistsError:
                    raise UnsafeSubmission(
                        _(
                            "{name} holds {member} twice: hand in an archive with each file once",
                            name=archive.name,
                            member=member.filename,
                        )
                    ) from None
    except (zipfile.BadZipFile, zipfile.LargeZipFile, EOFError, NotImplementedError) as error:
        raise UnsafeSubmission(
            _("{name} is not a readable zip archive: {error}", name=archive.name, error=error)
        ) from None


def _safe_target(name: str, destination: Path, archive: str) -> Path | None:
    path = PurePosixPath(name.replace("\\", "/"))
    if path.is_absolute() or ".." in path.parts or (path.parts and ":" in path.parts[0]):
        raise UnsafeSubmission(
            _(
                "{archive} has a member that points outside the archive ({member}); such "
                "archives are refused",
                archive=archive,
                member=repr(name),
            )
        )
    if not path.parts or IGNORED_PARTS & set(path.parts):
        return None
    target = destination.joinpath(*path.parts)
    if not target.resolve().is_relative_to(destination.resolve()):
        raise UnsafeSubmission(
            _(
                "{archive} member {member} escapes the scratch folder",
                archive=archive,
                member=repr(name),
            )
        )
    return target


def copy_folder(source: Path | int, destination: Path) -> dict[str, str]:
    """Copy a submission folder (or the one open as a directory fd) file by file; the entries
    refused (path -> why)."""
    try:
        copied = safe_files.copy_tree(source, destination, IGNORED_PARTS, MAX_FILES, MAX_BYTES)
    except (safe_files.TooLarge, safe_files.RefusedFile) as error:
        raise UnsafeSubmission(str(error)) from None
    return copied.refused


@dataclass(frozen=True)
class ExerciseFile:
    """Where a submission's file for one exercise is, or why there is none to grade."""

    path: Path | None
    problem: str = ""
    # No file of that name at all (flagged `missing-`, where several are `unusable-`).
    missing: bool = False
    # The file graded was handed in under this near name (flagged `renamed-`).
    renamed_from: str = ""


def find_exercise_file(
    scratch: Path, filename: str, refused: dict[str, str] | None = None
) -> ExerciseFile:
    """The one file of that name anywhere inside, or None and the reason. A notebook of the
    same stem (`ex8_2.ipynb`) will do instead: its code is written out as the file to grade.
    Where there is neither, the one file of a near name (`Ex8_2 (1).py`, see
    grader.engine.filenames) is graded as that file. Source saved as UTF-16 is graded as the
    UTF-8 it holds.

    `scratch` is a copy the grader made (`unpack`): the file to grade is written into it, as a
    new file, never through a link. `refused` are the entries the copy left out (a link, a
    FIFO...): one that bears the exercise's name is the reason it scores 0. Links and special
    files found in `scratch` itself are refused alike, never read."""
    stem = Path(filename).stem
    notebook = stem + ".ipynb"
    exact = (filename, notebook)
    wanted = {name_key(stem + suffix) for suffix in SUFFIXES}
    refused = dict(refused or {})
    plain, folders = [], []
    for entry in safe_files.entries(scratch, IGNORED_PARTS):
        relative = entry.path.as_posix()
        if entry.is_dir:
            folders.append(relative)
            continue
        problem = safe_files.refusal(relative, entry.info)
        if problem:
            refused[relative] = problem
        else:
            plain.append(relative)

    def named(paths, names):
        return sorted(p for p in paths if PurePosixPath(p).name in names)

    def near(paths):
        return sorted(
            p
            for p in paths
            if PurePosixPath(p).name not in exact
            and PurePosixPath(p).suffix.lower() in SUFFIXES
            and name_key(PurePosixPath(p).name) in wanted
        )

    for path in named(refused, exact):  # a link named ex8_2.py: never "missing", never read
        return ExerciseFile(None, refused[path])
    found, notebooks = named(plain, (filename,)), named(plain, (notebook,))
    if len(found) == 1 and len(notebooks) == 1:
        # Both forms, as the kit ships them: the one the student edited (never the stub).
        from grader.notebook.edited import edited_form

        python, book = scratch / found[0], scratch / notebooks[0]
        chosen = edited_form(python, book, filename)
        if chosen.other_edited is not None:
            return ExerciseFile(
                None,
                _(
                    "both {file} and {notebook} are edited, and differ: hand in exactly one of "
                    "them, the one to grade",
                    file=filename,
                    notebook=notebook,
                ),
            )
        if chosen.path == python:
            notebooks = []
        else:  # its code is written as the exercise's file, in place of the untouched stub
            python.unlink()
            found = []
    if found and notebooks:
        return ExerciseFile(
            None,
            _(
                "both {file} and {notebook}: hand in exactly one of them, the one to grade",
                file=filename,
                notebook=notebook,
            ),
        )
    if notebooks:
        found = notebooks
    renamed = ""
    if not found:
        for path in named(folders, exact):
            return ExerciseFile(None, _("{name} is a folder: hand in the file itself", name=path))
        candidates = near(plain) + near(refused)
        names = ", ".join(sorted(candidates))
        if len(candidates) > 1:
            return ExerciseFile(
                None,
                _(
                    "no {file}, and several files of a near name ({names}): name the one to "
                    "grade {file}",
                    file=filename,
                    names=names,
                ),
            )
        if not candidates:
            return ExerciseFile(
                None,
                _("no {file} (or {notebook}) in the submission", file=filename, notebook=notebook),
                missing=True,
            )
        if candidates[0] in refused:
            return ExerciseFile(None, refused[candidates[0]])
        renamed, found = names, candidates
        if PurePosixPath(candidates[0]).suffix.lower() == ".ipynb":
            notebooks = candidates
    if len(found) > 1:
        return ExerciseFile(
            None,
            _(
                "several files named {name} ({paths}): keep exactly one",
                name=PurePosixPath(found[0]).name,
                paths=", ".join(found),
            ),
        )
    chosen = _file_to_grade(scratch, found[0], filename, bool(notebooks))
    return replace(chosen, renamed_from=renamed) if renamed and chosen.path else chosen


def _file_to_grade(scratch: Path, relative: str, filename: str, notebook: bool) -> ExerciseFile:
    """`filename` beside the handed-in file `relative`: the notebook's code cells
    (grader.notebook.extract: magics and shell escapes are never run), the UTF-8 of UTF-16
    source, or a copy of a near name's file; each written as a new file in the copy."""
    from grader.notebook.extract import NotebookError, notebook_code

    source = scratch / relative
    try:
        original = data = safe_files.read_plain_path(source)
    except safe_files.RefusedFile as error:
        return ExerciseFile(None, str(error))
    if notebook:
        try:
            data = notebook_code(data, source.name).encode("utf-8")
        except NotebookError as error:
            return ExerciseFile(None, str(error))
    else:
        data = as_utf8(data) or data
    target = source.with_name(filename)
    try:
        if target == source:
            if data != original:
                safe_files.replace_with(target, data)
        else:
            safe_files.write_new(target.parent, filename, data)
    except FileExistsError:
        return ExerciseFile(
            None, _("{path} is in the way: remove it", path=target.relative_to(scratch))
        )
    except OSError as error:
        return ExerciseFile(
            None,
            _(
                "{file} could not be written: {error}",
                file=filename,
                error=error.strerror or error,
            ),
        )
    return ExerciseFile(target)


def scan(path: Path) -> list[str]:
    """Flags for code that reaches for the kit's own answers. Parses; never runs the code."""
    try:
        tree = ast.parse(safe_files.read_plain_path(path), filename=str(path))
    except (SyntaxError, ValueError):  # RefusedFile too: a link is never read
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
