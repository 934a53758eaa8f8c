"""Reading an event log that cannot be written (``SqliteEventStore(read_only=...)``).

- When: ``read_only=True``; else ``$LEAN_CTX_READ_ONLY`` set to anything but ``0``/``false``/
  ``no``/``off``/empty; else (``read_only=None``) when the writable open fails because the file
  or its directory cannot be written. ``read_only=False`` never falls back.
- How readers open it (measured with SQLite 3.54 on a WAL log whose directory the user cannot
  write): ``mode=ro`` needs the ``-shm`` to exist (it may be read-only) or to be creatable, and
  then sees what the ``-wal`` holds; ``immutable=1`` needs neither but ignores the ``-wal``. So
  ``mode=ro`` first; ``immutable=1`` when that cannot open and no ``-wal`` holds changes; refused
  (``STORE_OPEN_FAILED``, saying why) when a ``-wal`` holds changes that only a ``-shm`` could
  make visible. A missing log is ``STORE_NOT_FOUND`` (a read-only open creates nothing).
- Writing: ``transaction()`` runs on the thread's read connection inside a savepoint, after
  copying every table that is not the log's own (projections, checkpoints, caches) into a TEMP
  table of the same name, which SQLite resolves before the file's. A projection that is behind
  catches up in those copies (they last as long as the connection), so eventual projections can
  still be read. Appending, or writing the log's own tables (the FTS index), is
  ``STORE_READ_ONLY`` (exit 1). The database file is never changed.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

import apsw

from ..errors import StoreError
from .sqlite_tx import SqliteTx

if TYPE_CHECKING:
    from .sqlite_store import SqliteEventStore

READ_ONLY_ENV = "LEAN_CTX_READ_ONLY"
_OFF = ("", "0", "false", "no", "off")
# the log's own tables (schema/events.sql): never copied, so writing them stays refused
_LOG_TABLES = ("events", "events_fts_state")
_MARK = "lean_ctx_scratch"
_SAVEPOINT = "lean_ctx_scratch_tx"
# the name in a stored CREATE [UNIQUE] INDEX statement, as it was written (maybe quoted)
_INDEX = re.compile(r'^CREATE (UNIQUE )?INDEX ("(?:[^"]|"")*"|`(?:[^`]|``)*`|\[[^\]]*\]|[^\s(]+)\s', re.IGNORECASE)


def wanted(read_only: bool | None) -> bool | None:
    """``read_only`` if given, else True when ``$LEAN_CTX_READ_ONLY`` asks for it, else None."""
    if read_only is not None:
        return read_only
    return True if os.environ.get(READ_ONLY_ENV, "").strip().lower() not in _OFF else None


def can_fall_back(exc: BaseException) -> bool:
    """Whether a failed writable open may mean "not writable" (rather than busy or corrupt)."""
    return isinstance(exc, (apsw.ReadOnlyError, apsw.CantOpenError, apsw.PermissionsError, apsw.IOError,
                            PermissionError))


def _probe(uri: str) -> int:
    """Open ``uri`` read-only and read its schema (which is when SQLite needs the -shm);
    the log's ``user_version``."""
    conn = apsw.Connection(uri, flags=apsw.SQLITE_OPEN_READONLY | apsw.SQLITE_OPEN_URI)
    try:
        conn.execute("SELECT count(*) FROM sqlite_master").fetchall()
        version = conn.execute("PRAGMA user_version").fetchall()[0][0]
        return version if isinstance(version, int) else 0
    finally:
        conn.close()


def reader_uri(path: str) -> tuple[str, int]:
    """The URI read-only connections to ``path`` open (see the module docstring), and the
    log's ``user_version``."""
    if not os.path.isfile(path):
        raise StoreError("STORE_NOT_FOUND", f"there is no event log at {path}, and a read-only open does not create "
                         "one; check --db / the project, or open it writable once", path=path)
    base = "file:" + quote(os.path.abspath(path))
    try:
        return base + "?mode=ro", _probe(base + "?mode=ro")
    except (apsw.CantOpenError, apsw.ReadOnlyError) as exc:
        wal = f"{path}-wal"
        if os.path.exists(wal) and os.path.getsize(wal) > 0:
            raise StoreError(
                "STORE_OPEN_FAILED",
                f"cannot read {path} read-only: its -wal file holds changes not yet in the database file, and "
                "SQLite cannot create the -shm index it needs to read them (the directory is not writable); open "
                "the log once with write access (that folds the -wal in), or copy its files to a writable place",
                path=path,
            ) from exc
        return base + "?immutable=1", _probe(base + "?immutable=1")


_ONLY_READ = "verbs that only read work on it"
_SETUP = ("the tables kept beside its events cannot be set up for this version of lean-ctx (it was last written "
          "by another one, or this one needs a table it lacks)")


def read_only_error(store: SqliteEventStore, what: str = "nothing can be recorded",
                    hint: str = _ONLY_READ) -> StoreError:
    return StoreError(
        "STORE_READ_ONLY",
        f"the event log at {store.path} is open read-only ({store.read_only_reason}), so {what}: run this where "
        f"the log is writable ({hint})",
        path=store.path,
    )


class ScratchTx(SqliteTx):
    """A transaction of a read-only store: reads as usual, refuses to append."""

    def append(self, *args: Any, **kwargs: Any) -> Any:
        raise read_only_error(self.store)


def _shadow(conn: apsw.Connection) -> None:
    """Copy every table of the file that is not the log's own into TEMP (rows and indexes),
    once per connection."""
    if conn.execute("SELECT 1 FROM temp.sqlite_master WHERE name = ?", (_MARK,)).fetchone():
        return
    names = [
        str(name) for name, kind in conn.execute("SELECT name, type FROM pragma_table_list WHERE schema = 'main'")
        if kind == "table" and name not in _LOG_TABLES and not str(name).startswith(("sqlite_", "events_fts"))
    ]
    for name in names:
        sql = str(conn.execute("SELECT sql FROM main.sqlite_master WHERE type = 'table' AND name = ?",
                               (name,)).fetchall()[0][0])
        conn.execute("CREATE TEMP TABLE" + sql[len("CREATE TABLE"):])  # stored text starts "CREATE TABLE "
        q = name.replace('"', '""')
        conn.execute(f'INSERT INTO temp."{q}" SELECT * FROM main."{q}"')
    marks = ",".join("?" * len(names))
    for index, ddl in conn.execute(
        f"SELECT name, sql FROM main.sqlite_master WHERE type = 'index' AND sql IS NOT NULL AND tbl_name IN ({marks})",
        names,
    ).fetchall():
        m = _INDEX.match(str(ddl))
        if m is not None:
            q = str(index).replace('"', '""')
            conn.execute(f'CREATE {m.group(1) or ""}INDEX temp."{q}" ' + str(ddl)[m.end():])
    conn.execute(f"CREATE TEMP TABLE {_MARK} (x)")


@contextmanager
def scratch(store: SqliteEventStore, conn: apsw.Connection) -> Iterator[ScratchTx]:
    """A transaction on ``conn`` (a read-only connection) whose writes land in TEMP copies."""
    conn.execute(f"SAVEPOINT {_SAVEPOINT}")
    try:
        _shadow(conn)
        yield ScratchTx(store, conn)
    except BaseException as exc:
        conn.execute(f"ROLLBACK TO {_SAVEPOINT}")
        conn.execute(f"RELEASE {_SAVEPOINT}")
        if isinstance(exc, apsw.ReadOnlyError):  # a write the TEMP copies do not take: a table of the file
            raise read_only_error(store, _SETUP, "once is enough") from exc
        raise
    conn.execute(f"RELEASE {_SAVEPOINT}")
