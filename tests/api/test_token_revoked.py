"""An agent token stands for one registration: once the agent has left (deregistered over HTTP
or from the CLI, or its timeout recorded), the token no longer acts (``401
AUTH_AGENT_TOKEN_REVOKED``), also after a restart (the decision is read from the log's agents
projection). Registering again with it is how the agent comes back, with a fresh token; the
old one stays refused. Against a real server on 127.0.0.1."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import httpx

from leanctx.api.http.server import BackgroundServer

from .test_http_common import Agent, Api, make_config, make_server  # noqa: F401

LEAN_CTX = str(Path(sys.executable).parent / "lean-ctx")
REVOKED = "AUTH_AGENT_TOKEN_REVOKED"


def _refused(r: httpx.Response, code: str = REVOKED) -> dict[str, Any]:
    assert r.status_code == 401, r.text
    err: dict[str, Any] = r.json()["error"]
    assert err["code"] == code, r.text
    return err


def _acts(api: Api, who: Agent) -> list[httpx.Response]:
    """What an agent does with its token: post, create a task, call a tool, read as itself."""
    return [api.post("/v1/chat/post", who, title="still here?", body="x"),
            api.post("/v1/tasks/create", who, title="a task after leaving"),
            api.post("/v1/tools/ctx_agent", who, action="list"),
            api.client.get("/v1/events/poll", headers=who.headers)]


def _rejoin(api: Api, who: Agent) -> httpx.Response:
    return api.client.post("/v1/agents/register", json={"agent_type": "claude", "agent_id": who.agent_id},
                           headers=who.headers)


def test_a_deregistered_agents_token_is_refused_also_after_a_restart(tmp_path: Path) -> None:
    with BackgroundServer(make_config(tmp_path)) as s:
        api = Api(s)
        alice, bob = api.register("claude"), api.register("cursor")
        assert all(r.status_code == 200 for r in _acts(api, alice))
        api.ok("/v1/agents/deregister", alice, reason="done")
        head = s.state.lc.store.head().position
        for r in _acts(api, alice):
            err = _refused(r)
            assert alice.agent_id in err["message"] and "register" in err["message"]
        # nothing was appended on alice's behalf; bob is unaffected
        assert not [e for e in s.state.lc.store.read_all(head) if e.actor == alice.agent_id]
        assert all(r.status_code == 200 for r in _acts(api, bob))
        # leaving again is a no-op, not an error
        assert api.ok("/v1/agents/deregister", alice)["already_left"] is True
    with BackgroundServer(make_config(tmp_path)) as s:  # a restart: the log decides, not memory
        api = Api(s)
        for r in _acts(api, alice):
            _refused(r)
        # coming back: the old token proves who it is once, and a fresh token is issued
        r = _rejoin(api, alice)
        assert r.status_code == 200 and r.json()["rejoined"] is True, r.text
        fresh = Agent(alice.agent_id, alice.name, r.json()["agent_token"])
        assert fresh.token != alice.token
        assert all(x.status_code == 200 for x in _acts(api, fresh))
        # the old token is now an earlier registration's: refused everywhere, rejoining included
        for x in [*_acts(api, alice), api.post("/v1/agents/heartbeat", alice), _rejoin(api, alice)]:
            _refused(x)
        assert api.post("/v1/agents/heartbeat", fresh).status_code == 200


def test_re_registering_while_active_replaces_the_token(make_server) -> None:  # noqa: F811
    api = Api(make_server())
    alice = api.register("claude")
    r = _rejoin(api, alice)
    assert r.status_code == 200 and r.json()["rejoined"] is True
    fresh = Agent(alice.agent_id, alice.name, r.json()["agent_token"])
    assert fresh.token != alice.token
    _refused(api.post("/v1/chat/post", alice, title="old token", body="x"))
    assert api.post("/v1/chat/post", fresh, title="new token", body="x").status_code == 200


def test_a_timed_out_agents_token_is_refused_until_it_registers_again(make_server) -> None:  # noqa: F811
    offset = [0.0]
    server = make_server(clock=lambda: time.time() + offset[0], sweep_interval=0.02)
    api = Api(server)
    alice = api.register("claude")
    offset[0] = 200.0  # well past 3 missed heartbeats: the sweeper records agent.left
    deadline = time.monotonic() + 5
    while not [e for e in server.state.lc.store.read_all(0) if e.kind == "agent.left"]:
        assert time.monotonic() < deadline, "the timeout was not recorded"
        time.sleep(0.02)
    for r in _acts(api, alice):
        _refused(r)
    # the heartbeat still says who it is and what to do (the registry's own answer)
    r = api.post("/v1/agents/heartbeat", alice)
    assert r.status_code == 409 and r.json()["error"]["code"] == "AGENT_LEFT"
    r = _rejoin(api, alice)
    assert r.status_code == 200 and r.json()["agent_token"] != alice.token
    fresh = Agent(alice.agent_id, alice.name, r.json()["agent_token"])
    assert api.post("/v1/chat/post", fresh, title="back", body="x").status_code == 200


def test_a_deregistration_from_the_cli_revokes_the_http_token(make_server) -> None:  # noqa: F811
    server = make_server()
    api = Api(server)
    alice = api.register("claude")
    env = {**os.environ, "LEAN_CTX_DB": str(server.config.db),
           "LEAN_CTX_HOME": str(Path(server.config.db).parent / "cli-home")}
    done = subprocess.run([LEAN_CTX, "agent", "deregister", alice.agent_id, "--reason", "from the cli"],
                          check=False, capture_output=True, text=True, env=env, timeout=60)
    assert done.returncode == 0, done.stderr
    err = _refused(api.post("/v1/chat/post", alice, title="x", body="y"))
    assert "from the cli" in err["message"]


def test_a_forged_token_is_still_invalid_not_revoked(make_server) -> None:  # noqa: F811
    api = Api(make_server())
    alice = api.register("claude")
    forged = alice.token[:-4] + ("AAAA" if not alice.token.endswith("AAAA") else "BBBB")
    _refused(api.client.post("/v1/chat/post", json={"title": "x", "body": "y"}, headers={"X-Agent-Token": forged}),
             "AUTH_AGENT_TOKEN_INVALID")
