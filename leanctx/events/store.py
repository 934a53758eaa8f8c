"""The event store contract.

Every backend implements this ABC and passes ``tests/events/conformance.py``. The SQLite
backend (``sqlite_store.SqliteEventStore``) is the only one today; a PostgreSQL backend
must pass the same suite.
"""

from __future__ import annotations

import abc
from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractContextManager
from typing import Any

import msgspec

from .envelope import ANY, AppendResult, ExpectedVersion, NewEvent, StoredEvent
from .filter import TopicFilter

# Called inside the appending transaction with the transaction and the events just
# written (used by strong projections).
TxHook = Callable[["WriteTx", list[StoredEvent]], None]


class Head(msgspec.Struct, frozen=True):
    position: int
    hash: str


class SearchHit(msgspec.Struct, frozen=True):
    event: StoredEvent
    score: float  # bm25: lower is better


class Lineage(msgspec.Struct, frozen=True):
    event: StoredEvent
    ancestors: list[StoredEvent]  # root cause first
    descendants: list[StoredEvent]  # by position


class VerifyResult(msgspec.Struct, frozen=True):
    ok: bool
    checked: int
    head_position: int
    head_hash: str
    first_broken: int | None = None
    reason: str | None = None


class WriteTx(abc.ABC):
    """A write transaction: exclusive across threads and processes until it ends."""

    @abc.abstractmethod
    def append(
        self,
        stream: str,
        events: Sequence[NewEvent],
        *,
        expected_version: ExpectedVersion = ANY,
        idempotency_key: str | None = None,
    ) -> AppendResult: ...

    @abc.abstractmethod
    def stream_version(self, stream: str) -> int: ...

    @abc.abstractmethod
    def head(self) -> Head: ...

    conn: Any  # the backend connection (projections write their tables through it)

    @abc.abstractmethod
    def read_range(self, since: int, upto: int, kinds: Sequence[str], limit: int) -> list[StoredEvent]:
        """Events of ``kinds`` with ``since < position <= upto``, seen from inside the
        transaction (including its own uncommitted rows)."""

    @abc.abstractmethod
    def find_key(self, idempotency_key: str) -> StoredEvent | None:
        """The event that carries ``idempotency_key``, if one does."""


class EventStore(abc.ABC):
    # --- writing -------------------------------------------------------------------
    @abc.abstractmethod
    def transaction(self) -> AbstractContextManager[WriteTx]: ...

    def append(
        self,
        stream: str,
        events: Sequence[NewEvent],
        *,
        expected_version: ExpectedVersion = ANY,
        idempotency_key: str | None = None,
    ) -> AppendResult:
        """Append ``events`` to ``stream`` atomically.

        ``expected_version``: ``ANY``; ``NO_STREAM`` (the stream must not exist); or the
        exact current version. A mismatch raises ``ConcurrencyError`` and appends nothing.
        With ``idempotency_key``, a retry returns the original positions and appends nothing.
        """
        with self.transaction() as tx:
            return tx.append(stream, events, expected_version=expected_version, idempotency_key=idempotency_key)

    @abc.abstractmethod
    def add_tx_hook(self, hook: TxHook) -> None: ...

    # --- reading -------------------------------------------------------------------
    @abc.abstractmethod
    def head(self) -> Head: ...

    @abc.abstractmethod
    def count(self) -> int: ...

    @abc.abstractmethod
    def get(self, position: int) -> StoredEvent | None: ...

    @abc.abstractmethod
    def read_all(
        self, since: int = 0, filter: TopicFilter | None = None, limit: int | None = None
    ) -> list[StoredEvent]:
        """Events with position > ``since`` matching ``filter``, in order."""

    @abc.abstractmethod
    def read_last(self, n: int, filter: TopicFilter | None = None) -> list[StoredEvent]:
        """The last ``n`` events matching ``filter``, oldest first."""

    def iter_all(
        self, since: int = 0, filter: TopicFilter | None = None, batch: int = 2000
    ) -> Iterator[StoredEvent]:
        while True:
            chunk = self.read_all(since, filter, batch)
            yield from chunk
            if len(chunk) < batch:
                return
            since = chunk[-1].position

    @abc.abstractmethod
    def read_stream(self, stream: str, from_version: int = 1, limit: int | None = None) -> list[StoredEvent]: ...

    @abc.abstractmethod
    def stream_version(self, stream: str) -> int: ...

    @abc.abstractmethod
    def search(self, query: str, limit: int = 20, filter: TopicFilter | None = None) -> list[SearchHit]: ...

    @abc.abstractmethod
    def lineage(self, position: int) -> Lineage: ...

    @abc.abstractmethod
    def wait(
        self, since: int, filter: TopicFilter | None = None, timeout: float = 30.0, limit: int | None = None
    ) -> list[StoredEvent]:
        """Block until an event matching ``filter`` exists after ``since`` (returned) or
        ``timeout`` seconds pass (``[]``). Wakes on appends from other processes."""

    @abc.abstractmethod
    def verify(self, progress: Callable[[int, int], None] | None = None) -> VerifyResult: ...

    @abc.abstractmethod
    def close(self) -> None: ...

    def __enter__(self) -> "EventStore":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
