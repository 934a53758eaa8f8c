"""The agent registry: status from an injected ``now``, the once-only ``agent.left``
(heartbeat_timeout) recorded by the first observer — also when real processes observe at
once — rejoin, project scoping, pid-distinct identities of CLI processes, and replay."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from leanctx import clock
from leanctx.app import LeanCtx
from leanctx.commands.agents import (
    AgentRegistration,
    Deregister,
    Heartbeat,
    RegisterAgent,
    SweepAgents,
)
from leanctx.errors import CommandError, InvalidInput, LeanCtxError
from leanctx.events import TopicFilter
from leanctx.events.kinds.agent import AgentLeft
from leanctx.projections.agents import (
    HEARTBEAT_TTL,
    find_agent,
    list_agents,
    unrecorded_stale,
)

T0 = 1_800_000_000.0
LEAN_CTX = str(Path(sys.executable).with_name("lean-ctx"))  # this interpreter's, not whatever PATH finds
ROOT = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.timeout(120)


@pytest.fixture
def app(tmp_path: Path) -> Iterator[LeanCtx]:
    with LeanCtx(tmp_path / "events.db") as a:
        yield a


def register(app: LeanCtx, **kw: Any) -> AgentRegistration:
    kw.setdefault("agent_type", "cursor")
    kw.setdefault("project_root", "/p")
    now = kw.pop("now", T0)
    return app.bus.dispatch(RegisterAgent(**kw), now=now, actor=kw.get("agent_id")).value


def kinds_since(app: LeanCtx, head: int) -> list[str]:
    return [e.kind for e in app.store.read_all(since=head)]


def left_events(store: Any, agent_id: str | None = None) -> list[Any]:
    evs = store.read_all(0, TopicFilter(kinds=("agent.left",)))
    return [e for e in evs if agent_id is None or e.data().agent_id == agent_id]


def view(app: LeanCtx, ref: str, now: float):  # type: ignore[no-untyped-def]
    v = find_agent(app.projections.reader("agents"), ref, now=now)
    assert v is not None
    return v


# ------------------------------------------------------------------------------------------
# staleness and the once-only agent.left
# ------------------------------------------------------------------------------------------
def test_stale_after_three_missed_intervals_then_recorded_once(app: LeanCtx) -> None:
    a = register(app, agent_id="sleepy")
    conn = app.projections.reader("agents")
    assert HEARTBEAT_TTL == 60.0
    assert view(app, "sleepy", T0 + 60).status == "idle"  # exactly the TTL: not yet
    head = app.store.head().position
    assert app.bus.dispatch(SweepAgents(), project="/p", now=T0 + 60).value.recorded == []
    assert kinds_since(app, head) == ["tool.called"]  # nothing observed, nothing recorded

    assert [v.status for v in list_agents(conn, now=T0 + 60.5)] == ["stale"]
    assert [v.agent_id for v in unrecorded_stale(conn, now=T0 + 60.5)] == ["sleepy"]
    head = app.store.head().position
    res = app.bus.dispatch(SweepAgents(), project="/p", now=T0 + 61, actor="observer")
    assert [v.agent_id for v in res.value.recorded] == ["sleepy"]
    assert kinds_since(app, head) == ["tool.called", "agent.left"]
    e = app.store.get(res.positions[0])
    assert (e.stream, e.actor, e.ts) == ("agent:sleepy", "observer", clock.iso(T0 + 61))
    assert e.data() == AgentLeft(agent_id="sleepy", reason="heartbeat_timeout", last_seen=clock.iso(T0),
                                 ttl_seconds=60.0)

    v = view(app, "sleepy", T0 + 62)
    assert (v.status, v.timed_out, v.left_reason, v.left_at) == ("stale", True, "heartbeat_timeout",
                                                                 clock.iso(T0 + 61))
    # still listed (as stale) — only agents that deregistered are hidden
    assert [x.agent_id for x in list_agents(conn, now=T0 + 62)] == [a.agent_id]
    assert unrecorded_stale(conn, now=T0 + 62) == []

    # a second observation appends no agent.left (only the call record)
    head = app.store.head().position
    assert app.bus.dispatch(SweepAgents(), project="/p", now=T0 + 500).value.recorded == []
    assert kinds_since(app, head) == ["tool.called"]
    assert len(left_events(app.store)) == 1


def test_a_timed_out_agent_must_register_again_and_keeps_its_id(app: LeanCtx) -> None:
    first = register(app, agent_id="sleepy")
    app.bus.dispatch(SweepAgents(), project="/p", now=T0 + 100)
    head = app.store.head().position
    with pytest.raises(CommandError) as ei:
        app.bus.dispatch(Heartbeat(agent="sleepy"), now=T0 + 101)
    assert ei.value.code == "AGENT_LEFT"
    assert "register again" in ei.value.message and "--id sleepy" in ei.value.message
    assert ei.value.details["reason"] == "heartbeat_timeout"
    assert kinds_since(app, head) == ["tool.called"]  # the refusal's record only
    again = register(app, agent_id="sleepy", now=T0 + 102)
    assert (again.agent_id, again.name, again.rejoined) == ("sleepy", first.name, True)
    assert app.bus.dispatch(Heartbeat(agent="sleepy"), now=T0 + 103).value.agent_id == "sleepy"
    v = view(app, "sleepy", T0 + 104)
    assert (v.status, v.timed_out, v.left_at) == ("active", False, None)


def test_heartbeat_and_register_observe_the_project(app: LeanCtx) -> None:
    register(app, agent_id="quiet")
    register(app, agent_id="busy")
    register(app, agent_id="elsewhere", project_root="/q")
    app.bus.dispatch(Heartbeat(agent="busy"), now=T0 + 40)
    # busy's heartbeat at T0+70 sees quiet (70 s silent) and records it, in the same call
    res = app.bus.dispatch(Heartbeat(agent="busy"), now=T0 + 70)
    assert [app.store.get(p).kind for p in res.positions] == ["agent.left", "agent.heartbeat"]
    assert [e.data().agent_id for e in left_events(app.store)] == ["quiet"]
    # the other project's stale agent was not observed
    assert view(app, "elsewhere", T0 + 70).timed_out is False
    # a registration in /q observes /q
    res = app.bus.dispatch(RegisterAgent(agent_type="codex", project_root="/q"), now=T0 + 80)
    assert [app.store.get(p).kind for p in res.positions] == ["agent.left", "agent.registered"]
    assert sorted(e.data().agent_id for e in left_events(app.store)) == ["elsewhere", "quiet"]


def test_first_writer_wins_a_stale_agent_that_beats_before_anyone_noticed_lives_on(app: LeanCtx) -> None:
    register(app, agent_id="late")
    res = app.bus.dispatch(Heartbeat(agent="late"), now=T0 + 90)
    assert [app.store.get(p).kind for p in res.positions] == ["agent.heartbeat"]
    assert view(app, "late", T0 + 91).status == "active"
    assert left_events(app.store) == []


def test_deregistering_a_timed_out_agent_hides_it(app: LeanCtx) -> None:
    register(app, agent_id="gone")
    app.bus.dispatch(SweepAgents(), project="/p", now=T0 + 100)
    res = app.bus.dispatch(Deregister(agent="gone", reason="cleanup"), now=T0 + 101)
    assert not res.value.already_left and len(res.positions) == 1
    conn = app.projections.reader("agents")
    assert list_agents(conn, now=T0 + 102) == []
    v = view(app, "gone", T0 + 102)
    assert (v.status, v.left_reason, v.timed_out) == ("left", "cleanup", False)
    assert app.bus.dispatch(Deregister(agent="gone"), now=T0 + 103).value.already_left


def test_sweep_scope(app: LeanCtx) -> None:
    register(app, agent_id="p1")
    register(app, agent_id="q1", project_root="/q")
    with pytest.raises(InvalidInput) as ei:
        app.bus.dispatch(SweepAgents(), now=T0 + 100)  # no project anywhere
    assert ei.value.code == "AGENT_INVALID_PROJECT"
    assert [v.agent_id for v in app.bus.dispatch(SweepAgents(project_root="/q"), now=T0 + 100).value.recorded] == [
        "q1"]
    assert [v.agent_id for v in app.bus.dispatch(SweepAgents(all_projects=True), now=T0 + 100).value.recorded] == [
        "p1"]


def test_timed_out_agents_are_refused_with_a_stable_code_through_every_path(app: LeanCtx) -> None:
    register(app, agent_id="x")
    app.bus.dispatch(SweepAgents(all_projects=True), now=T0 + 100)
    for cmd in (Heartbeat(agent="x"), Heartbeat(agent="x", status="busy")):
        with pytest.raises(LeanCtxError) as ei:
            app.bus.dispatch(cmd, now=T0 + 101)
        assert ei.value.code == "AGENT_LEFT"


# ------------------------------------------------------------------------------------------
# real processes observing at once
# ------------------------------------------------------------------------------------------
CHILD = textwrap.dedent(
    """
    import sys, time
    from leanctx.app import LeanCtx
    from leanctx.commands.agents import Heartbeat, RegisterAgent, SweepAgents
    db, me, proj = sys.argv[1], sys.argv[2], sys.argv[3]
    lc = LeanCtx(db)
    if me == "w0":  # this one observes through its own heartbeats
        lc.bus.dispatch(RegisterAgent(agent_type="worker", project_root=proj, agent_id="hb-w0"), actor="hb-w0")
    print("ready", flush=True)
    for line in sys.stdin:
        if me == "w0":
            res = lc.bus.dispatch(Heartbeat(agent="hb-w0"), actor="hb-w0")
            n = len(res.positions) - 1
        else:
            n = len(lc.bus.dispatch(SweepAgents(project_root=proj), actor=me).value.recorded)
        print(n, flush=True)
    lc.close()
    """
)


def test_processes_observing_at_once_record_one_agent_left(tmp_path: Path) -> None:
    db = tmp_path / "events.db"
    workers, rounds = 4, 8
    LeanCtx(db).close()
    procs = [
        subprocess.Popen([sys.executable, "-c", CHILD, str(db), f"w{i}", "/p"], stdin=subprocess.PIPE,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=ROOT)
        for i in range(workers)
    ]
    try:
        for p in procs:
            assert p.stdout.readline().strip() == "ready", p.stderr.read()  # type: ignore[union-attr]
        with LeanCtx(db) as lc:
            for r in range(rounds):
                lc.bus.dispatch(RegisterAgent(agent_type="cursor", project_root="/p", agent_id=f"stale-{r}"),
                                now=time.time() - 1000)
                for p in procs:  # release them together
                    p.stdin.write("go\n")  # type: ignore[union-attr]
                    p.stdin.flush()  # type: ignore[union-attr]
                counts = [int(p.stdout.readline()) for p in procs]  # type: ignore[union-attr]
                assert sum(counts) == 1, (r, counts)
            per_agent = [e.data().agent_id for e in left_events(lc.store)]
            assert sorted(per_agent) == sorted(f"stale-{r}" for r in range(rounds))
            # the heartbeating worker stays alive; every stale agent is listed as timed out
            agents = {v.agent_id: v for v in list_agents(lc.projections.reader("agents"), now=time.time())}
            assert agents["hb-w0"].status == "active"
            assert all(agents[f"stale-{r}"].timed_out for r in range(rounds))
    finally:
        for p in procs:
            p.stdin.close()  # type: ignore[union-attr]
            p.wait(timeout=30)
    assert all(p.returncode == 0 for p in procs)


# ------------------------------------------------------------------------------------------
# through the CLI
# ------------------------------------------------------------------------------------------
def clean_env(db: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("LEAN_CTX_AGENT_ID", "LEAN_CTX_SESSION_ID")}
    env["LEAN_CTX_DB"] = str(db)
    env.update(extra)
    return env


def cli(db: Path, *args: str, check: bool = True, **env: str) -> subprocess.CompletedProcess[str]:
    p = subprocess.run([LEAN_CTX, *args], capture_output=True, text=True, env=clean_env(db, **env), timeout=60)
    if check and p.returncode != 0:
        raise AssertionError(f"lean-ctx {' '.join(args)} exited {p.returncode}\n{p.stdout}\n{p.stderr}")
    return p


def test_cli_list_records_the_timeout_once_even_from_two_processes(tmp_path: Path) -> None:
    db, proj = tmp_path / "events.db", str(tmp_path / "proj")
    (tmp_path / "proj").mkdir()  # a project must exist (PROJECT_NOT_FOUND)
    with LeanCtx(db) as lc:
        lc.bus.dispatch(RegisterAgent(agent_type="cursor", project_root=proj, agent_id="sleepy"),
                        now=time.time() - 300)
        lc.bus.dispatch(RegisterAgent(agent_type="cursor", project_root=proj, agent_id="awake"))
    lists = [subprocess.Popen([LEAN_CTX, "--project", proj, "agent", "list", "--json"], stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True, env=clean_env(db)) for _ in range(2)]
    outs = [p.communicate(timeout=60) for p in lists]
    assert [p.returncode for p in lists] == [0, 0], outs
    for out, _ in outs:
        seen = {a["agent_id"]: a for a in json.loads(out)}
        assert (seen["sleepy"]["status"], seen["awake"]["status"]) == ("stale", "active")
        assert seen["sleepy"]["timed_out"] is True  # recorded by this process or the other one
    with LeanCtx(db) as lc:
        assert len(left_events(lc.store, "sleepy")) == 1
        head = lc.store.head().position
    # a later listing observes nothing new and appends nothing at all
    human = cli(db, "--project", proj, "agent", "list")
    assert "stale" in human.stdout and "sleepy" in human.stdout
    with LeanCtx(db) as lc:
        assert lc.store.head().position == head
    # the timed-out agent is told to register again, and rejoins with its id
    p = cli(db, "agent", "heartbeat", "sleepy", check=False)
    assert p.returncode == 2 and p.stderr.startswith("error[AGENT_LEFT]:") and "register again" in p.stderr
    again = json.loads(cli(db, "agent", "register", "--type", "cursor", "--project-root", proj, "--json",
                           LEAN_CTX_AGENT_ID="sleepy").stdout)
    assert (again["agent_id"], again["name"], again["rejoined"]) == ("sleepy", "cursor-dev-1", True)


def test_cli_list_is_scoped_to_the_project(tmp_path: Path) -> None:
    db = tmp_path / "events.db"
    a, b = tmp_path / "a", tmp_path / "b"
    (a / ".git").mkdir(parents=True)
    (b / ".git").mkdir(parents=True)
    with LeanCtx(db) as lc:
        lc.bus.dispatch(RegisterAgent(agent_type="cursor", project_root=str(a)))
        lc.bus.dispatch(RegisterAgent(agent_type="claude", project_root=str(b)))
    p = subprocess.run([LEAN_CTX, "agent", "list", "--json"], cwd=a, capture_output=True, text=True,
                       env=clean_env(db), timeout=60)
    assert [x["name"] for x in json.loads(p.stdout)] == ["cursor-dev-1"]
    assert [x["name"] for x in json.loads(cli(db, "--project", str(b), "agent", "list", "--json").stdout)] == [
        "claude-dev-1"]
    everywhere = json.loads(cli(db, "--project", str(b), "agent", "list", "--any-project", "--json").stdout)
    assert sorted(x["name"] for x in everywhere) == ["claude-dev-1", "cursor-dev-1"]


def test_two_shells_are_two_agents_that_see_each_other(tmp_path: Path) -> None:
    """No $LEAN_CTX_AGENT_ID: each CLI process acts as local-<pid of its parent>, so two
    editor windows (two parent processes) are distinct agents."""
    db, proj = tmp_path / "events.db", str(tmp_path / "proj")
    (tmp_path / "proj").mkdir()  # a project must exist (PROJECT_NOT_FOUND)
    script = f'echo $$; "{LEAN_CTX}" agent register --type cursor --project-root "{proj}" --json; exit $?'
    shells = []
    for _ in range(2):
        p = subprocess.run(["bash", "-c", script], capture_output=True, text=True, env=clean_env(db), timeout=60)
        assert p.returncode == 0, p.stderr
        pid_line, reg_line = p.stdout.splitlines()[:2]
        shells.append((int(pid_line), json.loads(reg_line)))
    (pid1, reg1), (pid2, reg2) = shells
    assert pid1 != pid2
    assert (reg1["name"], reg2["name"]) == ("cursor-dev-1", "cursor-dev-2")
    # each shell registers as itself, so its later calls act as the agent it registered
    assert (reg1["agent_id"], reg2["agent_id"]) == (f"local-{pid1}", f"local-{pid2}")
    with LeanCtx(db) as lc:
        calls = [e for e in lc.store.read_all(0, TopicFilter(kinds=("tool.called",)))
                 if e.data().command == "agent.register"]
        assert [e.actor for e in calls] == [f"local-{pid1}", f"local-{pid2}"]
        regs = lc.store.read_all(0, TopicFilter(kinds=("agent.registered",)))
        assert [(e.actor, e.data().pid) for e in regs] == [(f"local-{pid1}", pid1), (f"local-{pid2}", pid2)]
    listed = json.loads(cli(db, "--project", proj, "agent", "list", "--json").stdout)
    assert [(x["name"], x["pid"], x["status"]) for x in listed] == [
        ("cursor-dev-1", pid1, "active"), ("cursor-dev-2", pid2, "active")]
    # the identity variable wins over the parent pid
    p = subprocess.run(["bash", "-c", f'"{LEAN_CTX}" agent diary -c progress "hello" --json; exit $?'],
                       capture_output=True, text=True, env=clean_env(db, LEAN_CTX_AGENT_ID="named"), timeout=60)
    assert json.loads(p.stdout)["agent_id"] == "named"


# ------------------------------------------------------------------------------------------
# replay
# ------------------------------------------------------------------------------------------
def test_replay_reproduces_the_registry_with_timeouts(app: LeanCtx) -> None:
    from tools.replay import replay

    register(app, agent_id="a")
    register(app, agent_id="b")
    register(app, agent_id="c", project_root="/q")
    app.bus.dispatch(Heartbeat(agent="b", status="busy"), now=T0 + 30)
    app.bus.dispatch(SweepAgents(all_projects=True), now=T0 + 80)  # a and c time out
    register(app, agent_id="c", project_root="/q", now=T0 + 90)  # c rejoins
    app.bus.dispatch(Deregister(agent="b", reason="done"), now=T0 + 95)
    rep = replay(app, verify=True)
    assert rep.chain_ok
    mine = {p.name: p for p in rep.projections if p.name == "agents"}
    assert mine["agents"].match is True
    assert all(p.match for p in rep.projections), [p.name for p in rep.projections if not p.match]
    before = app.projections.digest("agents")
    replay(app)  # in place
    assert app.projections.digest("agents") == before
    conn = app.projections.reader("agents")
    assert {v.agent_id: v.status for v in list_agents(conn, now=T0 + 96, include_left=True)} == {
        "a": "stale", "b": "left", "c": "active"}
