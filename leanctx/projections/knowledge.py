"""Knowledge: one current fact per key, the alternatives of a flagged conflict, and an FTS5
index over key / value / category for recall (ranked with SQLite's ``bm25()``).

**Conflicts.** A ``knowledge.remembered`` conflicts with the key's current value when it comes
from *another agent*, says *another value* (compared normalised: case, punctuation and spacing
ignored) and is written within the event's ``conflict_window_s`` of the current value's
timestamp (event timestamps only: this fold never reads the clock). On a conflict the new
value becomes the head, and both writes are kept as alternatives (one per agent, the latest),
so the next reader is told. A conflict stays flagged while further disagreeing writes arrive
inside the window (they join the alternatives) and is cleared by ``knowledge.resolved``, by a
write that agrees with the head, by the head's own writer writing again, or by any write
after the window — the "later remember by either" of the two agents clears it.

Recall ranks with ``bm25()`` here; ``commands.knowledge_recall.recall`` fuses that list by reciprocal
rank with the nearest facts in sqlite-vec (``cache.knowledge_vectors``, a cache keyed by the
entry ids of :func:`fact_rows`) when an embedding model is installed.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

import msgspec

from .. import clock
from ..events import StoredEvent
from ..events.fts import quote_query
from ..events.kinds.knowledge import (KnowledgeConsolidated, KnowledgeRemembered, KnowledgeRemoved,
                                      KnowledgeResolved)
from ..ranking import rrf
from .base import Projection

BM25_WEIGHTS = (2.0, 1.0, 0.5)  # key, value, category
MAX_QUERY_TERMS = 32  # distinct terms ORed into one FTS5 query (as code search: cache.code_chunks)
_WORD = re.compile(r"[^\W_]+", re.UNICODE)
STOPWORDS = frozenset(
    "a an and are as at be by do does for from how i in is it of on or our the to use used uses we what "
    "when where which who why with you".split()
)


class Alternative(msgspec.Struct, frozen=True):
    agent: str
    value: str
    confidence: float
    ts: str
    position: int
    source: str | None = None


class KnowledgeEntry(msgspec.Struct, frozen=True):
    key: str
    category: str
    value: str
    confidence: float
    agent: str
    ts: str
    position: int
    source: str | None = None
    conflict: bool = False
    alternatives: list[Alternative] = []


class Knowledge(Projection):
    name = "knowledge"
    version = 1
    kinds = frozenset({"knowledge.remembered", "knowledge.removed", "knowledge.resolved",
                       "knowledge.consolidated"})
    tables = {
        "knowledge_entries": """CREATE TABLE IF NOT EXISTS knowledge_entries (
            id         INTEGER PRIMARY KEY,  -- position of the write that created the row
            key        TEXT NOT NULL UNIQUE,
            category   TEXT NOT NULL,
            value      TEXT NOT NULL,
            confidence REAL NOT NULL,
            source     TEXT,
            agent      TEXT NOT NULL,
            ts         TEXT NOT NULL,
            position   INTEGER NOT NULL,
            conflict   INTEGER NOT NULL DEFAULT 0
        )""",
        "knowledge_alternatives": """CREATE TABLE IF NOT EXISTS knowledge_alternatives (
            key        TEXT NOT NULL,
            agent      TEXT NOT NULL,
            value      TEXT NOT NULL,
            confidence REAL NOT NULL,
            source     TEXT,
            ts         TEXT NOT NULL,
            position   INTEGER NOT NULL,
            PRIMARY KEY (key, agent)
        )""",
        "knowledge_fts": "CREATE VIRTUAL TABLE IF NOT EXISTS knowledge_fts USING fts5("
                         "key, value, category, tokenize='porter unicode61')",
    }
    indexes = ("CREATE INDEX IF NOT EXISTS knowledge_entries_category ON knowledge_entries (category, key)",)

    def apply(self, conn: Any, event: StoredEvent) -> None:
        ev = event.data()
        if isinstance(ev, KnowledgeRemembered):
            self._remember(conn, event, ev)
        elif isinstance(ev, KnowledgeRemoved):
            _delete(conn, ev.key)
        elif isinstance(ev, KnowledgeResolved):
            row = conn.execute("SELECT id, key, category FROM knowledge_entries WHERE key = ?", (ev.key,)).fetchone()
            if row is None:
                return
            conn.execute("DELETE FROM knowledge_alternatives WHERE key = ?", (ev.key,))
            conn.execute("UPDATE knowledge_entries SET value = ?, agent = ?, ts = ?, position = ?, conflict = 0"
                         " WHERE key = ?", (ev.value, event.actor or "", event.ts, event.position, ev.key))
            _index(conn, row[0], row[1], ev.value, row[2])
        elif isinstance(ev, KnowledgeConsolidated):
            for key in ev.merged:
                _delete(conn, key)
            conn.execute("UPDATE knowledge_entries SET confidence = ?, position = ? WHERE key = ?",
                         (ev.confidence, event.position, ev.key))

    def _remember(self, conn: Any, event: StoredEvent, ev: KnowledgeRemembered) -> None:
        agent = event.actor or ""
        row = conn.execute("SELECT id, value, confidence, source, agent, ts, position, conflict"
                           " FROM knowledge_entries WHERE key = ?", (ev.key,)).fetchone()
        if row is None:
            conn.execute("INSERT INTO knowledge_entries (id, key, category, value, confidence, source, agent, ts,"
                         " position, conflict) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, 0)",
                         (event.position, ev.key, ev.category, ev.value, ev.confidence, ev.source, agent, event.ts,
                          event.position))
            _index(conn, event.position, ev.key, ev.value, ev.category)
            return
        rid, value, confidence, source, prev_agent, prev_ts, prev_pos, flagged = row
        conflicting = (prev_agent != agent and normalize(value) != normalize(ev.value)
                       and clock.parse(event.ts) - clock.parse(prev_ts) <= ev.conflict_window_s)
        if conflicting:
            alt = "INSERT OR REPLACE INTO knowledge_alternatives (key, agent, value, confidence, source, ts, position)" \
                  " VALUES (?, ?, ?, ?, ?, ?, ?)"
            if not flagged:
                conn.execute(alt, (ev.key, prev_agent, value, confidence, source, prev_ts, prev_pos))
            conn.execute(alt, (ev.key, agent, ev.value, ev.confidence, ev.source, event.ts, event.position))
        else:
            conn.execute("DELETE FROM knowledge_alternatives WHERE key = ?", (ev.key,))
        conn.execute("UPDATE knowledge_entries SET category = ?, value = ?, confidence = ?, source = ?, agent = ?,"
                     " ts = ?, position = ?, conflict = ? WHERE key = ?",
                     (ev.category, ev.value, ev.confidence, ev.source, agent, event.ts, event.position,
                      int(conflicting), ev.key))
        _index(conn, rid, ev.key, ev.value, ev.category)


def _index(conn: Any, rid: int, key: str, value: str, category: str) -> None:
    conn.execute("DELETE FROM knowledge_fts WHERE rowid = ?", (rid,))
    conn.execute("INSERT INTO knowledge_fts (rowid, key, value, category) VALUES (?, ?, ?, ?)",
                 (rid, key, value, category))


def _delete(conn: Any, key: str) -> None:
    row = conn.execute("SELECT id FROM knowledge_entries WHERE key = ?", (key,)).fetchone()
    if row is not None:
        conn.execute("DELETE FROM knowledge_fts WHERE rowid = ?", (row[0],))
    conn.execute("DELETE FROM knowledge_entries WHERE key = ?", (key,))
    conn.execute("DELETE FROM knowledge_alternatives WHERE key = ?", (key,))


# --- text ------------------------------------------------------------------------------------


def tokens(text: str) -> list[str]:
    return [w.lower() for w in _WORD.findall(text)]


def normalize(text: str) -> str:
    """Case, punctuation and spacing ignored: ``"Postgres 16."`` == ``"postgres  16"``."""
    return " ".join(tokens(text))


def jaccard(a: str, b: str) -> float:
    sa, sb = set(tokens(a)), set(tokens(b))
    if not sa and not sb:
        return 1.0
    return len(sa & sb) / len(sa | sb)


def fts_terms(query: str) -> tuple[list[str], int]:
    """(quoted terms, how many distinct terms were dropped) of ``query``: its terms, stopwords
    dropped unless nothing else is left, each quoted as an FTS5 string
    (:func:`leanctx.events.fts.quote_query`), duplicates removed, then at most
    ``MAX_QUERY_TERMS`` of them (the first ones). Linear in the query's length."""
    terms = query.split()
    kept = [t for t in terms if t.lower().strip("?!.,;:") not in STOPWORDS] or terms
    quoted = list(dict.fromkeys(q for q in (quote_query(t) for t in kept) if q))
    return quoted[:MAX_QUERY_TERMS], max(len(quoted) - MAX_QUERY_TERMS, 0)


def fts_query(query: str) -> str | None:
    """The terms of ``query`` (:func:`fts_terms`) ORed so that bm25 ranks partial matches, or
    None when nothing is searchable. FTS5's cost grows with the square of an OR chain's length
    (16k terms: 1.4 s, 32k: 7.7 s), hence the cap on terms."""
    quoted, _ = fts_terms(query)
    return " OR ".join(quoted) if quoted else None


# --- queries ---------------------------------------------------------------------------------

_COLS = "key, category, value, confidence, agent, ts, position, source, conflict"


def _alternatives(conn: Any, key: str) -> list[Alternative]:
    return [Alternative(*r) for r in conn.execute(
        "SELECT agent, value, confidence, ts, position, source FROM knowledge_alternatives WHERE key = ?"
        " ORDER BY position", (key,))]


def _entry(conn: Any, row: tuple[Any, ...]) -> KnowledgeEntry:
    key, category, value, confidence, agent, ts, position, source, conflict = row
    alts = _alternatives(conn, key) if conflict else []
    return KnowledgeEntry(key, category, value, confidence, agent, ts, position, source, bool(conflict), alts)


def get_entry(conn: Any, key: str) -> KnowledgeEntry | None:
    row = conn.execute(f"SELECT {_COLS} FROM knowledge_entries WHERE key = ?", (key,)).fetchone()
    return None if row is None else _entry(conn, row)


def list_entries(conn: Any, *, category: str | None = None) -> list[KnowledgeEntry]:
    sql = f"SELECT {_COLS} FROM knowledge_entries"
    params: list[Any] = []
    if category is not None:
        sql += " WHERE category = ?"
        params.append(category)
    return [_entry(conn, r) for r in conn.execute(sql + " ORDER BY category, key", params)]


def fact_rows(conn: Any) -> list[tuple[int, str, str, str]]:
    """(id, key, category, value) of every current fact, by id. ``id`` is the position of the
    write that created the row: it stays through updates and is never reused, so caches derived
    from the facts (``cache.knowledge_vectors``) key by it."""
    return [(int(i), k, c, v) for i, k, c, v in conn.execute(
        "SELECT id, key, category, value FROM knowledge_entries ORDER BY id")]


def bm25_ranking(conn: Any, query: str, *, category: str | None = None, limit: int = 50) -> list[tuple[str, float]]:
    """(key, bm25 score) best first (SQLite's bm25 is lower-is-better; returned negated)."""
    q = fts_query(query)
    if q is None:
        return []
    sql = ("SELECT e.key, bm25(knowledge_fts, ?, ?, ?) AS s FROM knowledge_fts"
           " JOIN knowledge_entries e ON e.id = knowledge_fts.rowid WHERE knowledge_fts MATCH ?")
    params: list[Any] = [*BM25_WEIGHTS, q]
    if category is not None:
        sql += " AND e.category = ?"
        params.append(category)
    sql += " ORDER BY s, e.key LIMIT ?"
    params.append(int(limit))
    return [(k, -s) for k, s in conn.execute(sql, params)]


class Hit(msgspec.Struct, frozen=True):
    entry: KnowledgeEntry
    score: float  # fused (rrf) score
    bm25: float | None = None


def recall(conn: Any, query: str, *, category: str | None = None, limit: int = 10) -> list[Hit]:
    """Facts for ``query``, best first, by bm25 over key/value/category (scored by :func:`rrf`
    over that one list). Conflicted entries carry their alternatives. The full recall, fused with
    the nearest facts in sqlite-vec when a model is installed, is ``commands.knowledge_recall.recall``."""
    lexical = bm25_ranking(conn, query, category=category)
    bm = dict(lexical)
    hits = []
    for key, score in rrf([[k for k, _ in lexical]])[:limit]:
        e = get_entry(conn, key)
        if e is not None:
            hits.append(Hit(e, round(score, 6), None if key not in bm else round(bm[key], 6)))
    return hits


class KnowledgeStatus(msgspec.Struct, frozen=True):
    total: int
    by_category: dict[str, int]
    conflicts: list[str]


def status(conn: Any) -> KnowledgeStatus:
    by = {c: n for c, n in conn.execute(
        "SELECT category, count(*) FROM knowledge_entries GROUP BY category ORDER BY category")}
    conflicts = [r[0] for r in conn.execute("SELECT key FROM knowledge_entries WHERE conflict = 1 ORDER BY key")]
    return KnowledgeStatus(sum(by.values()), by, conflicts)


def near_duplicates(conn: Any, *, threshold: float = 0.8) -> list[tuple[str, list[str], float]]:
    """Groups of same-category, unconflicted entries whose normalised values overlap by
    Jaccard ≥ ``threshold`` (single linkage): (kept key, merged keys, lowest pair similarity in
    the group). The kept entry has the highest confidence, then the latest write."""
    entries = [e for e in list_entries(conn) if not e.conflict]
    parent = {e.key: e.key for e in entries}

    def find(k: str) -> str:
        while parent[k] != k:
            parent[k] = parent[parent[k]]
            k = parent[k]
        return k

    sims: dict[tuple[str, str], float] = {}
    for i, a in enumerate(entries):
        for b in entries[i + 1:]:
            if a.category == b.category:
                s = jaccard(a.value, b.value)
                if s >= threshold:
                    sims[(a.key, b.key)] = s
                    parent[find(a.key)] = find(b.key)
    groups: dict[str, list[KnowledgeEntry]] = {}
    for e in entries:
        groups.setdefault(find(e.key), []).append(e)
    out = []
    for members in groups.values():
        if len(members) < 2:
            continue
        keep = max(members, key=lambda e: (e.confidence, e.position))
        keys = {m.key for m in members}
        low = min(s for (a, b), s in sims.items() if a in keys and b in keys)
        out.append((keep.key, sorted(m.key for m in members if m.key != keep.key), round(low, 4)))
    return sorted(out)


def keys_in(conn: Any, keys: Iterable[str]) -> set[str]:
    ks = list(dict.fromkeys(keys))
    if not ks:
        return set()
    return {r[0] for r in conn.execute(
        f"SELECT key FROM knowledge_entries WHERE key IN ({','.join('?' * len(ks))})", ks)}
