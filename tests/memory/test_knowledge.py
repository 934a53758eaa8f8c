"""Knowledge: remember/validation, recall ranking (bm25) on a labelled set, reciprocal rank
fusion, conflicts (window, agents, clearing), remove, consolidate, export/import, replay, the
MCP tool row and the CLI through the real ``lean-ctx`` script."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from leanctx.api import registry
from leanctx.app import LeanCtx
from leanctx.commands.knowledge import (ConsolidateKnowledge, ImportKnowledge, RememberAck, RememberKnowledge,
                                        RemoveKnowledge, ResolveKnowledge, export_jsonl, parse_jsonl)
from leanctx.commands.knowledge_recall import recall as recall_facts
from leanctx.errors import LeanCtxError
from leanctx.projections.knowledge import (fts_query, get_entry, jaccard, list_entries, recall, rrf, status)
from tools.replay import replay

T0 = 1_800_000_000.0
LEAN_CTX = str(Path(sys.executable).with_name("lean-ctx"))  # this interpreter's, not whatever PATH finds

pytestmark = pytest.mark.timeout(120)


@pytest.fixture
def app(tmp_path: Path) -> Iterator[LeanCtx]:
    with LeanCtx(tmp_path / "events.db") as a:
        yield a


def remember(app: LeanCtx, key: str, value: str, *, actor: str = "ana", category: str = "general",
             now: float = T0, **kw: Any) -> RememberAck:
    return app.bus.dispatch(RememberKnowledge(category=category, key=key, value=value, **kw),
                            actor=actor, now=now).value


def run(app: LeanCtx, cmd: Any, actor: str = "ana", now: float = T0) -> Any:
    return app.bus.dispatch(cmd, actor=actor, now=now).value


def refused(app: LeanCtx, cmd: Any, actor: str | None = "ana") -> str:
    head = app.store.head().position
    with pytest.raises(LeanCtxError) as ei:
        app.bus.dispatch(cmd, actor=actor)
    assert [e.kind for e in app.store.read_all(since=head)] == ["tool.called"]  # only the refusal's record
    return ei.value.code


def reader(app: LeanCtx) -> Any:
    return app.projections.reader("knowledge")


# ------------------------------------------------------------------------------------------
# remember / validation
# ------------------------------------------------------------------------------------------
def test_remember_writes_the_keys_stream_and_normalises(app: LeanCtx) -> None:
    ack = remember(app, " db.engine ", "PostgreSQL 16", category=" Architecture ", confidence=0.9, source="ADR-7")
    assert (ack.key, ack.category, ack.version, ack.conflict) == ("db.engine", "architecture", 1, False)
    [ev] = app.store.read_stream("knowledge:db.engine")
    assert ev.kind == "knowledge.remembered" and ev.actor == "ana"
    e = get_entry(reader(app), "db.engine")
    assert e is not None and (e.value, e.confidence, e.source, e.agent) == ("PostgreSQL 16", 0.9, "ADR-7", "ana")
    assert remember(app, "db.engine", "PostgreSQL 17", now=T0 + 5).version == 2  # same agent: an update


@pytest.mark.parametrize(("kw", "code"), [
    ({"key": "", "value": "x"}, "KNOWLEDGE_INVALID_KEY"),
    ({"key": "has space", "value": "x"}, "KNOWLEDGE_INVALID_KEY"),
    ({"key": "k", "value": "x", "category": "Two Words"}, "KNOWLEDGE_INVALID_CATEGORY"),
    ({"key": "k", "value": "x", "category": ""}, "KNOWLEDGE_INVALID_CATEGORY"),
    ({"key": "k", "value": "x", "confidence": 1.5}, "KNOWLEDGE_INVALID_CONFIDENCE"),
    ({"key": "k", "value": "x", "confidence": -0.1}, "KNOWLEDGE_INVALID_CONFIDENCE"),
    ({"key": "k", "value": "x", "confidence": float("nan")}, "KNOWLEDGE_INVALID_CONFIDENCE"),
    ({"key": "k", "value": "  "}, "KNOWLEDGE_EMPTY_VALUE"),
    ({"key": "k", "value": "x" * 8001}, "KNOWLEDGE_VALUE_TOO_LONG"),
])
def test_invalid_input_is_refused_with_stable_codes(app: LeanCtx, kw: dict[str, Any], code: str) -> None:
    kw.setdefault("category", "general")
    assert refused(app, RememberKnowledge(**kw)) == code
    assert status(reader(app)).total == 0


def test_no_identity_and_unknown_keys_are_refused(app: LeanCtx) -> None:
    assert refused(app, RememberKnowledge(category="c", key="k", value="v"), actor=None) == "KNOWLEDGE_NO_AGENT"
    assert refused(app, RemoveKnowledge(key="nope")) == "KNOWLEDGE_NOT_FOUND"
    assert refused(app, ResolveKnowledge(key="nope")) == "KNOWLEDGE_NOT_FOUND"
    remember(app, "k", "v")
    assert refused(app, ResolveKnowledge(key="k")) == "KNOWLEDGE_NO_CONFLICT"
    assert refused(app, ConsolidateKnowledge(threshold=0)) == "KNOWLEDGE_INVALID_THRESHOLD"


# ------------------------------------------------------------------------------------------
# recall
# ------------------------------------------------------------------------------------------
FACTS = [
    ("db.engine", "architecture", "The primary database is PostgreSQL 16, accessed through SQLAlchemy"),
    ("ci.provider", "tooling", "Continuous integration runs on GitHub Actions with a matrix of Python versions"),
    ("auth.tokens", "security", "API authentication uses short-lived JWT tokens signed with RS256"),
    ("deploy.target", "ops", "Production is deployed to Kubernetes on AWS EKS via Helm charts"),
    ("cache.layer", "architecture", "Redis caches session data and rate-limit counters"),
    ("lint.style", "tooling", "Code style is enforced by ruff and formatted with black, line length 100"),
    ("frontend.framework", "architecture", "The web frontend is written in React with TypeScript and Vite"),
    ("tests.runner", "tooling", "Tests run with pytest and pytest-xdist; coverage must stay above 85 percent"),
    ("logging.format", "ops", "Services log structured JSON to stdout, shipped to Loki"),
    ("secrets.store", "security", "Secrets live in HashiCorp Vault and are never committed"),
]
QUERIES = [
    ("which database do we use?", "db.engine"),
    ("how is authentication done? JWT", "auth.tokens"),
    ("where do we deploy production", "deploy.target"),
    ("redis cache", "cache.layer"),
    ("what runs the tests", "tests.runner"),
    ("code formatting and linting style", "lint.style"),
    ("React frontend", "frontend.framework"),
    ("where are secrets stored", "secrets.store"),
]


def test_recall_ranks_the_relevant_fact_first_on_a_labelled_set(app: LeanCtx) -> None:
    for i, (key, cat, value) in enumerate(FACTS):
        remember(app, key, value, category=cat, now=T0 + i)
    for query, expected in QUERIES:
        hits = recall(reader(app), query)
        assert hits, query
        assert hits[0].entry.key == expected, (query, [h.entry.key for h in hits])
        assert hits[0].bm25 is not None and hits[0].bm25 > 0
    # category filter, limit, and nothing-found
    assert {h.entry.category for h in recall(reader(app), "tests style", category="tooling")} == {"tooling"}
    assert len(recall(reader(app), "the a is production tests redis", limit=2)) == 2
    assert recall(reader(app), "kubernetes-less quantum") == [] or \
        recall(reader(app), "kubernetes-less quantum")[0].entry.key == "deploy.target"
    assert recall(reader(app), "zebra unicorn") == []


@pytest.mark.parametrize("query", ['"', 'AND', 'OR NOT', 'NEAR(a b', '*', '', '\x00', "a' OR 1=1 --", 'db.engine*'])
def test_any_query_string_is_safe(app: LeanCtx, query: str) -> None:
    remember(app, "db.engine", "PostgreSQL AND NOT sqlite")
    recall(reader(app), query)  # never raises
    q = fts_query(query)
    assert q is None or all(part.startswith('"') for part in q.split(" OR "))


def test_reciprocal_rank_fusion_on_given_lists() -> None:
    fused = rrf([["a", "b", "c"], ["c", "a", "d"]], k=60)
    assert [d for d, _ in fused] == ["a", "c", "b", "d"]
    assert fused[0][1] == pytest.approx(1 / 61 + 1 / 62)
    assert fused[1][1] == pytest.approx(1 / 63 + 1 / 61)
    assert fused[3][1] == pytest.approx(1 / 63)
    assert [d for d, _ in rrf([["x", "y"]])] == ["x", "y"]  # one list keeps its order
    assert [d for d, _ in rrf([["x", "y"], ["y", "x"]])] == ["x", "y"]  # a tie keeps first appearance
    assert rrf([]) == [] and rrf([[], []]) == []
    assert [d for d, _ in rrf([["a", "a", "b"]])] == ["a", "b"]  # duplicates count once


def test_recall_fuses_a_semantic_ranking_when_an_embedder_is_given(app: LeanCtx) -> None:
    class Fake:  # "semantic" that only likes the cache fact (and the query)
        name, dim = "fake", 2

        def embed(self, texts: list[str]) -> list[list[float]]:
            return [[1.0, 0.0] if "Redis" in t or "storage" in t else [0.0, 1.0] for t in texts]

    for key, cat, value in FACTS:
        remember(app, key, value, category=cat)
    plain = recall(reader(app), "session data")
    query = "rate limit counters storage"
    lexical = recall_facts(app, query, embedder=None)
    fused = recall_facts(app, query, embedder=Fake())
    assert plain[0].entry.key == "cache.layer" and fused.hits[0].entry.key == "cache.layer"
    assert lexical.rankers == ["bm25"] and fused.rankers == ["bm25", "semantic"]
    assert fused.hits[0].sources == ["bm25", "semantic"] and fused.hits[0].score > lexical.hits[0].score
    # the semantic list holds the cache fact alone: orthogonal facts are not "near"
    assert [h.entry.key for h in fused.hits if "semantic" in h.sources] == ["cache.layer"]


# ------------------------------------------------------------------------------------------
# conflicts
# ------------------------------------------------------------------------------------------
def test_two_agents_within_the_window_conflict_and_both_values_are_kept(app: LeanCtx) -> None:
    remember(app, "db.engine", "PostgreSQL 16", actor="ana", now=T0)
    ack = remember(app, "db.engine", "MySQL 8", actor="bob", now=T0 + 300)
    assert ack.conflict and [(a.agent, a.value) for a in ack.alternatives] == [("ana", "PostgreSQL 16"),
                                                                             ("bob", "MySQL 8")]
    e = get_entry(reader(app), "db.engine")
    assert e is not None and e.conflict and e.value == "MySQL 8"
    assert [(a.agent, a.value) for a in e.alternatives] == [("ana", "PostgreSQL 16"), ("bob", "MySQL 8")]
    [hit] = recall(reader(app), "MySQL")
    assert hit.entry.conflict and len(hit.entry.alternatives) == 2  # the next reader is told
    assert status(reader(app)).conflicts == ["db.engine"]


def test_no_conflict_outside_the_window_same_agent_or_same_value(app: LeanCtx) -> None:
    remember(app, "a", "one", actor="ana", now=T0)
    assert not remember(app, "a", "two", actor="bob", now=T0 + 601).conflict  # outside the 10 min window
    assert not remember(app, "a", "three", actor="bob", now=T0 + 602).conflict  # same agent
    assert not remember(app, "a", "Three!", actor="cy", now=T0 + 603).conflict  # same value, normalised
    remember(app, "b", "one", actor="ana", now=T0)
    assert remember(app, "b", "two", actor="bob", now=T0 + 600).conflict  # the window's edge is inside
    remember(app, "c", "one", actor="ana", now=T0)
    assert not remember(app, "c", "two", actor="bob", now=T0 + 60, conflict_window_s=30).conflict
    assert status(reader(app)).conflicts == ["b"]


def test_what_clears_a_conflict(app: LeanCtx) -> None:
    def conflicted(key: str) -> bool:
        e = get_entry(reader(app), key)
        return e is not None and e.conflict

    for key in ("r", "w", "x", "y"):
        remember(app, key, "blue", actor="ana", now=T0)
        remember(app, key, "green", actor="bob", now=T0 + 10)
        assert conflicted(key)
    # resolve keeps one of the disputed values
    assert refused(app, ResolveKnowledge(key="r", value="red")) == "KNOWLEDGE_INVALID_VALUE"
    res = run(app, ResolveKnowledge(key="r", value="blue"), actor="cy", now=T0 + 20)
    assert (res.value, res.discarded) == ("blue", ["green"])
    assert not conflicted("r") and get_entry(reader(app), "r").value == "blue"  # type: ignore[union-attr]
    # the head's writer writes again: cleared
    assert not remember(app, "w", "green", actor="bob", now=T0 + 30).conflict and not conflicted("w")
    # the other agent insists within the window: still flagged; after the window: cleared
    assert remember(app, "x", "blue", actor="ana", now=T0 + 30).conflict and conflicted("x")
    assert not remember(app, "x", "blue", actor="ana", now=T0 + 30 + 601).conflict and not conflicted("x")
    # a third agent disagreeing joins the alternatives; one agreeing with the head clears it
    ack = remember(app, "y", "red", actor="cy", now=T0 + 40)
    assert ack.conflict and sorted(a.agent for a in ack.alternatives) == ["ana", "bob", "cy"]
    assert len(get_entry(reader(app), "y").alternatives) == 3  # type: ignore[union-attr]
    assert not remember(app, "y", "RED", actor="dan", now=T0 + 50).conflict and not conflicted("y")
    assert status(reader(app)).conflicts == []


# ------------------------------------------------------------------------------------------
# remove / consolidate
# ------------------------------------------------------------------------------------------
def test_remove_forgets_and_a_key_can_be_remembered_again(app: LeanCtx) -> None:
    remember(app, "k", "PostgreSQL")
    assert run(app, RemoveKnowledge(key="k")).value == "PostgreSQL"
    assert get_entry(reader(app), "k") is None and recall(reader(app), "PostgreSQL") == []
    assert remember(app, "k", "MySQL").version == 3
    assert [h.entry.key for h in recall(reader(app), "MySQL")] == ["k"]


def test_consolidate_merges_near_duplicates_as_one_event(app: LeanCtx) -> None:
    remember(app, "db.a", "The database is PostgreSQL version 16 on RDS", category="arch", confidence=0.6)
    remember(app, "db.b", "the database is postgresql version 16, on RDS!", category="arch", confidence=0.9)
    remember(app, "db.c", "The database is PostgreSQL version 16 on RDS", category="ops")  # other category
    remember(app, "db.d", "The database is MySQL 8 in a container", category="arch")  # too different
    assert jaccard("a b c d e", "a b c d e f") == pytest.approx(5 / 6)
    dry = run(app, ConsolidateKnowledge(dry_run=True))
    assert [(m.key, m.merged) for m in dry.merges] == [("db.b", ["db.a"])] and status(reader(app)).total == 4
    head = app.store.head().position
    res = run(app, ConsolidateKnowledge())
    assert [(m.key, m.merged, m.confidence) for m in res.merges] == [("db.b", ["db.a"], 0.9)]
    events = [e for e in app.store.read_all(since=head) if e.kind != "tool.called"]
    assert [(e.kind, e.stream) for e in events] == [("knowledge.consolidated", "knowledge:db.b")]
    data = events[0].data()
    assert data.merged == ("db.a",) and data.category == "arch" and data.similarity == 1.0
    assert sorted(e.key for e in list_entries(reader(app))) == ["db.b", "db.c", "db.d"]
    assert run(app, ConsolidateKnowledge()).merges == []  # nothing left to merge


def test_consolidate_leaves_conflicted_entries_alone(app: LeanCtx) -> None:
    remember(app, "a", "deploy with helm charts", actor="ana")
    remember(app, "a", "deploy with kustomize", actor="bob", now=T0 + 1)
    remember(app, "b", "deploy with kustomize", actor="cy")
    assert run(app, ConsolidateKnowledge()).merges == []


# ------------------------------------------------------------------------------------------
# export / import, replay
# ------------------------------------------------------------------------------------------
def test_export_import_round_trip_and_identical_entries_are_skipped(tmp_path: Path, app: LeanCtx) -> None:
    for i, (key, cat, value) in enumerate(FACTS):
        remember(app, key, value, category=cat, confidence=round(0.5 + i / 40, 3), source=f"doc{i}.md")
    data = export_jsonl(list_entries(reader(app)))
    assert len(data.splitlines()) == len(FACTS)
    with LeanCtx(tmp_path / "other.db") as other:
        res = run(other, ImportKnowledge(entries=parse_jsonl(data)), actor="bob")
        assert len(res.imported) == len(FACTS) and res.skipped == []

        def strip(entries: list[Any]) -> list[tuple[Any, ...]]:
            return [(e.key, e.category, e.value, e.confidence, e.source) for e in entries]

        assert strip(list_entries(other.projections.reader("knowledge"))) == strip(list_entries(reader(app)))
        head = other.store.head().position
        again = run(other, ImportKnowledge(entries=parse_jsonl(data)), actor="bob")
        assert again.imported == [] and len(again.skipped) == len(FACTS)
        assert [e.kind for e in other.store.read_all(since=head)] == ["tool.called"]  # nothing appended
        # a changed line is imported; a duplicate inside the batch is skipped
        changed = data.replace("Redis caches", "Memcached caches")
        res = run(other, ImportKnowledge(entries=parse_jsonl(changed + changed.splitlines()[4] + "\n")), actor="bob")
        assert res.imported == ["cache.layer"] and len(res.skipped) == len(FACTS)
    with pytest.raises(LeanCtxError) as ei:
        parse_jsonl('{"key": "k", "category": "c", "value": "v"}\nnot json\n')
    assert ei.value.code == "KNOWLEDGE_INVALID_IMPORT" and "line 2" in ei.value.message
    bad = parse_jsonl('{"key": "bad key", "category": "c", "value": "v"}')
    assert refused(app, ImportKnowledge(entries=bad)) == "KNOWLEDGE_INVALID_KEY"


def test_replay_gives_digest_equal_knowledge(app: LeanCtx) -> None:
    for i, (key, cat, value) in enumerate(FACTS):
        remember(app, key, value + " ü ✓", category=cat, actor=f"agent-{i % 3}", now=T0 + i)
    remember(app, "db.engine", "MySQL", actor="bob", now=T0 + 20)  # a conflict
    remember(app, "dup", FACTS[0][2], category="architecture", now=T0 + 30, confidence=0.95)
    run(app, ConsolidateKnowledge(), now=T0 + 40)
    run(app, RemoveKnowledge(key="ci.provider"), now=T0 + 50)
    remember(app, "r", "x", actor="ana", now=T0 + 60)
    remember(app, "r", "y", actor="bob", now=T0 + 61)
    run(app, ResolveKnowledge(key="r", value="x"), now=T0 + 62)
    rep = replay(app, verify=True)
    assert rep.chain_ok and [p.match for p in rep.projections if p.name == "knowledge"] == [True]
    assert all(p.match for p in rep.projections), [p.name for p in rep.projections if not p.match]
    before = [h.entry.key for h in recall(reader(app), "database")]
    replay(app)  # in place
    assert [h.entry.key for h in recall(reader(app), "database")] == before and before


# ------------------------------------------------------------------------------------------
# MCP tool row
# ------------------------------------------------------------------------------------------
def test_ctx_knowledge_tool(app: LeanCtx) -> None:
    t = registry.get("ctx_knowledge")
    assert t.category == "memory" and "ctx_knowledge" in {x.name for x in registry.tools(["memory"])}
    ana = registry.Caller("ana", "s1", "/proj")
    bob = registry.Caller("bob", "s2", "/proj")
    out = registry.call(app, ana, "ctx_knowledge", {"action": "remember", "category": "arch", "key": "db.engine",
                                                    "value": "PostgreSQL 16", "confidence": 0.9})
    assert out["ack"]["version"] == 1
    out = registry.call(app, bob, "ctx_knowledge", {"action": "remember", "category": "arch", "key": "db.engine",
                                                    "value": "MySQL"})
    assert "CONFLICT" in out["text"]
    out = registry.call(app, ana, "ctx_knowledge", {"action": "recall", "query": "database engine"})
    assert out["semantic"] == "off" and "semantic off" in out["text"] and "CONFLICT" in out["text"]
    assert out["rankers"] == ["bm25"] and "[rankers: bm25; semantic off" in out["text"]
    assert out["hits"][0]["entry"]["key"] == "db.engine"
    assert "db.engine" in registry.call(app, ana, "ctx_knowledge", {"action": "status"})["text"]
    data = registry.call(app, ana, "ctx_knowledge", {"action": "export"})["data"]
    registry.call(app, ana, "ctx_knowledge", {"action": "resolve", "key": "db.engine", "value": "PostgreSQL 16"})
    assert not registry.call(app, ana, "ctx_knowledge", {"action": "show", "key": "db.engine"})["entry"]["conflict"]
    registry.call(app, ana, "ctx_knowledge", {"action": "remove", "key": "db.engine"})
    res = registry.call(app, ana, "ctx_knowledge", {"action": "import", "data": data})["result"]
    assert res["imported"] == ["db.engine"]
    for args, code in [({"action": "show", "key": "gone"}, "KNOWLEDGE_NOT_FOUND"),
                       ({"action": "recall"}, "INVALID_ARGUMENT"), ({"action": "nope"}, "INVALID_ARGUMENT")]:
        with pytest.raises(LeanCtxError) as ei:
            registry.call(app, ana, "ctx_knowledge", args)
        assert ei.value.code == code


# ------------------------------------------------------------------------------------------
# CLI
# ------------------------------------------------------------------------------------------
def cli(db: Path, *args: str, check: bool = True, stdin: str | None = None,
        **env: str) -> subprocess.CompletedProcess[str]:
    full = {k: v for k, v in os.environ.items() if k not in ("LEAN_CTX_AGENT_ID", "LEAN_CTX_SESSION_ID")}
    full.update({"LEAN_CTX_DB": str(db), "LEAN_CTX_AGENT_ID": "ana", **env})
    p = subprocess.run([LEAN_CTX, *args], capture_output=True, text=True, env=full, timeout=60, input=stdin)
    if check and p.returncode != 0:
        raise AssertionError(f"lean-ctx {' '.join(args)} exited {p.returncode}\n{p.stdout}\n{p.stderr}")
    return p


def test_cli_knowledge(tmp_path: Path) -> None:
    db, db2 = tmp_path / "events.db", tmp_path / "other.db"
    ack = json.loads(cli(db, "knowledge", "remember", "db.engine", "PostgreSQL 16", "-c", "arch",
                         "--confidence", "0.9", "--source", "ADR-7", "--json").stdout)
    assert (ack["key"], ack["version"], ack["conflict"]) == ("db.engine", 1, False)
    cli(db, "knowledge", "remember", "ci.provider", "-", "-c", "tooling", stdin="GitHub Actions\n")
    cli(db, "knowledge", "remember", "ci.copy", "github actions!", "-c", "tooling")
    out = cli(db, "knowledge", "remember", "db.engine", "MySQL", "-c", "arch", LEAN_CTX_AGENT_ID="bob").stdout
    assert "conflict on db.engine" in out
    rec = cli(db, "knowledge", "recall", "which database engine")
    assert rec.stdout.startswith("db.engine [arch] = MySQL") and "CONFLICT" in rec.stdout
    assert "semantic off" in rec.stderr and "rankers: bm25;" in rec.stderr
    hits = json.loads(cli(db, "knowledge", "recall", "github", "--json").stdout)
    assert hits["semantic"] == "off" and hits["rankers"] == ["bm25"] and {h["entry"]["key"] for h in hits["hits"]} == {"ci.provider", "ci.copy"}
    st = json.loads(cli(db, "knowledge", "status", "--json").stdout)
    assert st == {"total": 3, "by_category": {"arch": 1, "tooling": 2}, "conflicts": ["db.engine"]}
    merged = json.loads(cli(db, "knowledge", "consolidate", "--json").stdout)
    assert [(m["key"], m["merged"]) for m in merged["merges"]] == [("ci.copy", ["ci.provider"])]
    cli(db, "knowledge", "export", "--out", str(tmp_path / "k.jsonl"))
    res = json.loads(cli(db2, "knowledge", "import", str(tmp_path / "k.jsonl"), "--json").stdout)
    assert sorted(res["imported"]) == ["ci.copy", "db.engine"]
    assert "skipped 2 identical" in cli(db2, "knowledge", "import", "-", stdin=(tmp_path / "k.jsonl").read_text()).stdout
    assert cli(db, "knowledge", "resolve", "db.engine", "PostgreSQL 16").stdout.strip() == "resolved db.engine = PostgreSQL 16"
    assert cli(db, "knowledge", "remove", "ci.copy").stdout.strip() == "removed ci.copy"
    bad = cli(db, "knowledge", "remove", "ci.copy", check=False)
    assert bad.returncode == 2 and bad.stderr.startswith("error[KNOWLEDGE_NOT_FOUND]:")
    bad = cli(db, "knowledge", "remember", "k", "v", "-c", "Bad Cat", "--json", check=False)
    assert bad.returncode == 2 and json.loads(bad.stdout)["error"]["code"] == "KNOWLEDGE_INVALID_CATEGORY"
    bad = cli(db, "knowledge", "remember", "k", "v", "-c", "c", "--confidence", "2", check=False)
    assert bad.returncode == 2 and "KNOWLEDGE_INVALID_CONFIDENCE" in bad.stderr
    assert "conflicts: none" in cli(db, "knowledge", "status").stdout
