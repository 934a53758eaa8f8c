"""Agent identity: an id may not be another agent's name (nor an auto-name another agent's id),
on every surface (HTTP, CLI, the MCP tool and the MCP session's own registration), and a
refused registration writes nothing — also when two servers share one log."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import httpx
import pytest

from leanctx.api import mcp_session, registry
from leanctx.api.registry import Caller
from leanctx.app import LeanCtx
from leanctx.commands.agents import RegisterAgent
from leanctx.errors import LeanCtxError
from leanctx.projections.agents import find_agent

from .test_http_common import Api, make_server  # noqa: F401

LEAN_CTX = str(Path(sys.executable).with_name("lean-ctx"))
pytestmark = pytest.mark.timeout(120)


def registrations(lc: LeanCtx, agent_id: str) -> list[Any]:
    return [e for e in lc.store.read_stream(f"agent:{agent_id}") if e.kind == "agent.registered"]


# --- HTTP ---------------------------------------------------------------------------------------


def test_an_id_may_not_be_another_agents_name_over_http(make_server: Any) -> None:  # noqa: F811
    server = make_server()
    api = Api(server)
    try:
        a = api.register("claude", "dev")
        assert a.name == "claude-dev-1"
        head = server.state.lc.store.head().position
        r = api.client.post("/v1/agents/register", json={"agent_type": "x", "agent_id": a.name})
        assert r.status_code == 409, r.text
        err = r.json()["error"]
        assert err["code"] == "AGENT_ID_TAKEN" and a.agent_id in err["message"]
        # nothing but the refusal's record was appended; no agent holds the name as its id
        assert [e.kind for e in server.state.lc.store.read_all(head)] == ["tool.called"]
        assert registrations(server.state.lc, a.name) == []
        # a message to the name still reaches the agent that has it
        b = api.register("cursor")
        api.ok("/v1/chat/post", b, title="for claude", body="x", to=a.name)
        read = api.ok("/v1/chat/read", a)["result"]["messages"]
        assert [m["title"] for m in read] == ["for claude"]
        # in another project the name is still the agent's (ids win over names everywhere)
        r = api.client.post("/v1/agents/register", json={"agent_type": "x", "agent_id": a.name,
                                                         "project_root": "/elsewhere"})
        assert r.status_code == 409 and r.json()["error"]["code"] == "AGENT_ID_TAKEN"
    finally:
        api.close()


def test_an_auto_name_is_never_another_agents_id_over_http(make_server: Any) -> None:  # noqa: F811
    server = make_server()
    api = Api(server)
    try:
        r = api.client.post("/v1/agents/register", json={"agent_type": "x", "agent_id": "hx-dev-1"})
        assert r.status_code == 200, r.text
        squatter = r.json()
        hx = api.register("hx", "dev")
        assert hx.name != "hx-dev-1" and hx.name == "hx-dev-2"
        again = api.register("hx", "dev")
        assert again.name == "hx-dev-3"
        agents = api.client.get("/v1/agents/list").json()["agents"]
        ids = {x["agent_id"] for x in agents}
        assert not any(x["name"] in ids - {x["agent_id"]} for x in agents)
        # an agent whose id is its own would-be name keeps it: no one else is confused
        own = api.client.post("/v1/agents/register", json={"agent_type": "zz", "agent_id": "zz-dev-1"}).json()
        assert own["name"] == "zz-dev-1"
        assert squatter["name"] == "x-dev-1"
    finally:
        api.close()


def test_the_same_new_id_on_two_servers_sharing_a_log_registers_once(make_server: Any) -> None:  # noqa: F811
    s1, s2 = make_server(), make_server()  # same events.db, same token secret
    urls = [s1.url, s2.url]
    rounds = 12
    results: dict[str, list[tuple[int, int, Any]]] = {}
    with httpx.Client(timeout=30) as c0, httpx.Client(timeout=30) as c1:
        clients = [c0, c1]
        for i in range(rounds):
            agent_id = f"twin-{i}"
            gate = threading.Barrier(2)
            out: list[tuple[int, int, Any]] = []

            def go(k: int, agent_id: str = agent_id, gate: threading.Barrier = gate,
                   out: list[tuple[int, int, Any]] = out) -> None:
                gate.wait()
                r = clients[k].post(urls[k] + "/v1/agents/register",
                                    json={"agent_type": f"server{k}", "agent_id": agent_id, "pid": 1000 + k})
                out.append((k, r.status_code, r.json()))

            threads = [threading.Thread(target=go, args=(k,)) for k in (0, 1)]
            for t in threads:
                t.start()
            for t in threads:
                t.join(30)
            results[agent_id] = out
    lc = s1.state.lc
    conn = lc.projections.reader("agents")
    for agent_id, out in results.items():
        codes = sorted(status for _, status, _ in out)
        assert codes == [200, 403], (agent_id, out)
        refused = next(body for _, status, body in out if status == 403)
        assert refused["error"]["code"] == "AUTH_AGENT_ID_TAKEN"
        assert "agent_token" not in refused
        winner = next(k for k, status, _ in out if status == 200)
        regs = registrations(lc, agent_id)
        assert len(regs) == 1, (agent_id, [e.data() for e in regs])
        view = find_agent(conn, agent_id, now=0.0)
        assert view is not None and (view.agent_type, view.pid) == (f"server{winner}", 1000 + winner)


# --- the command, reached from the CLI and from MCP ---------------------------------------------


@pytest.fixture
def lc(tmp_path: Path) -> Any:
    with LeanCtx(tmp_path / "events.db") as app:
        yield app


def test_register_refuses_an_id_that_is_another_agents_name(lc: LeanCtx, tmp_path: Path) -> None:
    proj = str(tmp_path / "proj")
    first = lc.bus.dispatch(RegisterAgent(agent_type="claude", project_root=proj)).value
    assert first.name == "claude-dev-1"
    with pytest.raises(LeanCtxError) as ei:
        lc.bus.dispatch(RegisterAgent(agent_type="x", project_root=proj, agent_id="claude-dev-1"))
    assert ei.value.code == "AGENT_ID_TAKEN" and first.agent_id in ei.value.message
    assert registrations(lc, "claude-dev-1") == []
    # the agent itself rejoins as before
    again = lc.bus.dispatch(RegisterAgent(agent_type="claude", project_root=proj, agent_id=first.agent_id)).value
    assert again.rejoined and again.name == "claude-dev-1"


def test_cli_agent_register_with_another_agents_name_is_refused(tmp_path: Path) -> None:
    db, proj = tmp_path / "events.db", tmp_path / "proj"
    proj.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith("LEAN_CTX_")}
    env.update(LEAN_CTX_DB=str(db), LEAN_CTX_HOME=os.environ["LEAN_CTX_HOME"])

    def cli(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([LEAN_CTX, "--project", str(proj), *args], check=False, capture_output=True, text=True, env=env,
                              timeout=60, stdin=subprocess.DEVNULL)

    p = cli("agent", "register", "--type", "cursor", "--id", "c-1")
    assert p.returncode == 0, p.stderr
    p = cli("agent", "register", "--type", "x", "--id", "cursor-dev-1")
    assert p.returncode == 2 and "AGENT_ID_TAKEN" in p.stderr, (p.stdout, p.stderr)
    # and the reverse: the next cursor agent is not named after an existing id
    p = cli("agent", "register", "--type", "y", "--id", "cursor-dev-2")
    assert p.returncode == 0, p.stderr
    p = cli("--json", "agent", "register", "--type", "cursor", "--id", "c-2")
    assert p.returncode == 0, p.stderr
    assert '"name":"cursor-dev-3"' in p.stdout.replace(" ", "")


def test_mcp_paths_reach_the_same_rule(lc: LeanCtx, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    proj = str(tmp_path / "proj")
    (tmp_path / "proj").mkdir()
    owner = lc.bus.dispatch(RegisterAgent(agent_type="codex", project_root=proj)).value
    assert owner.name == "codex-dev-1"
    # the ctx_agent tool (register as the caller's identity)
    with pytest.raises(LeanCtxError) as ei:
        registry.call(lc, Caller("codex-dev-1", "s1", proj), "ctx_agent", {"action": "register"})
    assert ei.value.code == "AGENT_ID_TAKEN"
    # the MCP session's own registration ($LEAN_CTX_AGENT_ID)
    monkeypatch.setenv("LEAN_CTX_AGENT_ID", "codex-dev-1")
    sess = mcp_session.new_session({"name": "claude-code"}, {}, None)
    with pytest.raises(LeanCtxError) as ei:
        mcp_session.register(lc, sess, proj)
    assert ei.value.code == "AGENT_ID_TAKEN" and not sess.registered
    assert registrations(lc, "codex-dev-1") == []
