"""The log: event kinds, envelopes, the store contract and its SQLite backend."""

from .codec import GENESIS_HASH
from .envelope import ANY, NO_STREAM, AppendResult, ExpectedVersion, NewEvent, StoredEvent
from .filter import TopicFilter
from .kinds import Event, registry
from .sqlite_store import SqliteEventStore
from .store import EventStore, Head, Lineage, SearchHit, VerifyResult, WriteTx


def open_store(path: str, **options: object) -> SqliteEventStore:
    """Open (creating if needed) the event log at ``path``."""
    return SqliteEventStore(path, **options)  # type: ignore[arg-type]


__all__ = [
    "ANY",
    "NO_STREAM",
    "GENESIS_HASH",
    "AppendResult",
    "Event",
    "EventStore",
    "ExpectedVersion",
    "Head",
    "Lineage",
    "NewEvent",
    "SearchHit",
    "SqliteEventStore",
    "StoredEvent",
    "TopicFilter",
    "VerifyResult",
    "WriteTx",
    "open_store",
    "registry",
]
