"""``lean-ctx events search`` takes at most 1,000 characters of query, as HTTP's
``/v1/events/search?q=`` does, refused with the same code (a 32k-term query took 4.15 s: FTS5's
cost grows with the square of the ANDed terms). The store keeps taking any string (the conformance
suite's hostile queries) and asks FTS5 each distinct term once. The real CLI, a real uvicorn,
real SQLite logs."""

from __future__ import annotations

import os
import resource
import subprocess
import sys
from pathlib import Path
from typing import Any

import httpx
import pytest

from leanctx.api.http import ServerConfig
from leanctx.api.http.server import BackgroundServer
from leanctx.events import sqlite_store
from leanctx.events.sqlite_store import SqliteEventStore

from .conformance import note

LEAN_CTX = str(Path(sys.executable).with_name("lean-ctx"))
MAX = 1000


def _cli(db: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([LEAN_CTX, *args], env={**os.environ, "LEAN_CTX_DB": str(db)}, capture_output=True,
                          text=True, timeout=120, check=False)


def _http_code(tmp: Path, q: str) -> tuple[int, str]:
    (tmp / "project").mkdir(exist_ok=True)
    config = ServerConfig(db=tmp / "events.db", project_root=str(tmp / "project"), host="127.0.0.1", port=0,
                          secret_path=tmp / "secret", mount_mcp=False, rate=0)
    server = BackgroundServer(config).start()
    try:
        with httpx.Client(base_url=server.url, timeout=30) as c:
            reg = c.post("/v1/agents/register", json={"agent_type": "claude", "role": "dev"}).json()
            r = c.get("/v1/events/search", params={"q": q}, headers={"X-Agent-Token": reg["agent_token"]})
            return r.status_code, r.json()["error"]["code"] if r.status_code >= 400 else ""
    finally:
        server.stop()


def test_cli_refuses_a_query_over_the_cap_with_the_code_http_gives(tmp_path: Path) -> None:
    db = tmp_path / "cli.db"
    assert _cli(db, "agent", "register", "--type", "codex").returncode == 0
    long_query = "x" * (MAX + 1)
    status, code = _http_code(tmp_path, long_query)
    assert 400 <= status < 500 and code
    r = _cli(db, "events", "search", long_query)
    assert r.returncode == 2 and f"error[{code}]" in r.stderr and "1,000" in r.stderr, (r.returncode, r.stderr)
    r = _cli(db, "events", "search", "--json", "x" * MAX)  # at the cap: searched
    assert r.returncode == 0, r.stderr
    assert _cli(db, "events", "search", "codex").stdout.strip()


def test_cli_refuses_32k_terms_at_once(tmp_path: Path) -> None:
    db = tmp_path / "cli.db"
    assert _cli(db, "agent", "register", "--type", "codex").returncode == 0
    digits = "0123456789abcdefghijklmnopqrstuvwxyz"
    query = " ".join(digits[i // 1296] + digits[i // 36 % 36] + digits[i % 36] for i in range(32_000))  # < 128 KB
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    r = _cli(db, "events", "search", query)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime)  # the CLI's own CPU seconds
    assert r.returncode == 2 and "error[" in r.stderr, (r.returncode, r.stderr[:500])
    assert cpu < 2.5, cpu  # was 4.15 s of FTS5 work (plus the CLI's start), and an answer


def test_the_store_asks_fts5_each_distinct_term_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    store = SqliteEventStore(tmp_path / "e.db")
    try:
        store.append("s", [note("alpha beta")])
        store.append("s", [note("alpha gamma")])
        expected = [h.event.position for h in store.search("alpha beta")]
        assert expected == [1]
        seen: list[str] = []
        real = sqlite_store.search_fts

        def spy(conn: Any, match: str, *args: Any) -> Any:
            seen.append(match)
            return real(conn, match, *args)

        monkeypatch.setattr(sqlite_store, "search_fts", spy)
        got = store.search(" ".join(["alpha", "beta", "alpha*"] * 5_000))  # a library caller has no cap
        assert [h.event.position for h in got] == expected
        assert seen == ['"alpha" "beta" "alpha"*']
    finally:
        store.close()
