"""ctx_search: a secret in the query never reaches the log (``search.ran``), its WAL or an archive;
a path glob that is not one is refused with ``SEARCH_INVALID_GLOB`` on every surface (the
operation, the CLI, HTTP ``/v1/tools/ctx_search`` and ``/v1/context/search``, MCP) instead of a
silent "no results"."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from api.test_http_common import Api, make_server  # noqa: F401
from api.test_mcp import Transport, _call, _text, anyio_backend, transport  # noqa: F401

from leanctx.app import LeanCtx
from leanctx.commands.search import MAX_QUERY_CHARS, RecordSearch
from leanctx.errors import InvalidInput
from leanctx.events.codec import payload_dict
from leanctx.ops.search import search

LEAN_CTX = str(Path(sys.executable).with_name("lean-ctx"))
GITHUB = "ghp_Qw3rTy9UiOp2AsDf4GhJk6LzXc8VbNm1Qw3r"
BAD_GLOBS = ["[", "src/[ab", "b[.txt", "[!", "[]"]

pytestmark = pytest.mark.timeout(240)


@pytest.fixture()
def proj(tmp_path: Path) -> Path:
    root = tmp_path / "proj"
    (root / "src").mkdir(parents=True)
    (root / "src" / "a.py").write_text("def needle_a():\n    return 1\n")
    (root / "src" / "b.py").write_text("def needle_b():\n    return 2\n")
    (root / "b[.txt").write_text("needle in an odd name\n")
    for i in range(30):  # enough hits for an archived listing with limit=1
        (root / f"many_{i:02}.md").write_text(f"needle number {i}\n")
    return root


def search_events(lc: LeanCtx) -> list[dict]:
    return [payload_dict(e.payload) for e in lc.store.read_all(0) if e.kind == "search.ran"]


def files_under(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in root.rglob("*") if p.is_file()}


def cli(home: Path, proj: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "LEAN_CTX_HOME": str(home), "LEAN_CTX_NO_DAEMON": "1", "LEAN_CTX_AGENT_ID": "cli-agent"}
    env.pop("LEAN_CTX_DB", None)
    env.pop("LEAN_CTX_SESSION_ID", None)
    return subprocess.run([LEAN_CTX, "--project", str(proj), *args], capture_output=True, text=True, env=env,
                          cwd=proj, timeout=120, check=False)


# --- the query --------------------------------------------------------------------------------


def test_a_token_in_the_query_is_not_in_the_log_nor_archives(tmp_path: Path, proj: Path) -> None:
    data = tmp_path / "data"
    with LeanCtx(data / "e.db") as lc:
        answers = [search(lc, proj, f"needle {GITHUB}", limit=1, actor="a", session_id="s"),
                   search(lc, proj, f"needle|{GITHUB}", method="regex", limit=1, actor="a"),
                   search(lc, proj, f"token={GITHUB}", method="bm25", actor="a")]
        ran = search_events(lc)
        assert any(a.archive_id for a in answers)  # an archive was written: the byte scan covers one
        for a in answers:  # the answer echoes the query as recorded: redacted
            assert GITHUB not in a.query and GITHUB not in a.text
        assert answers[2].total == 0 and "no results for 'token=[REDACTED:github_token]'" in answers[2].text
        assert [r["query"] for r in ran] == ["needle [REDACTED:github_token]", "needle|[REDACTED:github_token]",
                                             "token=[REDACTED:github_token]"]
        assert all(r["redactions"] >= 1 for r in ran)
        lc.store.index_fts()
    files = files_under(data)
    assert "e.db" in files and any(n.startswith("archives/") for n in files)
    for name, blob in files.items():
        assert GITHUB.encode() not in blob, name


def test_search_record_redacts_before_cutting_the_query(tmp_path: Path) -> None:
    # a caller that did not redact, with the token straddling the cut: redacting first leaves no
    # prefix of it (a cut first would leave 'ghp_Qw3r...' too short for the rule to see)
    query = "x" * (MAX_QUERY_CHARS - 20) + " " + GITHUB
    with LeanCtx(tmp_path / "e.db") as lc:
        lc.bus.dispatch(RecordSearch(query=query, method="regex", results=0, raw_tokens=0, sent_tokens=1), actor="a")
        (ran,) = search_events(lc)
        assert len(ran["query"]) <= MAX_QUERY_CHARS and ran["redactions"] == 1
    for name, blob in files_under(tmp_path).items():
        assert GITHUB[:16].encode() not in blob, name


def test_cli_query_secret_never_reaches_lean_ctx_home(tmp_path: Path, proj: Path) -> None:
    home = tmp_path / "home"
    p = cli(home, proj, "--json", "search", f"needle {GITHUB}", "-n", "1")
    assert p.returncode == 0, p.stderr
    assert GITHUB not in p.stdout and json.loads(p.stdout)["query"] == "needle [REDACTED:github_token]"
    files = files_under(home)
    assert any(n.endswith("events.db") for n in files)
    for name, blob in files.items():
        assert GITHUB.encode() not in blob, name


# --- the glob ---------------------------------------------------------------------------------


def test_invalid_globs_are_refused_and_valid_ones_still_work(tmp_path: Path, proj: Path) -> None:
    with LeanCtx(tmp_path / "e.db") as lc:
        for glob in BAD_GLOBS:
            for method in ("auto", "regex", "bm25"):
                with pytest.raises(InvalidInput) as e:
                    search(lc, proj, "needle", method=method, glob=glob, actor="a")
                assert e.value.code == "SEARCH_INVALID_GLOB" and "[[]" in e.value.message, (glob, method)
        with pytest.raises(InvalidInput) as e:
            search(lc, proj, "needle", glob="x" * 1001)
        assert e.value.code == "SEARCH_INVALID_GLOB"
        assert search_events(lc) == []  # refused before anything was recorded
        literal = search(lc, proj, "needle", method="regex", glob="b[[].txt")  # [[] is a literal [
        assert [h.path for h in literal.hits] == ["b[.txt"]
        sets = search(lc, proj, "needle", method="regex", glob="src/[ab].py")
        assert sorted(h.path for h in sets.hits) == ["src/a.py", "src/b.py"]
        negated = search(lc, proj, "needle", method="regex", glob="src/[!a].py")
        assert [h.path for h in negated.hits] == ["src/b.py"]
        closing_first = search(lc, proj, "needle", method="regex", glob="src/[]a].py")  # ] first is a member
        assert [h.path for h in closing_first.hits] == ["src/a.py"]


def test_cli_refuses_an_invalid_glob(tmp_path: Path, proj: Path) -> None:
    p = cli(tmp_path / "home", proj, "search", "needle", "--path", "[")
    assert p.returncode == 2 and p.stderr.startswith("error[SEARCH_INVALID_GLOB]:"), (p.stdout, p.stderr)
    j = cli(tmp_path / "home", proj, "--json", "search", "needle", "--path", "src/[ab")
    assert j.returncode == 2 and json.loads(j.stdout)["error"]["code"] == "SEARCH_INVALID_GLOB", j.stdout


def test_http_refuses_an_invalid_glob(make_server) -> None:  # noqa: F811
    server = make_server()
    (Path(server.config.project_root) / "a.py").write_text("needle = 1\n")
    api = Api(server)
    a = api.register()
    for route in ("/v1/tools/ctx_search", "/v1/context/search"):
        r = api.post(route, a, query="needle", glob="[")
        assert (r.status_code, r.json()["error"]["code"]) == (422, "SEARCH_INVALID_GLOB"), (route, r.text)
        ok = api.ok(route, a, query="needle", glob="*.py")
        assert "a.py" in ok["text"]


@pytest.mark.anyio
async def test_mcp_refuses_an_invalid_glob(transport: Transport) -> None:  # noqa: F811
    async with transport.connect("claude-code") as c:
        r = await c.call_tool("ctx_search", {"query": "hello", "glob": "src/[ab"})
        assert r.is_error and _text(r).startswith("SEARCH_INVALID_GLOB: "), _text(r)
        ok = await _call(c, "ctx_search", {"query": "hello", "glob": "*.py"})
        assert "app.py" in _text(ok)
