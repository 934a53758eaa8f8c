"""Liveness counts what an agent does, not only its heartbeats.

A registered agent is stale after ``HEARTBEAT_TTL`` (60 s) without a sign of life. Every command
it performs itself — a post, a read, a claim, even a refused one — is recorded as a ``tool.called``
event with the agent as its actor, and the agents projection takes that event's timestamp as the
agent's ``last_seen``: a CLI agent that works without ever heartbeating keeps its claims. Activity
does not bring back an agent whose departure was recorded (it registers again), and the command
that observes timeouts never records its own actor as gone. Real SQLite logs, the real command
bus, and the real ``lean-ctx`` console script in subprocesses.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from leanctx import clock
from leanctx.app import LeanCtx
from leanctx.commands.agents import Heartbeat, RegisterAgent, SweepAgents
from leanctx.commands.chat import PostMessage, ReadMessages
from leanctx.commands.scent import ClaimScent
from leanctx.config import project_root
from leanctx.errors import LeanCtxError
from leanctx.projections.agents import AgentView, find_agent, list_agents
from tools.replay import replay

T0 = 1_900_000_000.0
P = "/p"
LEAN_CTX = str(Path(sys.executable).with_name("lean-ctx"))


@pytest.fixture
def app(tmp_path: Path) -> Iterator[LeanCtx]:
    with LeanCtx(tmp_path / "e.db") as a:
        yield a


def do(app: LeanCtx, cmd: Any, actor: str | None, now: float, project: str = P) -> Any:
    return app.bus.dispatch(cmd, actor=actor, now=now, project=project).value


def refused(app: LeanCtx, cmd: Any, actor: str | None, now: float, code: str) -> LeanCtxError:
    with pytest.raises(LeanCtxError) as ei:
        do(app, cmd, actor, now)
    assert ei.value.code == code, ei.value
    return ei.value


def join(app: LeanCtx, *agents: str, now: float = T0, project: str = P) -> None:
    for a in agents:
        do(app, RegisterAgent(agent_type="cli", role="dev", project_root=project, agent_id=a), a, now, project)


def agent(app: LeanCtx, agent_id: str, now: float) -> AgentView:
    found = find_agent(app.projections.reader("agents"), agent_id, now=now)
    assert found is not None and found.agent_id == agent_id
    return found


def test_an_agent_that_works_without_heartbeats_keeps_its_claim(app: LeanCtx) -> None:
    join(app, "carol", "bob")
    do(app, ClaimScent(target="src/a.py"), "carol", T0)
    do(app, PostMessage(title="working", body="on a.py"), "carol", T0 + 40)
    do(app, ReadMessages(), "carol", T0 + 80)  # nothing to read: only the tool.called record
    # 100 s after its registration, 20 s after its last command: alive
    seen = agent(app, "carol", T0 + 100)
    assert (seen.status, seen.last_seen, seen.heartbeats) == ("active", clock.iso(T0 + 80), 0)
    assert agent(app, "bob", T0 + 100).status == "stale"  # bob did nothing since it registered
    err = refused(app, ClaimScent(target="src/a.py"), "bob", T0 + 100, "SCENT_ALREADY_CLAIMED")
    assert err.details["agent"] == "carol"
    # carol is not stale, and bob is the one sweeping: nobody is recorded as gone
    assert do(app, SweepAgents(), "bob", T0 + 100).recorded == []
    # 61 s after carol's last command, its claim no longer holds
    assert agent(app, "carol", T0 + 141).status == "stale"
    mark = do(app, ClaimScent(target="src/a.py"), "bob", T0 + 141)
    assert mark.took_over_from is not None


def test_a_refused_command_is_a_sign_of_life_too(app: LeanCtx) -> None:
    join(app, "carol")
    refused(app, ReadMessages(channel="nope"), "carol", T0 + 50, "CHAT_CHANNEL_NOT_FOUND")
    seen = agent(app, "carol", T0 + 100)  # 100 s after registering, 50 s after the refusal: one heartbeat late
    assert (seen.status, seen.last_seen) == ("idle", clock.iso(T0 + 50))


def test_activity_never_moves_last_seen_back_nor_counts_for_others(app: LeanCtx) -> None:
    join(app, "carol", "dave")
    do(app, Heartbeat(agent="carol"), "carol", T0 + 30)
    do(app, PostMessage(title="late", body="clock"), "carol", T0 + 10)  # a command stamped earlier
    assert agent(app, "carol", T0 + 30).last_seen == clock.iso(T0 + 30)
    # someone else acting on carol's behalf is not carol acting; a command without an actor neither
    do(app, PostMessage(title="hi", body="carol", to="carol"), "dave", T0 + 50)
    do(app, SweepAgents(project_root=P), None, T0 + 55)
    assert agent(app, "carol", T0 + 55).last_seen == clock.iso(T0 + 30)
    assert agent(app, "dave", T0 + 55).last_seen == clock.iso(T0 + 50)


def test_activity_does_not_bring_back_a_recorded_departure(app: LeanCtx) -> None:
    join(app, "carol", "bob")
    do(app, Heartbeat(agent="bob"), "bob", T0 + 61)  # observes carol's timeout and records it
    gone = agent(app, "carol", T0 + 61)
    assert (gone.status, gone.timed_out) == ("stale", True)
    do(app, PostMessage(title="still here?", body="x"), "carol", T0 + 62)
    after = agent(app, "carol", T0 + 62)
    assert (after.status, after.timed_out, after.last_seen) == ("stale", True, clock.iso(T0))
    refused(app, Heartbeat(agent="carol"), "carol", T0 + 63, "AGENT_LEFT")  # it registers again to rejoin
    join(app, "carol", now=T0 + 64)
    assert agent(app, "carol", T0 + 64).status == "active"


def test_the_observer_is_never_recorded_as_gone(app: LeanCtx) -> None:
    join(app, "carol", "bob")
    res = do(app, SweepAgents(), "carol", T0 + 61)  # carol has been silent for 61 s, but it is sweeping
    assert [a.agent_id for a in res.recorded] == ["bob"]
    assert agent(app, "carol", T0 + 61).status == "active"


def test_replay_reproduces_last_seen(app: LeanCtx) -> None:
    join(app, "carol", "bob")
    do(app, PostMessage(title="a", body="b"), "carol", T0 + 20)
    refused(app, ReadMessages(channel="nope"), "bob", T0 + 30, "CHAT_CHANNEL_NOT_FOUND")
    do(app, Heartbeat(agent="carol"), "carol", T0 + 40)
    before = [(a.agent_id, a.last_seen, a.heartbeats) for a in
              list_agents(app.projections.reader("agents"), now=T0 + 50)]
    assert before == [("bob", clock.iso(T0 + 30), 0), ("carol", clock.iso(T0 + 40), 1)]
    digest = app.projections.digest("agents")
    report = replay(app, verify=True)
    assert report.ok and all(p.match for p in report.projections), [p.name for p in report.projections if not p.match]
    app.projections.rebuild("agents")
    assert app.projections.digest("agents") == digest


# --- the real CLI --------------------------------------------------------------------------------


def _cli(db: Path, project: Path, agent: str, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("LEAN_CTX_")}
    env.update(LEAN_CTX_DB=str(db), LEAN_CTX_AGENT_ID=agent)  # the data dir: the test's XDG_DATA_HOME
    return subprocess.run([LEAN_CTX, "--project", str(project), *args], capture_output=True, text=True, env=env,
                          cwd=project, timeout=60, check=False)


def test_the_cli_agent_that_only_posts_keeps_its_claim(tmp_path: Path) -> None:
    """carol and bob registered 100 s ago and never heartbeat; carol claimed a file then and posts
    now through the CLI: bob's ``agent list`` does not record carol as gone, and bob cannot take
    carol's claim."""
    proj = tmp_path / "proj"
    proj.mkdir()
    root = str(project_root(proj))
    db = tmp_path / "e.db"
    past = clock.now() - 100
    with LeanCtx(db) as lc:
        join(lc, "carol", "bob", now=past, project=root)
        do(lc, ClaimScent(target="src/a.py"), "carol", past, project=root)
    posted = _cli(db, proj, "carol", "chat", "post", "--to", "all", "--title", "working", "--body", "on a.py")
    assert posted.returncode == 0, posted.stderr
    listed = _cli(db, proj, "bob", "--json", "agent", "list")
    assert listed.returncode == 0, listed.stderr
    status = {a["agent_id"]: (a["status"], a["timed_out"]) for a in json.loads(listed.stdout)}
    assert status["carol"] == ("active", False)
    assert status["bob"] == ("active", False)  # bob is the one listing: its own command is its sign of life
    took = _cli(db, proj, "bob", "--json", "agent", "claim", "src/a.py")
    assert took.returncode == 2, took.stdout
    assert json.loads(took.stdout)["error"]["code"] == "SCENT_ALREADY_CLAIMED"
