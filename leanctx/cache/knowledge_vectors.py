"""Knowledge vectors: embeddings of the current facts in a sqlite-vec ``vec0`` table, for the
semantic half of ``knowledge recall``.

**Derived, never recorded.** The log stays the source of truth: vectors are a cache of the
knowledge projection (``fact_rows``), never events. Replay does not touch them, deleting them
loses nothing, and the next recall with an embedder builds them again.

**Where.** In the vector database beside the log (``cache.vectors.vectors_path(db)``, the file
code search keeps its chunk vectors in), in tables of their own:

- ``knowledge_vec_entries (entry_id, sha256)``: which fact each vector is of, and the sha256 of
  the exact text embedded (category and text);
- ``knowledge_vectors``: ``vec0(entry_id INTEGER PRIMARY KEY, category TEXT, embedding
  float[dim] distance_metric=cosine)``; ``category`` is a metadata column, so a category filter
  is applied during the KNN search, not after it;
- ``knowledge_vec_meta``: the model and dimension (and the text recipe's version); when any
  differs, both tables are dropped and rebuilt.

**Kept current on recall.** ``sync(facts)`` compares the stored (entry id → hash) with the
projection's: vectors of facts that are gone (removed, consolidated away) are deleted, and only
new facts and facts whose text changed (remembered again, resolved, re-categorised) are
embedded, in batches of ``EMBED_BATCH``, each written in a short transaction of its own. The
hash and the vector are written together, so a stored pair is always consistent; two recalls
racing do the same work twice at worst. An entry id is the position of the write that created
the fact (``projections.knowledge.fact_rows``), never reused; the hash check means a vector is
only ever used for the text it was computed from, even against another log at the same path.

The connection, transactions, embedding checks and reset-on-change are
``cache.vectors.VecDB``'s, shared with code search.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Sequence

import msgspec

from .vectors import EMBED_BATCH, MAX_K, Embedder, VecDB, vec0_ddl

TABLE = "knowledge_vectors"
ENTRIES = "knowledge_vec_entries"
META = "knowledge_vec_meta"
TEXT_VERSION = "1"  # bump when fact_text changes: every fact is embedded again


class Fact(msgspec.Struct, frozen=True):
    entry_id: int
    key: str
    category: str
    value: str


class SyncStats(msgspec.Struct, frozen=True):
    embedded: int  # facts embedded now (new or changed)
    removed: int  # vectors dropped because their fact is gone
    kept: int  # vectors that were current


def fact_text(key: str, category: str, value: str) -> str:
    """What is embedded for a fact."""
    return f"{key} {category} {value}"


def fact_hash(category: str, text: str) -> str:
    return hashlib.sha256(f"{category}\x00{text}".encode()).hexdigest()


class KnowledgeVectors(VecDB):
    """The fact vectors of one log, in the vector database at ``path``."""

    def __init__(self, path: str | os.PathLike[str], embedder: Embedder) -> None:
        super().__init__(path, embedder)
        want = {"model": self.embedder.name, "dim": str(self.dim), "text": TEXT_VERSION}
        with self._tx() as c:
            self.reset_on_change(c, META, want, (TABLE, ENTRIES))
            c.execute(f"CREATE TABLE IF NOT EXISTS {ENTRIES} (entry_id INTEGER PRIMARY KEY, sha256 TEXT NOT NULL)")
            c.execute(vec0_ddl(TABLE, "entry_id", self.dim, "category TEXT"))

    def hashes(self) -> dict[int, str]:
        """entry id → sha256 of the text its vector was computed from."""
        return {int(i): h for i, h in self.conn.execute(f"SELECT entry_id, sha256 FROM {ENTRIES}")}

    def count(self) -> int:
        """Rows of the ``vec0`` table."""
        return int(self.conn.execute(f"SELECT count(*) FROM {TABLE}").fetchall()[0][0])

    def sync(self, facts: Sequence[Fact]) -> SyncStats:
        """Make the vectors match ``facts`` (the live facts): drop vectors of facts not among them,
        embed the new ones and those whose text changed; leave the others alone."""
        have = self.hashes()
        want: dict[int, tuple[Fact, str, str]] = {}
        for f in facts:
            text = fact_text(f.key, f.category, f.value)
            want[f.entry_id] = (f, text, fact_hash(f.category, text))
        stale = sorted(i for i in have if i not in want)
        todo = sorted(i for i, (_, _, h) in want.items() if have.get(i) != h)
        if stale:
            with self._tx() as c:
                c.executemany(f"DELETE FROM {TABLE} WHERE entry_id = ?", [(i,) for i in stale])
                c.executemany(f"DELETE FROM {ENTRIES} WHERE entry_id = ?", [(i,) for i in stale])
        for n in range(0, len(todo), EMBED_BATCH):
            batch = todo[n:n + EMBED_BATCH]
            vecs = self.embed([want[i][1] for i in batch])
            with self._tx() as c:
                for i, v in zip(batch, vecs):
                    f, _, h = want[i]
                    c.execute(f"DELETE FROM {TABLE} WHERE entry_id = ?", (i,))
                    c.execute(f"INSERT INTO {TABLE} (entry_id, category, embedding) VALUES (?, ?, ?)",
                              (i, f.category, self.serialize(v)))
                    c.execute(f"INSERT OR REPLACE INTO {ENTRIES} (entry_id, sha256) VALUES (?, ?)", (i, h))
        return SyncStats(len(todo), len(stale), len(want) - len(todo))

    def query(self, text: str, k: int, *, category: str | None = None) -> list[tuple[int, float]]:
        """The ``k`` facts nearest to ``text`` (of ``category`` when given): (entry id, cosine
        distance), nearest first. A vector with no direction (distance undefined) is left out."""
        if k <= 0:
            return []
        vec = self.serialize(self.embed([text])[0])
        sql = f"SELECT entry_id, distance FROM {TABLE} WHERE embedding MATCH ? AND k = ?"
        params: list[object] = [vec, int(min(k, MAX_K))]
        if category is not None:
            sql += " AND category = ?"
            params.append(category)
        rows = self.conn.execute(sql + " ORDER BY distance", params).fetchall()
        out = [(int(i), float(d)) for i, d in rows if d is not None]  # type: ignore[arg-type]
        return sorted(out, key=lambda r: (r[1], r[0]))
