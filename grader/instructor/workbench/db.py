"""Opening the workbench's database: SQLite in OUT/review/ (write-ahead log) unless a
PostgreSQL URL is given (`--db postgresql://…`, through psycopg 3). The URL given once is kept,
without its password, in OUT/review/database.txt, so that later commands (`grader review`,
`grader batch`, `merge`, `export`) open the same database; a password comes from libpq's
usual places then (PGPASSWORD, ~/.pgpass).

Every open migrates the database to the current schema (Alembic, programmatically), so that
next term's kit opens this term's database."""

from __future__ import annotations

import threading
from contextlib import contextmanager
from pathlib import Path

from sqlalchemy import create_engine, event
from sqlalchemy.engine import URL, make_url
from sqlalchemy.orm import sessionmaker

FOLDER = "review"
SQLITE_NAME = "review.sqlite3"
URL_FILE = "database.txt"
_lock = threading.Lock()


class DatabaseError(RuntimeError):
    """The database named cannot be used (the message says why)."""


def folder(out: Path) -> Path:
    return Path(out) / FOLDER


def _normalise(url: str) -> URL:
    try:
        parsed = make_url(url)
    except Exception as error:  # sqlalchemy.exc.ArgumentError
        raise DatabaseError(f"not a database URL: {url!r} ({error})") from None
    if parsed.drivername in ("postgresql", "postgres", "postgresql+psycopg"):
        return parsed.set(drivername="postgresql+psycopg")
    if parsed.drivername.startswith("sqlite"):
        return parsed
    raise DatabaseError(
        f"{parsed.drivername}: the workbench keeps its data in SQLite (the default) or "
        "PostgreSQL (--db postgresql://USER@HOST/NAME)"
    )


def database_url(out: Path, given: str | None = None, create: bool = True) -> URL | None:
    """The database of the batch folder `out`: `given` (then remembered), else the one
    remembered, else SQLite in OUT/review/. None when `create` is False and there is none."""
    where = folder(out)
    remembered = where / URL_FILE
    if given:
        url = _normalise(given)
        if create:
            where.mkdir(parents=True, exist_ok=True)
            if not url.drivername.startswith("sqlite"):
                remembered.write_text(
                    url.set(password=None).render_as_string(hide_password=False) + "\n",
                    encoding="utf-8",
                )
        return url
    if remembered.is_file():
        return _normalise(remembered.read_text(encoding="utf-8").strip())
    path = where / SQLITE_NAME
    if not create and not path.is_file():
        return None
    if create:
        where.mkdir(parents=True, exist_ok=True)
    return make_url(f"sqlite:///{path.resolve()}")


class Database:
    """An engine and the sessions made from it. On SQLite a session that writes takes the
    write lock when it begins (BEGIN IMMEDIATE), so that two writers wait for each other
    instead of failing; readers never wait (write-ahead log)."""

    def __init__(self, url: URL | str):
        self.url = _normalise(str(url)) if isinstance(url, str) else url
        self.sqlite = self.url.drivername.startswith("sqlite")
        if self.sqlite:
            options = {"connect_args": {"check_same_thread": False, "timeout": 30}}
            self.engine = create_engine(self.url, **options)
            self.write_engine = create_engine(self.url, **options)
            for engine, begin in ((self.engine, "BEGIN"), (self.write_engine, "BEGIN IMMEDIATE")):
                _sqlite_events(engine, begin)
        else:
            self.engine = create_engine(self.url, pool_size=10, max_overflow=20, pool_pre_ping=True)
            self.write_engine = self.engine
        self._read = sessionmaker(self.engine, expire_on_commit=False)
        self._write = sessionmaker(self.write_engine, expire_on_commit=False)

    @contextmanager
    def reading(self):
        with self._read() as session:
            yield session

    @contextmanager
    def writing(self):
        """A session committed at the end (rolled back on an exception)."""
        with self._write() as session, session.begin():
            yield session

    def migrate(self) -> None:
        migrate(self)

    def dispose(self) -> None:
        self.engine.dispose()
        self.write_engine.dispose()


def _sqlite_events(engine, begin: str) -> None:
    @event.listens_for(engine, "connect")
    def connect(dbapi_connection, _record):
        dbapi_connection.isolation_level = None  # SQLAlchemy emits BEGIN itself, below
        cursor = dbapi_connection.cursor()
        cursor.execute("PRAGMA journal_mode=WAL")
        cursor.execute("PRAGMA foreign_keys=ON")
        cursor.execute("PRAGMA busy_timeout=30000")
        cursor.execute("PRAGMA synchronous=NORMAL")
        cursor.close()

    @event.listens_for(engine, "begin")
    def do_begin(connection):
        connection.exec_driver_sql(begin)


def alembic_config(connection=None):
    from alembic.config import Config

    config = Config()
    config.set_main_option("script_location", str(Path(__file__).parent / "migrations"))
    config.attributes["connection"] = connection
    return config


def migrate(database: Database, revision: str = "head") -> None:
    """Bring the database to `revision` (the current schema): an empty one is created."""
    from alembic import command

    with _lock, database.write_engine.connect() as connection:
        command.upgrade(alembic_config(connection), revision)
        connection.commit()


def current_revision(database: Database) -> str | None:
    from alembic.runtime.migration import MigrationContext

    with database.engine.connect() as connection:
        return MigrationContext.configure(connection).get_current_revision()


def head_revision() -> str:
    from alembic.script import ScriptDirectory

    return ScriptDirectory.from_config(alembic_config()).get_current_head()


def open_database(out: Path, given: str | None = None) -> Database:
    """The batch folder's database, migrated to the current schema."""
    try:
        database = Database(database_url(out, given))
        database.migrate()
    except DatabaseError:
        raise
    except Exception as error:  # the driver's own errors: cannot connect, no such database
        raise DatabaseError(f"cannot open the review database: {error}") from None
    return database


def existing_database(out: Path) -> Database | None:
    """The batch folder's database when one was made (else None, and nothing is created)."""
    url = database_url(out, create=False)
    if url is None:
        return None
    database = Database(url)
    database.migrate()
    return database
