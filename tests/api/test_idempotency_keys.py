"""An idempotency key stands for one request: a retry of that request gets the first answer and
appends nothing; the same key on another command, or with other fields, is refused (``422 IDEMPOTENCY_KEY_REUSED``,
recorded like any refusal), never a 500 or a reset connection. Through the bus and over HTTP."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from leanctx.app import LeanCtx
from leanctx.commands.agents import Heartbeat, RegisterAgent
from leanctx.errors import InvalidInput
from leanctx.events import NewEvent, TopicFilter
from leanctx.events.kinds import AgentRegistered

from .test_http_common import Api, make_server  # noqa: F401

T0 = 1_800_000_000.0


@pytest.fixture
def app(tmp_path: Path) -> Iterator[LeanCtx]:
    with LeanCtx(tmp_path / "events.db") as a:
        yield a


def test_the_bus_refuses_a_key_reused_for_another_command(app: LeanCtx) -> None:
    first = app.bus.dispatch(RegisterAgent(agent_type="cursor", project_root="/p"), actor="x", now=T0,
                             idempotency_key="k1")
    head = app.store.head().position
    with pytest.raises(InvalidInput) as e:
        app.bus.dispatch(Heartbeat(agent=first.value.agent_id), actor="x", now=T0 + 1, idempotency_key="k1")
    assert e.value.code == "IDEMPOTENCY_KEY_REUSED"
    assert "agent.register" in e.value.message and "agent.heartbeat" in e.value.message
    added = app.store.read_all(since=head)
    assert [ev.kind for ev in added] == ["tool.called"]  # the refusal, recorded; no heartbeat
    assert added[0].data().error_code == "IDEMPOTENCY_KEY_REUSED"  # type: ignore[attr-defined]
    # the key still answers its own request
    again = app.bus.dispatch(RegisterAgent(agent_type="cursor", project_root="/p"), actor="x", now=T0 + 2,
                             idempotency_key="k1")
    assert again.duplicate and again.value == first.value


def test_the_bus_refuses_a_key_that_an_append_used(app: LeanCtx) -> None:
    """A key put on events by a plain append is no command's: using it is refused, not replayed."""
    registered = AgentRegistered(agent_id="a1", name="a1", agent_type="cursor", role="dev", project_root="/p")
    app.store.append("agent:a1", [NewEvent(event=registered)], idempotency_key="raw-1")
    with pytest.raises(InvalidInput) as e:
        app.bus.dispatch(Heartbeat(agent="a1"), now=T0, idempotency_key="raw-1")
    assert e.value.code == "IDEMPOTENCY_KEY_REUSED"


def test_http_key_reused_on_another_route_is_422_not_500(make_server) -> None:  # noqa: F811
    server = make_server()
    api = Api(server)
    a = api.register()
    k1 = {**a.headers, "Idempotency-Key": "k1"}
    posted = api.client.post("/v1/chat/post", json={"title": "t", "body": "b"}, headers=k1)
    assert posted.status_code == 200, posted.text
    r = api.client.post("/v1/tasks/create", json={"title": "t"}, headers=k1)
    assert r.status_code == 422, r.text
    err = r.json()["error"]
    assert err["code"] == "IDEMPOTENCY_KEY_REUSED" and "chat.post" in err["message"], err
    assert server.state.lc.store.read_last(10, TopicFilter(kinds=("task.created",))) == []
    # the same connection goes on serving (no reset), and the key still answers its request
    again = api.client.post("/v1/chat/post", json={"title": "t", "body": "b"}, headers=k1)
    assert again.status_code == 200 and again.json()["duplicate"] is True
    assert again.json()["result"] == posted.json()["result"]


def test_a2a_steps_keep_their_keys_apart(make_server) -> None:  # noqa: F811
    """tasks/send with claim dispatches create and claim under one header: each step its own key."""
    api = Api(make_server())
    a = api.register()
    h = {**a.headers, "Idempotency-Key": "send-1"}
    body = {"jsonrpc": "2.0", "id": 1, "method": "tasks/send",
            "params": {"id": "t1", "message": {"role": "user", "parts": [{"kind": "text", "text": "go"}]},
                       "metadata": {"claim": True}}}
    first = api.client.post("/a2a", json=body, headers=h).json()
    assert first["result"]["status"]["state"] == "working", first
    again = api.client.post("/a2a", json=body, headers=h).json()
    assert again["result"]["metadata"]["leanctx"]["owner"] == a.agent_id
    # the header's key on a command route that is neither step is still free
    r = api.client.post("/v1/tasks/renew", json={"task_id": "t1", "channel": "a2a"}, headers=h)
    assert r.status_code == 200, r.text


def test_http_key_reused_with_another_body_is_refused(make_server) -> None:  # noqa: F811
    server = make_server()
    api = Api(server)
    a = api.register()
    k2 = {**a.headers, "Idempotency-Key": "k2"}
    assert api.client.post("/v1/tasks/create", json={"title": "one"}, headers=k2).status_code == 200
    r = api.client.post("/v1/tasks/create", json={"title": "two"}, headers=k2)
    assert r.status_code == 422 and r.json()["error"]["code"] == "IDEMPOTENCY_KEY_REUSED", r.text
    assert server.state.lc.store.read_last(10, TopicFilter(kinds=("task.created",)))[0].data().title == "one"
    # the same fields in another order, defaults spelt out: the same request
    same = api.client.post("/v1/tasks/create", json={"channel": "general", "title": "one"}, headers=k2)
    assert same.status_code == 200 and same.json()["duplicate"] is True, same.text


def test_the_bus_binds_a_key_to_the_commands_fields(app: LeanCtx) -> None:
    first = app.bus.dispatch(RegisterAgent(agent_type="cursor", project_root="/p"), now=T0, idempotency_key="k")
    with pytest.raises(InvalidInput) as e:
        app.bus.dispatch(RegisterAgent(agent_type="claude", project_root="/p"), now=T0, idempotency_key="k")
    assert e.value.code == "IDEMPOTENCY_KEY_REUSED" and "other fields" in e.value.message
    again = app.bus.dispatch(RegisterAgent(agent_type="cursor", project_root="/p"), now=T0, idempotency_key="k")
    assert again.duplicate and again.value == first.value
