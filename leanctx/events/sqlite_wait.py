"""Blocking until events arrive (``SqliteEventStore.wait``).

Blocks on the store's condition (in-process appends wake it at once) and, across processes, on
``PRAGMA data_version`` checked every ``poll_interval`` seconds (4 ms) for the first second of
quiet, then every ``idle_poll_interval`` (10 ms): a cheap read of the WAL index, no query and no
busy loop.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

from .envelope import StoredEvent
from .filter import TopicFilter

if TYPE_CHECKING:
    from .sqlite_store import SqliteEventStore


def data_version(store: SqliteEventStore) -> int:
    row: Any = store.read_connection().execute("PRAGMA data_version").fetchall()[0]
    return int(row[0])


def wait(
    store: SqliteEventStore, since: int, filter: TopicFilter | None, timeout: float, limit: int | None
) -> list[StoredEvent]:
    start = time.monotonic()
    deadline = start + max(0.0, timeout)
    cond = store._cond
    while True:
        with cond:
            seen_local = store._local_appends
        seen_dv = data_version(store)
        head = store.head().position
        events = store.read_all(since, filter, limit)
        if events:
            return events
        # everything up to ``head`` was scanned and did not match: the next query
        # starts after it
        since = max(since, head)
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return []
            step = store.poll_interval if time.monotonic() - start < 1.0 else store.idle_poll_interval
            with cond:
                if store._local_appends == seen_local:
                    cond.wait(min(remaining, step))
                if store._local_appends != seen_local:
                    break
            if data_version(store) != seen_dv:
                break
