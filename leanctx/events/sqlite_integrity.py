"""Whether a SQLite file is a lean-ctx log, and whether the log is still whole and protected.

- ``identify``, before anything is written (the WAL switch included): a file is a log when it
  holds the log's tables (``events``, ``events_fts_state``) with a ``user_version`` up to this
  schema's (0 too: ``sqlite3 .dump`` does not carry it), and new when it holds nothing at all
  (no schema object, ``user_version`` and ``application_id`` 0). Any other SQLite database is
  ``NOT_A_LEAN_CTX_LOG``, a log of a newer schema ``STORE_SCHEMA_NEWER`` (a file that is not
  SQLite stays ``STORE_OPEN_FAILED``, from SQLite). Either way the file is left as it was.
- ``problems``, cheap (one query of indexed lookups, and the ``sqlite_master`` rows of the log's
  triggers): ``LOG_TRUNCATED`` when a projection checkpoint is past the head (events were
  removed from the end: only the positions they held can tell, the chain of what is left is
  intact); ``TRIGGERS_MISSING`` when an immutability trigger is gone or is not the schema's.
- ``CheckedTx`` runs them inside each write transaction, before its first append: an append on
  a log with a problem is refused with the problem's code (so a long-running process notices
  what another one did to the file). The triggers' rows are read again only when the schema
  cookie changed (any DROP/CREATE bumps it), so the check costs one query, whose head the append
  uses instead of reading its own. Transactions that do not append (projection catch-up,
  ``lean-ctx replay``, ``restore_triggers``) still run: they are how a log is repaired.
- Missing triggers are not put back on open, which would hide the tampering: they are restored
  by the explicit ``restore_triggers`` (``lean-ctx db restore-triggers``).
- A full-text index past the head (it indexed events that are gone) is emptied and rebuilt by
  the next catch-up (``reset_fts_past``): its rows would otherwise answer for the new events
  that take those positions.
"""

from __future__ import annotations

import functools
import re
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

import apsw

from ..errors import StoreError
from .codec import GENESIS_HASH
from .sqlite_tx import SqliteTx
from .store import VerifyResult

if TYPE_CHECKING:
    from .sqlite_store import SqliteEventStore

LOG_TABLES = ("events", "events_fts_state")
_TRIGGER = re.compile(r"CREATE TRIGGER IF NOT EXISTS (\w+)\b.*?\bEND;", re.DOTALL)
# plain PRAGMAs and one small query: on the fresh connection of an open, preparing is what costs
_IDENTIFY = ("SELECT EXISTS (SELECT 1 FROM sqlite_master),"
             f" (SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name IN {LOG_TABLES!r})")
_TABLES = "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite!_%' ESCAPE '!'"
_LAST = "(SELECT {} FROM events ORDER BY position DESC LIMIT 1)"
_STATE = (f"SELECT {_LAST.format('position')}, {_LAST.format('hash')},"
          " (SELECT max(position) FROM projection_checkpoints),"
          " (SELECT position FROM events_fts_state WHERE id = 1),"
          " (SELECT schema_version FROM pragma_schema_version)")


class LogState(NamedTuple):
    """One query's worth: the head, the furthest checkpoint, the FTS position, the schema cookie."""

    head: int
    hash: str
    seen: int | None
    fts: int
    schema: int


def log_state(conn: apsw.Connection) -> LogState:
    row: Any = conn.execute(_STATE).fetchall()[0]
    return LogState(row[0] or 0, row[1] or GENESIS_HASH, row[2], row[3], row[4])


def _first(conn: apsw.Connection, sql: str) -> Any:
    return conn.execute(sql).fetchall()[0][0]


def _flat(sql: str) -> str:
    return " ".join(sql.split())


@functools.cache
def schema_triggers(schema_file: Path) -> dict[str, str]:
    """The schema's triggers, name -> the statement SQLite stores (``IF NOT EXISTS`` dropped)."""
    if not schema_file.exists():
        raise StoreError("STORE_SCHEMA_MISSING", f"{schema_file} is missing; reinstall lean-ctx from its repository")
    return {m.group(1): m.group(0)[:-1].replace(" IF NOT EXISTS", "", 1)
            for m in _TRIGGER.finditer(schema_file.read_text())}


def identify(conn: apsw.Connection, path: str, version: int) -> None:
    """Raise unless the file behind ``conn`` is a lean-ctx log or new (see the module docstring)."""
    uv, app_id = (_first(conn, f"PRAGMA {name}") for name in ("user_version", "application_id"))
    row: Any = conn.execute(_IDENTIFY).fetchall()[0]
    anything, ours = row
    if not anything and uv == 0 and app_id == 0:
        return
    if ours == len(LOG_TABLES) and app_id == 0:
        if uv > version:
            raise StoreError(
                "STORE_SCHEMA_NEWER",
                f"the event log at {path} has schema version {uv}, newer than this lean-ctx's ({version}): upgrade "
                "lean-ctx to use it (nothing was changed)", path=path)
        return
    tables = _first(conn, _TABLES)
    marks = [f"{tables} table(s)" if tables else "schema objects" if anything else "no table"]
    marks += [f"user_version {uv}"] if uv else []
    marks += [f"application_id {app_id}"] if app_id else []
    raise StoreError(
        "NOT_A_LEAN_CTX_LOG",
        f"{path} is not a lean-ctx event log (it has {', '.join(marks)}: another application's database), and "
        "lean-ctx changes no database it did not make: point --db / LEAN_CTX_DB at a lean-ctx log, or at a new or "
        "empty file", path=path)


def truncated(conn: apsw.Connection, path: str, st: LogState) -> StoreError | None:
    """``LOG_TRUNCATED`` when a projection checkpoint is past the head."""
    if st.seen is None or st.seen <= st.head:
        return None
    ahead = [str(r[0]) for r in conn.execute(
        "SELECT name FROM projection_checkpoints WHERE position > ? ORDER BY name", (st.head,))]
    shown = ", ".join(ahead[:3]) + (f" and {len(ahead) - 3} more" if len(ahead) > 3 else "")
    return StoreError(
        "LOG_TRUNCATED",
        f"the event log at {path} ends at position {st.head}, but its projections have seen position {st.seen} "
        f"({shown}): events were removed from its end, and recording more would reuse their positions; restore "
        "the file from a backup, or run `lean-ctx replay` to rebuild the projections from the events that are "
        "left", path=path, head=st.head, seen=st.seen)


def _bad_triggers(conn: apsw.Connection, schema_file: Path) -> list[str]:
    want = schema_triggers(schema_file)
    have = {str(n): _flat(str(s)) for n, s in conn.execute(
        "SELECT name, sql FROM sqlite_master WHERE type = 'trigger' AND tbl_name = 'events'")}
    return [name for name, sql in want.items() if have.get(name) != _flat(sql)]


def missing_triggers(conn: apsw.Connection, path: str, schema_file: Path) -> StoreError | None:
    """``TRIGGERS_MISSING`` when an immutability trigger is gone or is not the schema's."""
    bad = _bad_triggers(conn, schema_file)
    if not bad:
        return None
    return StoreError(
        "TRIGGERS_MISSING",
        f"the event log at {path} lacks its immutability trigger(s) {', '.join(bad)} (dropped or replaced), so its "
        "events could be changed or deleted unnoticed, and nothing more is recorded in it: check it with "
        "`lean-ctx events verify`, then put them back with `lean-ctx db restore-triggers`", path=path, triggers=bad)


def problems(conn: apsw.Connection, path: str, schema_file: Path) -> list[StoreError]:
    """What is wrong with the log, cheaply, in ``conn``'s current snapshot (see the module docstring)."""
    found = (truncated(conn, path, log_state(conn)), missing_triggers(conn, path, schema_file))
    return [p for p in found if p is not None]


def verify_log(conn: apsw.Connection, chain: VerifyResult, store: SqliteEventStore) -> VerifyResult:
    """``chain`` (``verify_chain``'s result) or, when it holds, the first of ``problems`` as a failed
    result (``LOG_TRUNCATED`` names the first missing position as ``first_broken``)."""
    found = problems(conn, store.path, store.schema_file) if chain.ok else []
    if not found:
        return chain
    broken = chain.head_position + 1 if found[0].code == "LOG_TRUNCATED" else None
    return VerifyResult(False, chain.checked, chain.head_position, chain.head_hash, broken, str(found[0]))


def reset_fts_past(conn: apsw.Connection, st: LogState) -> None:
    """Empty the full-text index when it is past the head (inside a write transaction)."""
    if st.fts > st.head:
        conn.execute("INSERT INTO events_fts (events_fts) VALUES ('delete-all')")
        conn.execute("UPDATE events_fts_state SET position = 0 WHERE id = 1")


def restore_triggers(conn: apsw.Connection, schema_file: Path) -> list[str]:
    """Put back the schema's triggers that are missing or altered (inside a write transaction)."""
    bad = _bad_triggers(conn, schema_file)
    want = schema_triggers(schema_file)
    for name in bad:
        conn.execute(f'DROP TRIGGER IF EXISTS "{name}"')
        conn.execute(want[name])
    return bad


class CheckedTx(SqliteTx):
    """A write transaction that checks the log before its first append: one query (``log_state``,
    whose head the append then uses instead of reading its own), plus the triggers' rows when the
    schema cookie differs from the last one they were found intact under."""

    def __init__(self, store: SqliteEventStore, conn: apsw.Connection) -> None:
        super().__init__(store, conn)
        self._checked = False

    def append(self, *args: Any, **kwargs: Any) -> Any:
        if not self._checked:
            store, st = self.store, log_state(self.conn)
            self._head = (st.head, st.hash)  # what SqliteTx.head() would read
            problem = truncated(self.conn, store.path, st)
            if problem is None and st.schema != store.triggers_intact_at:
                problem = missing_triggers(self.conn, store.path, store.schema_file)
            if problem is not None:
                raise problem
            store.triggers_intact_at = st.schema
            reset_fts_past(self.conn, st)
            self._checked = True
        return super().append(*args, **kwargs)
