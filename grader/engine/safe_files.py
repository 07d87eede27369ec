"""A submission's files, read and copied without ever following a link, and derived files
written only where the grader made the folder.

A submission is whatever a student could put in a folder: a symbolic link to any file on the
machine, a hard link to one, a named pipe that hangs whoever opens it, a device. Whoever reads
it as a plain path (`read_bytes`, `shutil.copyfile`, `write_bytes`) follows the link: reads a
file the student could not (and shows it in feedback), or, worse, writes through it with the
grader's rights (as root on Gradescope: a `.pth` anywhere runs the student's code unsandboxed
at the next interpreter start). So here:

- a folder is listed through a directory fd, each entry by `lstat`, never followed;
- a file is opened relative to its folder's fd with O_NOFOLLOW|O_NONBLOCK (a FIFO does not hang
  the reader), after `lstat` says it is a regular file (a device is never opened), and checked
  again with `fstat` on the open file: the same inode, at most a bound, and, for a file with
  more than one name (a hard link), one that every user may read;
- anything else is refused with a message that names the file and says what to do, which the
  callers turn into a score of 0 for that exercise, never into a stopped batch;
- derived files (the code of a notebook, the UTF-8 of UTF-16 source, a near name's copy) are
  written with O_CREAT|O_EXCL|O_NOFOLLOW into a folder the grader itself made (`private_folder`,
  or a copy made by `copy_tree`), never into the submission's own folder.
"""

from __future__ import annotations

import errno
import os
import stat
import tempfile
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

from grader.i18n import _

MAX_FILE_BYTES = 32 * 2**20
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_NONBLOCK = getattr(os, "O_NONBLOCK", 0)
_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
_DIRECTORY = getattr(os, "O_DIRECTORY", 0)
READ_FLAGS = os.O_RDONLY | _NOFOLLOW | _NONBLOCK | _CLOEXEC
FOLDER_FLAGS = os.O_RDONLY | _DIRECTORY | _NOFOLLOW | _CLOEXEC
WRITE_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_EXCL | _NOFOLLOW | _CLOEXEC


class RefusedFile(ValueError):
    """A submission's file that is not a plain file of its own (or is too large); the message
    names it and says what to hand in instead."""

    def __init__(self, name: str, message: str):
        super().__init__(message)
        self.name = name


def refusal(name: str, info: os.stat_result, limit: int = MAX_FILE_BYTES) -> str:
    """Why the entry `name` (as `lstat` saw it) is not a file to read, or ""."""
    mode = info.st_mode
    if stat.S_ISLNK(mode):
        return _("{name} is a symbolic link: hand in the file itself, not a link to it", name=name)
    if stat.S_ISDIR(mode):
        return _("{name} is a folder: hand in the file itself", name=name)
    if stat.S_ISFIFO(mode):
        return _("{name} is a named pipe (FIFO), not a file: hand in the file itself", name=name)
    if stat.S_ISSOCK(mode):
        return _("{name} is a socket, not a file: hand in the file itself", name=name)
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return _("{name} is a device, not a file: hand in the file itself", name=name)
    if not stat.S_ISREG(mode):
        return _("{name} is not a plain file: hand in the file itself", name=name)
    # A hard link is read only where anyone may read the file anyway: a link to a file the
    # student could not read (a secret of the machine's) is refused, while a classmate who
    # links an honest student's file into their own folder costs that student nothing (the
    # two are then simply alike, for the similarity report).
    if info.st_nlink != 1 and not mode & stat.S_IROTH:
        return _(
            "{name} is a hard link (one file with {count} names) to a file not every user may "
            "read: hand in a copy of the file itself",
            name=name,
            count=info.st_nlink,
        )
    if info.st_size > limit:
        return _(
            "{name} is larger than {size} MiB: hand in the source file only",
            name=name,
            size=limit // 2**20,
        )
    return ""


def open_folder(path: Path | str, dir_fd: int | None = None, follow: bool = False) -> int:
    """A directory fd of `path` (relative to `dir_fd` if given); never through a link unless
    `follow` (for the folder a caller names, not one found inside a submission)."""
    flags = FOLDER_FLAGS if not follow else FOLDER_FLAGS & ~_NOFOLLOW
    return os.open(path, flags, dir_fd=dir_fd)


def read_plain(folder_fd: int, name: str, shown: str = "", limit: int = MAX_FILE_BYTES) -> bytes:
    """The bytes of the regular file `name` in the folder `folder_fd`, or RefusedFile (named
    `shown`, by default `name`)."""
    shown = shown or name
    try:
        before = os.stat(name, dir_fd=folder_fd, follow_symlinks=False)
    except OSError as error:
        raise RefusedFile(shown, _unreadable(shown, error)) from None
    problem = refusal(shown, before, limit)
    if problem:  # refused before opening: a device's open may do something
        raise RefusedFile(shown, problem)
    try:
        fd = os.open(name, READ_FLAGS, dir_fd=folder_fd)
    except OSError as error:  # ELOOP: it became a link since the lstat
        raise RefusedFile(shown, _unreadable(shown, error)) from None
    try:
        info = os.fstat(fd)
        problem = refusal(shown, info, limit)
        if not problem and (info.st_dev, info.st_ino) != (before.st_dev, before.st_ino):
            problem = _("{name} changed while it was read: hand it in again", name=shown)
        if problem:
            raise RefusedFile(shown, problem)
        chunks, total = [], 0
        while chunk := os.read(fd, 2**16):
            total += len(chunk)
            if total > limit:
                raise RefusedFile(
                    shown,
                    _("{name} grew past {size} MiB while read", name=shown, size=limit // 2**20),
                )
            chunks.append(chunk)
        return b"".join(chunks)
    except OSError as error:
        raise RefusedFile(shown, _unreadable(shown, error)) from None
    finally:
        os.close(fd)


def read_plain_path(path: Path, limit: int = MAX_FILE_BYTES) -> bytes:
    """`read_plain` of a path: its folder (as given, links allowed: the caller's) opened, the
    file itself never followed."""
    path = Path(path)
    try:
        folder = open_folder(path.parent, follow=True)
    except OSError as error:
        raise RefusedFile(path.name, _unreadable(path.name, error)) from None
    try:
        return read_plain(folder, path.name, limit=limit)
    finally:
        os.close(folder)


def _unreadable(name: str, error: OSError) -> str:
    if error.errno == errno.ELOOP:
        return _("{name} is a symbolic link: hand in the file itself, not a link to it", name=name)
    if error.errno == errno.ENOENT:
        return _("{name} is missing (it vanished while the submission was read)", name=name)
    return _(
        "{name} could not be read ({error}): hand in a plain, readable file",
        name=name,
        error=error.strerror or error,
    )


@dataclass(frozen=True)
class Entry:
    path: PurePosixPath  # relative to the folder listed
    info: os.stat_result  # lstat: the entry itself, never what a link points to

    @property
    def is_dir(self) -> bool:
        return stat.S_ISDIR(self.info.st_mode)


def entries(folder: Path, ignored=frozenset(), max_entries: int = 100_000) -> list[Entry]:
    """Every entry under `folder` (sorted, without those inside an `ignored` folder name),
    listed through directory fds: a link to a folder is an entry, never a folder entered."""
    top = open_folder(folder, follow=True)
    try:
        return entries_of_fd(top, ignored, max_entries)
    finally:
        os.close(top)


def _list(fd: int, here: PurePosixPath, ignored, found: list[Entry], most: int) -> None:
    with os.scandir(fd) as listing:
        names = sorted(entry.name for entry in listing)
    for name in names:
        if name in ignored:
            continue
        try:
            info = os.stat(name, dir_fd=fd, follow_symlinks=False)
        except OSError:
            continue  # vanished between the listing and the look
        found.append(Entry(here / name, info))
        if len(found) > most:
            raise RefusedFile(
                str(here / name), _("more than {count} files and folders", count=most)
            )
        if stat.S_ISDIR(info.st_mode):
            try:
                inner = open_folder(name, dir_fd=fd)
            except OSError:
                continue  # unreadable: its files are missing, as the caller will say
            try:
                _list(inner, here / name, ignored, found, most)
            finally:
                os.close(inner)


def private_folder(prefix: str = "attnkit-") -> Path:
    """A fresh folder only this user can enter (mode 0700), to write derived files into."""
    return Path(tempfile.mkdtemp(prefix=prefix))


def write_new(folder: Path, name: str, data: bytes, mode: int = 0o644) -> Path:
    """Write `data` as the new file `name` in `folder` (a folder the grader made): created
    there, never opened if anything of that name is there already (FileExistsError), never
    through a link."""
    fd_folder = open_folder(folder, follow=True)
    try:
        fd = os.open(name, WRITE_FLAGS, mode, dir_fd=fd_folder)
        with os.fdopen(fd, "wb") as sink:
            sink.write(data)
    finally:
        os.close(fd_folder)
    return Path(folder) / name


def replace_with(path: Path, data: bytes) -> None:
    """`path` (a file in a folder the grader made) now holds `data`: a new file written beside
    it, then renamed over it (a rename replaces a link itself, never what it points to)."""
    path = Path(path)
    spare = f".{path.name}.attnkit-new"
    folder = open_folder(path.parent, follow=True)
    try:
        fd = os.open(spare, WRITE_FLAGS, 0o644, dir_fd=folder)
        with os.fdopen(fd, "wb") as sink:
            sink.write(data)
        os.replace(spare, path.name, src_dir_fd=folder, dst_dir_fd=folder)
    finally:
        os.close(folder)


@dataclass
class Copied:
    """What `copy_tree` made: the files copied, and those refused (path -> why)."""

    files: list[str] = field(default_factory=list)
    refused: dict[str, str] = field(default_factory=dict)


class TooLarge(ValueError):
    """More files or bytes than a submission may have."""


def copy_tree(
    source: Path | int,
    destination: Path,
    ignored=frozenset(),
    max_files: int = 2000,
    max_bytes: int = 64 * 2**20,
) -> Copied:
    """Copy the plain files under `source` (a folder, or a directory fd) into `destination`
    (made here, or an empty folder the grader made), folders as folders. Links, hard links,
    special files and files over the bound are not copied but listed in `refused`, so that
    the exercise whose file that was can say why; too many files or bytes in all is
    TooLarge."""
    destination = Path(destination)
    destination.mkdir(mode=0o755, parents=True, exist_ok=True)
    copied, count, total = Copied(), 0, 0
    top = source if isinstance(source, int) else open_folder(source, follow=True)
    shown = "the submission" if isinstance(source, int) else Path(source).name
    try:
        listed = entries_of_fd(top, ignored)
        for entry in listed:
            relative = entry.path.as_posix()
            if entry.is_dir:
                (destination / relative).mkdir(mode=0o755, exist_ok=True)
                continue
            problem = refusal(relative, entry.info)
            if problem:
                copied.refused[relative] = problem
                continue
            count, total = count + 1, total + entry.info.st_size
            if count > max_files or total > max_bytes:
                raise TooLarge(
                    _(
                        "{name} has more than {count} files or {size} MiB",
                        name=shown,
                        count=max_files,
                        size=max_bytes // 2**20,
                    )
                )
            try:
                data = _read_at(top, entry.path, relative)
            except RefusedFile as error:
                copied.refused[relative] = str(error)
                continue
            write_new(destination / entry.path.parent, entry.path.name, data)
            copied.files.append(relative)
    finally:
        if top is not source:
            os.close(top)
    return copied


def entries_of_fd(fd: int, ignored=frozenset(), max_entries: int = 100_000) -> list[Entry]:
    """`entries` of the folder open as `fd` (a folder opened before privileges were dropped)."""
    found: list[Entry] = []
    _list(fd, PurePosixPath(), ignored, found, max_entries)
    return sorted(found, key=lambda e: e.path.parts)


def read_under(folder: Path, relative: PurePosixPath | str) -> bytes:
    """The plain file `relative` under `folder` (the caller's, links allowed), no link
    followed on the way below it."""
    top = open_folder(folder, follow=True)
    try:
        return _read_at(top, PurePosixPath(relative), str(relative))
    finally:
        os.close(top)


def _read_at(top: int, relative: PurePosixPath, shown: str) -> bytes:
    """Read `relative` under the folder `top`, each folder on the way opened without
    following a link."""
    fds = [top]
    try:
        for part in relative.parts[:-1]:
            try:
                fds.append(open_folder(part, dir_fd=fds[-1]))
            except OSError as error:
                raise RefusedFile(shown, _unreadable(shown, error)) from None
        return read_plain(fds[-1], relative.name, shown)
    finally:
        for fd in fds[1:]:
            os.close(fd)
