"""The SQLite event store (apsw, WAL, one file, many processes).

Writers serialize on ``BEGIN IMMEDIATE`` (with a busy timeout), so the head read inside the
transaction is the true head: positions are gap-free and the hash chain is linear even
with several processes appending at once. Readers use their own read-only connection per
thread and never block the writer (WAL).
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

from .. import clock
from ..errors import ConcurrencyError, InvalidInput, NotFound, StoreError
from .codec import GENESIS_HASH, canonical_bytes, chain_hash, check_link, encode_payload
from .envelope import ANY, COLUMNS, NO_STREAM, AppendResult, ExpectedVersion, NewEvent, StoredEvent
from .filter import TopicFilter
from .fts import quote_query, searchable_text
from .store import EventStore, Head, Lineage, SearchHit, TxHook, VerifyResult, WriteTx

SCHEMA_VERSION = 1
SCHEMA_FILE = Path(__file__).resolve().parents[2] / "schema" / "events.sql"
_SELECT = "SELECT " + ", ".join(COLUMNS) + " FROM events"
_INSERT = f"INSERT INTO events ({', '.join(COLUMNS)}) VALUES ({', '.join('?' * len(COLUMNS))})"
_SYNC_MODES = ("OFF", "NORMAL", "FULL", "EXTRA")
FTS_BATCH = 5000


def _rows(cursor: Any) -> list[StoredEvent]:
    return [StoredEvent(*r) for r in cursor]


class _SqliteTx(WriteTx):
    def __init__(self, store: "SqliteEventStore", conn: apsw.Connection) -> None:
        self.store = store
        self.conn = conn
        self._head: tuple[int, str] | None = None
        self.appended = 0

    def head(self) -> Head:
        if self._head is None:
            row = self.conn.execute("SELECT position, hash FROM events ORDER BY position DESC LIMIT 1").fetchone()
            self._head = (row[0], row[1]) if row else (0, GENESIS_HASH)
        return Head(*self._head)

    def stream_version(self, stream: str) -> int:
        row = self.conn.execute("SELECT max(version) FROM events WHERE stream = ?", (stream,)).fetchone()
        return row[0] or 0

    def read_range(self, since: int, upto: int, kinds: Sequence[str], limit: int) -> list[StoredEvent]:
        marks = ",".join("?" * len(kinds))
        return _rows(
            self.conn.execute(
                f"{_SELECT} WHERE position > ? AND position <= ? AND kind IN ({marks}) ORDER BY position LIMIT ?",
                (since, upto, *kinds, limit),
            )
        )

    def find_key(self, idempotency_key: str) -> StoredEvent | None:
        rows = _rows(self.conn.execute(_SELECT + " WHERE idempotency_key = ?", (idempotency_key,)))
        return rows[0] if rows else None

    def append(
        self,
        stream: str,
        events: Sequence[NewEvent],
        *,
        expected_version: ExpectedVersion = ANY,
        idempotency_key: str | None = None,
    ) -> AppendResult:
        if not isinstance(stream, str) or not stream:
            raise InvalidInput("EVENT_INVALID_STREAM", "a stream name is required (e.g. 'agent:ab12cd34')")
        n = len(events)
        if n == 0:
            raise InvalidInput("EVENT_EMPTY_APPEND", "append needs at least one event")
        keys: list[str | None] = [None] * n
        if idempotency_key is not None:
            if not idempotency_key:
                raise InvalidInput("EVENT_INVALID_IDEMPOTENCY_KEY", "an idempotency key must be a non-empty string")
            keys = [idempotency_key] + [f"{idempotency_key}#{i}" for i in range(1, n)]
            first = self.find_key(idempotency_key)
            if first is not None:
                marks = ",".join("?" * n)
                positions = [
                    r[0]
                    for r in self.conn.execute(
                        f"SELECT position FROM events WHERE idempotency_key IN ({marks}) ORDER BY position", keys
                    )
                ]
                return AppendResult(positions, self.stream_version(first.stream), duplicate=True)

        current = self.stream_version(stream)
        if expected_version == NO_STREAM:
            if current != 0:
                raise ConcurrencyError(
                    message=f"stream {stream} already exists at version {current}; expected no stream",
                    stream=stream,
                    actual=current,
                )
        elif expected_version != ANY:
            if not isinstance(expected_version, int) or isinstance(expected_version, bool) or expected_version < 1:
                raise InvalidInput(
                    "EVENT_INVALID_EXPECTED_VERSION",
                    "expected_version must be 'any', 'no_stream' or a version >= 1",
                )
            if current != expected_version:
                raise ConcurrencyError(
                    message=f"stream {stream} is at version {current}, expected {expected_version}; "
                    "re-read the stream and retry",
                    stream=stream,
                    expected=expected_version,
                    actual=current,
                )

        head = self.head()
        pos, prev = head.position, head.hash
        default_ts = None
        rows: list[tuple[Any, ...]] = []
        first_pos = pos + 1
        for i, ne in enumerate(events):
            ev = ne.event
            cls = type(ev)
            pos += 1
            current += 1
            head = (
                pos,
                stream,
                current,
                cls.__struct_config__.tag,
                cls.schema_version,
                ne.ts or default_ts or (default_ts := clock.iso()),
                ne.actor,
                ne.to_agent,
                ne.project,
                ne.channel,
                ne.consistency,
                ne.correlation_id,
                ne.causation_id,
                keys[i],
            )
            payload = encode_payload(ev)
            h = chain_hash(prev, canonical_bytes(head, payload))
            rows.append((*head, payload, prev, h))
            prev = h
        try:
            self.conn.executemany(_INSERT, rows)
        except apsw.ConstraintError as exc:  # a concurrent writer cannot exist here; a bad key can
            raise ConcurrencyError(message=f"append to {stream} violates a log constraint: {exc}") from exc
        self._head = (pos, prev)
        self.appended += n
        hooks = self.store._hooks
        inline_fts = self.store.fts_mode == "inline"
        if hooks or inline_fts:  # StoredEvents are built only for those who read them
            stored = [StoredEvent(*row) for row in rows]
            for hook in hooks:
                hook(self, stored)
            if inline_fts:
                self.store._fts_index(self.conn, stored)
        return AppendResult(list(range(first_pos, pos + 1)), current)


class SqliteEventStore(EventStore):
    """Event store on one SQLite file.

    ``synchronous``: ``NORMAL`` (default: a process crash loses no committed event; a power
    loss may lose the last transactions) or ``FULL`` (fsync on every commit).
    ``fts_mode``: ``catchup`` (default: the FTS index is brought current before each
    search, in batches) or ``inline`` (indexed inside the appending transaction).
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        synchronous: str = "NORMAL",
        busy_timeout_ms: int = 30_000,
        fts_mode: str = "catchup",
        poll_interval: float = 0.004,
        idle_poll_interval: float = 0.01,
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
        self._tx: _SqliteTx | None = None
        self._local = threading.local()
        self._readers: list[apsw.Connection] = []
        self._readers_lock = threading.Lock()
        self._cond = threading.Condition()
        self._local_appends = 0
        self._closed = False
        try:
            Path(self.path).parent.mkdir(parents=True, exist_ok=True)
            self._open_writer()
        except (apsw.Error, OSError) as exc:
            raise StoreError("STORE_OPEN_FAILED", f"cannot open the event log at {self.path}: {exc}") from exc

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
        conn = apsw.Connection(self.path, flags=flags)
        conn.set_busy_timeout(self.busy_timeout_ms)
        if not readonly:
            mode = conn.execute("PRAGMA journal_mode=WAL").fetchone()[0]
            if mode.lower() != "wal":
                raise StoreError("STORE_NO_WAL", f"{self.path} cannot be put in WAL mode (got {mode})")
        conn.execute(f"PRAGMA synchronous={self.synchronous}")
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
        if conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION:
            return
        if not SCHEMA_FILE.exists():
            raise StoreError("STORE_SCHEMA_MISSING", f"{SCHEMA_FILE} is missing; reinstall lean-ctx from its repository")
        sql = SCHEMA_FILE.read_text()
        with self._wlock:
            conn.execute("BEGIN IMMEDIATE")
            try:
                if conn.execute("PRAGMA user_version").fetchone()[0] != SCHEMA_VERSION:
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
    def transaction(self) -> Iterator[_SqliteTx]:
        if self._closed:
            raise StoreError("STORE_CLOSED", "the event store is closed")
        with self._wlock:
            if self._tx is not None:  # same thread, nested: join the outer transaction
                yield self._tx
                return
            conn = self._writer
            try:
                conn.execute("BEGIN IMMEDIATE")
            except apsw.BusyError as exc:
                raise StoreError(
                    "STORE_BUSY",
                    f"the event log stayed locked by another writer for {self.busy_timeout_ms} ms; retry",
                ) from exc
            tx = self._tx = _SqliteTx(self, conn)
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
        rows = _rows(self._reader().execute(_SELECT + " WHERE position = ?", (position,)))
        return rows[0] if rows else None

    def read_all(
        self, since: int = 0, filter: TopicFilter | None = None, limit: int | None = None
    ) -> list[StoredEvent]:
        where, params = filter.to_sql() if filter is not None else ("1", [])
        sql = f"{_SELECT} WHERE position > ? AND {where} ORDER BY position"
        if limit is not None:
            sql += f" LIMIT {int(limit)}"
        return _rows(self._reader().execute(sql, (since, *params)))

    def read_last(self, n: int, filter: TopicFilter | None = None) -> list[StoredEvent]:
        where, params = filter.to_sql() if filter is not None else ("1", [])
        sql = f"{_SELECT} WHERE {where} ORDER BY position DESC LIMIT ?"
        return _rows(self._reader().execute(sql, (*params, max(0, int(n)))))[::-1]

    def read_stream(self, stream: str, from_version: int = 1, limit: int | None = None) -> list[StoredEvent]:
        sql = f"{_SELECT} WHERE stream = ? AND version >= ? ORDER BY version"
        if limit is not None:
            sql += f" LIMIT {int(limit)}"
        return _rows(self._reader().execute(sql, (stream, from_version)))

    def stream_version(self, stream: str) -> int:
        row = self._reader().execute("SELECT max(version) FROM events WHERE stream = ?", (stream,)).fetchone()
        return row[0] or 0

    # --- full-text search ----------------------------------------------------------
    def _fts_index(self, conn: apsw.Connection, events: Sequence[StoredEvent]) -> None:
        """Index ``events`` (consecutive positions) inside the caller's write transaction,
        first filling any gap left by a writer that did not index inline."""
        at = conn.execute("SELECT position FROM events_fts_state WHERE id = 1").fetchone()[0]
        if at >= events[-1].position:
            return
        if at < events[0].position - 1:
            gap = _rows(
                conn.execute(f"{_SELECT} WHERE position > ? AND position < ? ORDER BY position",
                             (at, events[0].position))
            )
            events = [*gap, *events]
        events = [e for e in events if e.position > at]
        conn.executemany(
            "INSERT INTO events_fts (rowid, kind, stream, who, body) VALUES (?, ?, ?, ?, ?)",
            (
                (e.position, *searchable_text(e.kind, e.stream, e.actor, e.to_agent, e.channel, e.payload))
                for e in events
            ),
        )
        conn.execute("UPDATE events_fts_state SET position = ? WHERE id = 1", (events[-1].position,))

    def fts_position(self) -> int:
        return self._reader().execute("SELECT position FROM events_fts_state WHERE id = 1").fetchone()[0]

    def index_fts(self, progress: Callable[[int, int], None] | None = None) -> int:
        """Bring the FTS index up to the head; returns how many events were indexed."""
        done = 0
        while True:
            with self.transaction() as tx:
                conn = tx.conn
                at = conn.execute("SELECT position FROM events_fts_state WHERE id = 1").fetchone()[0]
                events = _rows(conn.execute(f"{_SELECT} WHERE position > ? ORDER BY position LIMIT ?", (at, FTS_BATCH)))
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
        if self.fts_position() < self.head().position:
            self.index_fts()
        match = quote_query(query)
        if match is None:
            return []
        where, params = filter.to_sql("e.") if filter is not None else ("1", [])
        cols = ", ".join(f"e.{c}" for c in COLUMNS)
        sql = (
            f"SELECT {cols}, bm25(events_fts, 2.0, 1.0, 1.0, 1.0) AS score "
            "FROM events_fts JOIN events e ON e.position = events_fts.rowid "
            f"WHERE events_fts MATCH ? AND {where} ORDER BY score, e.position LIMIT ?"
        )
        out = []
        for r in self._reader().execute(sql, (match, *params, int(limit))):
            out.append(SearchHit(StoredEvent(*r[:-1]), r[-1]))
        return out

    # --- lineage -------------------------------------------------------------------
    def lineage(self, position: int) -> Lineage:
        conn = self._reader()
        with conn:  # one read snapshot for the three queries
            event = self.get(position)
            if event is None:
                raise NotFound("EVENT_NOT_FOUND", f"no event at position {position}; see `lean-ctx events tail`")
            ancestors = _rows(
                conn.execute(
                    "WITH RECURSIVE anc(p) AS ("
                    " SELECT causation_id FROM events WHERE position = ? AND causation_id IS NOT NULL"
                    " UNION SELECT e.causation_id FROM events e JOIN anc ON e.position = anc.p"
                    " WHERE e.causation_id IS NOT NULL)"
                    f" {_SELECT} WHERE position IN (SELECT p FROM anc) ORDER BY position",
                    (position,),
                )
            )
            descendants = _rows(
                conn.execute(
                    "WITH RECURSIVE des(p) AS ("
                    " SELECT position FROM events WHERE causation_id = ?"
                    " UNION SELECT e.position FROM events e JOIN des ON e.causation_id = des.p)"
                    f" {_SELECT} WHERE position IN (SELECT p FROM des) ORDER BY position",
                    (position,),
                )
            )
        return Lineage(event, ancestors, descendants)

    # --- waiting -------------------------------------------------------------------
    def _data_version(self) -> int:
        return self._reader().execute("PRAGMA data_version").fetchone()[0]

    def wait(
        self, since: int, filter: TopicFilter | None = None, timeout: float = 30.0, limit: int | None = None
    ) -> list[StoredEvent]:
        """Blocks on a condition (in-process appends wake it at once) and, across
        processes, on ``PRAGMA data_version`` checked every ``poll_interval`` seconds (4 ms)
        for the first second of quiet, then every ``idle_poll_interval`` (10 ms): a cheap read
        of the WAL index, no query and no busy loop."""
        start = time.monotonic()
        deadline = start + max(0.0, timeout)
        while True:
            with self._cond:
                seen_local = self._local_appends
            seen_dv = self._data_version()
            head = self.head().position
            events = self.read_all(since, filter, limit)
            if events:
                return events
            # everything up to ``head`` was scanned and did not match: the next query
            # starts after it
            since = max(since, head)
            while True:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    return []
                step = self.poll_interval if time.monotonic() - start < 1.0 else self.idle_poll_interval
                with self._cond:
                    if self._local_appends == seen_local:
                        self._cond.wait(min(remaining, step))
                    if self._local_appends != seen_local:
                        break
                if self._data_version() != seen_dv:
                    break

    # --- integrity -----------------------------------------------------------------
    def verify(self, progress: Callable[[int, int], None] | None = None) -> VerifyResult:
        conn = self._reader()
        with conn:  # one snapshot
            total = self.head().position
            prev = GENESIS_HASH
            expected_pos = 0
            checked = 0
            for r in conn.execute(_SELECT + " ORDER BY position"):
                expected_pos += 1
                reason, _ = check_link(prev, expected_pos, r, r[14], r[15], r[16])
                if reason is not None:
                    return VerifyResult(False, checked, total, prev, first_broken=expected_pos, reason=reason)
                prev = r[16]
                checked += 1
                if progress is not None and checked % 10_000 == 0:
                    progress(checked, total)
            if progress is not None:
                progress(checked, total)
            return VerifyResult(True, checked, total, prev)

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        with self._readers_lock:
            for c in self._readers:
                c.close()
            self._readers.clear()
        with self._wlock:
            self._writer.close()
