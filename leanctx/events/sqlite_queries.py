"""The event store's read-side SQL: rows, the FTS index, search, lineage and chain checks.

Functions of an open apsw connection, so :mod:`.sqlite_store` keeps only connections,
transactions and appends. The caller chooses the snapshot: each function runs on the
connection it is given, inside whatever transaction that connection is in.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import apsw

from .codec import GENESIS_HASH, check_link
from .envelope import COLUMNS, StoredEvent
from .filter import TopicFilter
from .fts import searchable_text
from .store import Lineage, SearchHit, VerifyResult

SELECT = "SELECT " + ", ".join(COLUMNS) + " FROM events"


def rows(cursor: Any) -> list[StoredEvent]:
    return [StoredEvent(*r) for r in cursor]


def fts_index(conn: apsw.Connection, events: Sequence[StoredEvent]) -> None:
    """Index ``events`` (consecutive positions) inside the caller's write transaction,
    first filling any gap left by a writer that did not index inline."""
    at = conn.execute("SELECT position FROM events_fts_state WHERE id = 1").fetchone()[0]
    if at >= events[-1].position:
        return
    if at < events[0].position - 1:
        gap = rows(conn.execute(f"{SELECT} WHERE position > ? AND position < ? ORDER BY position",
                                (at, events[0].position)))
        events = [*gap, *events]
    events = [e for e in events if e.position > at]
    conn.executemany(
        "INSERT INTO events_fts (rowid, kind, stream, who, body) VALUES (?, ?, ?, ?, ?)",
        ((e.position, *searchable_text(e.kind, e.stream, e.actor, e.to_agent, e.channel, e.payload))
         for e in events),
    )
    conn.execute("UPDATE events_fts_state SET position = ? WHERE id = 1", (events[-1].position,))


def search_fts(conn: apsw.Connection, match: str, filter: TopicFilter | None, limit: int) -> list[SearchHit]:
    """Events matching an already-quoted FTS5 ``match``, best ``bm25()`` first (kind weighs double)."""
    where, params = filter.to_sql("e.") if filter is not None else ("1", [])
    cols = ", ".join(f"e.{c}" for c in COLUMNS)
    sql = (
        f"SELECT {cols}, bm25(events_fts, 2.0, 1.0, 1.0, 1.0) AS score "
        "FROM events_fts JOIN events e ON e.position = events_fts.rowid "
        f"WHERE events_fts MATCH ? AND {where} ORDER BY score, e.position LIMIT ?"
    )
    return [SearchHit(StoredEvent(*r[:-1]), r[-1]) for r in conn.execute(sql, (match, *params, int(limit)))]


def lineage_of(conn: apsw.Connection, event: StoredEvent) -> Lineage:
    """The causation chain of ``event``: every ancestor and every descendant, by position."""
    ancestors = rows(conn.execute(
        "WITH RECURSIVE anc(p) AS ("
        " SELECT causation_id FROM events WHERE position = ? AND causation_id IS NOT NULL"
        " UNION SELECT e.causation_id FROM events e JOIN anc ON e.position = anc.p"
        " WHERE e.causation_id IS NOT NULL)"
        f" {SELECT} WHERE position IN (SELECT p FROM anc) ORDER BY position",
        (event.position,),
    ))
    descendants = rows(conn.execute(
        "WITH RECURSIVE des(p) AS ("
        " SELECT position FROM events WHERE causation_id = ?"
        " UNION SELECT e.position FROM events e JOIN des ON e.causation_id = des.p)"
        f" {SELECT} WHERE position IN (SELECT p FROM des) ORDER BY position",
        (event.position,),
    ))
    return Lineage(event, ancestors, descendants)


def verify_chain(conn: apsw.Connection, total: int, progress: Callable[[int, int], None] | None) -> VerifyResult:
    """Walk the hash chain from genesis; the first broken link stops it."""
    prev = GENESIS_HASH
    expected_pos = 0
    checked = 0
    for r in conn.execute(SELECT + " ORDER BY position"):
        expected_pos += 1
        reason, _ = check_link(prev, expected_pos, r, r[14], r[15], r[16])
        if reason is not None:
            return VerifyResult(False, checked, total, prev, first_broken=expected_pos, reason=reason)
        prev = r[16]
        checked += 1
        if progress is not None and checked % 10_000 == 0:
            progress(checked, total)
    if progress is not None:
        progress(checked, total)
    return VerifyResult(True, checked, total, prev)
