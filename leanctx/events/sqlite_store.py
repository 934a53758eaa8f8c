"""The SQLite event store (apsw, WAL, one file, many processes).

Writers serialize on ``BEGIN IMMEDIATE`` (with a busy timeout), so the head read inside the
transaction is the true head: positions are gap-free and the hash chain is linear even
with several processes appending at once. Readers use their own read-only connection per
thread and never block the writer (WAL).

A log that cannot be written opens read-only (``read_only``, ``$LEAN_CTX_READ_ONLY``, or a file
or directory without write permission): it reads as usual, projections catch up in throwaway
copies, and appending is ``STORE_READ_ONLY`` (see :mod:`.sqlite_readonly`).

Only a lean-ctx log, or a new or empty file, is opened; a log cut at its end or stripped of its
immutability triggers is reported and takes no more appends (see :mod:`.sqlite_integrity`).
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import apsw

from ..errors import InvalidInput, NotFound, StoreError
from . import sqlite_integrity as checks
from .codec import GENESIS_HASH
from .envelope import StoredEvent
from .filter import TopicFilter
from .fts import quote_query
from .sqlite_queries import SELECT, fts_index, lineage_of, search_fts, verify_chain
from .sqlite_queries import rows as _rows
from .sqlite_readonly import can_fall_back, read_only_error, reader_uri, scratch, wanted
from .sqlite_tx import SqliteTx
from .sqlite_wait import wait as wait_for
from .store import EventStore, Head, Lineage, SearchHit, TxHook, VerifyResult

SCHEMA_VERSION = 1
SCHEMA_FILE = Path(__file__).resolve().parent / "events.sql"  # package data (schema/events.sql links to it)
_SYNC_MODES = ("OFF", "NORMAL", "FULL", "EXTRA")
FTS_BATCH = 5000
INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1


def _scalar(cursor: Any) -> Any:
    """The first column of the first row a query returns (None when it returns none)."""
    row = cursor.fetchone()
    return row[0] if row else None


def _int64(n: int) -> int:
    """``n`` held within SQLite's 64-bit integers. A position, version or limit past them
    compares like the bound (no event is there), instead of failing with ``OverflowError``."""
    return min(max(int(n), INT64_MIN), INT64_MAX)


class SqliteEventStore(EventStore):
    """Event store on one SQLite file.

    ``synchronous``: ``NORMAL`` (default: a process crash loses no committed event; a power
    loss may lose the last transactions) or ``FULL`` (fsync on every commit).
    ``fts_mode``: ``catchup`` (default: the FTS index is brought current before each
    search, in batches) or ``inline`` (indexed inside the appending transaction).
    ``read_only``: True opens without writing anything, False never does; None (default) does
    when ``$LEAN_CTX_READ_ONLY`` asks for it or the log cannot be written (``self.read_only``).
    """

    schema_file = SCHEMA_FILE

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        synchronous: str = "NORMAL",
        busy_timeout_ms: int = 30_000,
        fts_mode: str = "catchup",
        poll_interval: float = 0.004,
        idle_poll_interval: float = 0.01,
        read_only: bool | None = None,
    ) -> None:
        raw = os.fspath(path)
        self.path = str(Path(raw).expanduser()) if raw else ""
        if not raw.strip() or raw == ":memory:" or raw.startswith("file:") or "\x00" in raw:
            raise InvalidInput("STORE_INVALID_PATH", "the event store needs a file path (several connections share it)")
        synchronous = synchronous.upper()
        if synchronous not in _SYNC_MODES:
            raise InvalidInput("STORE_INVALID_SYNCHRONOUS", f"synchronous must be one of {', '.join(_SYNC_MODES)}")
        if fts_mode not in ("catchup", "inline"):
            raise InvalidInput("STORE_INVALID_FTS_MODE", "fts_mode must be 'catchup' or 'inline'")
        self.synchronous = synchronous
        self.busy_timeout_ms = busy_timeout_ms
        self.fts_mode = fts_mode
        self.poll_interval = poll_interval
        self.idle_poll_interval = max(poll_interval, idle_poll_interval)
        self._hooks: list[TxHook] = []
        self._wlock = threading.RLock()
        self._tx: SqliteTx | None = None
        self._local = threading.local()
        self._readers: list[apsw.Connection] = []
        self._readers_lock = threading.Lock()
        self._cond = threading.Condition()
        self._local_appends = 0
        self._closed = False
        self.triggers_intact_at: int | None = None  # the schema cookie the triggers were last found intact under
        self._writer: apsw.Connection | None = None
        self._ro_uri: str | None = None
        self.read_only = False
        self.read_only_reason = ""
        ro = wanted(read_only)
        if ro:
            self._open_read_only("LEAN_CTX_READ_ONLY is set" if read_only is None else "read_only=True")
            return
        try:
            Path(self.path).parent.mkdir(parents=True, exist_ok=True)
            self._open_writer()
        except StoreError:
            self.close()
            raise
        except (apsw.Error, OSError) as exc:
            if ro is None and can_fall_back(exc) and os.path.isfile(self.path):
                if self._writer is not None:  # opened, then failed to write (the schema, the WAL)
                    self._writer.close()
                    self._writer = None
                self._close_readers()  # the one that identified the file: a read-only open picks its own URI
                self._open_read_only(f"it cannot be written: {exc}")  # readable but not writable
                return
            raise StoreError("STORE_OPEN_FAILED", f"cannot open the event log at {self.path}: {exc}") from exc

    def _open_read_only(self, reason: str) -> None:
        """Readers only, on the URI ``reader_uri`` chose; the log must already have its schema."""
        self.read_only, self.read_only_reason = True, reason
        try:
            self._ro_uri, version = reader_uri(self.path)
        except (apsw.Error, OSError) as exc:
            raise StoreError("STORE_OPEN_FAILED", f"cannot open the event log at {self.path} read-only: {exc}") from exc
        try:
            checks.identify(self._reader(), self.path, SCHEMA_VERSION)
        except StoreError:
            self.close()
            raise
        if version != SCHEMA_VERSION:
            raise read_only_error(self, f"its schema (version {version}, this lean-ctx needs {SCHEMA_VERSION}) "
                                        "cannot be set up")

    def _open_writer(self) -> None:
        """The write connection, in WAL mode, with the schema. Some lock states at open (another
        process setting up the WAL index, or closing the last connection and checkpointing)
        answer SQLITE_BUSY without consulting the busy handler: those are retried until the
        busy timeout."""
        deadline = time.monotonic() + self.busy_timeout_ms / 1000
        delay = 0.005
        while True:
            conn = None
            try:
                conn = self._writer = self._connect(readonly=False)
                self._ensure_schema()
                return
            except apsw.BusyError:
                if conn is not None:
                    conn.close()
                if time.monotonic() + delay > deadline:
                    raise
                time.sleep(delay)
                delay = min(delay * 2, 0.1)

    # --- connections ---------------------------------------------------------------
    def _connect(self, readonly: bool) -> apsw.Connection:
        flags = apsw.SQLITE_OPEN_READONLY if readonly else apsw.SQLITE_OPEN_READWRITE | apsw.SQLITE_OPEN_CREATE
        if self._ro_uri is not None:
            conn = apsw.Connection(self._ro_uri, flags=apsw.SQLITE_OPEN_READONLY | apsw.SQLITE_OPEN_URI)
        else:
            conn = apsw.Connection(self.path, flags=flags)
        try:
            conn.set_busy_timeout(self.busy_timeout_ms)
            if not readonly and conn.readonly("main"):  # SQLite fell back to O_RDONLY: no write would work
                raise apsw.ReadOnlyError("the database file is not writable")
            if not readonly:
                # before anything is written; through this thread's reader, which parses the schema
                # once for the reads that follow (the writer's stays unread until it writes)
                if os.path.getsize(self.path) > 0:
                    checks.identify(self._reader(), self.path, SCHEMA_VERSION)
                mode = str(_scalar(conn.execute("PRAGMA journal_mode=WAL")))
                if mode.lower() != "wal":
                    raise StoreError("STORE_NO_WAL", f"{self.path} cannot be put in WAL mode (got {mode})")
            conn.execute(f"PRAGMA synchronous={self.synchronous}")
        except BaseException:
            conn.close()
            raise
        return conn

    def _reader(self) -> apsw.Connection:
        if self._closed:
            raise StoreError("STORE_CLOSED", "the event store is closed")
        conn = getattr(self._local, "conn", None)
        if conn is None:
            conn = self._connect(readonly=True)
            self._local.conn = conn
            with self._readers_lock:
                self._readers.append(conn)
        return conn

    def read_connection(self) -> apsw.Connection:
        """This thread's read-only connection (for projection queries)."""
        return self._reader()

    def _ensure_schema(self) -> None:
        conn = self._writer
        assert conn is not None
        if _scalar(conn.execute("PRAGMA user_version")) == SCHEMA_VERSION:
            return
        if not SCHEMA_FILE.exists():
            raise StoreError("STORE_SCHEMA_MISSING", f"{SCHEMA_FILE} is missing; reinstall lean-ctx from its repository")
        sql = SCHEMA_FILE.read_text()
        with self._wlock:
            conn.execute("BEGIN IMMEDIATE")
            try:
                if _scalar(conn.execute("PRAGMA user_version")) != SCHEMA_VERSION:
                    conn.execute(sql)
                    conn.execute(f"PRAGMA user_version={SCHEMA_VERSION}")
                conn.execute("COMMIT")
            except BaseException:
                conn.execute("ROLLBACK")
                raise

    # --- writing -------------------------------------------------------------------
    def add_tx_hook(self, hook: TxHook) -> None:
        self._hooks.append(hook)

    @contextmanager
    def transaction(self) -> Iterator[SqliteTx]:
        if self._closed:
            raise StoreError("STORE_CLOSED", "the event store is closed")
        with self._wlock:
            if self._tx is not None:  # same thread, nested: join the outer transaction
                yield self._tx
                return
            if self._writer is None:  # read-only: writes land in throwaway copies, appends are refused
                with scratch(self, self._reader()) as scratch_tx:
                    self._tx = scratch_tx
                    try:
                        yield scratch_tx
                    finally:
                        self._tx = None
                return
            conn = self._writer
            try:
                conn.execute("BEGIN IMMEDIATE")
            except apsw.BusyError as exc:
                raise StoreError(
                    "STORE_BUSY",
                    f"the event log stayed locked by another writer for {self.busy_timeout_ms} ms; retry",
                ) from exc
            tx = self._tx = checks.CheckedTx(self, conn)
            try:
                yield tx
            except BaseException:
                conn.execute("ROLLBACK")
                raise
            else:
                conn.execute("COMMIT")
            finally:
                self._tx = None
        if tx.appended:
            with self._cond:
                self._local_appends += 1
                self._cond.notify_all()

    # --- reading -------------------------------------------------------------------
    def head(self) -> Head:
        row = self._reader().execute("SELECT position, hash FROM events ORDER BY position DESC LIMIT 1").fetchone()
        return Head(row[0], row[1]) if row else Head(0, GENESIS_HASH)

    def count(self) -> int:
        return self.head().position  # positions are gap-free from 1

    def get(self, position: int) -> StoredEvent | None:
        if _int64(position) != position:  # no log holds it: unknown, like any missing position
            return None
        rows = _rows(self._reader().execute(SELECT + " WHERE position = ?", (position,)))
        return rows[0] if rows else None

    def read_all(
        self, since: int = 0, filter: TopicFilter | None = None, limit: int | None = None
    ) -> list[StoredEvent]:
        where, params = filter.to_sql() if filter is not None else ("1", [])
        sql = f"{SELECT} WHERE position > ? AND {where} ORDER BY position"
        if limit is not None:
            sql += f" LIMIT {_int64(limit)}"
        return _rows(self._reader().execute(sql, (_int64(since), *params)))

    def read_last(self, n: int, filter: TopicFilter | None = None) -> list[StoredEvent]:
        where, params = filter.to_sql() if filter is not None else ("1", [])
        sql = f"{SELECT} WHERE {where} ORDER BY position DESC LIMIT ?"
        return _rows(self._reader().execute(sql, (*params, max(0, _int64(n)))))[::-1]

    def read_stream(self, stream: str, from_version: int = 1, limit: int | None = None) -> list[StoredEvent]:
        sql = f"{SELECT} WHERE stream = ? AND version >= ? ORDER BY version"
        if limit is not None:
            sql += f" LIMIT {_int64(limit)}"
        return _rows(self._reader().execute(sql, (stream, _int64(from_version))))

    def stream_version(self, stream: str) -> int:
        return _scalar(self._reader().execute("SELECT max(version) FROM events WHERE stream = ?", (stream,))) or 0

    # --- full-text search ----------------------------------------------------------
    def _fts_index(self, conn: apsw.Connection, events: Sequence[StoredEvent]) -> None:
        fts_index(conn, events)

    def fts_position(self) -> int:
        return int(_scalar(self._reader().execute("SELECT position FROM events_fts_state WHERE id = 1")))

    def index_fts(self, progress: Callable[[int, int], None] | None = None) -> int:
        """Bring the FTS index up to the head; returns how many events were indexed."""
        if self.read_only:
            behind = self.head().position - self.fts_position()
            if behind > 0:
                raise read_only_error(self, f"its full-text index, {behind} event(s) behind the log, cannot be "
                                            "brought up to date (searching needs it)")
            return 0
        done = 0
        while True:
            with self.transaction() as tx:
                conn = tx.conn
                checks.reset_fts_past(conn, checks.log_state(conn))
                at = conn.execute("SELECT position FROM events_fts_state WHERE id = 1").fetchone()[0]
                events = _rows(conn.execute(f"{SELECT} WHERE position > ? ORDER BY position LIMIT ?", (at, FTS_BATCH)))
                if events:
                    self._fts_index(conn, events)
                    head = tx.head().position
            if not events:
                return done
            done += len(events)
            if progress is not None:
                progress(done, head - at + done - len(events))
            if len(events) < FTS_BATCH:
                return done

    def search(self, query: str, limit: int = 20, filter: TopicFilter | None = None) -> list[SearchHit]:
        if self.fts_position() != self.head().position:
            self.index_fts()
        # each distinct term once (their order kept): FTS5's cost grows with the square of the
        # terms ANDed, and a repeated term only repeats the work
        match = quote_query(" ".join(dict.fromkeys(query.split())))
        if match is None:
            return []
        return search_fts(self._reader(), match, filter, limit)

    # --- lineage -------------------------------------------------------------------
    def lineage(self, position: int) -> Lineage:
        conn = self._reader()
        with conn:  # one read snapshot for the three queries
            event = self.get(position)
            if event is None:
                raise NotFound("EVENT_NOT_FOUND", f"no event at position {position}; see `lean-ctx events tail`")
            lineage = lineage_of(conn, event)
        return lineage

    # --- waiting -------------------------------------------------------------------
    def wait(
        self, since: int, filter: TopicFilter | None = None, timeout: float = 30.0, limit: int | None = None
    ) -> list[StoredEvent]:
        """Without a busy loop: in-process appends wake it at once, other processes' within
        ``poll_interval`` (``idle_poll_interval`` after a second of quiet); see :mod:`.sqlite_wait`."""
        return wait_for(self, since, filter, timeout, limit)

    # --- integrity -----------------------------------------------------------------
    def verify(self, progress: Callable[[int, int], None] | None = None) -> VerifyResult:
        """The hash chain from genesis; when it holds, the first of ``integrity()``'s problems
        (``LOG_TRUNCATED`` names the first missing position as ``first_broken``)."""
        conn = self._reader()
        with conn:  # one snapshot
            result = checks.verify_log(conn, verify_chain(conn, self.head().position, progress), self)
        return result

    def integrity(self) -> list[StoreError]:
        """What is wrong with the log beyond its chain, cheaply: ``LOG_TRUNCATED``, ``TRIGGERS_MISSING``
        (each a ``StoreError``, not raised; appending raises the first)."""
        return checks.problems(self._reader(), self.path, self.schema_file)

    def row_count(self) -> int:
        """The events the log holds (``count()`` is the head position; they differ when rows are gone)."""
        return int(_scalar(self._reader().execute("SELECT count(*) FROM events")))

    def restore_triggers(self) -> list[str]:
        """Put back the immutability triggers that are missing or altered; their names."""
        if self.read_only:
            raise read_only_error(self, "its triggers cannot be restored")
        with self.transaction() as tx:
            return checks.restore_triggers(tx.conn, self.schema_file)

    def _close_readers(self) -> None:
        with self._readers_lock:
            for c in self._readers:
                c.close()
            self._readers.clear()
        self._local = threading.local()

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        self._close_readers()
        with self._wlock:
            if self._writer is not None:
                self._writer.close()
