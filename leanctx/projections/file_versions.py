"""File versions: per (project, agent, path), the sha256 of the content that agent last saw
(``file.read``) or wrote (``file.edited``) — what ctx_edit's TOCTOU guard compares with the
file on disk.

Strong: an edit decides on it inside its write transaction, so "agent A read version H" and
"agent B wrote H'" are ordered by the log. Rows are per agent: B's edit does not move A's
row, so A's next edit sees that the file moved past what A saw (``EDIT_STALE_READ``) until A
reads it again. Events without an actor are not folded (no agent to key them by). Paths are
the project-relative names of ``leanctx.paths.normalize`` (symlinks inside the project
resolved), so a read and an edit of one file meet on one row.
"""

from __future__ import annotations

from typing import Any

import msgspec

from ..events import StoredEvent
from ..events.kinds.context import UNSENT_MODE, FileEdited, FileRead
from .base import Projection


class FileVersion(msgspec.Struct, frozen=True):
    project: str
    agent: str
    path: str
    sha256: str
    source: str  # "read" | "edited"
    ts: str
    position: int


class FileVersions(Projection):
    name = "file_versions"
    version = 2
    kinds = frozenset({"file.read", "file.edited"})
    tables = {
        "file_versions": """CREATE TABLE IF NOT EXISTS file_versions (
            project  TEXT NOT NULL,
            agent    TEXT NOT NULL,
            path     TEXT NOT NULL,
            sha256   TEXT NOT NULL,
            source   TEXT NOT NULL,
            ts       TEXT NOT NULL,
            position INTEGER NOT NULL,
            PRIMARY KEY (project, agent, path)
        )""",
    }

    def apply(self, conn: Any, event: StoredEvent) -> None:
        if not event.actor:
            return
        ev = event.data()
        if isinstance(ev, FileRead):
            if ev.mode == UNSENT_MODE:  # named past a read's cap, not sent: the agent did not see it
                return
            sha, source = ev.content_hash, "read"
        elif isinstance(ev, FileEdited):
            sha, source = ev.after_hash, "edited"
        else:  # pragma: no cover - only the declared kinds reach apply
            return
        conn.execute(
            "INSERT INTO file_versions (project, agent, path, sha256, source, ts, position) VALUES (?, ?, ?, ?, ?, ?, ?)"
            " ON CONFLICT (project, agent, path) DO UPDATE SET sha256 = excluded.sha256, source = excluded.source,"
            " ts = excluded.ts, position = excluded.position",
            (event.project or "", event.actor, ev.path, sha, source, event.ts, event.position),
        )


def last_seen(conn: Any, *, project: str | None, agent: str, path: str) -> FileVersion | None:
    """What ``agent`` last saw or wrote of ``path`` in ``project``, or None if never."""
    row = conn.execute(
        "SELECT project, agent, path, sha256, source, ts, position FROM file_versions"
        " WHERE project = ? AND agent = ? AND path = ?", (project or "", agent, path)).fetchone()
    return FileVersion(*row) if row else None


def seen_by(conn: Any, *, project: str | None, path: str) -> list[FileVersion]:
    """Every agent's last version of ``path``, most recent first."""
    return [FileVersion(*r) for r in conn.execute(
        "SELECT project, agent, path, sha256, source, ts, position FROM file_versions"
        " WHERE project = ? AND path = ? ORDER BY position DESC", (project or "", path))]
