"""Diaries: each agent's entries (discovery, decision, blocker, progress, insight), newest
first on recall. One row per ``diary.written`` event; ``seq`` is the entry's number in the
agent's diary (its version in the ``diary:<agent_id>`` stream)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import msgspec

from ..events import StoredEvent
from ..events.kinds.diary import DiaryWritten
from .base import Projection

CATEGORIES = ("discovery", "decision", "blocker", "progress", "insight")

_dec = msgspec.json.Decoder(list[str])
_enc = msgspec.json.Encoder()


class DiaryEntry(msgspec.Struct, frozen=True):
    agent_id: str
    seq: int
    category: str
    text: str
    ts: str
    position: int
    tags: list[str] = []
    paths: list[str] = []
    session_id: str | None = None


class Diaries(Projection):
    name = "diaries"
    version = 1
    kinds = frozenset({"diary.written"})
    tables = {
        "diary_entries": """CREATE TABLE IF NOT EXISTS diary_entries (
            agent_id   TEXT NOT NULL,
            seq        INTEGER NOT NULL,
            position   INTEGER NOT NULL UNIQUE,
            category   TEXT NOT NULL,
            text       TEXT NOT NULL,
            tags       TEXT NOT NULL,
            paths      TEXT NOT NULL,
            ts         TEXT NOT NULL,
            session_id TEXT,
            PRIMARY KEY (agent_id, seq)
        )""",
    }
    indexes = ("CREATE INDEX IF NOT EXISTS diary_entries_category ON diary_entries (agent_id, category, seq)",)

    def apply(self, conn: Any, event: StoredEvent) -> None:
        ev = event.data()
        if isinstance(ev, DiaryWritten):
            conn.execute(
                "INSERT INTO diary_entries (agent_id, seq, position, category, text, tags, paths, ts, session_id)"
                " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (ev.agent_id, event.version, event.position, ev.category, ev.text, _enc.encode(list(ev.tags)).decode(),
                 _enc.encode(list(ev.paths)).decode(), event.ts, ev.session_id),
            )


_COLS = "agent_id, seq, category, text, ts, position, tags, paths, session_id"


def _entry(row: tuple[Any, ...]) -> DiaryEntry:
    agent_id, seq, category, text, ts, position, tags, paths, session_id = row
    return DiaryEntry(agent_id, seq, category, text, ts, position, _dec.decode(tags), _dec.decode(paths), session_id)


def recall_diary(conn: Any, agent_id: str, *, category: str | None = None, limit: int | None = 20,
                 matching: str | None = None, positions: Iterable[int] | None = None) -> list[DiaryEntry]:
    """``agent_id``'s entries, newest first; only ``category`` if given; only entries whose
    text, tags or paths contain every word of ``matching`` (case-insensitive) if given; only
    the entries at ``positions`` (e.g. full-text hits from ``EventStore.search``) if given."""
    sql = f"SELECT {_COLS} FROM diary_entries WHERE agent_id = ?"
    params: list[Any] = [agent_id]
    if category is not None:
        sql += " AND category = ?"
        params.append(category)
    for word in (matching or "").split():
        sql += " AND instr(lower(text || ' ' || tags || ' ' || paths), lower(?)) > 0"
        params.append(word)
    if positions is not None:
        pos = sorted({int(p) for p in positions})
        if not pos:
            return []
        sql += f" AND position IN ({','.join('?' * len(pos))})"
        params.extend(pos)
    sql += " ORDER BY seq DESC"
    if limit is not None:
        sql += " LIMIT ?"
        params.append(int(limit))
    return [_entry(r) for r in conn.execute(sql, params)]


def diary_size(conn: Any, agent_id: str) -> int:
    return conn.execute("SELECT count(*) FROM diary_entries WHERE agent_id = ?", (agent_id,)).fetchone()[0]
