"""``lean-ctx gain``'s sent total is every token lean-ctx sent the agent: what the real MCP client
received from context calls.

Real ``lean-ctx mcp`` over stdio, the real ``mcp`` client, the real ``lean-ctx gain --json``;
tokens counted with ``leanctx.context.tokens`` in the session's encoding (claude-code:
``o200k_base``), block by block as the client got them.

Not on record yet, so not tested here: the resume block (appended after a context loss, and sent
by ``ctx_session action=resume`` and ``ctx_overview``) is on no event; recording it needs a
command that carries its tokens.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters
from mcp_types import Implementation

from leanctx.context.tokens import count_tokens

from .test_mcp import LEAN_CTX, _populate, anyio_backend  # noqa: F401

ENC = "o200k_base"  # claude-code's


@pytest.fixture()
def env(tmp_path: Path) -> dict[str, str]:
    _populate(tmp_path / "proj")
    return {"LEAN_CTX_DB": str(tmp_path / "events.db"), "LEAN_CTX_HOME": str(tmp_path / "home")}


def _client(env: dict[str, str]) -> Client:
    params = StdioServerParameters(command=LEAN_CTX, args=["mcp"], env=env,
                                   cwd=str(Path(env["LEAN_CTX_DB"]).parent / "proj"))
    return Client(params, mode="legacy", client_info=Implementation(name="claude-code", version="1"),
                  read_timeout_seconds=30)


def _tokens(result: Any) -> int:
    """What the client received, block by block."""
    return sum(count_tokens(b.text, ENC) for b in result.content if getattr(b, "type", "") == "text")


def _gain_sent(env: dict[str, str]) -> int:
    out = subprocess.run([LEAN_CTX, "gain", "--json"], env=env, capture_output=True, text=True, timeout=60,
                         check=True)
    return int(json.loads(out.stdout)["totals"]["sent_tokens"])


def _reads(n: int) -> list[dict[str, Any]]:
    files = ["app.py", "src/util.py", "README.md"]
    return [{"paths": [files[i % len(files)]], "mode": "full", "fresh": True} for i in range(n)]


@pytest.mark.anyio
async def test_reads_alone_are_counted_exactly(env: dict[str, str]) -> None:
    """Without a resume block, gain's sent total is exactly the text the client received."""
    async with _client(env) as c:
        got = [await c.call_tool("ctx_read", a) for a in _reads(3)]
    assert not any(r.is_error for r in got)
    assert _gain_sent(env) == sum(_tokens(r) for r in got)
