"""Runs projections over a store: in-transaction application, catch-up, rebuild, digest.

Checkpoints (``projection_checkpoints``: name, version, position) are written in the same
transaction as the rows they cover, so a crash never leaves rows and checkpoint apart.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterable, Sequence
from typing import Any

import msgspec

from ..errors import InvalidInput
from ..events import SqliteEventStore, StoredEvent, WriteTx
from .base import Projection

Progress = Callable[[int, int], None]
REPLAY_BATCH = 5000
_enc = msgspec.json.Encoder()


def _checkpoint(conn: Any, name: str) -> tuple[int, int] | None:
    row = conn.execute("SELECT version, position FROM projection_checkpoints WHERE name = ?", (name,)).fetchone()
    return (row[0], row[1]) if row else None


def _set_checkpoint(conn: Any, p: Projection, position: int) -> None:
    conn.execute(
        "INSERT INTO projection_checkpoints (name, version, position) VALUES (?, ?, ?) "
        "ON CONFLICT(name) DO UPDATE SET version = excluded.version, position = excluded.position",
        (p.name, p.version, position),
    )


def digest_tables(conn: Any, p: Projection) -> str:
    """A stable sha256 of every row of the projection's tables (ordered by all columns)."""
    h = hashlib.sha256()
    for table in sorted(p.tables):
        ncols = len(conn.execute(f'PRAGMA table_info("{table}")').fetchall())
        order = ", ".join(str(i) for i in range(1, ncols + 1))
        h.update(f"\x00table {table}\x00".encode())
        for row in conn.execute(f'SELECT * FROM "{table}" ORDER BY {order}'):
            h.update(_enc.encode(list(row)))
            h.update(b"\n")
    return h.hexdigest()


def replay_into(
    conn: Any,
    events: Iterable[StoredEvent],
    projections: Sequence[Projection],
    total: int = 0,
    progress: Progress | None = None,
) -> int:
    """Apply ``events`` to ``projections`` on ``conn`` (no transaction handling here)."""
    n = 0
    for e in events:
        for p in projections:
            if e.kind in p.kinds:
                p.apply(conn, e)
        n += 1
        if progress is not None and n % REPLAY_BATCH == 0:
            progress(n, total)
    if progress is not None:
        progress(n, total)
    return n


class Projections:
    """The set of projections of one store."""

    def __init__(self, store: SqliteEventStore, projections: Sequence[Projection]) -> None:
        names = [p.name for p in projections]
        if len(set(names)) != len(names):
            raise ValueError(f"duplicate projection names: {names}")
        self.store = store
        self.all: dict[str, Projection] = {p.name: p for p in projections}
        self.strong = [p for p in projections if p.consistency == "strong"]
        self._setup()
        store.add_tx_hook(self._on_append)

    # --- lifecycle -----------------------------------------------------------------
    def get(self, name: str) -> Projection:
        try:
            return self.all[name]
        except KeyError:
            raise InvalidInput(
                "PROJECTION_NOT_FOUND", f"no projection named {name!r}; known: {', '.join(sorted(self.all))}"
            ) from None

    def _needs_setup(self) -> bool:
        conn = self.store.read_connection()
        for p in self.all.values():
            cp = _checkpoint(conn, p.name)
            if cp is None or cp[0] != p.version:
                return True
        return False

    def _setup(self) -> None:
        """Create missing tables; rebuild any projection whose version changed."""
        if not self._needs_setup():
            return
        with self.store.transaction() as tx:
            for p in self.all.values():
                cp = _checkpoint(tx.conn, p.name)
                if cp is None:
                    p.create(tx.conn)
                    _set_checkpoint(tx.conn, p, 0)
                    self._catch_up_in(tx, p, tx.head().position)
                elif cp[0] != p.version:
                    self._rebuild_in(tx, p, tx.head().position)

    def _catch_up_in(self, tx: WriteTx, p: Projection, head: int) -> int:
        cp = _checkpoint(tx.conn, p.name)
        at = cp[1] if cp else 0
        if at >= head:
            return 0
        n = replay_into(tx.conn, self._tx_events(tx, p, at, head), [p])
        _set_checkpoint(tx.conn, p, head)
        return n

    def _tx_events(self, tx: WriteTx, p: Projection, since: int, upto: int) -> Iterable[StoredEvent]:
        kinds = sorted(p.kinds)
        while True:
            rows = tx.read_range(since, upto, kinds, REPLAY_BATCH)
            yield from rows
            if len(rows) < REPLAY_BATCH:
                return
            since = rows[-1].position

    def _rebuild_in(self, tx: WriteTx, p: Projection, head: int, progress: Progress | None = None) -> int:
        p.drop(tx.conn)
        p.create(tx.conn)
        n = replay_into(tx.conn, self._tx_events(tx, p, 0, head), [p], head, progress)
        _set_checkpoint(tx.conn, p, head)
        return n

    # --- in-transaction application (strong) ---------------------------------------
    def _on_append(self, tx: WriteTx, events: list[StoredEvent]) -> None:
        conn = tx.conn
        first, last = events[0].position, events[-1].position
        for p in self.strong:
            cp = _checkpoint(conn, p.name)
            if cp is None or cp[0] != p.version:
                continue  # set up by a process with other code; rebuilt at our next start
            if cp[1] < first - 1:  # another writer appended without this projection
                self._catch_up_in(tx, p, first - 1)
            for e in events:
                if e.kind in p.kinds:
                    p.apply(conn, e)
            _set_checkpoint(conn, p, last)

    def sync_in(self, tx: WriteTx) -> None:
        """At the start of a command's transaction: make every strong projection current,
        so that the command decides on the whole log."""
        head = tx.head().position
        for p in self.strong:
            cp = _checkpoint(tx.conn, p.name)
            if cp is not None and cp[0] == p.version and cp[1] < head:
                self._catch_up_in(tx, p, head)

    # --- public operations ---------------------------------------------------------
    def catch_up_in(self, tx: WriteTx, p: Projection) -> int:
        """Bring projection ``p`` current inside the caller's write transaction (a handler that
        decides on an eventual projection); the number of events folded."""
        return self._catch_up_in(tx, p, tx.head().position)

    def ensure_current(self, names: Iterable[str] | None = None) -> int:
        """Bring projections (default: all) up to the head before reading them."""
        targets = [self.get(n) for n in names] if names is not None else list(self.all.values())
        head = self.store.head().position
        conn = self.store.read_connection()
        behind = [p for p in targets if (_checkpoint(conn, p.name) or (0, 0))[1] < head]
        if not behind:
            return 0
        n = 0
        with self.store.transaction() as tx:
            for p in behind:
                n += self._catch_up_in(tx, p, tx.head().position)
        return n

    def rebuild(self, name: str | None = None, progress: Progress | None = None) -> dict[str, int]:
        """Drop and replay one projection (or all) from position 0, in one transaction."""
        targets = [self.get(name)] if name is not None else list(self.all.values())
        out: dict[str, int] = {}
        with self.store.transaction() as tx:
            head = tx.head().position
            for p in targets:
                out[p.name] = self._rebuild_in(tx, p, head, progress)
        return out

    def digest(self, name: str) -> str:
        p = self.get(name)
        self.ensure_current([name])
        return digest_tables(self.store.read_connection(), p)

    def checkpoints(self) -> list[dict[str, Any]]:
        conn = self.store.read_connection()
        out = []
        for p in self.all.values():
            cp = _checkpoint(conn, p.name) or (0, 0)
            out.append(
                {
                    "name": p.name,
                    "version": p.version,
                    "stored_version": cp[0],
                    "position": cp[1],
                    "consistency": p.consistency,
                    "kinds": sorted(p.kinds),
                }
            )
        return out

    def reader(self, name: str) -> Any:
        """A read connection on which ``name`` is current (eventual ones catch up first)."""
        self.ensure_current([name])
        return self.store.read_connection()
