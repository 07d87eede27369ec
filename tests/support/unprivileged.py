"""Run the kit as an ordinary user: a system user, a venv of the system Python, a copy of the kit.

Tests that must see what the grader does where it does not run as root build an
`UnprivilegedKit` (as root) and run commands through `UnprivilegedKit.run`. Everything lives
in one folder under /tmp (not pytest's tmp_path: /tmp/pytest-of-root is 0700), removed by
`cleanup()`:

    <base>/venv            /usr/bin/python3 -m venv --without-pip, plus a .pth naming the two below
    <base>/site-packages   the running interpreter's packages, hard-linked (or copied)
    <base>/kit             a copy of the repository's files: `import grader` finds this one
    <base>/home            the user's HOME

The venv's Python must have the running interpreter's major.minor version (C extensions are
built for it); `SKIP_REASON` says why a kit cannot be built here, or is None.
"""

from __future__ import annotations

import os
import pwd
import shutil
import signal
import site
import stat
import subprocess
import sys
import tempfile
import time
from pathlib import Path

USER = "attnkit-student"
SYSTEM_PYTHON = Path("/usr/bin/python3")
REPO = Path(__file__).resolve().parents[2]
# Where `git ls-files` is not available: what the kit is made of.
KIT_PARTS = ("attnkit", "grader", "solutions", "exercises", "examples", "pyproject.toml")
# This project's editable install: it would send the user's Python back to the checkout.
EDITABLE = ("__editable__*", "*attnkit*.pth", "attnkit-*.dist-info")


def _sbin_path() -> str:
    return os.pathsep.join([os.environ.get("PATH", ""), "/usr/sbin", "/sbin"])


def _skip_reason() -> str | None:
    if not sys.platform.startswith("linux"):
        return "running the kit as another user is set up for Linux only"
    if os.geteuid() != 0:
        return "making a user and running commands as it needs root"
    if not SYSTEM_PYTHON.exists():
        return f"no {SYSTEM_PYTHON} to make the user's venv with"
    try:
        found = subprocess.run(
            [str(SYSTEM_PYTHON), "-c", "import sys, venv; print(*sys.version_info[:2])"],
            capture_output=True,
            text=True,
            timeout=30,
        )
    except (OSError, subprocess.TimeoutExpired) as error:
        return f"{SYSTEM_PYTHON} does not run: {error}"
    if found.returncode != 0:
        return f"{SYSTEM_PYTHON} has no venv module: {found.stderr.strip()[-200:]}"
    version = tuple(int(n) for n in found.stdout.split())
    if version != tuple(sys.version_info[:2]):
        return (
            f"{SYSTEM_PYTHON} is Python {'.'.join(map(str, version))}, the tests run on "
            f"{sys.version_info[0]}.{sys.version_info[1]}: the installed C extensions would not "
            "load in it"
        )
    if shutil.which("useradd", path=_sbin_path()) is None:
        return "no useradd to make the user with"
    return None


SKIP_REASON: str | None = _skip_reason()


def ensure_user(name: str = USER) -> tuple[int, int]:
    """The uid and gid of system user `name`, made (no home, no login shell) if missing."""
    try:
        entry = pwd.getpwnam(name)
    except KeyError:
        useradd = shutil.which("useradd", path=_sbin_path())
        made = subprocess.run(
            [useradd, "--system", "--no-create-home", "--shell", "/usr/sbin/nologin", name],
            capture_output=True,
            text=True,
        )
        try:  # another test process may have made it at the same moment
            entry = pwd.getpwnam(name)
        except KeyError:
            raise RuntimeError(f"useradd {name} failed: {made.stderr.strip()}") from None
    return entry.pw_uid, entry.pw_gid


def _open_up(root: Path) -> None:
    """Folders o+rx and files o+r under `root` (for copies this process made, never links)."""
    for folder, _, files in os.walk(root):
        os.chmod(folder, os.stat(folder).st_mode | 0o005)
        for name in files:
            path = os.path.join(folder, name)
            mode = os.lstat(path).st_mode
            if stat.S_ISREG(mode):
                os.chmod(path, mode | 0o004)


def _editable(name: str) -> bool:
    from fnmatch import fnmatch

    return any(fnmatch(name, pattern) for pattern in EDITABLE)


def link_packages(source: Path, destination: Path) -> None:
    """A hard-linked copy of `source` (a site-packages folder) at `destination`, readable by all,
    without this project's editable install. Files not already o+r are copied, not linked (so
    that no inode shared with the original is changed); everything is copied where hard links
    cannot be made (another file system)."""
    linked = subprocess.run(
        ["cp", "-al", str(source), str(destination)], capture_output=True, text=True
    )
    if linked.returncode != 0:
        shutil.rmtree(destination, ignore_errors=True)
        shutil.copytree(
            source,
            destination,
            symlinks=True,
            ignore=lambda _, names: [n for n in names if _editable(n)],
        )
        _open_up(destination)
        return
    for name in os.listdir(destination):
        if _editable(name):
            path = destination / name
            if path.is_dir() and not path.is_symlink():
                shutil.rmtree(path)
            else:
                path.unlink()
    for folder, _, files in os.walk(destination):
        os.chmod(folder, os.stat(folder).st_mode | 0o005)  # a new folder: ours to change
        for name in files:
            path = os.path.join(folder, name)
            mode = os.lstat(path).st_mode
            if stat.S_ISREG(mode) and not mode & stat.S_IROTH:
                private = path + ".attnkit-copy"
                shutil.copy2(path, private)
                os.chmod(private, stat.S_IMODE(mode) | 0o004)
                os.replace(private, path)


def running_site_packages() -> list[Path]:
    """The running interpreter's site-packages folders (the venv pytest runs in), each once."""
    found: list[Path] = []
    for entry in site.getsitepackages():
        path = Path(entry).resolve()
        if path.is_dir() and path not in found:
            found.append(path)
    return found


def kit_files(repo: Path) -> list[str]:
    """The kit's files, relative to `repo`: what git tracks (and new files it does not ignore)."""
    try:
        listed = subprocess.run(
            [
                "git",
                "-C",
                str(repo),
                "ls-files",
                "-z",
                "--cached",
                "--others",
                "--exclude-standard",
            ],
            capture_output=True,
            check=True,
        )
        names = [n for n in listed.stdout.decode().split("\0") if n]
    except (OSError, subprocess.CalledProcessError):
        names = []
        for part in KIT_PARTS:
            path = repo / part
            if path.is_file():
                names.append(part)
            elif path.is_dir():
                names.extend(
                    str(p.relative_to(repo))
                    for p in path.rglob("*")
                    if p.is_file() and "__pycache__" not in p.parts
                )
    return names


def copy_kit(repo: Path, destination: Path) -> Path:
    """A copy (never links: submissions try to write into the kit) of the kit's files, o+r."""
    destination.mkdir(parents=True)
    for name in kit_files(repo):
        source = repo / name
        if not source.is_file() or source.is_symlink():  # deleted, or moved by work in progress
            continue
        target = destination / name
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(source, target)
    _open_up(destination)
    return destination


def run_command(
    command: list[str],
    cwd: Path,
    env: dict[str, str],
    timeout: float,
    user: int | None = None,
    group: int | None = None,
) -> subprocess.CompletedProcess:
    """`command` in a session of its own (so that nothing it starts shares the caller's process
    group), as `user` if given; on timeout its whole process group is killed."""
    extra = {} if user is None else {"user": user, "group": group, "extra_groups": []}
    process = subprocess.Popen(
        command,
        cwd=cwd,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
        **extra,
    )
    try:
        out, err = process.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        try:
            os.killpg(process.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        try:
            out, err = process.communicate(timeout=10)
        except subprocess.TimeoutExpired:
            out, err = "", ""
        raise subprocess.TimeoutExpired(command, timeout, out, err) from None
    return subprocess.CompletedProcess(command, process.returncode, out, err)


class UnprivilegedKit:
    """The kit installed for user `attnkit-student` in a fresh folder under /tmp (as root)."""

    def __init__(self, repo: Path = REPO, prefix: str = "attnkit-unprivileged-"):
        if SKIP_REASON:
            raise RuntimeError(SKIP_REASON)
        started = time.monotonic()
        self.uid, self.gid = ensure_user()
        self.base = Path(tempfile.mkdtemp(prefix=prefix, dir="/tmp"))
        try:
            self.base.chmod(0o755)
            self.home = self.writable_folder("home")
            venv = self.base / "venv"
            subprocess.run(
                [str(SYSTEM_PYTHON), "-m", "venv", "--without-pip", str(venv)],
                check=True,
                capture_output=True,
            )
            _open_up(venv)
            self.python = venv / "bin" / "python"
            packages = []
            for index, source in enumerate(running_site_packages()):
                packages.append(self.base / ("site-packages" + (f"-{index}" if index else "")))
                link_packages(source, packages[-1])
            self.kit = copy_kit(repo, self.base / "kit")
            version = f"python{sys.version_info[0]}.{sys.version_info[1]}"
            own = venv / "lib" / version / "site-packages"
            lines = [str(self.kit)]  # a plain path: `import grader` finds the copy
            # addsitedir, not a path: the copies' own .pth files are processed too
            lines += [f"import site; site.addsitedir({str(p)!r})" for p in packages]
            (own / "attnkit-unprivileged.pth").write_text("\n".join(lines) + "\n")
            (own / "attnkit-unprivileged.pth").chmod(0o644)
        except BaseException:
            self.cleanup()
            raise
        self.seconds = time.monotonic() - started

    def writable_folder(self, name: str) -> Path:
        """A folder `<base>/<name>` (made if missing) owned by the user."""
        folder = self.base / name
        folder.mkdir(parents=True, exist_ok=True)
        folder.chmod(0o755)
        os.chown(folder, self.uid, self.gid)
        return folder

    def give(self, root: Path) -> None:
        """Make `root` and everything under it the user's (what a test wrote there as root)."""
        os.chown(root, self.uid, self.gid, follow_symlinks=False)
        for folder, dirs, files in os.walk(root):
            for name in dirs + files:
                os.chown(os.path.join(folder, name), self.uid, self.gid, follow_symlinks=False)

    def env(self, extra: dict[str, str] | None = None) -> dict[str, str]:
        return {
            "PATH": f"{self.python.parent}:/usr/local/bin:/usr/bin:/bin",
            "LANG": "C.UTF-8",
            "HOME": str(self.home),
            "KERAS_BACKEND": "tensorflow",
            "TF_CPP_MIN_LOG_LEVEL": "2",
            **(extra or {}),
        }

    def run(
        self,
        args: list[str],
        cwd: Path,
        timeout: float,
        env_extra: dict[str, str] | None = None,
        as_root: bool = False,
    ) -> subprocess.CompletedProcess:
        """`<venv python> *args` as the user (or as root, with this installation that every user
        can read), with a minimal environment; output as text."""
        return run_command(
            [str(self.python), *args],
            cwd,
            self.env(env_extra),
            timeout,
            user=None if as_root else self.uid,
            group=None if as_root else self.gid,
        )

    def cleanup(self) -> None:
        for _ in range(3):  # something the user started may still be writing there
            shutil.rmtree(self.base, ignore_errors=True)
            if not self.base.exists():
                return
            time.sleep(0.5)
