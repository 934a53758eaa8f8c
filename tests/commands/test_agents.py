"""Agent registry commands: register, heartbeat, deregister."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from leanctx import keys
from leanctx.app import LeanCtx
from leanctx.commands.agents import AgentAck, AgentRegistration, Deregister, Heartbeat, RegisterAgent
from leanctx.errors import CommandError, InvalidInput, LeanCtxError
from leanctx.events.kinds import AgentDeregistered, AgentHeartbeat, AgentRegistered, ToolCalled
from leanctx.projections.agents import HEARTBEAT_INTERVAL, HEARTBEAT_TTL, find_agent, list_agents

T0 = 1_800_000_000.0


@pytest.fixture
def app(tmp_path: Path) -> Iterator[LeanCtx]:
    with LeanCtx(tmp_path / "events.db") as a:
        yield a


def register(app: LeanCtx, **kw: Any) -> AgentRegistration:
    kw.setdefault("agent_type", "cursor")
    kw.setdefault("project_root", "/p")
    now = kw.pop("now", T0)
    return app.bus.dispatch(RegisterAgent(**kw), now=now).value


def refusal(app: LeanCtx, cmd: Any, **kw: Any) -> LeanCtxError:
    """Dispatch ``cmd``, expect a refusal, and check that only its error record was appended."""
    head = app.store.head().position
    with pytest.raises(LeanCtxError) as ei:
        app.bus.dispatch(cmd, **kw)
    new = app.store.read_all(since=head)
    assert [e.kind for e in new] == ["tool.called"]
    rec = new[0].data()
    assert isinstance(rec, ToolCalled)
    assert (rec.outcome, rec.error_code) == ("error", ei.value.code)
    return ei.value


# ------------------------------------------------------------------------------------------
# register
# ------------------------------------------------------------------------------------------
def test_register_names_agents_in_sequence(app: LeanCtx) -> None:
    a = register(app)
    b = register(app)
    assert (a.name, b.name) == ("cursor-dev-1", "cursor-dev-2")
    assert a.agent_id != b.agent_id
    assert re.fullmatch(r"[0-9a-f]{8}", a.agent_id)
    assert (a.agent_type, a.role, a.project_root, a.rejoined) == ("cursor", "dev", "/p", False)
    assert (a.heartbeat_interval, a.ttl_seconds) == (HEARTBEAT_INTERVAL, HEARTBEAT_TTL)


def test_names_count_per_type_role_and_project(app: LeanCtx) -> None:
    names = [
        register(app).name,
        register(app, role="review").name,
        register(app, agent_type="claude").name,
        register(app, project_root="/q").name,
        register(app).name,
        register(app, role="review").name,
    ]
    assert names == ["cursor-dev-1", "cursor-review-1", "claude-dev-1", "cursor-dev-1", "cursor-dev-2",
                     "cursor-review-2"]


def test_register_appends_the_registration(app: LeanCtx) -> None:
    res = app.bus.dispatch(RegisterAgent(agent_type="cursor", project_root="/p", pid=7, host="h", session_id="s"),
                           actor="me")
    e = app.store.get(res.positions[0])
    assert (e.stream, e.version, e.kind) == (f"agent:{res.value.agent_id}", 1, "agent.registered")
    key = keys.info(res.value.agent_id, create=False)  # created at registration, in the data dir
    assert e.data() == AgentRegistered(agent_id=res.value.agent_id, name="cursor-dev-1", agent_type="cursor",
                                       role="dev", project_root="/p", pid=7, host="h", session_id="s",
                                       public_key=key.public_key, fingerprint=key.fingerprint)
    assert res.value.key_fingerprint == key.fingerprint


def test_project_root_defaults_to_the_dispatch_project(app: LeanCtx) -> None:
    res = app.bus.dispatch(RegisterAgent(agent_type="cursor"), project="/from-ctx")
    assert res.value.project_root == "/from-ctx"
    err = refusal(app, RegisterAgent(agent_type="cursor"))
    assert err.code == "AGENT_INVALID_PROJECT"


def test_type_and_role_are_trimmed(app: LeanCtx) -> None:
    res = register(app, agent_type="  cursor ", role=" dev\n")
    assert (res.agent_type, res.role, res.name) == ("cursor", "dev", "cursor-dev-1")


@pytest.mark.parametrize(
    "bad", ["", "   ", "has space", "-lead", ".dot", "x/y", "a" * 65, "ünï", "semi;colon", "new\nline", "star*"]
)
def test_bad_agent_types(app: LeanCtx, bad: str) -> None:
    err = refusal(app, RegisterAgent(agent_type=bad, project_root="/p"))
    assert isinstance(err, InvalidInput)
    assert err.code == "AGENT_INVALID_TYPE"
    assert list_agents(app.projections.reader("agents"), now=T0, include_left=True) == []


def test_longest_valid_agent_type(app: LeanCtx) -> None:
    assert register(app, agent_type="a" * 64).agent_type == "a" * 64


@pytest.mark.parametrize("bad", ["", "two words", "_x"])
def test_bad_roles(app: LeanCtx, bad: str) -> None:
    err = refusal(app, RegisterAgent(agent_type="cursor", role=bad, project_root="/p"))
    assert err.code == "AGENT_INVALID_ROLE"


@pytest.mark.parametrize("bad", ["", "with space", "-x", "a" * 129, "x/y"])
def test_bad_explicit_agent_ids(app: LeanCtx, bad: str) -> None:
    err = refusal(app, RegisterAgent(agent_type="cursor", project_root="/p", agent_id=bad))
    assert err.code == "AGENT_INVALID_ID"


# ------------------------------------------------------------------------------------------
# explicit identity and rejoin
# ------------------------------------------------------------------------------------------
def test_explicit_agent_id_and_rejoin(app: LeanCtx) -> None:
    first = register(app, agent_id="claude:main-1", agent_type="claude")
    assert (first.agent_id, first.name, first.rejoined) == ("claude:main-1", "claude-dev-1", False)
    again = register(app, agent_id="claude:main-1", agent_type="claude", now=T0 + 30)
    assert (again.agent_id, again.name, again.rejoined) == ("claude:main-1", "claude-dev-1", True)
    assert app.store.stream_version("agent:claude:main-1") == 2
    # a rejoin is not a new agent: the next one is still number 2
    assert register(app, agent_type="claude").name == "claude-dev-2"
    v = find_agent(app.projections.reader("agents"), "claude:main-1", now=T0 + 31)
    assert (v.status, v.registered_at) == ("active", v.last_seen)


def test_rejoin_after_deregister(app: LeanCtx) -> None:
    register(app, agent_id="worker-7")
    app.bus.dispatch(Deregister(agent="worker-7"), now=T0 + 1)
    with pytest.raises(CommandError):
        app.bus.dispatch(Heartbeat(agent="worker-7"), now=T0 + 2)
    again = register(app, agent_id="worker-7", now=T0 + 3)
    assert again.rejoined and again.name == "cursor-dev-1"
    ack = app.bus.dispatch(Heartbeat(agent="worker-7"), now=T0 + 4).value
    assert ack.agent_id == "worker-7"
    assert find_agent(app.projections.reader("agents"), "worker-7", now=T0 + 5).status == "active"


def test_rejoin_with_another_role_gets_a_name_for_it(app: LeanCtx) -> None:
    register(app, agent_id="flex")
    again = register(app, agent_id="flex", role="review")
    assert (again.rejoined, again.role, again.name) == (True, "review", "cursor-review-1")


def test_generated_names_stay_unique_when_an_agent_changes_role(app: LeanCtx) -> None:
    """Names identify agents (heartbeat and deregister accept a name): two live agents must
    never share one."""
    flex = register(app, agent_id="flex")  # cursor-dev-1
    other = register(app)  # cursor-dev-2
    register(app, agent_id="flex", role="review")  # flex leaves the dev numbering
    newcomer = register(app)
    assert (flex.name, other.name) == ("cursor-dev-1", "cursor-dev-2")
    assert newcomer.name != other.name
    names = [v.name for v in list_agents(app.projections.reader("agents"), now=T0)]
    assert len(names) == len(set(names)), names


# ------------------------------------------------------------------------------------------
# heartbeat
# ------------------------------------------------------------------------------------------
def test_heartbeat(app: LeanCtx) -> None:
    a = register(app)
    res = app.bus.dispatch(Heartbeat(agent=a.agent_id, status="busy"), now=T0 + 5)
    assert res.value == AgentAck(a.agent_id, a.name)
    e = app.store.get(res.positions[0])
    assert (e.stream, e.version) == (f"agent:{a.agent_id}", 2)
    assert e.data() == AgentHeartbeat(agent_id=a.agent_id, status="busy")


def test_heartbeat_by_name(app: LeanCtx) -> None:
    a = register(app)
    res = app.bus.dispatch(Heartbeat(agent="cursor-dev-1"))
    assert res.value.agent_id == a.agent_id


def test_heartbeat_of_an_unknown_agent(app: LeanCtx) -> None:
    register(app)
    err = refusal(app, Heartbeat(agent="ghost"))
    assert isinstance(err, CommandError)
    assert err.code == "AGENT_NOT_FOUND"


def test_heartbeat_after_deregister(app: LeanCtx) -> None:
    a = register(app)
    app.bus.dispatch(Deregister(agent=a.agent_id))
    err = refusal(app, Heartbeat(agent=a.agent_id))
    assert isinstance(err, CommandError)
    assert err.code == "AGENT_LEFT"
    assert a.name in err.message


def test_heartbeat_with_a_bad_status(app: LeanCtx) -> None:
    a = register(app)
    err = refusal(app, Heartbeat(agent=a.agent_id, status="not ok!"))
    assert err.code == "AGENT_INVALID_STATUS"


# ------------------------------------------------------------------------------------------
# deregister
# ------------------------------------------------------------------------------------------
def test_deregister(app: LeanCtx) -> None:
    a = register(app)
    res = app.bus.dispatch(Deregister(agent=a.agent_id, reason="  shift over  "), now=T0 + 3)
    assert res.value == AgentAck(a.agent_id, a.name)
    e = app.store.get(res.positions[0])
    assert e.data() == AgentDeregistered(agent_id=a.agent_id, reason="shift over")
    assert find_agent(app.projections.reader("agents"), a.agent_id, now=T0 + 4).status == "left"


def test_deregister_twice_is_idempotent(app: LeanCtx) -> None:
    a = register(app)
    app.bus.dispatch(Deregister(agent=a.agent_id, reason="first"))
    version = app.store.stream_version(f"agent:{a.agent_id}")
    head = app.store.head().position
    res = app.bus.dispatch(Deregister(agent=a.agent_id, reason="second"))
    assert res.value.already_left and res.value.agent_id == a.agent_id
    assert res.positions == []
    new = app.store.read_all(since=head)
    assert [e.kind for e in new] == ["tool.called"]  # only the record of the call
    rec = new[0].data()
    assert (rec.outcome, rec.events) == ("ok", 0)
    assert app.store.stream_version(f"agent:{a.agent_id}") == version
    v = find_agent(app.projections.reader("agents"), a.agent_id, now=T0)
    assert v.left_reason == "first"


def test_deregister_reason_defaults_and_is_capped(app: LeanCtx) -> None:
    a = register(app)
    b = register(app)
    ra = app.bus.dispatch(Deregister(agent=a.agent_id, reason="   "))
    rb = app.bus.dispatch(Deregister(agent=b.agent_id, reason="x" * 500))
    assert app.store.get(ra.positions[0]).data().reason == "deregistered"
    assert app.store.get(rb.positions[0]).data().reason == "x" * 200


def test_deregister_an_unknown_agent(app: LeanCtx) -> None:
    err = refusal(app, Deregister(agent="ghost"))
    assert err.code == "AGENT_NOT_FOUND"
