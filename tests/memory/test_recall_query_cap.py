"""Knowledge recall's query cap: a query longer than ctx_search's 1,000 characters is refused
(KNOWLEDGE_QUERY_TOO_LONG) on every surface (library, real CLI, real HTTP), and the FTS5 query is
built from at most ``MAX_QUERY_TERMS`` distinct terms (duplicates dropped first), so its cost no
longer grows with the query; the answer says when terms were dropped."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from leanctx.app import LeanCtx
from leanctx.commands.knowledge import RememberKnowledge
from leanctx.commands.knowledge_recall import recall
from leanctx.errors import LeanCtxError
from leanctx.ops.search_input import MAX_QUERY_CHARS
from leanctx.projections.knowledge import MAX_QUERY_TERMS, fts_query, fts_terms
from leanctx.projections.knowledge import recall as projection_recall
from tests.api.test_http_common import Api, make_server  # noqa: F401

LEAN_CTX = str(Path(sys.executable).with_name("lean-ctx"))

pytestmark = pytest.mark.timeout(120)


@pytest.fixture
def app(tmp_path: Path) -> Iterator[LeanCtx]:
    with LeanCtx(tmp_path / "events.db") as a:
        for i in range(20):
            a.bus.dispatch(RememberKnowledge(category="general", key=f"k{i}", value=f"value w{i} text"), actor="ana")
        yield a


def words(n: int, start: int = 0) -> str:
    return " ".join(f"w{i}" for i in range(start, start + n))


def test_fts_query_keeps_at_most_max_distinct_terms_duplicates_first() -> None:
    q = fts_query(words(5000))
    assert q is not None and len(q.split(" OR ")) == MAX_QUERY_TERMS
    # duplicates do not take a slot: the 2nd distinct term survives 10,000 copies of the first
    q = fts_query("alpha " * 10_000 + "beta")
    assert q == '"alpha" OR "beta"'
    kept, dropped = fts_terms(words(MAX_QUERY_TERMS + 7) + " w0 w1")
    assert len(kept) == MAX_QUERY_TERMS and dropped == 7
    assert fts_terms("the cache") == (['"cache"'], 0)  # stopwords are not "dropped terms"


def test_projection_recall_of_a_huge_text_is_fast(app: LeanCtx) -> None:
    """The overview recalls facts for a task's whole text (no character cap there): 64k terms
    took ~20 s before the term cap (quadratic in FTS5's OR chain)."""
    t = time.process_time()  # CPU: a loaded machine stretches wall time
    hits = projection_recall(app.projections.reader("knowledge"), words(64_000))
    assert time.process_time() - t < 2.0
    assert hits  # the first terms still match (w0..w31 are facts' words)


def test_recall_refuses_a_query_over_the_search_cap(app: LeanCtx) -> None:
    with pytest.raises(LeanCtxError) as ei:
        recall(app, "x" * (MAX_QUERY_CHARS + 1), embedder=None)
    assert ei.value.code == "KNOWLEDGE_QUERY_TOO_LONG"
    assert f"{MAX_QUERY_CHARS + 1} characters" in str(ei.value) and str(MAX_QUERY_CHARS) in str(ei.value)
    recall(app, "x" * MAX_QUERY_CHARS, embedder=None)  # exactly at the cap is fine


def test_recall_says_when_terms_were_dropped(app: LeanCtx) -> None:
    q = words(180)
    assert len(q) <= MAX_QUERY_CHARS
    ans = recall(app, q, embedder=None)
    assert ans.dropped_terms == 180 - MAX_QUERY_TERMS
    assert f"bm25 searched the first {MAX_QUERY_TERMS} distinct terms; {180 - MAX_QUERY_TERMS} more dropped" \
        in ans.summary
    assert len(ans.hits) == 10  # limit 10 of the 20 facts w0..w19 match
    short = recall(app, "w3 w3 w3", embedder=None)
    assert short.dropped_terms == 0 and "dropped" not in short.summary
    assert short.hits[0].entry.key == "k3"


def cli(db: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in ("LEAN_CTX_AGENT_ID", "LEAN_CTX_SESSION_ID")}
    env.update({"LEAN_CTX_DB": str(db), "LEAN_CTX_AGENT_ID": "ana"})
    return subprocess.run([LEAN_CTX, *args], check=False, capture_output=True, text=True, env=env, timeout=60)


def test_cli_recall_refuses_a_long_query_and_reports_dropped_terms(tmp_path: Path) -> None:
    db = tmp_path / "events.db"
    assert cli(db, "knowledge", "remember", "db.engine", "PostgreSQL 16", "-c", "arch").returncode == 0
    p = cli(db, "knowledge", "recall", words(16_000))
    assert p.returncode != 0 and "KNOWLEDGE_QUERY_TOO_LONG" in p.stderr, p.stderr
    p = cli(db, "knowledge", "recall", "postgresql " + words(100))
    assert p.returncode == 0, p.stderr
    assert "db.engine" in p.stdout and f"{101 - MAX_QUERY_TERMS} more dropped" in p.stderr


def test_http_recall_refuses_a_long_query(make_server) -> None:  # noqa: F811
    api = Api(make_server())
    a = api.register()
    api.ok("/v1/tools/ctx_knowledge", a, action="remember", category="arch", key="db.engine", value="PostgreSQL")
    t = time.perf_counter()
    r = api.post("/v1/tools/ctx_knowledge", a, action="recall", query=words(32_000))
    assert time.perf_counter() - t < 5.0  # was 7.7 s over HTTP
    assert r.status_code == 422 and "KNOWLEDGE_QUERY_TOO_LONG" in r.text, r.text
    ok = api.ok("/v1/tools/ctx_knowledge", a, action="recall", query="postgresql " + words(100))
    assert "db.engine" in ok["text"] and "more dropped" in ok["text"]
