"""Claims of agents that have left or gone stale, and claims outside the project.

An agent that leaves (deregisters, or is recorded as timed out) gives up its claims through
``scent.released`` events, so replay rebuilds the same field. A claim whose holder is stale or
left in the registry does not exclude anyone: the next claimer takes it over (recorded on its
``scent.deposited``). Targets that leave the project root are refused
(``SCENT_TARGET_OUTSIDE_PROJECT``). Real SQLite logs, real registry calls, and one test through
the real MCP client over stdio.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest

from leanctx import clock
from leanctx.api import mcp_session, registry
from leanctx.api.registry import Caller
from leanctx.app import LeanCtx
from leanctx.channel_state import channel_state
from leanctx.commands.agents import Deregister, Heartbeat, RegisterAgent, SweepAgents
from leanctx.commands.scent import ClaimScent, DepositScent, ReleaseScent
from leanctx.errors import LeanCtxError
from leanctx.events import NewEvent
from leanctx.events.codec import payload_dict
from leanctx.events.kinds.agent import AgentDeregistered
from leanctx.overview import build_overview
from leanctx.projections.scent import claims_on, normalize_target, sync
from tools.replay import replay

T0 = 1_800_000_000.0
P = "/p"
LEAN_CTX = str(Path(sys.executable).with_name("lean-ctx"))


@pytest.fixture
def app(tmp_path: Path) -> Iterator[LeanCtx]:
    with LeanCtx(tmp_path / "e.db") as a:
        yield a


def do(app: LeanCtx, cmd: Any, actor: str | None, now: float, project: str | None = P) -> Any:
    return app.bus.dispatch(cmd, actor=actor, now=now, project=project).value


def join(app: LeanCtx, agent_id: str, now: float, agent_type: str = "claude") -> str:
    v = do(app, RegisterAgent(agent_type=agent_type, role="dev", project_root=P, agent_id=agent_id), agent_id, now)
    return str(v.name)


def new_events(app: LeanCtx, since: int) -> list[tuple[str, dict[str, Any]]]:
    return [(e.kind, payload_dict(e.payload)) for e in app.store.read_all(since=since) if e.kind != "tool.called"]


def claimed(app: LeanCtx, now: float, project: str | None = P) -> list[tuple[str, str, bool]]:
    return [(v.target, v.agent, v.active)
            for v in sync(app.projections.reader("scent"), now=now, project=project, kinds=("CLAIMED",))]


def replay_matches(app: LeanCtx) -> None:
    report = replay(app, verify=True)
    assert report.ok and report.chain_ok
    assert all(p.match for p in report.projections), [p.name for p in report.projections if not p.match]


# --- leaving releases the claims, by events ---------------------------------------------------


def test_deregistering_releases_every_claim_of_the_agent_by_events(app: LeanCtx) -> None:
    join(app, "ag-a", T0)
    join(app, "ag-b", T0, "cursor")
    do(app, ClaimScent(target="src/zz.py"), "ag-a", T0)
    do(app, ClaimScent(target="t1"), "ag-a", T0)
    do(app, ClaimScent(target="lib/q.py"), "ag-a", T0, project="/q")  # a claim made in another project
    do(app, DepositScent(target="src/hot.py", kind="HOT"), "ag-a", T0)
    head = app.store.head().position
    do(app, Deregister(agent="ag-a", reason="mcp session closed"), "ag-a", T0 + 1)
    evs = new_events(app, head)
    assert evs[0][0] == "agent.deregistered"
    released = sorted((d["target"], d["agent"], d["reason"], d["claim_project"]) for k, d in evs[1:])
    assert [k for k, _ in evs[1:]] == ["scent.released"] * 3
    assert released == [("lib/q.py", "ag-a", "agent_deregistered", "/q"),
                        ("src/zz.py", "ag-a", "agent_deregistered", P),
                        ("t1", "ag-a", "agent_deregistered", P)]
    assert claimed(app, T0 + 1, project=None) == []
    # the HOT mark is a mark, not a claim: it stays and fades
    assert [(v.target, v.kind) for v in sync(app.projections.reader("scent"), now=T0 + 1, project=P)] == [
        ("src/hot.py", "HOT")]
    m = do(app, ClaimScent(target="src/zz.py"), "ag-b", T0 + 2)
    assert (m.agent, m.took_over_from) == ("ag-b", None)  # nothing left to take over
    # deregistering again is idempotent and appends nothing
    head = app.store.head().position
    do(app, Deregister(agent="ag-a"), "ag-a", T0 + 3)
    assert new_events(app, head) == []
    replay_matches(app)


def test_a_recorded_heartbeat_timeout_releases_the_claims(app: LeanCtx) -> None:
    join(app, "ag-a", T0)
    do(app, ClaimScent(target="src/zz.py"), "ag-a", T0)
    head = app.store.head().position
    join(app, "ag-b", T0 + 61, "cursor")  # registering observes the registry: ag-a timed out
    evs = new_events(app, head)
    assert [k for k, _ in evs] == ["agent.left", "scent.released", "agent.registered"]
    assert (evs[1][1]["target"], evs[1][1]["agent"], evs[1][1]["reason"]) == ("src/zz.py", "ag-a",
                                                                              "heartbeat_timeout")
    assert claimed(app, T0 + 61) == []
    # the agent comes back: its claim is gone, it claims again like anyone
    join(app, "ag-a", T0 + 62)
    do(app, ClaimScent(target="src/zz.py"), "ag-b", T0 + 63)
    with pytest.raises(LeanCtxError) as ei:
        do(app, ClaimScent(target="src/zz.py"), "ag-a", T0 + 64)
    assert ei.value.code == "SCENT_ALREADY_CLAIMED"
    # a sweep of another project's timeout releases in the claim's own project
    do(app, ClaimScent(target="src/yy.py"), "ag-a", T0 + 64)
    head = app.store.head().position
    do(app, SweepAgents(all_projects=True), "ops", T0 + 200, project=None)
    rel = [d for k, d in new_events(app, head) if k == "scent.released"]
    assert sorted((d["target"], d["agent"], d["claim_project"]) for d in rel) == [
        ("src/yy.py", "ag-a", P), ("src/zz.py", "ag-b", P)]
    assert claimed(app, T0 + 200) == []
    replay_matches(app)


def test_a_stale_holders_claim_does_not_block_and_the_taker_records_the_take_over(app: LeanCtx) -> None:
    name_a = join(app, "ag-a", T0)
    join(app, "ag-b", T0, "cursor")
    do(app, ClaimScent(target="src/zz.py"), "ag-a", T0)
    do(app, Heartbeat(agent="ag-b"), "ag-b", T0 + 50)
    # idle (a heartbeat late) still holds
    with pytest.raises(LeanCtxError) as ei:
        do(app, ClaimScent(target="src/zz.py"), "ag-b", T0 + 45)
    assert ei.value.code == "SCENT_ALREADY_CLAIMED"
    # stale (no heartbeat for more than the TTL, not yet recorded): not active, and shown so
    conn = app.projections.reader("scent")
    [c] = claims_on(conn, "src/zz.py", now=T0 + 61, project=P)
    assert (c.agent, c.active, c.holder_status, c.active_for_seconds) == ("ag-a", False, "stale", 0.0)
    assert claimed(app, T0 + 61) == [("src/zz.py", "ag-a", False)]
    head = app.store.head().position
    m = do(app, ClaimScent(target="src/zz.py"), "ag-b", T0 + 61)
    assert (m.agent, m.took_over_from, m.refreshed) == ("ag-b", name_a, False)
    evs = new_events(app, head)
    assert [k for k, _ in evs] == ["scent.released", "scent.deposited"]
    assert (evs[0][1]["agent"], evs[0][1]["reason"]) == ("ag-a", "taken_over")
    assert (evs[1][1]["agent"], evs[1][1]["took_over_from"]) == ("ag-b", "ag-a")
    assert claimed(app, T0 + 61) == [("src/zz.py", "ag-b", True)]
    # the stale agent heartbeats again (nobody recorded its timeout): the claim stays ag-b's
    do(app, Heartbeat(agent="ag-a"), "ag-a", T0 + 62)
    with pytest.raises(LeanCtxError) as ei:
        do(app, ClaimScent(target="src/zz.py"), "ag-a", T0 + 63)
    assert ei.value.code == "SCENT_ALREADY_CLAIMED"
    assert claimed(app, T0 + 63) == [("src/zz.py", "ag-b", True)]
    replay_matches(app)


def test_a_left_holders_claim_from_an_older_log_does_not_block(app: LeanCtx) -> None:
    """A log written before departures released claims: the registry still says who left."""
    name_a = join(app, "ag-a", T0)
    do(app, ClaimScent(target="src/zz.py"), "ag-a", T0)
    with app.store.transaction() as tx:  # what an older lean-ctx appended: the departure alone
        tx.append("agent:ag-a", [NewEvent(event=AgentDeregistered(agent_id="ag-a", reason="bye"), actor="ag-a",
                                          project=P, ts=clock.iso(T0 + 1))])
    conn = app.projections.reader("scent")
    app.projections.ensure_current()
    [c] = claims_on(conn, "src/zz.py", now=T0 + 5, project=P)
    assert (c.active, c.holder_status) == (False, "left")
    with pytest.raises(LeanCtxError) as ei:
        do(app, ReleaseScent(target="src/zz.py"), "ag-b", T0 + 5)
    assert ei.value.code == "SCENT_NOT_CLAIMED"
    m = do(app, ClaimScent(target="src/zz.py"), "ag-b", T0 + 5)
    assert m.took_over_from == name_a
    assert claimed(app, T0 + 5) == [("src/zz.py", "ag-b", True)]


def test_unregistered_holders_keep_the_time_window(app: LeanCtx) -> None:
    do(app, ClaimScent(target="t9"), "local-1", T0)
    [c] = claims_on(app.projections.reader("scent"), "t9", now=T0 + 300, project=P)
    assert (c.active, c.holder_status) == (True, "unregistered")
    with pytest.raises(LeanCtxError) as ei:
        do(app, ClaimScent(target="t9"), "local-2", T0 + 300)
    assert ei.value.code == "SCENT_ALREADY_CLAIMED"


# --- the lists --------------------------------------------------------------------------------


@pytest.fixture
def project(tmp_path: Path) -> Path:
    p = tmp_path / "proj"
    (p / "src").mkdir(parents=True)
    (p / "src" / "zz.py").write_text("x = 1\n")
    return p


def test_a_closed_sessions_claims_leave_overview_chat_state_and_sync(app: LeanCtx, project: Path) -> None:
    root = str(project)
    sa = mcp_session.new_session({"name": "claude-code"}, None, None)
    mcp_session.register(app, sa, root)
    a = sa.caller(root)
    b = Caller("bob", "s-b", root)
    registry.call(app, b, "ctx_agent", {"action": "register", "role": "dev"})
    registry.call(app, a, "ctx_agent", {"action": "claim", "target": "src/zz.py"})
    registry.call(app, b, "ctx_agent", {"action": "post", "title": "hi", "body": "hello"})
    before = build_overview(app, agent_id="bob", session_id="s-b", project=root)
    assert any("src/zz.py" in line for line in before.claims)
    mcp_session.deregister(app, sa, root)  # what closing the MCP session runs
    assert sa.agent_id not in registry.call(app, b, "ctx_agent", {"action": "list"})["text"]
    assert registry.call(app, b, "ctx_agent", {"action": "sync"})["text"] == "the scent field is empty"
    after = build_overview(app, agent_id="bob", session_id="s-b", project=root)
    assert after.claims == [] and "src/zz.py" not in after.text
    app.projections.ensure_current()
    st = channel_state(app.projections.reader("channels"), "general", now=time.time(),
                       position=app.store.head().position, project=root)
    assert st.claims == []
    out = registry.call(app, b, "ctx_agent", {"action": "claim", "target": "src/zz.py"})
    assert out["text"].startswith("claimed src/zz.py") and out["mark"]["took_over_from"] is None


# --- targets outside the project --------------------------------------------------------------


def test_targets_that_leave_the_project_root_are_refused(app: LeanCtx, project: Path) -> None:
    root = str(project)
    for bad in ("../other/x.py", "src/../../x.py", "..", "/elsewhere/x.py", f"{root}-2/x.py"):
        head = app.store.head().position
        with pytest.raises(LeanCtxError) as ei:
            do(app, ClaimScent(target=bad), "ag-a", T0, project=root)
        assert ei.value.code == "SCENT_TARGET_OUTSIDE_PROJECT", bad
        assert "outside the project" in ei.value.message and root in ei.value.message
        with pytest.raises(LeanCtxError) as ei:
            do(app, DepositScent(target=bad, kind="HOT"), "ag-a", T0, project=root)
        assert ei.value.code == "SCENT_TARGET_OUTSIDE_PROJECT"
        assert new_events(app, head) == []
    assert do(app, ClaimScent(target=f"{root}/src/zz.py"), "ag-a", T0, project=root).target == "src/zz.py"
    assert do(app, ClaimScent(target="src/x/../zz2.py"), "ag-a", T0, project=root).target == "src/zz2.py"
    assert do(app, ClaimScent(target="task:general/t-1"), "ag-a", T0, project=root).target == "task:general/t-1"
    # with no project, a relative escape is still refused; an absolute path cannot be judged
    with pytest.raises(LeanCtxError) as ei:
        do(app, ClaimScent(target="../x.py"), "ag-a", T0, project=None)
    assert ei.value.code == "SCENT_TARGET_OUTSIDE_PROJECT"
    assert do(app, ClaimScent(target="/abs/x.py"), "ag-a", T0, project=None).target == "/abs/x.py"
    assert normalize_target("../other/x.py") == "../other/x.py"  # normalizing alone does not judge
    # through the tool, as an agent calls it
    me = Caller("alice", "s1", root)
    registry.call(app, me, "ctx_agent", {"action": "register", "role": "dev"})
    with pytest.raises(LeanCtxError) as ei:
        registry.call(app, me, "ctx_agent", {"action": "claim", "target": "../other/x.py"})
    assert ei.value.code == "SCENT_TARGET_OUTSIDE_PROJECT"


# --- through the real MCP client --------------------------------------------------------------


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.mark.anyio
async def test_closing_an_mcp_session_frees_its_claims_for_the_next_agent(tmp_path: Path, project: Path) -> None:
    from mcp import Client
    from mcp.client.stdio import StdioServerParameters
    from mcp_types import Implementation

    env = {"LEAN_CTX_DB": str(tmp_path / "events.db"), "LEAN_CTX_HOME": str(tmp_path / "home")}

    def client(name: str) -> Client:
        srv = StdioServerParameters(command=LEAN_CTX, args=["mcp"], env=env, cwd=str(project))
        return Client(srv, mode="legacy", client_info=Implementation(name=name, version="1.0"),
                      read_timeout_seconds=30)

    def text(r: Any) -> str:
        return "\n".join(c.text for c in r.content if getattr(c, "type", "") == "text")

    async with client("cursor") as b:
        async with client("claude-code") as a:
            r = await a.call_tool("ctx_agent", {"action": "claim", "target": "src/zz.py"})
            assert not r.is_error and text(r).startswith("claimed src/zz.py"), text(r)
            r = await a.call_tool("ctx_agent", {"action": "claim", "target": "../other/x.py"})
            assert r.is_error and "SCENT_TARGET_OUTSIDE_PROJECT" in text(r), text(r)
            r = await b.call_tool("ctx_agent", {"action": "claim", "target": "src/zz.py"})
            assert r.is_error and "SCENT_ALREADY_CLAIMED" in text(r)
        deadline = time.monotonic() + 10
        while True:  # the server deregisters the agent as its session closes
            r = await b.call_tool("ctx_agent", {"action": "claim", "target": "src/zz.py"})
            if not r.is_error:
                break
            assert time.monotonic() < deadline, f"the departed agent's claim still blocks: {text(r)}"
            await anyio.sleep(0.05)
        assert text(r).startswith("claimed src/zz.py"), text(r)
        assert "claude" not in text(await b.call_tool("ctx_agent", {"action": "sync"}))
        assert "— claude" not in text(await b.call_tool("ctx_overview", {}))
    with LeanCtx(tmp_path / "events.db") as lc:
        kinds = [(e.kind, payload_dict(e.payload).get("reason")) for e in lc.store.read_all(since=0)
                 if e.kind in ("agent.deregistered", "scent.released")]
        assert ("scent.released", "agent_deregistered") in kinds
        replay_matches(lc)
