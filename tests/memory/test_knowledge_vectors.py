"""Knowledge recall through sqlite-vec: the fact vectors live in a ``vec0`` table of the vector
database beside the log, are kept current on recall (only new and changed facts embedded, gone
ones dropped), and their nearest-neighbour list is fused with bm25 by reciprocal rank fusion.

No model is installed here, so the vector path runs with a deterministic test double: a
hashed bag of "concepts" (a few words map to a shared concept, the way a model puts synonyms
near each other). What is under test is the storage, its upkeep and the fusion, not the model.
"""

from __future__ import annotations

import hashlib
import math
import re
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import apsw
import msgspec
import pytest
import sqlite_vec  # type: ignore[import-untyped]

from leanctx.api import registry
from leanctx.app import LeanCtx
from leanctx.cache import vectors
from leanctx.cache.knowledge_vectors import KnowledgeVectors, fact_text
from leanctx.cache.vectors import VectorIndex, vectors_path
from leanctx.commands.knowledge import ConsolidateKnowledge, RememberKnowledge, RemoveKnowledge, ResolveKnowledge
from leanctx.commands.knowledge_recall import RecallAnswer, recall
from leanctx.projections.knowledge import bm25_ranking

from .test_knowledge import FACTS  # the same labelled facts as the bm25 recall tests

T0 = 1_800_000_000.0
pytestmark = pytest.mark.timeout(120)

CONCEPTS = {  # what a model knows and bm25 does not: these words mean the same thing
    "database": "database", "datastore": "database", "postgresql": "database", "records": "database",
    "authentication": "auth", "login": "auth", "jwt": "auth",
    "secrets": "secret", "passwords": "secret", "credentials": "secret", "vault": "secret",
    "deployed": "deploy", "ship": "deploy", "release": "deploy", "kubernetes": "deploy",
    "tests": "test", "pytest": "test", "verify": "test",
    "redis": "cache", "caches": "cache", "memoize": "cache",
    "react": "ui", "frontend": "ui", "web": "ui", "browser": "ui",
    "log": "log", "loki": "log", "observability": "log",
}
STOP = frozenset("a an the is are do does we our what which where how with and of to in on for by".split())


class ConceptEmbedder:
    """Deterministic stand-in for a model: words mapped to concepts, hashed (signed) into
    ``dim`` buckets, L2-normalised. Counts its calls and the texts it embedded."""

    dim = 256

    def __init__(self, name: str = "test-concept-bow") -> None:
        self.name = name
        self.calls = 0
        self.texts = 0
        self.seen: list[str] = []

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        self.calls += 1
        self.texts += len(texts)
        self.seen.extend(texts)
        out = []
        for t in texts:
            v = [0.0] * self.dim
            for w in re.findall(r"[a-z0-9]+", t.lower()):
                if w in STOP:
                    continue
                h = hashlib.sha256(CONCEPTS.get(w, w).encode()).digest()
                v[int.from_bytes(h[:4], "big") % self.dim] += 1.0 if h[4] & 1 else -1.0
            n = math.sqrt(sum(x * x for x in v)) or 1.0
            out.append([x / n for x in v])
        return out


# (query, the relevant fact): paraphrases, some sharing no word with their fact at all
LABELLED = [
    ("which datastore holds our records", "db.engine"),
    ("where do we keep passwords", "secrets.store"),
    ("ship a release to kubernetes", "deploy.target"),  # bm25 alone prefers logging.format ("shipped")
    ("memoize session data", "cache.layer"),
    ("browser ui stack", "frontend.framework"),
    ("observability of services", "logging.format"),
    ("verify with pytest", "tests.runner"),
    ("JWT login", "auth.tokens"),
]


@pytest.fixture
def app(tmp_path: Path) -> Iterator[LeanCtx]:
    with LeanCtx(tmp_path / "events.db") as a:
        yield a


@pytest.fixture
def emb() -> ConceptEmbedder:
    return ConceptEmbedder()


def remember(app: LeanCtx, key: str, value: str, *, category: str = "general", actor: str = "ana",
             now: float = T0, **kw: Any) -> None:
    app.bus.dispatch(RememberKnowledge(category=category, key=key, value=value, **kw), actor=actor, now=now)


def run(app: LeanCtx, cmd: Any, actor: str = "ana", now: float = T0) -> Any:
    return app.bus.dispatch(cmd, actor=actor, now=now).value


def load(app: LeanCtx) -> None:
    for i, (key, cat, value) in enumerate(FACTS):
        remember(app, key, value, category=cat, now=T0 + i)


def live_ids(app: LeanCtx) -> dict[str, int]:
    """key → entry id, straight from the projection's table."""
    return {k: i for i, k in app.projections.reader("knowledge").execute("SELECT id, key FROM knowledge_entries")}


def vdb(app: LeanCtx) -> apsw.Connection:
    """A plain connection to the vector database (sqlite-vec loaded), independent of the code under test."""
    path = vectors_path(app.db)
    assert path.exists()
    conn = apsw.Connection(str(path))
    conn.enable_load_extension(True)
    sqlite_vec.load(conn)
    return conn


def stored(app: LeanCtx) -> dict[int, tuple[str, list[float]]]:
    """entry id → (category, vector) as stored in the vec0 table."""
    conn = vdb(app)
    try:
        return {int(i): (c, msgspec.json.decode(v)) for i, c, v in
                conn.execute("SELECT entry_id, category, vec_to_json(embedding) FROM knowledge_vectors")}
    finally:
        conn.close()


def keys(ans: RecallAnswer) -> list[str]:
    return [h.entry.key for h in ans.hits]


def close(a: Sequence[float], b: Sequence[float]) -> bool:
    return len(a) == len(b) and all(abs(x - y) < 1e-6 for x, y in zip(a, b))


# ------------------------------------------------------------------------------------------
# storage
# ------------------------------------------------------------------------------------------
def test_the_vec0_table_holds_one_row_per_live_fact(app: LeanCtx, emb: ConceptEmbedder) -> None:
    load(app)
    ans = recall(app, "database", embedder=emb)
    assert (ans.rankers, ans.semantic) == (["bm25", "semantic"], "on")
    assert ans.vectors is not None and (ans.vectors.embedded, ans.vectors.removed) == (len(FACTS), 0)
    conn = vdb(app)
    try:
        [(ddl,)] = conn.execute("SELECT sql FROM sqlite_master WHERE name = 'knowledge_vectors'").fetchall()
        sql = str(ddl)
        assert "using vec0" in sql.lower() and "distance_metric=cosine" in sql
    finally:
        conn.close()
    ids = live_ids(app)
    rows = stored(app)
    assert set(rows) == set(ids.values()) and len(rows) == len(FACTS)
    # each row is the embedding of its own fact's text, with its category as metadata
    for key, cat, value in FACTS:
        category, vec = rows[ids[key]]
        assert category == cat
        assert close(vec, ConceptEmbedder().embed([fact_text(key, cat, value)])[0]), key
    # the log's own file holds no vec0 table: it stays readable by any SQLite client
    assert not app.projections.reader("knowledge").execute(
        "SELECT name FROM sqlite_master WHERE sql LIKE '%vec0%'").fetchall()
    # nothing changed: the next recall embeds the query only
    emb.texts = 0
    again = recall(app, "database", embedder=emb)
    assert emb.texts == 1 and again.vectors is not None and again.vectors.embedded == 0
    assert again.vectors.kept == len(FACTS)


def test_removed_and_consolidated_facts_leave_the_table(app: LeanCtx, emb: ConceptEmbedder) -> None:
    load(app)
    recall(app, "anything", embedder=emb)
    gone = live_ids(app)["ci.provider"]
    run(app, RemoveKnowledge(key="ci.provider"), now=T0 + 50)
    emb.texts = 0
    ans = recall(app, "continuous integration", embedder=emb)
    assert ans.vectors is not None and (ans.vectors.embedded, ans.vectors.removed) == (0, 1)
    assert emb.texts == 1  # the query only
    assert gone not in stored(app) and set(stored(app)) == set(live_ids(app).values())
    assert "ci.provider" not in keys(ans)
    # a near-duplicate with more confidence absorbs db.engine on consolidation
    remember(app, "db.primary", FACTS[0][2], category="architecture", confidence=0.95, now=T0 + 60)
    recall(app, "database", embedder=emb)
    merged = live_ids(app)["db.engine"]
    assert merged in stored(app)
    res = run(app, ConsolidateKnowledge(), now=T0 + 70)
    assert [(m.key, m.merged) for m in res.merges] == [("db.primary", ["db.engine"])]
    ans = recall(app, "which datastore holds our records", embedder=emb)
    assert merged not in stored(app) and set(stored(app)) == set(live_ids(app).values())
    assert keys(ans)[0] == "db.primary" and "db.engine" not in keys(ans)


def test_a_changed_fact_is_embedded_again_alone(app: LeanCtx, emb: ConceptEmbedder) -> None:
    load(app)
    recall(app, "x", embedder=emb)
    ids = live_ids(app)
    before = stored(app)
    # a new value for one key
    remember(app, "cache.layer", "Memcached holds rendered pages", category="architecture", now=T0 + 100)
    emb.texts, emb.seen = 0, []
    ans = recall(app, "memcached pages", embedder=emb)
    assert emb.texts == 2 and emb.seen[0] == fact_text("cache.layer", "architecture", "Memcached holds rendered pages")
    assert ans.vectors is not None and (ans.vectors.embedded, ans.vectors.removed) == (1, 0)
    after = stored(app)
    assert live_ids(app) == ids  # same entry id: the fact was updated, not replaced
    assert not close(after[ids["cache.layer"]][1], before[ids["cache.layer"]][1])
    assert all(close(after[i][1], before[i][1]) for k, i in ids.items() if k != "cache.layer")
    # the same value written again changes nothing that is embedded
    remember(app, "cache.layer", "Memcached holds rendered pages", category="architecture", now=T0 + 110)
    emb.texts = 0
    recall(app, "memcached pages", embedder=emb)
    assert emb.texts == 1
    # a new category: embedded again, and the metadata column follows
    remember(app, "cache.layer", "Memcached holds rendered pages", category="ops", now=T0 + 120)
    emb.texts = 0
    assert [h.entry.key for h in recall(app, "memoize pages", category="ops", embedder=emb).hits][:1] == \
        ["cache.layer"]
    assert emb.texts == 2 and stored(app)[ids["cache.layer"]][0] == "ops"
    # a conflict moves the head value, resolving moves it back: one fact embedded each time
    remember(app, "db.engine", "MySQL 8", category="architecture", actor="bob", now=T0 + 130)
    emb.texts = 0
    assert recall(app, "mysql", embedder=emb).hits[0].entry.conflict and emb.texts == 2
    run(app, ResolveKnowledge(key="db.engine", value=FACTS[0][2]), now=T0 + 140)
    emb.texts = 0
    recall(app, "mysql", embedder=emb)
    assert emb.texts == 2 and close(stored(app)[ids["db.engine"]][1], before[ids["db.engine"]][1])


# ------------------------------------------------------------------------------------------
# ranking
# ------------------------------------------------------------------------------------------
def test_a_query_without_the_facts_words_is_recalled_through_the_vectors(app: LeanCtx,
                                                                         emb: ConceptEmbedder) -> None:
    load(app)
    query = "which datastore holds our records"
    assert bm25_ranking(app.projections.reader("knowledge"), query) == []  # no word of it in any fact
    assert recall(app, query, embedder=None).hits == []
    ans = recall(app, query, embedder=emb)
    top = ans.hits[0]
    assert top.entry.key == "db.engine" and top.sources == ["semantic"] and top.bm25 is None
    assert top.distance is not None and 0 <= top.distance < 1
    assert all(h.distance is not None and h.distance >= top.distance for h in ans.hits)
    # category filter applies to the nearest-neighbour list too (a vec0 metadata column)
    ops = recall(app, query, category="ops", embedder=emb)
    assert ops.rankers == ["bm25", "semantic"] and {h.entry.category for h in ops.hits} <= {"ops"}
    assert "db.engine" not in keys(ops)


def test_fusion_ranks_the_relevant_fact_first_on_a_labelled_set(app: LeanCtx, emb: ConceptEmbedder) -> None:
    load(app)
    bm25_right = 0
    for query, expected in LABELLED:
        fused = recall(app, query, embedder=emb)
        assert keys(fused)[:1] == [expected], (query, [(h.entry.key, h.sources, h.score) for h in fused.hits])
        assert fused.hits[0].score >= max(h.score for h in fused.hits)
        plain = recall(app, query, embedder=None)
        assert plain.rankers == ["bm25"] and all(h.sources == ["bm25"] for h in plain.hits)
        bm25_right += keys(plain)[:1] == [expected]
    assert bm25_right < len(LABELLED)  # the vectors are what got the rest right
    # a fact both rankers found outranks one only bm25 put first (RRF, k = 60)
    query = "ship a release to kubernetes"
    plain = recall(app, query, embedder=None)
    fused = recall(app, query, embedder=emb)
    assert keys(plain)[0] == "logging.format" and keys(fused)[0] == "deploy.target"
    top = fused.hits[0]
    assert sorted(top.sources) == ["bm25", "semantic"]
    assert top.score == pytest.approx(sum(1 / (60 + r) for r in (keys(plain).index("deploy.target") + 1, 1)), abs=1e-6)


def test_deleting_the_cache_rebuilds_it_with_the_same_answer(app: LeanCtx, emb: ConceptEmbedder,
                                                             tmp_path: Path) -> None:
    load(app)
    answers = [recall(app, q, embedder=emb) for q, _ in LABELLED]
    path = vectors_path(app.db)
    assert path.exists() and path.parent == Path(app.db).parent
    for p in tmp_path.glob(path.name + "*"):
        p.unlink()
    assert not path.exists()
    emb.texts = 0
    again = [recall(app, q, embedder=emb) for q, _ in LABELLED]
    assert emb.texts == len(FACTS) + len(LABELLED)  # every fact once, then one per query
    assert again[0].vectors is not None and again[0].vectors.embedded == len(FACTS)
    assert [[(h.entry.key, h.score, h.sources) for h in a.hits] for a in again] == \
        [[(h.entry.key, h.score, h.sources) for h in a.hits] for a in answers]
    assert set(stored(app)) == set(live_ids(app).values())


def test_another_model_starts_the_vectors_over(app: LeanCtx, emb: ConceptEmbedder) -> None:
    load(app)
    recall(app, "database", embedder=emb)
    other = ConceptEmbedder(name="another-model")
    ans = recall(app, "database", embedder=other)
    assert ans.vectors is not None and ans.vectors.embedded == len(FACTS) and other.texts == len(FACTS) + 1
    assert set(stored(app)) == set(live_ids(app).values())


def test_code_vectors_and_fact_vectors_share_the_file_without_touching_each_other(app: LeanCtx,
                                                                                  emb: ConceptEmbedder) -> None:
    load(app)
    path = vectors_path(app.db)
    with VectorIndex(path, emb, identity="code-1") as vi:
        vi.sync("/proj", [1, 2, 3], lambda ids: {i: f"chunk {i}" for i in ids})
    recall(app, "database", embedder=emb)
    with VectorIndex(path, emb, identity="code-1") as vi:
        assert vi.ids("/proj") == {1, 2, 3}
    with VectorIndex(path, emb, identity="code-2") as vi:  # a reset code index empties only its own vectors
        assert vi.ids("/proj") == set()
    with KnowledgeVectors(path, emb) as kv:
        assert kv.count() == len(FACTS)
    emb.texts = 0
    recall(app, "database", embedder=emb)
    assert emb.texts == 1


# ------------------------------------------------------------------------------------------
# the answer states its rankers
# ------------------------------------------------------------------------------------------
def test_without_an_embedder_semantic_is_off_and_bm25_alone_answers(app: LeanCtx, tmp_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(vectors.importlib.util, "find_spec", lambda name, *a: None)  # no model installed
    assert vectors.default_embedder() is None
    load(app)
    ans = recall(app, "which database engine")
    assert (ans.rankers, ans.semantic, ans.vectors) == (["bm25"], "off", None)
    assert ans.note.startswith("semantic off") and ans.summary.startswith("rankers: bm25; semantic off")
    assert keys(ans)[0] == "db.engine" and all(h.sources == ["bm25"] for h in ans.hits)
    out = registry.call(app, registry.Caller("ana", "s1", "/proj"), "ctx_knowledge",
                        {"action": "recall", "query": "which database engine"})
    assert (out["semantic"], out["rankers"]) == ("off", ["bm25"])
    assert out["text"].splitlines()[-1] == f"[{ans.summary}]"
    assert not vectors_path(app.db).exists()  # bm25 alone never opens the vector cache


def test_with_an_installed_model_the_tool_names_both_rankers(app: LeanCtx, emb: ConceptEmbedder,
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(vectors, "default_embedder", lambda: emb)  # as if lean-ctx[semantic] were installed
    load(app)
    out = registry.call(app, registry.Caller("ana", "s1", "/proj"), "ctx_knowledge",
                        {"action": "recall", "query": "where do we keep passwords"})
    assert (out["semantic"], out["rankers"]) == ("on", ["bm25", "semantic"])
    assert out["hits"][0]["entry"]["key"] == "secrets.store" and out["hits"][0]["sources"] == ["semantic"]
    last = out["text"].splitlines()[-1]
    assert last.startswith("[rankers: bm25+semantic, fused by reciprocal rank (k=60); semantic on")
    assert set(stored(app)) == set(live_ids(app).values())
