"""For the workbench's tests (tests/grader/test_review_*.py) and its benchmark: a throwaway
PostgreSQL server, the workbench served on a free port, a browser.

`postgres()` starts Debian's PostgreSQL (initdb, then postgres on 127.0.0.1 with a socket in
its own folder) as an unprivileged user when the tests run as root (postgres refuses root), and
yields a URL; `POSTGRES_SKIP` says why it cannot run here (no binaries), or is None. In CI
(CI=1) a missing server or browser is a failure, not a skip, as for the report's browser test."""

from __future__ import annotations

import contextlib
import glob
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
import threading
import time
from pathlib import Path

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]


def postgres_bin() -> Path | None:
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/postgres"))
    if found:
        return Path(found[-1]).parent
    which = shutil.which("postgres")
    return Path(which).parent if which else None


def _skip_reason() -> str | None:
    folder = postgres_bin()
    if folder is None or not (folder / "initdb").exists():
        return (
            "PostgreSQL's server binaries (initdb, postgres) are not installed: Debian's "
            "`postgresql` package provides them"
        )
    try:
        import psycopg  # noqa: F401
    except ImportError:
        return "psycopg (3) is not installed: pip install 'psycopg[binary]'"
    return None


POSTGRES_SKIP = _skip_reason()


def browser_skip() -> str | None:
    try:
        import playwright  # noqa: F401
    except ImportError:
        return "Playwright for Python is not installed (pip install playwright)"
    if not Path(CHROMIUM).exists():
        return f"no {CHROMIUM} (Debian's chromium)"
    return None


def skip_or_fail(reason: str):
    import pytest

    if os.environ.get("CI"):
        pytest.fail(f"{reason}; in CI this test must run")
    pytest.skip(reason)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@contextlib.contextmanager
def postgres(database: str = "review"):
    """A PostgreSQL server of its own, removed afterwards; yields its URL (database made)."""
    folder = postgres_bin()
    base = Path(tempfile.mkdtemp(prefix="attnkit-pg-"))
    data, sockets = base / "data", base / "socket"
    kwargs = {}
    if os.geteuid() == 0:
        user = pwd.getpwnam("nobody")
        os.chmod(base, 0o755)
        for path in (data, sockets):
            path.mkdir()
            os.chown(path, user.pw_uid, user.pw_gid)
        kwargs = {"user": user.pw_uid, "group": user.pw_gid, "extra_groups": []}
        kwargs["cwd"] = str(base)
        kwargs["env"] = {"PATH": os.environ.get("PATH", ""), "LANG": "C.UTF-8", "HOME": str(base)}
    else:
        sockets.mkdir()
    port = free_port()
    subprocess.run(
        [
            str(folder / "initdb"),
            "-D",
            str(data),
            "-U",
            "postgres",
            "--auth=trust",
            "-E",
            "UTF8",
            "--no-sync",
            "--locale=C",
        ],
        check=True,
        capture_output=True,
        timeout=120,
        **kwargs,
    )
    log = open(base / "server.log", "wb")  # noqa: SIM115
    server = subprocess.Popen(
        [
            str(folder / "postgres"),
            "-D",
            str(data),
            "-p",
            str(port),
            "-c",
            "listen_addresses=127.0.0.1",
            "-c",
            f"unix_socket_directories={sockets}",
            "-c",
            "fsync=off",
            "-c",
            "synchronous_commit=off",
            "-c",
            "full_page_writes=off",
            "-c",
            "max_connections=100",
        ],
        stdout=log,
        stderr=subprocess.STDOUT,
        **kwargs,
    )
    try:
        import psycopg

        deadline = time.monotonic() + 60
        while True:
            try:
                with psycopg.connect(
                    host="127.0.0.1",
                    port=port,
                    user="postgres",
                    dbname="postgres",
                    autocommit=True,
                    connect_timeout=2,
                ) as connection:
                    connection.execute(f'CREATE DATABASE "{database}"')
                break
            except psycopg.OperationalError:
                if server.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(
                        "PostgreSQL did not start: "
                        + (base / "server.log").read_text(errors="replace")[-2000:]
                    ) from None
                time.sleep(0.2)
        yield f"postgresql://postgres@127.0.0.1:{port}/{database}"
    finally:
        server.terminate()
        try:
            server.wait(timeout=30)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()
        log.close()
        shutil.rmtree(base, ignore_errors=True)


class Served:
    """The workbench's app served by uvicorn in a thread of this process."""

    def __init__(self, app, port: int):
        import uvicorn

        self.port = port
        self.url = f"http://127.0.0.1:{port}"
        config = uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning")
        self.server = uvicorn.Server(config)
        self.thread = threading.Thread(target=self.server.run, daemon=True)

    def __enter__(self):
        self.thread.start()
        deadline = time.monotonic() + 30
        while not self.server.started:
            if time.monotonic() > deadline or not self.thread.is_alive():
                raise RuntimeError("the workbench did not start")
            time.sleep(0.05)
        return self

    def __exit__(self, *exc):
        self.server.should_exit = True
        self.thread.join(timeout=10)


def serve(database, out=None) -> Served:
    from grader.instructor.workbench.app import make_app

    port = free_port()
    return Served(make_app(database, out, (f"http://127.0.0.1:{port}",)), port)


@contextlib.contextmanager
def browser():
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            yield launched
        finally:
            launched.close()


def synthetic_batch(out: Path, students: dict[str, str], exercise: str = "8-3") -> Path:
    """A batch folder as `grader batch --exercise 8-3 --written` leaves it, without grading:
    each student's result (every part passed but the first, 0) and their written answer."""
    import csv
    import json

    from grader.instructor.files import result_path
    from grader.records import get_exercise
    from grader.vocabulary import untrusted

    record = get_exercise(exercise)
    out = Path(out)
    (out / "results").mkdir(parents=True, exist_ok=True)
    (out / "written").mkdir(exist_ok=True)
    (out / "feedback").mkdir(exist_ok=True)
    for student in students:
        parts = [
            {
                "name": part.name,
                "score": 0.0 if number == 0 else float(part.points),
                "max_score": float(part.points),
                "status": "failed" if number == 0 else "passed",
                "checks": [],
            }
            for number, part in enumerate(record.parts)
        ]
        score = sum(p["score"] for p in parts)
        document = {
            "student": student,
            "seed": 1,
            "public_seed": 0,
            "flags": [],
            "total": score,
            "max_total": record.max_score,
            "exercises": [
                {
                    "exercise": exercise,
                    "parts": parts,
                    "score": score,
                    "max_score": record.max_score,
                    "flags": [],
                }
            ],
            "mistakes": {},
            "stamp": "synthetic",
            "final": True,
        }
        result_path(out, student).write_text(json.dumps(document), encoding="utf-8")
    with open(out / "written" / "review.csv", "w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle, lineterminator="\n")
        writer.writerow(
            ["student", "exercise", "part", "max_points", "points", "comment", "answer"]
        )
        for student, answer in students.items():
            for part in record.written:
                writer.writerow(
                    [
                        untrusted.csv_cell(student),
                        exercise,
                        part.name,
                        f"{part.points:g}",
                        "",
                        "",
                        untrusted.csv_cell(answer, 20_000, newlines=True),
                    ]
                )
    (out / "batch.json").write_text(
        json.dumps({"exercises": [exercise], "format": 1, "isolation": "synthetic", "seed": 1}),
        encoding="utf-8",
    )
    return out
