"""``lean-ctx search`` through the real console script."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from leanctx.app import LeanCtx
from leanctx.context.tokens import count_tokens
from leanctx.events import TopicFilter

LEAN_CTX = str(Path(sys.executable).with_name("lean-ctx"))  # this interpreter's, not whatever PATH finds


def run(db: Path, proj: Path, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    full = {**os.environ, "LEAN_CTX_DB": str(db), "LEAN_CTX_AGENT_ID": "cli-agent", **(env or {})}
    full.pop("LEAN_CTX_SESSION_ID", None) if not (env and "LEAN_CTX_SESSION_ID" in env) else None
    return subprocess.run([LEAN_CTX, "--project", str(proj), *args], capture_output=True, text=True, env=full,
                          timeout=120)


@pytest.fixture()
def proj(tmp_path: Path) -> Path:
    root = tmp_path / "proj"
    (root / "src").mkdir(parents=True)
    (root / "src" / "tokens.py").write_text("def count_tokens(text):\n    # the tokenizer counts tokens\n    return 0\n")
    (root / "src" / "pool.py").write_text("def open_pool():\n    return 'pool'\n")
    (root / "README.md").write_text("# Tokens\n\nHow tokens are counted.\n")
    return root


def test_cli_search_methods_and_record(tmp_path: Path, proj: Path) -> None:
    db = tmp_path / "e.db"
    p = run(db, proj, "search", "tokens counted")
    assert p.returncode == 0, p.stderr
    lines = p.stdout.splitlines()
    assert lines[0].startswith(("src/tokens.py:", "README.md:"))
    assert any(line.startswith("[search fused bm25+regex") for line in lines)

    p = run(db, proj, "search", "count_tokens", "--regex", "--json", "--session", "s9")
    out = json.loads(p.stdout)
    assert out["method"] == "regex" and [(h["path"], h["line"]) for h in out["hits"]] == [("src/tokens.py", 1)]
    assert out["sent_tokens"] == count_tokens(out["text"])

    p = run(db, proj, "--json", "search", "pool", "--bm25", "--path", "src/*", "-n", "1")
    out = json.loads(p.stdout)
    assert out["method"] == "bm25" and out["hits"][0]["path"] == "src/pool.py" and out["shown"] == 1

    p = run(db, proj, "search", "tokens", "--semantic", "--json", env={"LEAN_CTX_SESSION_ID": "s10"})
    out = json.loads(p.stdout)
    if out["semantic"] is False:
        assert "semantic search is off (install lean-ctx[semantic])" in out["notes"]

    with LeanCtx(db) as lc:
        ran = list(lc.store.iter_all(0, TopicFilter(kinds=("search.ran",))))
        assert [e.data().method for e in ran] == ["fused", "regex", "bm25", out["method"]]
        assert [e.actor for e in ran] == ["cli-agent"] * 4
        assert ran[1].data().session_id == "s9" and ran[1].stream == "search:s9"
        assert ran[3].data().session_id == "s10"
        assert ran[0].data().session_id is None and ran[0].stream == "search:cli-agent"
        assert all(e.project == str(proj.resolve()) for e in ran)


@pytest.mark.parametrize("args,code", [(("search", "x", "--regex", "--bm25"), "SEARCH_METHOD_CONFLICT"),
                                       (("search", "(", "--regex"), "SEARCH_INVALID_REGEX"),
                                       (("search", "  "), "SEARCH_EMPTY_QUERY"),
                                       (("search", "x", "-n", "0"), "SEARCH_INVALID_LIMIT")])
def test_cli_search_errors(tmp_path: Path, proj: Path, args: tuple[str, ...], code: str) -> None:
    p = run(tmp_path / "e.db", proj, *args)
    assert p.returncode == 2 and f"error[{code}]" in p.stderr
    p = run(tmp_path / "e.db", proj, *args, "--json")
    assert p.returncode == 2 and json.loads(p.stdout)["error"]["code"] == code
