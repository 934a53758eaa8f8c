"""End to end: the official ``mcp`` client against ``lean-ctx mcp``, over stdio (a spawned
``lean-ctx mcp`` per connection) and over streamable HTTP (one spawned ``lean-ctx mcp --http``
on a free loopback port). Every test runs over both transports through the ``transport``
fixture, as the MCP SDK runs its own tests. Clients use the initialize handshake
(``mode="legacy"``), as today's agent clients do, except where a test says otherwise."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client
from mcp.client.extension import advertise
from mcp.client.stdio import StdioServerParameters
from mcp_types import Implementation, ToolListChangedNotification

from leanctx.context.tokens import count_tokens

pytestmark = pytest.mark.anyio

LEAN_CTX = str(Path(sys.executable).parent / "lean-ctx")
CORE = {"ctx_read", "ctx_shell", "ctx_search", "ctx_tree", "ctx_edit", "ctx_expand", "ctx_call", "ctx_load_tools"}
SESSION = {"ctx_agent", "ctx_task", "ctx_session", "ctx_overview"}
ALL = CORE | SESSION | {"ctx_gain", "ctx_knowledge", "ctx_handoff", "ctx_proof"}
TOKEN_TARGET = 2000
# results carry structuredContent only when asked (mcp_server's module doc): these tests read its fields
STRUCTURED = {"lean-ctx/structured": True}
_SCRUB = ("LEAN_CTX_AGENT_ID", "LEAN_CTX_SESSION_ID", "LEAN_CTX_MCP_FEATURES", "LEAN_CTX_DB", "LEAN_CTX_HOME")


@pytest.fixture(scope="module")
def anyio_backend() -> str:
    return "asyncio"


def _populate(project: Path) -> None:
    (project / "src").mkdir(parents=True)
    (project / "app.py").write_text('def hello():\n    return "hello from app"\n')
    (project / "src" / "util.py").write_text("def add(a, b):\n    return a + b\n\n\ndef unique_marker_zebra():\n"
                                            "    return 42\n")
    (project / "README.md").write_text("# demo project\n")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@dataclass
class Transport:
    kind: str
    project: Path
    env: dict[str, str]
    url: str | None = None
    notes: list[Any] = field(default_factory=list)

    @asynccontextmanager
    async def connect(self, name: str = "claude-code", *, extensions: list[Any] | None = None,
                      env: dict[str, str] | None = None, mode: str = "legacy",
                      notifications: list[Any] | None = None) -> AsyncIterator[Client]:
        async def handler(message: Any) -> None:
            if notifications is not None:
                notifications.append(message)

        if self.kind == "stdio":
            server: Any = StdioServerParameters(command=LEAN_CTX, args=["mcp"], env={**self.env, **(env or {})},
                                                cwd=str(self.project))
        else:
            assert not env, "the HTTP server's environment is fixed when it starts"
            server = self.url
        async with Client(server, mode=mode, client_info=Implementation(name=name, version="1.0"),
                          extensions=extensions, message_handler=handler, read_timeout_seconds=30) as client:
            yield client


@pytest.fixture(scope="module", params=["stdio", "http"])
def transport(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Any:
    root = tmp_path_factory.mktemp(f"mcp-{request.param}")
    project = root / "proj"
    _populate(project)
    env = {"LEAN_CTX_DB": str(root / "events.db"), "LEAN_CTX_HOME": str(root / "home")}
    if request.param == "stdio":
        yield Transport("stdio", project, env)
        return
    port = _free_port()
    base = {k: v for k, v in os.environ.items() if k not in _SCRUB}
    log = open(root / "server.log", "wb")  # noqa: SIM115 - the server writes to it until the fixture ends
    proc = subprocess.Popen([LEAN_CTX, "mcp", "--http", "--port", str(port)], cwd=project, env={**base, **env},
                            stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        deadline = time.monotonic() + 20
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
                break
            except OSError:
                if proc.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(f"lean-ctx mcp --http did not start: {(root / 'server.log').read_text()}")
                time.sleep(0.05)
        yield Transport("http", project, env, url=f"http://127.0.0.1:{port}/mcp")
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        log.close()


def _text(result: Any) -> str:
    return "\n".join(c.text for c in result.content if getattr(c, "type", "") == "text")


async def _call(client: Client, name: str, args: dict[str, Any]) -> Any:
    r = await client.call_tool(name, args, meta=STRUCTURED)
    assert not r.is_error, _text(r)
    return r


async def _wait_for(predicate: Any, timeout: float = 5.0) -> None:
    with anyio.fail_after(timeout):
        while not predicate():
            await anyio.sleep(0.02)


# --- the handshake and the tools list -----------------------------------------------------------


async def test_initialize_registers_the_agent_and_lists_core_and_session(
        transport: Transport, capsys: pytest.CaptureFixture[str]) -> None:
    async with transport.connect("claude-code") as c:
        assert c.server_capabilities.tools is not None and c.server_capabilities.tools.list_changed is True
        listed = await c.list_tools()
        assert {t.name for t in listed.tools} == CORE | SESSION
        wire = json.dumps(listed.model_dump(by_alias=True, mode="json", exclude_none=True)["tools"],
                          separators=(",", ":"))
        size = count_tokens(wire)
        with capsys.disabled():
            print(f"\n[{transport.kind}] default tools/list (core+session, {len(listed.tools)} tools): "
                  f"{size} tokens (o200k), target <= {TOKEN_TARGET}")
        assert size <= TOKEN_TARGET
        agents = _text(await _call(c, "ctx_agent", {"action": "list"}))
        mine = [line for line in agents.splitlines() if line.endswith("← you")]
        assert len(mine) == 1 and "claude/dev" in mine[0] and "active" in mine[0], agents


async def test_a_client_without_list_changed_gets_every_tool_and_no_resources(transport: Transport) -> None:
    async with transport.connect("codex") as c:
        caps = c.server_capabilities
        assert caps.tools is not None and not caps.tools.list_changed
        assert caps.resources is None and caps.prompts is None
        assert {t.name for t in (await c.list_tools()).tools} == ALL
        agents = _text(await _call(c, "ctx_agent", {"action": "list"}))
        assert any("codex/dev" in line and line.endswith("← you") for line in agents.splitlines()), agents


# --- the core tools ---------------------------------------------------------------------------------


async def test_read_twice_in_one_session_sends_a_stub_and_counts_calls(transport: Transport) -> None:
    async with transport.connect() as a, transport.connect() as b:
        first = await _call(a, "ctx_read", {"paths": ["app.py"]})
        assert "hello from app" in _text(first)
        second = await _call(a, "ctx_read", {"paths": ["app.py"]})
        assert "unchanged" in _text(second) and "hello from app" not in _text(second)
        assert second.structured_content["files"][0]["stub"] is True
        assert second.structured_content["files"][0]["sent_tokens"] <= 20
        assert (first.meta["lean-ctx/call"], second.meta["lean-ctx/call"]) == (1, 2)
        assert second.structured_content["call"] == 2
        other = await _call(b, "ctx_read", {"paths": ["app.py"]})  # another session: the content
        assert "hello from app" in _text(other) and other.meta["lean-ctx/call"] == 1
        again = await _call(a, "ctx_read", {"paths": ["app.py"], "fresh": True})
        assert "hello from app" in _text(again)


async def test_shell_search_tree_edit_and_expand(transport: Transport) -> None:
    async with transport.connect() as c:
        r = await _call(c, "ctx_shell", {"command": "echo hi"})
        assert _text(r).strip() == "hi" and r.structured_content["exit_code"] == 0
        failed = await _call(c, "ctx_shell", {"command": "echo oops >&2; exit 3"})
        assert failed.structured_content["exit_code"] == 3 and "[exit 3]" in _text(failed)
        long = await _call(c, "ctx_shell", {"command": "seq 1 400"})
        archive = long.structured_content["archive_id"]
        assert archive and f"expand {archive}" in _text(long)
        part = await _call(c, "ctx_expand", {"archive_id": archive, "lines": "10-12"})
        assert _text(part).splitlines() == ["10:10", "11:11", "12:12"]
        found = await _call(c, "ctx_search", {"query": "unique_marker_zebra"})
        assert "src/util.py:5" in _text(found)
        tree = _text(await _call(c, "ctx_tree", {}))
        assert "src/ (1)" in tree and "app.py" in tree
        await _call(c, "ctx_read", {"paths": ["src/util.py"], "mode": "full"})
        edited = await _call(c, "ctx_edit", {"path": "src/util.py", "old": "return 42", "new": "return 43"})
        assert edited.structured_content["replacements"] == 1
        assert "return 43" in (transport.project / "src" / "util.py").read_text()


async def test_agents_post_and_read_across_sessions(transport: Transport) -> None:
    async with transport.connect("claude-code") as a, transport.connect("cursor") as b:
        posted = await _call(a, "ctx_agent", {"action": "post", "title": "auth refactor",
                                              "body": "I take src/auth", "category": "status"})
        seq = posted.structured_content["message"]["seq"]
        sender = posted.structured_content["message"]["from"]
        got = await _call(b, "ctx_agent", {"action": "read"})
        messages = got.structured_content["messages"]
        assert [(m["seq"], m["from"], m["title"]) for m in messages if m["seq"] == seq] == \
            [(seq, sender, "auth refactor")]
        assert "I take src/auth" in _text(got)
        assert "no new messages" in _text(await _call(b, "ctx_agent", {"action": "read"}))  # exactly once
        mine = await _call(a, "ctx_agent", {"action": "read"})  # an agent never receives its own posts
        assert all(m["from"] != sender for m in mine.structured_content["messages"])
        agents = _text(await _call(b, "ctx_agent", {"action": "list"}))
        assert any("cursor/dev" in line and line.endswith("← you") for line in agents.splitlines())


async def test_tasks_create_claim_and_a_lease_conflict(transport: Transport) -> None:
    async with transport.connect("claude-code") as a, transport.connect("gemini-cli") as b:
        created = await _call(a, "ctx_task", {"action": "create", "title": "write the parser",
                                              "channel": f"c-{transport.kind}"})
        task = created.structured_content["task"]
        claimed = await _call(a, "ctx_task", {"action": "claim", "task_id": task["task_id"],
                                              "channel": task["channel"]})
        assert claimed.structured_content["task"]["status"] == "in_progress"
        owner = claimed.structured_content["task"]["owner"]
        refused = await b.call_tool("ctx_task", {"action": "claim", "task_id": task["task_id"],
                                                 "channel": task["channel"]}, meta=STRUCTURED)
        assert refused.is_error and _text(refused).startswith("LEASE_CONFLICT: ")
        assert refused.structured_content["error"]["code"] == "LEASE_CONFLICT"
        assert refused.meta["lean-ctx/call"] == 1
        listed = await _call(b, "ctx_task", {"action": "list", "channel": task["channel"]})
        assert [t["owner"] for t in listed.structured_content["tasks"]] == [owner]


# --- lazy categories ----------------------------------------------------------------------------------


async def test_loading_a_category_sends_list_changed(transport: Transport) -> None:
    notes: list[Any] = []
    async with transport.connect("claude-code", notifications=notes) as c:
        changed = lambda: [n for n in notes if isinstance(n, ToolListChangedNotification)]
        r = await _call(c, "ctx_load_tools", {"action": "load", "categories": ["metrics"]})
        assert r.structured_content["changed"] == ["metrics"]
        await _wait_for(lambda: len(changed()) == 1)
        assert {t.name for t in (await c.list_tools()).tools} == CORE | SESSION | {"ctx_gain"}
        gain = await _call(c, "ctx_gain", {"by": ["tool"]})
        assert "total:" in _text(gain)
        again = await _call(c, "ctx_load_tools", {"action": "load", "categories": ["metrics"]})
        assert again.structured_content["changed"] == []  # already loaded: nothing to announce
        await _call(c, "ctx_load_tools", {"action": "unload", "categories": ["metrics"]})
        await _wait_for(lambda: len(changed()) == 2)
        assert "ctx_gain" not in {t.name for t in (await c.list_tools()).tools}
        listing = await _call(c, "ctx_load_tools", {})
        rows = {row["category"]: row for row in listing.structured_content["categories"]}
        assert rows["core"]["loaded"] and not rows["metrics"]["loaded"] and rows["metrics"]["tools"] == ["ctx_gain"]


async def test_ctx_call_runs_a_tool_whose_category_is_not_loaded(transport: Transport) -> None:
    async with transport.connect("claude-code") as c:
        assert "ctx_gain" not in {t.name for t in (await c.list_tools()).tools}
        r = await _call(c, "ctx_call", {"name": "ctx_gain", "args": {"by": ["tool"]}})
        assert "total:" in _text(r)
        bad = await c.call_tool("ctx_call", {"name": "ctx_nope"})
        assert bad.is_error and _text(bad).startswith("TOOL_UNKNOWN: ")


# --- errors ----------------------------------------------------------------------------------------------


async def test_errors_carry_stable_codes(transport: Transport) -> None:
    async with transport.connect() as c:
        outside = await c.call_tool("ctx_read", {"paths": ["../../etc/passwd"]})
        assert outside.is_error and _text(outside).startswith("READ_PATH_OUTSIDE_PROJECT: ")
        assert outside.structured_content is None  # the text is all a model needs
        asked = await c.call_tool("ctx_read", {"paths": ["../../etc/passwd"]}, meta=STRUCTURED)
        assert asked.structured_content["error"]["code"] == "READ_PATH_OUTSIDE_PROJECT"
        assert "Error executing tool" not in _text(outside)
        bad = await c.call_tool("ctx_read", {"paths": "app.py", "bogus": 1})
        assert bad.is_error and _text(bad).startswith("INVALID_ARGUMENT: ")
        unknown = await c.call_tool("ctx_nope", {})
        assert unknown.is_error and _text(unknown).startswith("TOOL_UNKNOWN: ")
        missing = await c.call_tool("ctx_agent", {"action": "post", "title": "no body"})
        assert missing.is_error and _text(missing).startswith("INVALID_ARGUMENT: ")
        assert missing.meta["lean-ctx/call"] == 5  # refused calls count too


# --- resources and prompts -----------------------------------------------------------------------------------


async def test_resources_and_prompts_when_the_client_declares_them(transport: Transport) -> None:
    declare = [advertise("dev.lean-ctx/client", {"resources": True, "prompts": True})]
    async with transport.connect("mcp", extensions=declare) as c:
        caps = c.server_capabilities
        assert caps.resources is not None and caps.prompts is not None
        assert caps.tools is not None and not caps.tools.list_changed  # not declared: every tool listed
        uris = {str(r.uri) for r in (await c.list_resources()).resources}
        assert uris == {f"lean-ctx://context/{k}" for k in ("summary", "pressure", "bounce", "pinned")}
        summary = (await c.read_resource("lean-ctx://context/summary")).contents[0].text
        assert "# lean-ctx — agent mcp-dev-" in summary and "## tasks" in summary
        assert "budget" in (await c.read_resource("lean-ctx://context/pressure")).contents[0].text
        assert "bounced reads" in (await c.read_resource("lean-ctx://context/bounce")).contents[0].text
        prompts = {p.name for p in (await c.list_prompts()).prompts}
        assert prompts == {"context-focus", "context-review", "context-reset", "context-pin", "context-budget"}
        pin = await c.get_prompt("context-pin", {"item": "app.py", "note": "entry point"})
        assert "Pinned #" in pin.messages[0].content.text
        pinned = (await c.read_resource("lean-ctx://context/pinned")).contents[0].text
        assert "app.py — entry point" in pinned and "[app.py]" in pinned
        focus = await c.get_prompt("context-focus", {"task": "fix the parser"})
        assert "fix the parser" in focus.messages[0].content.text
        await _call(c, "ctx_read", {"paths": ["README.md"]})
        assert "unchanged" in _text(await _call(c, "ctx_read", {"paths": ["README.md"]}))
        reset = await c.get_prompt("context-reset", {})
        assert "session reset" in reset.messages[0].content.text
        assert "demo project" in _text(await _call(c, "ctx_read", {"paths": ["README.md"]}))


async def test_resources_and_prompts_are_not_advertised_without_a_declaration(transport: Transport) -> None:
    async with transport.connect("mcp") as c:
        assert c.server_capabilities.resources is None and c.server_capabilities.prompts is None


# --- sessions ---------------------------------------------------------------------------------------------------


async def test_closing_the_session_deregisters_its_agent(transport: Transport) -> None:
    async with transport.connect("codex") as a:
        me = next(line for line in _text(await _call(a, "ctx_agent", {"action": "list"})).splitlines()
                  if line.endswith("← you"))
    agent = me.split(" (", 1)[1].split(")", 1)[0]
    async with transport.connect("codex") as b:
        deadline = time.monotonic() + 5
        while agent in _text(await _call(b, "ctx_agent", {"action": "list"})):
            assert time.monotonic() < deadline, f"{agent} still listed after its session closed"
            await anyio.sleep(0.05)


async def test_the_stateless_protocol_works_without_initialize(transport: Transport) -> None:
    async with transport.connect("mcp", mode="auto") as c:
        assert c.protocol_version == "2026-07-28"
        assert {t.name for t in (await c.list_tools()).tools} == ALL
        r = await _call(c, "ctx_shell", {"command": "echo modern"})
        assert _text(r).strip() == "modern"
        await _call(c, "ctx_read", {"paths": ["README.md"]})
        again = await _call(c, "ctx_read", {"paths": ["README.md"]})
        # stdio: one client per process, a conversation; HTTP: no session, so never a stub
        assert again.structured_content["files"][0]["stub"] is (transport.kind == "stdio")


# stdio only: the server's environment is per process, so over HTTP it would name every session
@pytest.mark.parametrize("transport", ["stdio"], indirect=True)
async def test_lean_ctx_agent_id_fixes_the_identity(transport: Transport) -> None:
    async with transport.connect("claude-code", env={"LEAN_CTX_AGENT_ID": "fixed-agent-7"}) as c:
        agents = _text(await _call(c, "ctx_agent", {"action": "list"}))
        assert any(line.startswith("claude-dev-") and "(fixed-agent-7)" in line and line.endswith("← you")
                   for line in agents.splitlines()), agents
        posted = await _call(c, "ctx_agent", {"action": "post", "title": "hi", "body": "from a fixed id"})
        assert posted.structured_content["message"]["from"] == "fixed-agent-7"


# --- mounting inside a host app (what `lean-ctx serve` does) ----------------------------------------------------


async def test_http_mount_serves_mcp_inside_a_host_starlette_app(tmp_path: Path) -> None:
    import threading

    import httpx
    import uvicorn
    from starlette.applications import Starlette
    from starlette.responses import PlainTextResponse
    from starlette.routing import Route

    from leanctx.api.mcp_server import build_server, http_mount

    project = tmp_path / "proj"
    _populate(project)
    routes, mcp_lifespan = http_mount(build_server(tmp_path / "e.db", project=project))

    @asynccontextmanager
    async def lifespan(app: Any) -> AsyncIterator[None]:
        async with mcp_lifespan():
            yield

    async def health(request: Any) -> PlainTextResponse:
        return PlainTextResponse("ok")

    app = Starlette(routes=[Route("/health", health), *routes], lifespan=lifespan)
    port = _free_port()
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    try:
        with anyio.fail_after(10):
            while not server.started:
                await anyio.sleep(0.02)
        async with httpx.AsyncClient() as h:
            assert (await h.get(f"http://127.0.0.1:{port}/health")).text == "ok"
        async with Client(f"http://127.0.0.1:{port}/mcp", mode="legacy",
                          client_info=Implementation(name="cursor", version="1")) as c:
            assert "src/ (1)" in _text(await _call(c, "ctx_tree", {}))
    finally:
        server.should_exit = True
        thread.join(10)
