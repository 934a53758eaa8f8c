"""Build projections into a fresh database file from a stream of events (for replay)."""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence

import apsw

from ..events import StoredEvent
from .base import Projection
from .runner import Progress, digest_tables, replay_into


def build_fresh(
    path: str | os.PathLike[str],
    events: Iterable[StoredEvent],
    projections: Sequence[Projection],
    total: int = 0,
    progress: Progress | None = None,
) -> tuple[int, dict[str, str]]:
    """Create ``projections``' tables in a new database at ``path``, fold ``events`` into
    them in one transaction, and return (events applied, digest per projection)."""
    if os.path.exists(path):
        os.unlink(path)
    conn = apsw.Connection(str(path))
    try:
        conn.execute("PRAGMA journal_mode=WAL")
        conn.execute("PRAGMA synchronous=OFF")
        with conn:
            for p in projections:
                p.create(conn)
            n = replay_into(conn, events, projections, total, progress)
        return n, {p.name: digest_tables(conn, p) for p in projections}
    finally:
        conn.close()
