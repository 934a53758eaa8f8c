"""Path locks: who holds which workspace path, until when.

One row per held lock (``workspace``, ``path``): acquiring inserts it, renewing and recovering
update it, releasing deletes it (the history stays in the log). A row never expires by
itself: expiry is computed at query time from the stored lease end and a ``now`` argument.
An expired row still names its owner until someone recovers it or the owner unlocks it
("an expired lease is never taken silently").

Coverage is by whole path components: a lock on ``src`` covers ``src`` and everything under
``src/``; two locks overlap when one covers the other (see ``leanctx.paths``).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import msgspec

from .. import clock
from ..events import StoredEvent
from ..events.kinds.lock import LockAcquired, LockRecovered, LockReleased, LockRenewed
from ..paths import ancestors, join, overlaps
from .base import Projection


class LockView(msgspec.Struct, frozen=True):
    workspace: str
    path: str  # normalized, no trailing slash
    display: str  # with a trailing slash for directories
    directory: bool
    owner: str
    acquired_at: str
    renewed_at: str
    lease_seconds: float
    expires_at: str
    expires_in: float  # seconds from ``now``; negative once expired
    expired: bool
    renewals: int
    reason: str | None = None
    recovered_from: str | None = None
    recovery_reason: str | None = None
    recovered_at: str | None = None


class PathLocks(Projection):
    name = "path_locks"
    version = 1
    kinds = frozenset({"lock.acquired", "lock.renewed", "lock.released", "lock.recovered"})
    tables = {
        "path_locks": """CREATE TABLE IF NOT EXISTS path_locks (
            workspace       TEXT NOT NULL,
            path            TEXT NOT NULL,
            directory       INTEGER NOT NULL,
            owner           TEXT NOT NULL,
            acquired_at     TEXT NOT NULL,
            renewed_at      TEXT NOT NULL,
            lease_seconds   REAL NOT NULL,
            expires_at      TEXT NOT NULL,
            renewals        INTEGER NOT NULL,
            reason          TEXT,
            recovered_from  TEXT,
            recovery_reason TEXT,
            recovered_at    TEXT,
            position        INTEGER NOT NULL,
            PRIMARY KEY (workspace, path)
        )""",
    }
    indexes = (
        "CREATE INDEX IF NOT EXISTS path_locks_path ON path_locks (path, workspace)",
        "CREATE INDEX IF NOT EXISTS path_locks_expiry ON path_locks (expires_at)",
    )

    def apply(self, conn: Any, event: StoredEvent) -> None:
        ev = event.data()
        if isinstance(ev, LockAcquired):
            conn.execute(
                "INSERT OR REPLACE INTO path_locks (workspace, path, directory, owner, acquired_at, renewed_at,"
                " lease_seconds, expires_at, renewals, reason, recovered_from, recovery_reason, recovered_at,"
                " position) VALUES (?, ?, ?, ?, ?, ?, ?, ?, 0, ?, NULL, NULL, NULL, ?)",
                (ev.workspace, ev.path, int(ev.directory), ev.owner, event.ts, event.ts, ev.lease_seconds,
                 ev.lease_expires_at, ev.reason, event.position),
            )
        elif isinstance(ev, LockRenewed):
            conn.execute(
                "UPDATE path_locks SET directory = ?, owner = ?, renewed_at = ?, lease_seconds = ?, expires_at = ?,"
                " renewals = renewals + 1, reason = coalesce(?, reason), position = ?"
                " WHERE workspace = ? AND path = ?",
                (int(ev.directory), ev.owner, event.ts, ev.lease_seconds, ev.lease_expires_at, ev.reason,
                 event.position, ev.workspace, ev.path),
            )
        elif isinstance(ev, LockRecovered):
            conn.execute(
                "INSERT OR REPLACE INTO path_locks (workspace, path, directory, owner, acquired_at, renewed_at,"
                " lease_seconds, expires_at, renewals, reason, recovered_from, recovery_reason, recovered_at,"
                " position) VALUES (?, ?, ?, ?, ?, ?, ?, ?, 0, NULL, ?, ?, ?, ?)",
                (ev.workspace, ev.path, int(ev.directory), ev.owner, event.ts, event.ts, ev.lease_seconds,
                 ev.lease_expires_at, ev.previous_owner, ev.recovery_reason, event.ts, event.position),
            )
        elif isinstance(ev, LockReleased):
            conn.execute("DELETE FROM path_locks WHERE workspace = ? AND path = ?", (ev.workspace, ev.path))


_COLS = (
    "workspace, path, directory, owner, acquired_at, renewed_at, lease_seconds, expires_at, renewals, reason,"
    " recovered_from, recovery_reason, recovered_at"
)
_ORDER = " ORDER BY workspace, path"


def _view(row: tuple[Any, ...], now: float) -> LockView:
    (workspace, path, directory, owner, acquired_at, renewed_at, lease_seconds, expires_at, renewals, reason,
     recovered_from, recovery_reason, recovered_at) = row
    expires_in = round(clock.parse(expires_at) - now, 3)
    return LockView(workspace, path, path + "/" if directory else path, bool(directory), owner, acquired_at,
                    renewed_at, lease_seconds, expires_at, expires_in, expires_in <= 0, renewals, reason,
                    recovered_from, recovery_reason, recovered_at)


def list_locks(conn: Any, *, now: float, workspace: str | None = None, include_expired: bool = True,
               owner: str | None = None) -> list[LockView]:
    """Every held lock (expired ones too unless ``include_expired=False``), ordered by workspace, path."""
    sql = f"SELECT {_COLS} FROM path_locks"
    where: list[str] = []
    params: list[Any] = []
    if workspace is not None:
        where.append("workspace = ?")
        params.append(workspace)
    if owner is not None:
        where.append("owner = ?")
        params.append(owner)
    if not include_expired:
        where.append("expires_at > ?")
        params.append(clock.iso(now))
    if where:
        sql += " WHERE " + " AND ".join(where)
    return [_view(r, now) for r in conn.execute(sql + _ORDER, params)]


def active_locks(conn: Any, *, now: float, workspace: str | None = None) -> list[LockView]:
    """Unexpired locks at ``now`` (in ``workspace``, or in every workspace), ordered by workspace, path."""
    return list_locks(conn, now=now, workspace=workspace, include_expired=False)


def get_lock(conn: Any, workspace: str, path: str, *, now: float) -> LockView | None:
    row = conn.execute(f"SELECT {_COLS} FROM path_locks WHERE workspace = ? AND path = ?",
                       (workspace, path.rstrip("/"))).fetchone()
    return _view(row, now) if row else None


def locks_overlapping(conn: Any, path: str, *, now: float, workspace: str | None = None,
                      include_expired: bool = False) -> list[LockView]:
    """Locks that overlap the normalized ``path``: on it, on a parent directory of it, or under
    it. Unexpired only unless ``include_expired``; ordered by workspace, path."""
    key = path.strip("/")
    # the same path or a parent (an index lookup each), or anything under it (a range scan:
    # '0' is the character after '/', so [key + '/', key + '0') is exactly the subtree)
    keys = [*ancestors(key), key]
    marks = ",".join("?" * len(keys))
    sql = f"SELECT {_COLS} FROM path_locks WHERE (path IN ({marks}) OR (path >= ? AND path < ?))"
    params: list[Any] = [*keys, key + "/", key + "0"]
    if workspace is not None:
        sql += " AND workspace = ?"
        params.append(workspace)
    if not include_expired:
        sql += " AND expires_at > ?"
        params.append(clock.iso(now))
    return [_view(r, now) for r in conn.execute(sql + _ORDER, params)]


def blocking_locks(conn: Any, absolute_paths: Iterable[str], *, me: str, now: float) -> list[tuple[str, LockView]]:
    """For absolute file paths (e.g. the files a commit stages): the unexpired locks of other
    agents that overlap each, as (path, lock) pairs in the order of the paths then of the locks.
    Compared as absolute paths, so a lock taken in any workspace counts wherever it lies."""
    others = [(join(lk.workspace, lk.path), lk) for lk in active_locks(conn, now=now) if lk.owner != me]
    if not others:
        return []
    out: list[tuple[str, LockView]] = []
    for p in absolute_paths:
        for abs_lock, lk in others:
            if overlaps(abs_lock, p):
                out.append((p, lk))
    return out


class PathCheck(msgspec.Struct, frozen=True):
    """What ``chat check`` reports for one normalized path, as seen by agent ``me``."""

    workspace: str
    path: str
    display: str
    locked: bool  # an unexpired lock of another agent overlaps the path
    free: bool  # ``me`` could lock it now (no lock of another agent overlaps, expired or not)
    locks: list[LockView]  # every overlapping lock (mine too, expired too), ordered by path


def check_path(conn: Any, workspace: str, path: str, *, me: str, now: float, directory: bool = False) -> PathCheck:
    locks = locks_overlapping(conn, path, now=now, workspace=workspace, include_expired=True)
    others = [lk for lk in locks if lk.owner != me]
    return PathCheck(workspace, path, path + "/" if directory else path,
                     any(not lk.expired for lk in others), not others, locks)
