"""MCP sessions without a transport: the client → agent type map, the feature policy
(environment, declaration, known clients), lazy categories, and the agent's lifecycle in the
log (register, heartbeat, rejoin after a timeout, deregister)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import pytest

from leanctx import clock
from leanctx.api import mcp_session as ms
from leanctx.api.mcp_server import Hub
from leanctx.app import LeanCtx
from leanctx.projections.agents import find_agent


@pytest.mark.parametrize("name,kind", [
    ("claude-code", "claude"), ("Claude-Code", "claude"), ("cursor-vscode", "cursor"), ("cursor", "cursor"),
    ("codex-mcp-client", "codex"), ("gemini-cli", "gemini"), ("gemini-cli-mcp-client", "gemini"),
    ("my tool/2", "my-tool-2"), ("", "mcp"), ("???", "mcp"), ("x" * 100, "x" * 64),
])
def test_agent_type_for_a_client_name(name: str, kind: str) -> None:
    assert ms.agent_type_for(name) == kind


def test_features_environment_then_declaration_then_known_clients() -> None:
    none: dict[str, str] = {}
    assert ms.client_features("claude", {}, none) == {"list_changed", "resources", "prompts"}
    assert ms.client_features("codex", {}, none) == frozenset()
    assert ms.client_features("mcp", {}, none) == frozenset()
    declared = {"experimental": {"lean-ctx": {"listChanged": True}}}
    assert ms.client_features("codex", declared, none) == {"list_changed"}
    ext = {"extensions": {"dev.lean-ctx/client": {"prompts": True, "resources": False}}}
    assert ms.client_features("claude", ext, none) == {"prompts"}  # a declaration beats the table
    assert ms.client_features("codex", ext, {ms.FEATURES_ENV: "all"}) == set(ms.FEATURES)
    assert ms.client_features("claude", {}, {ms.FEATURES_ENV: "none"}) == frozenset()
    assert ms.client_features("claude", {}, {ms.FEATURES_ENV: "prompts, bogus"}) == {"prompts"}


def test_lazy_sessions_list_core_and_session_and_announce_changes() -> None:
    lazy = ms.McpSession("claude", "claude-code", frozenset({"list_changed"}), "s1")
    assert lazy.lazy and lazy.loaded() == ["core", "session"]
    assert lazy.load(["metrics", "metrics", "core"]) == ["metrics"] and lazy.take_changed()
    assert not lazy.take_changed()
    assert lazy.unload(["metrics", "arch"]) == ["metrics"] and lazy.take_changed()
    eager = ms.McpSession("codex", "codex", frozenset(), "s2")
    assert eager.loaded() == list(ms.CATEGORIES)
    assert eager.load(["metrics"]) == [] and eager.unload(["metrics"]) == [] and not eager.take_changed()
    assert (eager.tick(), eager.tick()) == (1, 2)
    old = eager.session_id
    assert eager.rotate() != old and eager.caller("/p").session_id == eager.session_id


def test_the_agent_lifecycle_in_the_log(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(ms.AGENT_ENV, raising=False)
    project = str(tmp_path)
    with LeanCtx(tmp_path / "e.db") as lc:
        sess = ms.new_session({"name": "cursor"}, {}, None)
        ms.register(lc, sess, project)
        agent = find_agent(lc.projections.reader("agents"), sess.agent_id, now=clock.now())
        assert agent is not None and (agent.agent_type, agent.role, agent.session_id) == ("cursor", "dev",
                                                                                             sess.session_id)
        ms.heartbeat(lc, sess, project)
        assert find_agent(lc.projections.reader("agents"), sess.agent_id, now=clock.now()).heartbeats == 1
        ms.deregister(lc, sess, project)
        assert find_agent(lc.projections.reader("agents"), sess.agent_id, now=clock.now()).status == "left"
        sess.registered = True  # a heartbeat after leaving rejoins with the same id
        ms.heartbeat(lc, sess, project)
        back = find_agent(lc.projections.reader("agents"), sess.agent_id, now=clock.now())
        assert back.status == "active" and back.name == agent.name


def test_the_environment_fixes_the_agent_id(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(ms.AGENT_ENV, "pinned-id")
    with LeanCtx(tmp_path / "e.db") as lc:
        first, second = ms.new_session({"name": "codex"}, {}, None), ms.new_session({"name": "codex"}, {}, None)
        ms.register(lc, first, str(tmp_path))
        ms.register(lc, second, str(tmp_path))
        assert first.agent_id == second.agent_id == "pinned-id" and first.session_id != second.session_id


@pytest.mark.anyio
@pytest.mark.parametrize("anyio_backend", ["asyncio"])
async def test_the_hub_heartbeats_live_sessions_and_keeps_a_shared_agent(tmp_path: Path, anyio_backend: str,
                                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(ms.AGENT_ENV, "shared")
    hub = Hub(tmp_path / "e.db", tmp_path)
    a = await hub.open(ms.new_session({"name": "codex"}, {}, None))
    b = await hub.open(ms.new_session({"name": "codex"}, {}, None))

    def beats() -> Any:
        return find_agent(hub.lc.projections.reader("agents"), "shared", now=clock.now())

    async with anyio.create_task_group() as tg:
        tg.start_soon(hub.heartbeat_loop, 0.05)
        with anyio.fail_after(5):
            while beats().heartbeats < 2:
                await anyio.sleep(0.02)
        tg.cancel_scope.cancel()
    await hub.close(a)  # b still acts as "shared": it stays registered
    assert beats().status == "active"
    await hub.close(b)
    assert beats().status == "left"
    hub.lc.close()
