"""Knowledge recall. A query, not a command: it appends nothing. Two rankers: bm25 over the
knowledge projection's FTS5 index (always), and the nearest facts in sqlite-vec
(``cache.knowledge_vectors``) when an embedding model is installed; their lists are fused by
reciprocal rank fusion (``leanctx.ranking.rrf``, k = 60, the one code search and the bm25-only
recall use). The vector cache is brought current first (only new and changed facts are embedded;
vectors of facts that are gone are dropped). Without sqlite-vec (not installed, or it cannot be
loaded) the answer is bm25's and its note says why. A query longer than ctx_search's 1,000
characters is refused (``KNOWLEDGE_QUERY_TOO_LONG``); bm25 searches its first
``MAX_QUERY_TERMS`` distinct terms and the answer says how many more were dropped (its summary,
and ``dropped_terms`` in the structured answer: ``RecallAnswer.fields``).
"""

from __future__ import annotations

from typing import Any

import msgspec

from ..cache.knowledge_vectors import SyncStats
from ..projections.knowledge import (
    MAX_QUERY_TERMS,
    KnowledgeEntry,
    bm25_ranking,
    fact_rows,
    fts_terms,
    get_entry,
)
from ..ranking import RRF_K, rrf

RECALL_POOL = 50  # candidates taken from each ranker before fusion (at least ``limit``)
MAX_DISTANCE = 1.0  # a nearest fact counts when its cosine distance is below this (similarity > 0)
SEMANTIC_OFF = "semantic off (bm25 only; install lean-ctx[semantic] for embeddings)"
_AUTO: Any = object()


class RecallHit(msgspec.Struct, frozen=True):
    entry: KnowledgeEntry
    score: float  # the fused (RRF) score
    sources: list[str]  # the rankers that found it: bm25, semantic
    bm25: float | None = None  # bm25 score, higher is better (when bm25 found it)
    distance: float | None = None  # cosine distance (when semantic found it)


class RecallAnswer(msgspec.Struct):
    query: str
    hits: list[RecallHit]
    rankers: list[str]  # the rankers that took part: ["bm25"] or ["bm25", "semantic"]
    semantic: str  # "on" | "off"
    note: str  # "semantic on (...)" | "semantic off (...)"
    vectors: SyncStats | None = None  # the vector cache's upkeep on this recall (semantic on)
    dropped_terms: int = 0  # distinct query terms past MAX_QUERY_TERMS, not searched by bm25

    @property
    def summary(self) -> str:
        """One line naming the rankers that took part, e.g. ``rankers: bm25+semantic, fused by
        reciprocal rank (k=60); semantic on (...)``, and the terms dropped, if any."""
        fused = f", fused by reciprocal rank (k={RRF_K})" if len(self.rankers) > 1 else ""
        dropped = (f"; bm25 searched the first {MAX_QUERY_TERMS} distinct terms; {self.dropped_terms} more dropped"
                   if self.dropped_terms else "")
        return f"rankers: {'+'.join(self.rankers)}{fused}; {self.note}{dropped}"

    def fields(self) -> dict[str, Any]:
        """The structured answer every surface gives (``--json``, the MCP tool's content)."""
        return {"hits": self.hits, "rankers": self.rankers, "semantic": self.semantic,
                "dropped_terms": self.dropped_terms}


def semantic_note(embedder: Any = _AUTO) -> tuple[Any, str]:
    """(embedder or None, "semantic on (...)" / "semantic off (...)") for recall; by default the
    installed model (``cache.vectors.default_embedder``), if any."""
    from ..cache.vectors import default_embedder

    emb = default_embedder() if embedder is _AUTO else embedder
    if emb is None:
        return None, SEMANTIC_OFF
    return emb, f"semantic on ({getattr(emb, 'name', 'embeddings')} vectors in sqlite-vec)"


def recall(lc: Any, query: str, *, category: str | None = None, limit: int = 10,
           embedder: Any = _AUTO) -> RecallAnswer:
    """Facts for ``query``, best first, from ``lc``'s knowledge projection: bm25, fused with the
    nearest facts in sqlite-vec when an embedder is installed (or given). ``embedder=None``
    forces bm25 only. Conflicted entries carry their alternatives."""
    from ..cache.knowledge_vectors import Fact, KnowledgeVectors
    from ..cache.vectors import VectorsUnavailable, vectors_path
    from .knowledge import check_query

    check_query(query)
    conn = lc.projections.reader("knowledge")
    pool = max(RECALL_POOL, int(limit))
    emb, note = semantic_note(embedder)
    lexical = bm25_ranking(conn, query, category=category, limit=pool)
    lists: list[tuple[str, list[str]]] = [("bm25", [k for k, _ in lexical])]
    distances: dict[str, float] = {}
    stats = None
    if emb is not None and query.strip():
        rows = fact_rows(conn)
        key_of = {i: k for i, k, _, _ in rows}
        try:
            kv = KnowledgeVectors(vectors_path(lc.db), emb)
        except VectorsUnavailable as exc:  # the model is there, the vector store is not: bm25 alone
            emb, note = None, f"semantic off ({exc}; bm25 only)"
        else:
            with kv:
                stats = kv.sync([Fact(i, k, c, v) for i, k, c, v in rows])
                near = kv.query(query, pool, category=category)
            for i, d in near:
                if i in key_of and d < MAX_DISTANCE:
                    distances.setdefault(key_of[i], d)
            lists.append(("semantic", list(distances)))
    members = {name: set(keys) for name, keys in lists}
    bm = dict(lexical)
    hits = []
    for key, score in rrf([keys for _, keys in lists], k=RRF_K)[:max(int(limit), 0)]:
        e = get_entry(conn, key)
        if e is None:
            continue
        hits.append(RecallHit(e, round(score, 6), [n for n, _ in lists if key in members[n]],
                              None if key not in bm else round(bm[key], 6),
                              None if key not in distances else round(distances[key], 6)))
    return RecallAnswer(query, hits, [n for n, _ in lists], "on" if emb is not None else "off", note, stats,
                        fts_terms(query)[1])
