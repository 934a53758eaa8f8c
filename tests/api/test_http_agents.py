"""The remote agent bus over real HTTP: register → heartbeat → list → SSE, timeouts, spoofing."""

from __future__ import annotations

import time
from pathlib import Path

from .test_http_common import Api, SSEReader, make_server  # noqa: F401


def test_register_heartbeat_list_and_sse_receives_the_next_event(make_server) -> None:  # noqa: F811
    api = Api(make_server())
    roster = SSEReader(api.url + "/v1/agents/events").open()
    log = SSEReader(api.url + "/v1/events").open()

    a = api.register("claude", "dev")
    assert a.token.startswith("lct2.")
    joined = roster.next()
    assert joined.event == "agent_joined" and joined.json()["agent_id"] == a.agent_id
    assert int(joined.id) == joined.json()["position"]

    hb = api.ok("/v1/agents/heartbeat", a, status="busy")
    assert hb["ok"] is True and hb["agent_id"] == a.agent_id and hb["ttl_seconds"] == 60.0

    agents = api.client.get("/v1/agents/list").json()["agents"]
    assert [(x["agent_id"], x["status"], x["reported_status"]) for x in agents] == [(a.agent_id, "active", "busy")]

    # the log's stream saw everything from registration on, in order, ids = positions
    seen = log.take(4)  # register: tool.called + agent.registered; heartbeat: the same two
    assert [e.event for e in seen] == ["tool.called", "agent.registered", "tool.called", "agent.heartbeat"]
    assert [int(e.id) for e in seen] == list(range(int(seen[0].id), int(seen[0].id) + 4))

    # the *next* event after connecting: a chat post
    fresh = SSEReader(api.url + "/v1/events", params={"kinds": "message.posted"}).open()
    posted = api.ok("/v1/chat/post", a, title="hello", body="world")["result"]
    got = fresh.next()
    assert got.event == "message.posted" and int(got.id) == posted["position"]
    assert got.json()["payload"]["title"] == "hello"

    api.ok("/v1/agents/deregister", a, reason="done for today")
    left = roster.next()
    assert left.event == "agent_left" and left.json()["reason"] == "done for today"
    assert api.client.get("/v1/agents/list").json()["agents"] == []
    api.close()


def test_three_missed_heartbeats_emit_agent_left(make_server) -> None:  # noqa: F811
    offset = [0.0]
    server = make_server(clock=lambda: time.time() + offset[0], sweep_interval=0.02)
    api = Api(server)
    a = api.register("cursor", "dev")
    b = api.register("codex", "review")
    roster = SSEReader(api.url + "/v1/agents/events").open()
    api.ok("/v1/agents/heartbeat", a)
    offset[0] = 45.0  # a and b are late (2 heartbeats missed) but not gone
    api.ok("/v1/agents/heartbeat", b)
    assert roster.quiet(0.2)
    offset[0] = 45.0 + 61.0  # both: more than 3 intervals since they were last seen
    gone = {roster.next().json()["agent_id"]: None for _ in range(2)}
    assert set(gone) == {a.agent_id, b.agent_id}
    statuses = {x["agent_id"]: x for x in api.client.get("/v1/agents/list").json()["agents"]}
    assert {x["status"] for x in statuses.values()} == {"stale"} and all(x["timed_out"] for x in statuses.values())
    # the event says why; a timed-out agent's heartbeat is refused with the stable code
    again = SSEReader(api.url + "/v1/agents/events", params={"since": 0}).open()
    left = [e for e in again.take(4) if e.event == "agent_left"]
    assert {e.json()["reason"] for e in left} == {"heartbeat_timeout"}
    r = api.post("/v1/agents/heartbeat", a)
    assert r.status_code == 409 and r.json()["error"]["code"] == "AGENT_LEFT"
    # recorded once: later sweeps append nothing
    head = server.state.lc.store.head().position
    time.sleep(0.15)
    assert server.state.lc.store.head().position == head
    # rejoin with the same id needs the agent's own token
    r = api.client.post("/v1/agents/register", json={"agent_type": "cursor", "agent_id": a.agent_id})
    assert r.status_code == 403 and r.json()["error"]["code"] == "AUTH_AGENT_ID_TAKEN"
    r = api.client.post("/v1/agents/register", json={"agent_type": "cursor", "agent_id": a.agent_id},
                        headers=a.headers)
    assert r.status_code == 200 and r.json()["rejoined"] is True and r.json()["agent_token"] != a.token  # a fresh token: the old one names the earlier registration
    api.close()


def test_no_agent_can_act_as_another(make_server) -> None:  # noqa: F811
    api = Api(make_server())
    alice, bob = api.register("claude"), api.register("cursor")
    task = api.ok("/v1/tasks/create", alice, title="ship it")["result"]["task"]["task_id"]
    api.ok("/v1/tasks/claim", alice, task_id=task)

    # naming another agent in a body meant for oneself
    for path in ("/v1/agents/heartbeat", "/v1/agents/deregister"):
        for named in (alice.agent_id, alice.name):
            r = api.post(path, bob, agent=named)
            assert r.status_code == 403 and r.json()["error"]["code"] == "AUTH_AGENT_MISMATCH", (path, r.text)
    # no token, a forged token, a token for another id
    r = api.post("/v1/tasks/release", None, task_id=task)
    assert r.status_code == 401 and r.json()["error"]["code"] == "AUTH_AGENT_TOKEN_REQUIRED"
    forged = alice.token[:-4] + ("AAAA" if not alice.token.endswith("AAAA") else "BBBB")
    r = api.client.post("/v1/tasks/release", json={"task_id": task}, headers={"X-Agent-Token": forged})
    assert r.status_code == 401 and r.json()["error"]["code"] == "AUTH_AGENT_TOKEN_INVALID"
    spliced = "lct1." + alice.token.split(".")[1] + "." + bob.token.split(".")[2]
    r = api.client.post("/v1/tasks/release", json={"task_id": task}, headers={"X-Agent-Token": spliced})
    assert r.status_code == 401
    # bob with his own token is bob: the lease decides, with its stable code
    r = api.post("/v1/tasks/release", bob, task_id=task)
    assert r.status_code == 409 and r.json()["error"]["code"] == "LEASE_OWNER_MISMATCH"
    # registering under alice's id without her token would hand out her token: refused
    r = api.client.post("/v1/agents/register", json={"agent_type": "claude", "agent_id": alice.agent_id})
    assert r.status_code == 403 and r.json()["error"]["code"] == "AUTH_AGENT_ID_TAKEN"
    r = api.client.post("/v1/agents/register", json={"agent_type": "claude", "agent_id": alice.agent_id},
                        headers=bob.headers)
    assert r.status_code == 403 and r.json()["error"]["code"] == "AUTH_AGENT_MISMATCH"
    # an id only ever used from the CLI (an actor in the log, never registered) is protected too
    server = api.server
    from leanctx.commands.chat import PostMessage

    server.state.lc.bus.dispatch(PostMessage(title="from the cli", body="x"), actor="cli-user-7")
    r = api.client.post("/v1/agents/register", json={"agent_type": "claude", "agent_id": "cli-user-7"})
    assert r.status_code == 403 and r.json()["error"]["code"] == "AUTH_AGENT_ID_TAKEN"
    # a new explicit id is fine, and its token works
    carol = api.client.post("/v1/agents/register", json={"agent_type": "gemini", "agent_id": "carol"}).json()
    assert carol["agent_id"] == "carol"
    assert api.client.post("/v1/agents/heartbeat", json={},
                           headers={"X-Agent-Token": carol["agent_token"]}).status_code == 200
    # every event an action appended names the token's agent as its actor
    actors = {e.actor for e in server.state.lc.store.read_all(0) if e.kind.startswith("task.")}
    assert actors == {alice.agent_id}
    api.close()


def test_tokens_survive_a_restart(tmp_path: Path) -> None:
    from leanctx.api.http.server import BackgroundServer

    from .test_http_common import make_config

    with BackgroundServer(make_config(tmp_path)) as s:
        a = Api(s).register()
    assert (tmp_path / "secret").stat().st_mode & 0o777 == 0o600
    with BackgroundServer(make_config(tmp_path)) as s:
        r = Api(s).post("/v1/agents/heartbeat", a)
        assert r.status_code == 200, r.text
    (tmp_path / "secret").unlink()  # rotation: every token becomes invalid
    with BackgroundServer(make_config(tmp_path)) as s:
        r = Api(s).post("/v1/agents/heartbeat", a)
        assert r.status_code == 401 and r.json()["error"]["code"] == "AUTH_AGENT_TOKEN_INVALID"


def test_idempotency_keys_never_answer_another_caller(make_server) -> None:  # noqa: F811
    api = Api(make_server())
    r = api.client.post("/v1/agents/register", json={"agent_type": "claude"}, headers={"Idempotency-Key": "k"})
    assert r.status_code == 422 and r.json()["error"]["code"] == "HTTP_IDEMPOTENCY_KEY_NEEDS_AGENT"
    a = api.register()
    first = api.client.post("/v1/agents/register", json={"agent_type": "helper"},
                            headers={**a.headers, "Idempotency-Key": "k"}).json()
    again = api.client.post("/v1/agents/register", json={"agent_type": "helper"},
                            headers={**a.headers, "Idempotency-Key": "k"}).json()
    assert again["agent_id"] == first["agent_id"] and again["agent_token"] == first["agent_token"]


def test_two_callers_racing_for_one_new_id(make_server) -> None:  # noqa: F811
    import concurrent.futures

    server = make_server()
    api = Api(server)

    def claim(_: int) -> int:
        return httpx_post(api.url, {"agent_type": "claude", "agent_id": "contested"}).status_code

    with concurrent.futures.ThreadPoolExecutor(8) as pool:
        codes = sorted(pool.map(claim, range(8)))
    assert codes == [200] + [403] * 7
    # the losers did not even re-register it (the check and the registration are one step)
    assert len(server.state.lc.store.read_stream("agent:contested")) == 1


def httpx_post(url: str, body: dict) -> "object":
    import httpx

    return httpx.post(url + "/v1/agents/register", json=body, timeout=10)
