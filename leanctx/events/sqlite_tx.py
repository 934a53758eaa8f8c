"""A write transaction on the SQLite event store (see :mod:`.sqlite_store`)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import apsw

from .. import clock
from ..errors import ConcurrencyError, InvalidInput
from .codec import GENESIS_HASH, canonical_bytes, chain_hash, encode_payload
from .envelope import (
    ANY,
    COLUMNS,
    NO_STREAM,
    AppendResult,
    ExpectedVersion,
    NewEvent,
    StoredEvent,
)
from .sqlite_queries import SELECT
from .sqlite_queries import rows as _rows
from .store import Head, WriteTx

if TYPE_CHECKING:
    from .sqlite_store import SqliteEventStore

_INSERT = f"INSERT INTO events ({', '.join(COLUMNS)}) VALUES ({', '.join('?' * len(COLUMNS))})"


class SqliteTx(WriteTx):
    """One ``BEGIN IMMEDIATE`` write transaction: appends with the stream's expected version and
    idempotency keys checked, the hash chain extended, then the store's hooks and inline FTS."""


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
                f"{SELECT} WHERE position > ? AND position <= ? AND kind IN ({marks}) ORDER BY position LIMIT ?",
                (since, upto, *kinds, limit),
            )
        )

    def find_key(self, idempotency_key: str) -> StoredEvent | None:
        rows = _rows(self.conn.execute(SELECT + " WHERE idempotency_key = ?", (idempotency_key,)))
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
            keys = [idempotency_key, *(f"{idempotency_key}#{i}" for i in range(1, n))]
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
            envelope = (
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
            h = chain_hash(prev, canonical_bytes(envelope, payload))
            rows.append((*envelope, payload, prev, h))
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
