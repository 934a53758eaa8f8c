"""Knowledge recall's structured answers say how many query terms bm25 dropped (``dropped_terms``,
past ``MAX_QUERY_TERMS`` distinct terms), as its text summary does: ``lean-ctx knowledge recall
--json`` (the real CLI) and ``ctx_knowledge action=recall``'s structured content (the official MCP
client on a spawned ``lean-ctx mcp``)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from leanctx.projections.knowledge import MAX_QUERY_TERMS
from tests.api.test_mcp import Transport, _call, _text, anyio_backend, transport  # noqa: F401

LEAN_CTX = str(Path(sys.executable).with_name("lean-ctx"))
N = 180  # distinct terms, under the 1,000-character cap
QUERY = " ".join(f"w{i}" for i in range(N))

pytestmark = pytest.mark.timeout(120)


def _cli(tmp: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "LEAN_CTX_DB": str(tmp / "events.db")}
    return subprocess.run([LEAN_CTX, *args], cwd=tmp, env=env, capture_output=True, text=True, timeout=60,
                          check=False)


def test_cli_recall_json_has_dropped_terms(tmp_path: Path) -> None:
    for i in range(3):
        assert _cli(tmp_path, "knowledge", "remember", "-c", "general", f"k{i}", f"value w{i} text").returncode == 0
    r = _cli(tmp_path, "knowledge", "recall", QUERY, "--json")
    assert r.returncode == 0, r.stderr
    answer = json.loads(r.stdout)
    assert answer["dropped_terms"] == N - MAX_QUERY_TERMS and len(answer["hits"]) == 3
    r = _cli(tmp_path, "knowledge", "recall", "w1 w1", "--json")
    assert json.loads(r.stdout)["dropped_terms"] == 0
    r = _cli(tmp_path, "knowledge", "recall", QUERY)  # the text answer says it as before
    assert f"{N - MAX_QUERY_TERMS} more dropped" in r.stderr


@pytest.mark.anyio
@pytest.mark.parametrize("transport", ["stdio"], indirect=True)
async def test_mcp_recall_structured_content_has_dropped_terms(transport: Transport) -> None:  # noqa: F811
    async with transport.connect("claude-code") as c:
        await _call(c, "ctx_load_tools", {"action": "load", "categories": ["memory"]})
        await _call(c, "ctx_knowledge", {"action": "remember", "category": "general", "key": "k1", "value": "value w1 text"})
        r: Any = await _call(c, "ctx_knowledge", {"action": "recall", "query": QUERY})
        assert r.structured_content["dropped_terms"] == N - MAX_QUERY_TERMS, r.structured_content
        assert f"{N - MAX_QUERY_TERMS} more dropped" in _text(r)
        r = await _call(c, "ctx_knowledge", {"action": "recall", "query": "w1"})
        assert r.structured_content["dropped_terms"] == 0
