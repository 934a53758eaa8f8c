"""Knowledge vectors under stress and without sqlite-vec.

- Two processes recalling at once while a third writes facts (new, changed, removed): no recall
  fails, and the next recall leaves exactly one vector per live fact, each of its current text.
- Without sqlite-vec (not installed, or it cannot be loaded) a recall with a model answers with
  bm25 alone and says why, through the command and the ``ctx_knowledge`` tool.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import apsw
import pytest
import sqlite_vec  # type: ignore[import-untyped]

from leanctx.api import registry
from leanctx.app import LeanCtx
from leanctx.cache import vectors
from leanctx.cache.knowledge_vectors import KnowledgeVectors, fact_hash, fact_text
from leanctx.cache.vectors import vectors_path
from leanctx.commands.knowledge import RememberKnowledge, RemoveKnowledge
from leanctx.commands.knowledge_recall import recall
from leanctx.projections.knowledge import fact_rows

from .test_knowledge_vectors import FACTS, LABELLED, ConceptEmbedder, close, stored

TESTS = Path(__file__).resolve().parents[1]
pytestmark = pytest.mark.timeout(180)

WORKER = textwrap.dedent("""
    import sys
    from leanctx.app import LeanCtx
    from leanctx.commands.knowledge_recall import recall
    from memory.test_knowledge_vectors import LABELLED, ConceptEmbedder

    db, rounds = sys.argv[1], int(sys.argv[2])
    emb = ConceptEmbedder()
    with LeanCtx(db) as lc:
        for n in range(rounds):
            query = LABELLED[n % len(LABELLED)][0]
            ans = recall(lc, query, embedder=emb)
            assert ans.rankers == ["bm25", "semantic"], ans.rankers
    print("ok", emb.texts)
""")


@pytest.fixture
def app(tmp_path: Path) -> Iterator[LeanCtx]:
    with LeanCtx(tmp_path / "events.db") as a:
        yield a


def remember(app: LeanCtx, key: str, value: str, category: str = "general") -> None:
    app.bus.dispatch(RememberKnowledge(category=category, key=key, value=value), actor="ana")


def test_two_processes_recalling_while_facts_change_leave_one_current_vector_per_fact(
        app: LeanCtx, tmp_path: Path) -> None:
    for key, cat, value in FACTS:
        remember(app, key, value, cat)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(TESTS), os.environ.get("PYTHONPATH", "")])}
    rounds = 60
    workers = [subprocess.Popen([sys.executable, "-c", WORKER, str(app.db), str(rounds)], env=env, cwd=tmp_path,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for _ in range(2)]
    try:
        i = 0
        while any(w.poll() is None for w in workers) and i < 2000:  # meanwhile: new, changed, removed facts
            remember(app, f"extra.{i}", f"note {i} about redis caches and the login flow")
            if i % 3 == 0:
                remember(app, FACTS[i % len(FACTS)][0], f"changed {i}: postgresql records", FACTS[i % len(FACTS)][1])
            if i % 4 == 1:
                app.bus.dispatch(RemoveKnowledge(key=f"extra.{i - 1}"), actor="ana")
            i += 1
        outs = [w.communicate(timeout=150) for w in workers]
    finally:
        for w in workers:
            if w.poll() is None:
                w.kill()
    assert [w.returncode for w in workers] == [0, 0], [o[1][-2000:] for o in outs]
    embedded = [int(o[0].split()[1]) - rounds for o in outs]  # facts each worker embedded (not queries)
    assert sum(embedded) > len(FACTS), embedded  # they kept up with the writes, so they raced
    # whatever the interleaving left behind, the next recall makes the cache match the facts
    emb = ConceptEmbedder()
    ans = recall(app, LABELLED[0][0], embedder=emb)
    assert ans.vectors is not None
    rows = fact_rows(app.projections.reader("knowledge"))
    vecs = stored(app)
    assert set(vecs) == {i for i, _, _, _ in rows}
    for i, key, cat, value in rows:
        category, vec = vecs[i]
        assert category == cat and close(vec, ConceptEmbedder().embed([fact_text(key, cat, value)])[0]), key
    with KnowledgeVectors(vectors_path(app.db), emb) as kv:
        assert kv.hashes() == {i: fact_hash(c, fact_text(k, c, v)) for i, k, c, v in rows}
        assert kv.count() == len(rows)
    emb.texts = 0
    again = recall(app, LABELLED[0][0], embedder=emb)
    assert again.vectors is not None and (again.vectors.embedded, again.vectors.removed) == (0, 0)
    assert emb.texts == 1  # the query only: nothing was left stale


def _bm25_alone(app: LeanCtx, monkeypatch: pytest.MonkeyPatch, why: str) -> None:
    emb = ConceptEmbedder()
    ans = recall(app, "which database engine", embedder=emb)
    assert (ans.rankers, ans.semantic, ans.vectors) == (["bm25"], "off", None)
    assert ans.note.startswith(f"semantic off (sqlite-vec {why}") and ans.note.endswith("; bm25 only)")
    assert ans.hits and ans.hits[0].entry.key == "db.engine" and all(h.sources == ["bm25"] for h in ans.hits)
    assert emb.texts == 0  # nothing was embedded for a store that is not there
    monkeypatch.setattr(vectors, "default_embedder", lambda: emb)  # as if the model were installed
    out = registry.call(app, registry.Caller("ana", "s1", "/proj"), "ctx_knowledge",
                        {"action": "recall", "query": "which database engine"})
    assert (out["semantic"], out["rankers"]) == ("off", ["bm25"])
    assert out["text"].splitlines()[-1] == f"[rankers: bm25; {ans.note}]"


def test_without_sqlite_vec_a_recall_with_a_model_answers_with_bm25(app: LeanCtx,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    for key, cat, value in FACTS:
        remember(app, key, value, cat)
    monkeypatch.setitem(sys.modules, "sqlite_vec", None)  # `import sqlite_vec` raises ImportError
    _bm25_alone(app, monkeypatch, "is not installed")
    assert not vectors_path(app.db).exists()


def test_when_sqlite_vec_cannot_be_loaded_a_recall_answers_with_bm25(app: LeanCtx,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    for key, cat, value in FACTS:
        remember(app, key, value, cat)

    def no_load(conn: apsw.Connection) -> None:
        raise apsw.ExtensionLoadingError("vec0.so: cannot open shared object file")

    monkeypatch.setattr(sqlite_vec, "load", no_load)
    _bm25_alone(app, monkeypatch, "could not be loaded")
