"""Runs projections over a store: in-transaction application, catch-up, rebuild, digest.

Checkpoints (``projection_checkpoints``: name, version, position) are written in the same
transaction as the rows they cover, so a crash never leaves rows and checkpoint apart.

Versions (several lean-ctx versions on one log: a ``serve`` started before an upgrade, two
installs): a projection belongs to the newest code that opened the log. A process whose code has
a newer version than the stored one (or none stored) rebuilds it, at open or whenever it meets
it later; one whose code is older never writes into it (no fold, no catch-up, no checkpoint) and
refuses to decide on it or read it (``PROJECTION_VERSION_CHANGED``) until restarted on the newer
code, or until ``rebuild()`` (``lean-ctx replay``) takes it back on purpose. A read-only log
rebuilds any other version into its throwaway TEMP copies (``events.sqlite_readonly``): the file
is never written, so no version is overwritten.

Reads (``ensure_current``/``reader``) wait ``READ_WAIT_MS`` at most for the write lock a
catch-up needs; when another writer keeps it, they answer from the rows as they are and
``stale()``/``stale_note()`` say how far behind the log those are (what must be current, like
``digest``, waits the store's full busy timeout).

A payload that does not decode stops a fold with ``EVENT_UNDECODABLE`` naming its position.
"""

from __future__ import annotations

import hashlib
import threading
from collections.abc import Callable, Iterable, Sequence
from typing import Any

import msgspec

from ..errors import InvalidInput, StoreError
from ..events import SqliteEventStore, StoredEvent, WriteTx
from ..events.codec import undecodable
from ..events.sqlite_readonly import read_only_error
from .base import Projection

Progress = Callable[[int, int], None]
REPLAY_BATCH = 5000
READ_WAIT_MS = 250  # a read's wait for the write lock of its catch-up (a command holds it for ms)
_enc = msgspec.json.Encoder()


class ProjectionVersionChanged(StoreError):
    """A newer lean-ctx owns this projection: this process must not decide on it."""

    code = "PROJECTION_VERSION_CHANGED"
    http_status = 503

    def __init__(self, p: Projection, stored: int) -> None:
        super().__init__(
            message=f"the log's {p.name} projection was rebuilt by a newer lean-ctx (its version {stored}, this "
            f"process has {p.version}), so this process can neither decide on it nor read it: restart it on the "
            "newer lean-ctx (upgrade this installation if it is the older one), or run `lean-ctx replay` with "
            "this one to rebuild the log's projections for it",
            projection=p.name, stored_version=stored, version=p.version,
        )


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


def _apply(p: Projection, conn: Any, e: StoredEvent) -> None:
    try:
        p.apply(conn, e)
    except StoreError as exc:
        if exc.code != "EVENT_UNDECODABLE" or exc.details.get("position") is not None:
            raise
        d = exc.details
        raise undecodable(e.kind, e.schema_version, str(d.get("reason")), e.position) from exc


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
                _apply(p, conn, e)
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
        self._reads = threading.local()  # .behind: what the thread's last read answered stale
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

    def _builds(self, p: Projection, cp: tuple[int, int] | None) -> bool:
        """Whether this process (re)builds ``p`` on sight: nothing stored, an older version, or
        (a read-only log, in its throwaway copies) any other version."""
        if cp is None:
            return True
        return cp[0] < p.version or (cp[0] != p.version and self.store.read_only)

    def _refuse_newer(self, p: Projection, cp: tuple[int, int] | None) -> None:
        if cp is not None and cp[0] > p.version and not self.store.read_only:
            raise ProjectionVersionChanged(p, cp[0])

    def _setup(self) -> None:
        """Create missing tables; rebuild any projection stored at an older version (a newer
        one's are left alone: see the module docstring)."""
        conn = self.store.read_connection()
        if not any(self._builds(p, _checkpoint(conn, p.name)) for p in self.all.values()):
            return
        with self.store.transaction() as tx:
            for p in self.all.values():
                if self._builds(p, _checkpoint(tx.conn, p.name)):
                    self._rebuild_in(tx, p, tx.head().position)

    def _current_in(self, tx: WriteTx, p: Projection, head: int) -> int:
        """Make ``p`` current at ``head`` inside ``tx``: catch up, or rebuild it when this process
        builds it (``_builds``); refused when a newer lean-ctx owns it. Events folded."""
        cp = _checkpoint(tx.conn, p.name)
        if cp is not None and cp[0] == p.version:
            if cp[1] >= head:
                return 0
            n = replay_into(tx.conn, self._tx_events(tx, p, cp[1], head), [p])
            _set_checkpoint(tx.conn, p, head)
            return n
        self._refuse_newer(p, cp)
        return self._rebuild_in(tx, p, head)

    def _tx_events(self, tx: WriteTx, p: Projection, since: int, upto: int) -> Iterable[StoredEvent]:
        kinds = sorted(p.kinds)
        while True:
            rows = tx.read_range(since, upto, kinds, REPLAY_BATCH)
            yield from rows
            if len(rows) < REPLAY_BATCH:
                return
            since = rows[-1].position

    def _rebuild_in(self, tx: WriteTx, p: Projection, head: int, progress: Progress | None = None) -> int:
        temp = self.store.read_only  # a read-only log: into its throwaway copies
        p.drop(tx.conn, temp=temp)
        p.create(tx.conn, temp=temp)
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
                if self._builds(p, cp):  # stored at an older version: rebuilt, these events included
                    self._rebuild_in(tx, p, last)
                continue  # a newer lean-ctx's: its processes catch up from their checkpoint
            if cp[1] < first - 1:  # another writer appended without this projection
                self._current_in(tx, p, first - 1)
            for e in events:
                if e.kind in p.kinds:
                    _apply(p, conn, e)
            _set_checkpoint(conn, p, last)

    def sync_in(self, tx: WriteTx) -> None:
        """At the start of a command's transaction: make every strong projection current,
        so that the command decides on the whole log (refused, ``PROJECTION_VERSION_CHANGED``,
        when a newer lean-ctx owns one of them)."""
        head = tx.head().position
        for p in self.strong:  # a refusal rolls back what the ones before it folded
            self._current_in(tx, p, head)

    # --- public operations ---------------------------------------------------------
    def catch_up_in(self, tx: WriteTx, p: Projection) -> int:
        """Bring projection ``p`` current inside the caller's write transaction (a handler that
        decides on an eventual projection); the number of events folded."""
        return self._current_in(tx, p, tx.head().position)

    def ensure_current(self, names: Iterable[str] | None = None, wait_ms: int | None = READ_WAIT_MS) -> int:
        """Bring projections (default: all) up to the head before reading them; the number of
        events folded. The write lock is waited for ``wait_ms`` at most (None: the store's busy
        timeout): past it, projections that only had to catch up are left as they are, and
        ``stale()`` names them (a rebuild, or a newer lean-ctx's projection, is never read stale)."""
        targets = [self.get(n) for n in names] if names is not None else list(self.all.values())
        head = self.store.head().position
        conn = self.store.read_connection()
        todo: list[tuple[Projection, int]] = []  # (projection, its position when only behind, else -1)
        for p in targets:
            cp = _checkpoint(conn, p.name)
            if cp is not None and cp[0] == p.version:
                if cp[1] < head:
                    todo.append((p, cp[1]))
                continue
            self._refuse_newer(p, cp)
            todo.append((p, -1))
        self._reads.behind = {}
        if not todo:
            return 0

        def work(tx: WriteTx) -> int:
            return sum(self._current_in(tx, p, tx.head().position) for p, _ in todo)

        n = self._write(work, None if any(at < 0 for _, at in todo) else wait_ms)
        if n is None:  # the lock stayed busy: the rows as they are
            self._reads.behind = {p.name: head - at for p, at in todo}
            return 0
        return n

    def _write(self, work: Callable[[WriteTx], int], wait_ms: int | None) -> int | None:
        """``work`` in a write transaction that waits ``wait_ms`` at most for the write lock (this
        process's and the file's); None when it stayed busy. (Reaches into the store for its
        lock and connection: ``SqliteEventStore.transaction`` takes no timeout of its own.)"""
        store = self.store
        if wait_ms is None or store.read_only:
            with store.transaction() as tx:
                return work(tx)
        lock, writer, full = store._wlock, store._writer, store.busy_timeout_ms
        if not lock.acquire(timeout=wait_ms / 1000):
            return None
        began = False
        try:
            if writer is not None:
                writer.set_busy_timeout(wait_ms)
            with store.transaction() as tx:
                began = True
                if writer is not None:
                    writer.set_busy_timeout(full)
                return work(tx)
        except StoreError as exc:
            if began or exc.code != "STORE_BUSY":
                raise
            return None
        finally:
            if writer is not None:
                writer.set_busy_timeout(full)
            lock.release()

    def stale(self) -> dict[str, int]:
        """Projections this thread's last ``ensure_current``/``reader`` answered from rows behind
        the head because another writer kept the lock: name → how many events behind."""
        return dict(getattr(self._reads, "behind", {}))

    def stale_note(self) -> str | None:
        """A sentence for the reader when ``stale()`` is not empty."""
        behind = self.stale()
        if not behind:
            return None
        parts = ", ".join(f"{name} {n} event(s)" for name, n in sorted(behind.items()))
        return (f"answered from projections behind the log ({parts} behind): another process kept the write lock "
                f"over {READ_WAIT_MS} ms; run again for an up-to-date answer")

    def rebuild(self, name: str | None = None, progress: Progress | None = None) -> dict[str, int]:
        """Drop and replay one projection (or all) from position 0, in one transaction, at this
        code's version (whichever version was stored). Refused on a read-only log (``STORE_READ_ONLY``):
        a rebuild in its throwaway copies would be lost with them."""
        targets = [self.get(name)] if name is not None else list(self.all.values())
        if self.store.read_only:
            raise read_only_error(self.store, "its projections cannot be rebuilt in place")
        out: dict[str, int] = {}
        with self.store.transaction() as tx:
            head = tx.head().position
            for p in targets:
                out[p.name] = self._rebuild_in(tx, p, head, progress)
        return out

    def digest(self, name: str) -> str:
        p = self.get(name)
        self.ensure_current([name], wait_ms=None)
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
        """A read connection on which ``name`` is current (eventual ones catch up first; see
        ``ensure_current`` for a busy write lock)."""
        self.ensure_current([name])
        return self.store.read_connection()
