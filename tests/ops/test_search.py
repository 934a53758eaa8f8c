"""ctx_search end to end (in-process): methods, RRF fusion, semantic storage, caps, archive,
events, secrets."""

from __future__ import annotations

import hashlib
import math
import re
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path

import pytest

from leanctx.app import LeanCtx
from leanctx.archive import ArchiveStore
from leanctx.cache import vectors
from leanctx.cache.code_index import CodeIndex
from leanctx.cache.vectors import OFF, VectorIndex, semantic_status, vectors_path
from leanctx.context.tokens import count_tokens
from leanctx.errors import InvalidInput
from leanctx.events import TopicFilter
from leanctx.ops.search import rrf, search


class HashEmbedder:
    """Deterministic stand-in for a model: a hashed bag of words, L2-normalized."""

    name = "test-hash-bow"
    dim = 64

    def __init__(self) -> None:
        self.calls = 0
        self.texts = 0

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        self.calls += 1
        self.texts += len(texts)
        out = []
        for t in texts:
            v = [0.0] * self.dim
            for w in re.findall(r"[a-z]+", t.lower()):
                h = hashlib.sha256(w.encode()).digest()
                v[h[0] % self.dim] += 1.0 if h[1] & 1 else -1.0
            n = math.sqrt(sum(x * x for x in v)) or 1.0
            out.append([x / n for x in v])
        return out


@pytest.fixture()
def lc(tmp_path: Path) -> Iterator[LeanCtx]:
    with LeanCtx(tmp_path / "e.db") as app:
        yield app


def write(root: Path, rel: str, text: str) -> Path:
    p = root / rel
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(text)
    return p


@pytest.fixture()
def proj(tmp_path: Path) -> Path:
    root = tmp_path / "proj"
    write(root, "src/pool.py", "def open_pool():\n    # database connection pool\n    return connect_database()\n")
    write(root, "src/cache.py", "def cache_get(key):\n    # lookup in the memory cache\n    return CACHE[key]\n")
    write(root, "src/tokens.py", "def count_tokens(text):\n    # tokenizer counts tokens\n    return len(text)\n")
    write(root, "docs/notes.md", "# Notes\n\nThe database pool is opened once per process.\n")
    return root


def events(lc: LeanCtx, kind: str) -> list:
    return list(lc.store.iter_all(0, TopicFilter(kinds=(kind,))))


# --- RRF --------------------------------------------------------------------------------------------

def test_rrf_scores_and_order() -> None:
    fused = rrf([["a", "b", "c"], ["c", "a"], ["d"]], k=60)
    scores = dict(fused)
    assert scores["a"] == pytest.approx(1 / 61 + 1 / 62)
    assert scores["c"] == pytest.approx(1 / 63 + 1 / 61)
    assert scores["b"] == pytest.approx(1 / 62)
    assert scores["d"] == pytest.approx(1 / 61)
    assert [k for k, _ in fused] == ["a", "c", "d", "b"]
    # a repeat within one list counts once; ties: better best rank, then first appearance
    assert dict(rrf([["x", "x", "y"]])) == pytest.approx({"x": 1 / 61, "y": 1 / 62})
    assert [k for k, _ in rrf([["p", "q"], ["q", "p"]])] == ["p", "q"]
    assert rrf([]) == [] and rrf([[], []]) == []


# --- methods ----------------------------------------------------------------------------------------

def test_regex_lines_in_path_order_with_smart_case(lc: LeanCtx, proj: Path) -> None:
    ans = search(lc, proj, r"def \w+\(", method="regex")
    assert [(h.path, h.line) for h in ans.hits] == [("src/cache.py", 1), ("src/pool.py", 1), ("src/tokens.py", 1)]
    assert ans.text.splitlines()[0] == "src/cache.py:1: def cache_get(key):"
    assert search(lc, proj, "DATABASE", method="regex").total == 0  # upper case: case-sensitive
    assert search(lc, proj, "database", method="regex").total == 3
    with pytest.raises(InvalidInput) as e:
        search(lc, proj, "(unclosed", method="regex")
    assert e.value.code == "SEARCH_INVALID_REGEX"
    assert search(lc, proj, "(unclosed").method == "fused"  # auto: matched literally


def test_a_pathological_regex_stops_on_its_budget(lc: LeanCtx, tmp_path: Path) -> None:
    root = tmp_path / "p"
    for i in range(3):
        write(root, f"f{i}.txt", ("a" * 30 + "!\n") * 5)
    ans = search(lc, root, "(a|aa)+$", method="regex", regex_budget=0.3)
    assert ans.partial and any("partial" in n for n in ans.notes)


def test_bm25_hits_show_their_best_line(lc: LeanCtx, proj: Path) -> None:
    ans = search(lc, proj, "memory cache lookup", method="bm25")
    top = ans.hits[0]
    assert (top.path, top.line, top.sources) == ("src/cache.py", 2, ["bm25"])
    assert top.snippet == "# lookup in the memory cache" and (top.start_line, top.end_line) == (1, 3)
    assert ans.index.chunked == 4


def test_fused_results_name_their_sources(lc: LeanCtx, proj: Path) -> None:
    ans = search(lc, proj, "database pool")
    assert ans.method == "fused"
    assert OFF in ans.notes or semantic_status() is None
    first = ans.hits[0]
    assert first.path in ("src/pool.py", "docs/notes.md")
    assert set(first.sources) >= {"bm25"}
    assert {h.path for h in ans.hits} == {"src/pool.py", "docs/notes.md"}
    # a literal phrase found by regex and bm25 outranks a chunk found by one list only
    both = search(lc, proj, "connection pool")
    assert both.hits[0].path == "src/pool.py" and both.hits[0].sources == ["regex", "bm25"]
    assert both.hits[0].line == 2  # the regex hit's line


def test_glob_restricts_every_method(lc: LeanCtx, proj: Path) -> None:
    for method in ("regex", "bm25", "auto"):
        ans = search(lc, proj, "database", method=method, glob="*.md")
        assert {h.path for h in ans.hits} == {"docs/notes.md"}, method


def test_semantic_off_message(lc: LeanCtx, proj: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(vectors.importlib.util, "find_spec", lambda name, *a: None)
    assert semantic_status() == OFF == "semantic search is off (install lean-ctx[semantic])"
    assert vectors.default_embedder() is None
    ans = search(lc, proj, "database pool", method="semantic")
    assert ans.method == "bm25" and not ans.semantic
    assert ans.notes[:2] == [OFF, "showing bm25 results instead"]
    assert f"[{OFF}]" in ans.text
    fused = search(lc, proj, "database pool")
    assert OFF in fused.notes and "semantic" not in fused.text.splitlines()[-2]


def test_a_model_without_sqlite_vec_falls_back_to_bm25(lc: LeanCtx, proj: Path,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "sqlite_vec", None)  # `import sqlite_vec` raises ImportError
    ans = search(lc, proj, "database pool", method="semantic", embedder=HashEmbedder())
    assert ans.method == "bm25" and not ans.semantic and ans.hits
    assert ans.notes[0].startswith("semantic search is off (sqlite-vec is not installed")
    assert ans.notes[1] == "showing bm25 results instead"
    fused = search(lc, proj, "database pool", embedder=HashEmbedder())
    assert not fused.semantic and fused.hits and fused.notes[0].startswith("semantic search is off")


def test_semantic_search_with_sqlite_vec_and_deterministic_vectors(lc: LeanCtx, proj: Path) -> None:
    emb = HashEmbedder()
    ans = search(lc, proj, "memory cache", method="semantic", embedder=emb)
    assert ans.method == "semantic" and ans.semantic
    assert ans.hits[0].path == "src/cache.py" and ans.hits[0].sources == ["semantic"]
    assert emb.texts == 4 + 1  # four chunks embedded, one query
    # stored in the vec0 table of the side database, one row per chunk
    vdb = vectors_path(lc.db)
    assert vdb.exists()
    idx = CodeIndex(lc.store)
    with VectorIndex(vdb, emb, identity=idx.identity()) as vi:
        assert vi.ids(str(proj)) == {c.chunk_id for c in idx.all_chunks(str(proj))}
        nearest = vi.query(str(proj), "count tokens tokenizer", 2)
        assert idx.rows([nearest[0][0]])[nearest[0][0]].path == "src/tokens.py"
        assert nearest[0][1] <= nearest[1][1]
    # incremental: only the changed file's chunk is embedded again, the stale vector removed
    write(proj, "src/cache.py", "def cache_put(key, value):\n    # store in the memory cache\n    CACHE[key] = value\n")
    emb.texts = 0
    again = search(lc, proj, "memory cache store", method="semantic", embedder=emb)
    assert emb.texts == 1 + 1
    assert again.hits[0].path == "src/cache.py" and "cache_put" in again.text or "store" in again.hits[0].snippet
    with VectorIndex(vdb, emb, identity=idx.identity()) as vi:
        assert vi.ids(str(proj)) == {c.chunk_id for c in idx.all_chunks(str(proj))}
    # fused with semantic: three lists
    fused = search(lc, proj, "memory cache", embedder=emb)
    assert fused.semantic and fused.hits[0].path == "src/cache.py"
    assert set(fused.hits[0].sources) == {"regex", "bm25", "semantic"}


def test_vector_index_resets_on_a_new_code_index_or_model(tmp_path: Path) -> None:
    emb = HashEmbedder()
    path = tmp_path / "v.db"
    with VectorIndex(path, emb, identity="one") as vi:
        vi.sync("p", [1, 2], lambda ids: {i: f"text {i}" for i in ids})
        assert vi.ids("p") == {1, 2}
        vi.sync("p", [2, 3], lambda ids: {i: f"text {i}" for i in ids if i != 3})
        assert vi.ids("p") == {2}  # 1 removed; 3 had no text and stays missing
    with VectorIndex(path, emb, identity="one") as vi:
        assert vi.ids("p") == {2}
    with VectorIndex(path, emb, identity="two") as vi:
        assert vi.ids("p") == set()


# --- answers, caps, events --------------------------------------------------------------------------

def test_large_result_sets_are_capped_and_archived(lc: LeanCtx, tmp_path: Path) -> None:
    root = tmp_path / "p"
    for i in range(30):
        write(root, f"m{i:02}.txt", "\n".join(f"needle {i} {j}" for j in range(5)) + "\n")
    ans = search(lc, root, "needle", method="regex", limit=10, actor="a1", session_id="s1")
    assert ans.total == 150 and ans.shown == 10 and len(ans.hits) == 10
    assert ans.archive_id and f"archive {ans.archive_id}" in ans.text
    archived = ArchiveStore.beside(lc.db).get(ans.archive_id)
    assert len(archived.splitlines()) == 150 and archived.splitlines()[0] == "m00.txt:1: needle 0 0"
    assert ans.raw_tokens == count_tokens(archived.rstrip("\n")) and ans.sent_tokens == count_tokens(ans.text)
    assert ans.sent_tokens < ans.raw_tokens
    (ran,) = events(lc, "search.ran")
    d = ran.data()
    assert (d.method, d.results, d.raw_tokens, d.sent_tokens, d.archive_id, d.session_id) == \
        ("regex", 150, ans.raw_tokens, ans.sent_tokens, ans.archive_id, "s1")
    assert ran.stream == "search:s1" and ran.actor == "a1" and ran.project == str(root.resolve())
    (arch,) = events(lc, "archive.created")
    assert (arch.data().archive_id, arch.data().source, arch.data().lines) == (ans.archive_id, "search", 150)
    # the same listing again: one archive, one archive.created
    search(lc, root, "needle", method="regex", limit=10, actor="a1", session_id="s1")
    assert len(events(lc, "archive.created")) == 1 and len(events(lc, "search.ran")) == 2


def test_no_results_and_bad_input(lc: LeanCtx, proj: Path) -> None:
    ans = search(lc, proj, "zzzqqqxxx")
    assert ans.total == 0 and ans.hits == [] and "no results" in ans.text
    for q, code in (("", "SEARCH_EMPTY_QUERY"), ("   ", "SEARCH_EMPTY_QUERY"), ("x" * 1001, "SEARCH_QUERY_TOO_LONG")):
        with pytest.raises(InvalidInput) as e:
            search(lc, proj, q)
        assert e.value.code == code
    with pytest.raises(InvalidInput):
        search(lc, proj, "x", limit=0)
    with pytest.raises(InvalidInput):
        search(lc, proj, "x", method="fuzzy")


HOSTILE = ['"', "'", "NEAR(", "a AND", "OR", "NOT", "*", "(", ")", "col:val", "^", "$", ".*", "\x00", "🙂", "[",
           "(a+)+$", "\\", "{", 'foo"bar', "a OR b NOT c", "\u202e", "%", "_", "'; DROP TABLE code_fts; --", "(?",
           "[[:alpha:]", "x{99999999}", "(x{1000}){1000}", "a{5000}b{5000}", "\\p{Foo}", "(?P<n>", "a" * 1000]


@pytest.mark.parametrize("q", HOSTILE)
def test_hostile_queries_never_raise_or_hang(lc: LeanCtx, proj: Path, q: str) -> None:
    for method in ("auto", "bm25"):
        ans = search(lc, proj, q, method=method, regex_budget=1.0)
        assert ans.total >= 0
    try:
        search(lc, proj, q, method="regex", regex_budget=1.0)
    except InvalidInput as e:
        assert e.code in ("SEARCH_INVALID_REGEX", "SEARCH_REGEX_TOO_COMPLEX")


# --- secrets --------------------------------------------------------------------------------------

KEY_BODY = [f"MIIEv{i:02d}QIBADANBgkqhkiG9w0BAQEFAASC" + "BKcwggSjAgEAAoIBAQC7VJTUt9Us8cKB"[: 20 + i % 10]
            for i in range(45)]
SECRETS = {
    "aws": "AKIAZ7QW3RT5YU8IOP2L",
    "github": "ghp_" + "Zx9Kq2Lm4Np6Rt8Vw1Yb3Dc5Fg7Hj0Ks2Lm4",
    "url_password": "s3cr3tPassw0rdXyz",
    "assignment": "zq8Kx2mN4pL6vB9cW1eR",
    "env_file": "envOnlyTokenValue123456",
}


def _planted(root: Path) -> None:
    write(root, "app/settings.py",
          f'AWS_ACCESS_KEY_ID = "{SECRETS["aws"]}"\nGITHUB = "{SECRETS["github"]}"\n'
          f'DATABASE_URL = "postgres://admin:{SECRETS["url_password"]}@db.example.com/app"\n'
          f'STRIPE_SECRET = "{SECRETS["assignment"]}"\ndef settings():\n    return "needle settings"\n')
    write(root, "docs/deploy.md", "# Deploy\n\nneedle key below\n" + "\n" * 30 +
          "-----BEGIN RSA PRIVATE KEY-----\n" + "\n".join(KEY_BODY) + "\n-----END RSA PRIVATE KEY-----\nneedle end\n")
    write(root, ".env", f"API_TOKEN={SECRETS['env_file']}\n")


def test_planted_secrets_never_reach_the_database_or_archives(lc: LeanCtx, tmp_path: Path) -> None:
    root = tmp_path / "p"
    _planted(root)
    emb = HashEmbedder()
    queries = [("AKIA|ghp_|admin|STRIPE|MIIEv|API_TOKEN|needle", "regex"), ("needle key secret token", "auto"),
               ("MIIEv00QIBADANBgkqhkiG9w0BAQEFAASC", "bm25"), (SECRETS["aws"], "auto"), ("needle", "semantic"),
               (f"STRIPE_SECRET={SECRETS['assignment']}", "auto")]
    answers = [search(lc, root, q, method=m, limit=1, embedder=emb, actor="a", session_id="s") for q, m in queries]
    assert any(a.archive_id for a in answers)
    assert any(a.redactions for a in answers)
    shown = "\n".join(a.text for a in answers)
    assert "[REDACTED:" in shown
    lc.store.index_fts()
    lc.close()
    blobs = {}
    for p in [*tmp_path.glob("e.db*"), *tmp_path.glob("e.vectors.db*"), *(tmp_path / "archives").glob("*")]:
        blobs[p.name] = p.read_bytes()
    assert "e.db" in blobs and "e.vectors.db" in blobs and any(n.startswith("A") for n in blobs)
    needles = [*SECRETS.values(), *KEY_BODY, SECRETS["aws"].lower(), SECRETS["github"].lower()]
    for name, data in blobs.items():
        low = data.lower()
        for s in needles:
            assert s.encode() not in data and s.lower().encode() not in low, (name, s)
    for a in answers:
        for s in needles:
            assert s not in a.text and s not in a.query
    # FTS5 stores its terms prefix-compressed, so the byte scan alone cannot see a token in the
    # index: read both vocabularies (the code index and the log's own FTS) term by term
    import apsw

    conn = apsw.Connection(str(tmp_path / "e.db"))
    vocab = set()
    for table in ("code_fts", "events_fts"):
        conn.execute(f"CREATE VIRTUAL TABLE temp.v_{table} USING fts5vocab(main, {table}, 'row')")
        vocab |= {r[0] for r in conn.execute(f"SELECT term FROM temp.v_{table}")}
    conn.close()
    assert "needle" in vocab and "settings" in vocab
    secret_terms = {t for s in needles for t in re.findall(r"[a-z0-9]+", s.lower()) if len(t) >= 8}
    assert secret_terms and not (secret_terms & vocab), sorted(secret_terms & vocab)
    # the .env file is never searched at all
    assert all(".env" not in h.path for a in answers for h in a.hits)


@pytest.mark.parametrize("glob", ["[!d]*", "src/[!p]*", "[^d]*", "*.[!m]*"])
def test_bm25_and_regex_read_a_glob_alike(lc: LeanCtx, proj: Path, glob: str) -> None:
    # ``[!a]`` negates a set for fnmatch and ``[^a]`` is a set holding ``^``; SQLite's GLOB reads
    # them the other way round, so the index filters with the regex scan's own matcher
    from leanctx.ops.files import glob_match, list_files

    want = {f.path for f in list_files(proj).files if glob_match(f.path, glob)}
    for method in ("regex", "bm25"):
        ans = search(lc, proj, "database pool connection", method=method, glob=glob)
        got = {h.path for h in ans.hits}
        assert got <= want, (method, got, want)
    regex = {h.path for h in search(lc, proj, "database", method="regex", glob=glob).hits}
    bm25 = {h.path for h in search(lc, proj, "database", method="bm25", glob=glob).hits}
    assert regex == bm25, (glob, regex, bm25)


def test_a_search_answer_is_charged_to_the_agents_budget(lc: LeanCtx, proj: Path) -> None:
    from leanctx.events.codec import payload_dict

    ans = search(lc, proj, "database", actor="a1", session_id="s1")
    spent = [payload_dict(e.payload) for e in lc.store.read_all(0) if e.kind == "budget.consumed"]
    assert [(p["agent_id"], p["tokens"], p["tool"]) for p in spent] == [("a1", ans.sent_tokens, "ctx_search")]
    search(lc, proj, "database")  # no agent: nobody's budget
    assert sum(e.kind == "budget.consumed" for e in lc.store.read_all(0)) == 1
