"""Tool results are text only unless a script asks for ``structuredContent``.

Claude Code, Codex and VS Code give the model ``JSON.stringify(structuredContent)`` *instead of*
the text whenever a result carries it: a read whose structured part is its metadata would show
the model the metadata and not the file. So by default a result is one text block (plus the
resume block when one is due) and ``_meta``; ``structuredContent`` comes per call (request
``_meta["lean-ctx/structured"]``) or for the whole server (``--structured``,
``LEAN_CTX_MCP_STRUCTURED=1``). The real ``mcp`` client, over stdio and streamable HTTP.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters
from mcp_types import Implementation

from leanctx.app import LeanCtx
from leanctx.context.tokens import count_tokens

from .test_mcp import LEAN_CTX, STRUCTURED, Transport, _text, anyio_backend, transport  # noqa: F401
from .test_mcp_encoding import _events


@pytest.mark.anyio
async def test_a_read_is_its_text_and_nothing_the_model_could_see_instead(transport: Transport) -> None:
    async with transport.connect("claude-code") as c:
        r = await c.call_tool("ctx_read", {"paths": ["app.py"], "mode": "full", "fresh": True})
        assert not r.is_error and r.structured_content is None
        assert [b.type for b in r.content] == ["text"] and 'return "hello from app"' in _text(r)
        assert isinstance(r.meta["lean-ctx/call"], int)
        # what the log says was sent is what the client got, token for token
        sent = [e["sent_tokens"] for e in _events(transport, "file.read") if e["path"] == "app.py"][-1]
        assert sent == count_tokens(_text(r))
        err = await c.call_tool("ctx_read", {"paths": ["../outside.py"]})
        assert err.is_error and err.structured_content is None
        assert _text(err).startswith("READ_PATH_OUTSIDE_PROJECT: ")


@pytest.mark.anyio
async def test_a_call_asks_for_the_structured_mapping(transport: Transport) -> None:
    async with transport.connect("cursor") as c:
        r = await c.call_tool("ctx_read", {"paths": ["app.py"], "mode": "full", "fresh": True}, meta=STRUCTURED)
        sc = r.structured_content
        assert sc is not None and "text" not in sc and sc["call"] == r.meta["lean-ctx/call"]
        assert sc["files"][0]["path"] == "app.py" and sc["files"][0]["sent_tokens"] > 0
        plain = await c.call_tool("ctx_read", {"paths": ["app.py"], "mode": "full", "fresh": True})
        assert plain.structured_content is None  # per call: the next one is text only again
        no = await c.call_tool("ctx_read", {"paths": ["app.py"]}, meta={"lean-ctx/structured": "yes"})
        assert no.structured_content is None  # only a JSON true asks


@pytest.mark.anyio
async def test_the_structured_flag_turns_it_on_for_the_whole_server(tmp_path: Path, home: Path) -> None:
    (tmp_path / "app.py").write_text("x = 1\n")
    params = StdioServerParameters(command=LEAN_CTX, args=["mcp", "--structured"], cwd=str(tmp_path),
                                   env={"LEAN_CTX_DB": str(tmp_path / "events.db"), "LEAN_CTX_HOME": str(home)})
    async with Client(params, mode="legacy", client_info=Implementation(name="claude-code", version="1"),
                      read_timeout_seconds=30) as c:
        r = await c.call_tool("ctx_read", {"paths": ["app.py"], "mode": "full"})
        assert r.structured_content is not None and r.structured_content["files"][0]["path"] == "app.py"
        err = await c.call_tool("ctx_nope", {})
        assert err.structured_content == {"error": err.structured_content["error"], "call": 2}
        assert err.structured_content["error"]["code"] == "TOOL_UNKNOWN"


def test_the_environment_turns_it_on_when_the_caller_does_not_say(monkeypatch: pytest.MonkeyPatch,
                                                                   tmp_path: Path) -> None:
    from leanctx.api.mcp_server import build_server

    monkeypatch.delenv("LEAN_CTX_MCP_STRUCTURED", raising=False)
    assert build_server(tmp_path / "a.db", project=tmp_path).hub.structured is False
    monkeypatch.setenv("LEAN_CTX_MCP_STRUCTURED", "1")
    assert build_server(tmp_path / "a.db", project=tmp_path).hub.structured is True
    assert build_server(tmp_path / "a.db", project=tmp_path, structured=False).hub.structured is False
    monkeypatch.setenv("LEAN_CTX_MCP_STRUCTURED", "0")
    assert build_server(tmp_path / "a.db", project=tmp_path).hub.structured is False


def test_the_resume_block_is_a_second_text_block(tmp_path: Path) -> None:
    from leanctx.api.mcp_server import build_server

    async def main() -> list[Any]:
        with LeanCtx(tmp_path / "mcp.db") as lc:
            server = build_server(lc, project=tmp_path, structured=False)
            async with Client(server, client_info=Implementation(name="claude-code", version="1")) as c:
                out = [await c.call_tool("ctx_session", {"action": "task", "task": "keep the block", "step": 1,
                                                         "total": 2})]
                for _ in range(4):
                    out.append(await c.call_tool("ctx_session", {"action": "status"}))
                out.append(await c.call_tool("ctx_session", {"action": "status", "expected_call": 2}))
                return out

    results = anyio.run(main)
    last = results[-1]
    assert last.structured_content is None and len(last.content) == 2
    assert "## lean-ctx resume" in last.content[1].text and "keep the block" in last.content[1].text
    assert all(r.structured_content is None for r in results)
