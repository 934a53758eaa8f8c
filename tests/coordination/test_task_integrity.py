"""Task integrity: who a task names, who may write it, and how it starts.

- A delegate (``to``) or owner given by its name (as ``ctx_agent list`` shows it) is stored as
  the agent's id, so the agent sees the task (``list mine``, ``poll_events``, the overview); a
  name or id that no registered agent has is refused (``AGENT_NOT_FOUND``). ``list owner=``
  takes a name too.
- Under another agent's live lease no field of the task changes (``LEASE_OWNER_MISMATCH``), and
  under its expired lease nothing changes until someone recovers it.
- A task is started only by ``claim`` (which grants a lease): ``update status=in_progress`` is
  refused (``TASK_CLAIM_REQUIRED``), so no task is in progress without an owner and a lease.

Through the command bus, the tool registry as an MCP caller, the real MCP client over stdio and
the real CLI (``replay --verify``): refusals append no task event, so replay still matches.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest

from leanctx.api import registry
from leanctx.api.registry import Caller
from leanctx.app import LeanCtx
from leanctx.commands.bus import Command
from leanctx.commands.tasks import (
    BlockTask,
    ClaimTask,
    CompleteTask,
    CreateTask,
    TaskResult,
    UpdateTask,
    stream_of,
)
from leanctx.errors import LeanCtxError
from leanctx.events import NewEvent, TopicFilter
from leanctx.events.kinds.task import TaskStatusChanged
from leanctx.projections.tasks import get_task, list_tasks
from tools.replay import replay

T0 = 1_900_000_000.0
LEAN_CTX = str(Path(sys.executable).with_name("lean-ctx"))


@pytest.fixture
def lc(tmp_path: Path) -> Iterator[LeanCtx]:
    with LeanCtx(tmp_path / "e.db") as app:
        yield app


@pytest.fixture
def project(tmp_path: Path) -> Path:
    p = tmp_path / "proj"
    p.mkdir()
    return p


def register(lc: LeanCtx, project: Path, agent_id: str) -> str:
    """Register ``agent_id`` as an MCP caller would; its name (``mcp-dev-N``)."""
    res = registry.call(lc, Caller(agent_id, f"s-{agent_id}", str(project)), "ctx_agent",
                        {"action": "register", "role": "dev"})
    return str(res["agent"]["name"])


@pytest.fixture
def names(lc: LeanCtx, project: Path) -> dict[str, str]:
    return {a: register(lc, project, a) for a in ("alice", "bob", "carol")}


def ok(lc: LeanCtx, cmd: Command, actor: str = "alice", now: float = T0) -> TaskResult:
    res = lc.bus.dispatch(cmd, actor=actor, now=now).value
    assert isinstance(res, TaskResult) and res.ok
    return res


def refused(lc: LeanCtx, cmd: Command, code: str, actor: str | None = "alice", now: float = T0) -> str:
    """The refusal's message; the task's stream and the log (but the tool.called record) unchanged."""
    task_id = getattr(cmd, "task_id", None)
    channel = getattr(cmd, "channel", "general")
    before = lc.store.stream_version(stream_of(channel, task_id)) if task_id else None
    head = lc.store.head().position
    with pytest.raises(LeanCtxError) as ei:
        lc.bus.dispatch(cmd, actor=actor, now=now)
    assert ei.value.code == code, ei.value.message
    assert ei.value.exit_code == 2
    assert lc.store.head().position == head + 1  # only the failed tool.called record
    if task_id:
        assert lc.store.stream_version(stream_of(channel, task_id)) == before
    return ei.value.message


def task(lc: LeanCtx, task_id: str, now: float = T0, channel: str = "general") -> Any:
    t = get_task(lc.projections.reader("tasks"), channel, task_id, now=now)
    assert t is not None
    return t


# --- names resolve to ids; unknown agents are refused ---------------------------------------------


def test_a_delegate_or_owner_named_by_its_name_is_stored_as_its_id(lc: LeanCtx, names: dict[str, str]) -> None:
    res = ok(lc, CreateTask(task_id="n1", title="by name", to_agent=names["bob"], owner=f" {names['carol']} "))
    assert (res.task.to_agent, res.task.owner) == ("bob", "carol")
    assert ok(lc, CreateTask(task_id="n2", title="by id", to_agent="bob")).task.to_agent == "bob"
    conn = lc.projections.reader("tasks")
    assert [t.task_id for t in list_tasks(conn, now=T0, assigned_to="bob")] == ["n1", "n2"]
    directed = lc.store.read_all(filter=TopicFilter(to_agent="bob", kinds=("task.created",)))
    assert [e.stream for e in directed] == [stream_of("general", "n1"), stream_of("general", "n2")]
    res = ok(lc, UpdateTask(task_id="n2", owner=names["bob"]))
    assert res.task.owner == "bob" and res.events == ["task.updated"]
    assert ok(lc, UpdateTask(task_id="n2", owner="bob")).unchanged  # the same agent, by id


def test_an_agent_nobody_registered_is_refused(lc: LeanCtx, names: dict[str, str]) -> None:
    for cmd in (CreateTask(title="x", to_agent="cursor-dev-9"), CreateTask(title="x", owner="ghost")):
        msg = refused(lc, cmd, "AGENT_NOT_FOUND")
        assert "ctx_agent action=list" in msg and "`lean-ctx agent list`" in msg
    assert list_tasks(lc.projections.reader("tasks"), now=T0) == []
    ok(lc, CreateTask(task_id="a", title="A"))
    msg = refused(lc, UpdateTask(task_id="a", owner="ghost"), "AGENT_NOT_FOUND")
    assert "'ghost'" in msg
    refused(lc, CreateTask(title="x", to_agent="bad name"), "TASK_INVALID_ARGUMENT")  # malformed stays that


def test_the_tool_resolves_names_and_refuses_a_delegate_change(lc: LeanCtx, project: Path,
                                                               names: dict[str, str]) -> None:
    alice, bob = (Caller(a, f"s-{a}", str(project)) for a in ("alice", "bob"))
    registry.call(lc, alice, "ctx_task", {"action": "create", "title": "for bob", "task_id": "d", "to": names["bob"]})
    registry.call(lc, alice, "ctx_task", {"action": "create", "title": "owned", "task_id": "o", "owner": names["bob"]})
    mine = registry.call(lc, bob, "ctx_task", {"action": "list", "mine": True})
    assert [t["task_id"] for t in mine["tasks"]] == ["d", "o"]
    owned = registry.call(lc, alice, "ctx_task", {"action": "list", "owner": names["bob"]})
    assert [t["task_id"] for t in owned["tasks"]] == ["o"]
    assert registry.call(lc, alice, "ctx_task", {"action": "list", "owner": "bob"})["tasks"] == owned["tasks"]
    with pytest.raises(LeanCtxError) as ei:  # delegation is fixed at creation: not silently ignored
        registry.call(lc, alice, "ctx_task", {"action": "update", "task_id": "o", "to": names["carol"]})
    assert ei.value.code == "INVALID_ARGUMENT" and "owner=" in ei.value.message
    assert task(lc, "o").to_agent is None


def test_a_name_resolves_among_the_agents_of_the_callers_project(lc: LeanCtx, tmp_path: Path) -> None:
    """Names repeat per project (a log shared through LEAN_CTX_DB holds one ``mcp-dev-1`` each)."""
    here, there = tmp_path / "here", tmp_path / "there"
    for p in (here, there):
        p.mkdir()
    assert register(lc, here, "near") == register(lc, there, "far") == "mcp-dev-1"  # the newest is far
    assert register(lc, here, "lead") == "mcp-dev-2"
    lead = Caller("lead", "s-lead", str(here))
    got = registry.call(lc, lead, "ctx_task", {"action": "create", "title": "x", "task_id": "a", "to": "mcp-dev-1"})
    assert got["task"]["to_agent"] == "near"
    got = registry.call(lc, lead, "ctx_task", {"action": "create", "title": "y", "task_id": "b", "to": "far"})
    assert got["task"]["to_agent"] == "far"  # an id reaches an agent of any project
    listed = registry.call(lc, lead, "ctx_task", {"action": "list", "owner": "mcp-dev-1"})["tasks"]
    assert listed == []
    registry.call(lc, lead, "ctx_task", {"action": "update", "task_id": "b", "owner": "mcp-dev-1"})
    assert task(lc, "b").owner == "near"
    listed = registry.call(lc, lead, "ctx_task", {"action": "list", "owner": "mcp-dev-1"})["tasks"]
    assert [t["task_id"] for t in listed] == ["b"]


# --- no write under another agent's lease ----------------------------------------------------------


def test_no_field_changes_under_another_agents_live_lease(lc: LeanCtx, names: dict[str, str]) -> None:
    ok(lc, CreateTask(task_id="a", title="A"))
    ok(lc, CreateTask(task_id="other", title="Other"))
    ok(lc, ClaimTask(task_id="a", lease_seconds=100), actor="bob")
    for cmd in (UpdateTask(task_id="a", depends_on=["other"]), UpdateTask(task_id="a", title="hijacked"),
                UpdateTask(task_id="a", files_hint=["elsewhere.py"]), UpdateTask(task_id="a", acceptance="none"),
                UpdateTask(task_id="a", branch="feat/x"), UpdateTask(task_id="a", title="t", files_hint=["f"])):
        msg = refused(lc, cmd, "LEASE_OWNER_MISMATCH", now=T0 + 10)
        assert msg.startswith("only bob, who holds the lease on task 'a'") and "(90s left)" in msg
    # a write that changes nothing is no write
    assert ok(lc, UpdateTask(task_id="a", title="A", depends_on=[]), now=T0 + 10).unchanged
    # the holder edits freely, and a dependency nobody else slipped in cannot block its `done`
    ok(lc, UpdateTask(task_id="a", title="A2", files_hint=["a.py"], acceptance="tests pass"), actor="bob",
       now=T0 + 11)
    res = ok(lc, CompleteTask(task_id="a"), actor="bob", now=T0 + 12)
    assert (res.task.status, res.task.owner, res.task.depends_on) == ("done", "bob", [])


def test_nothing_changes_under_another_agents_expired_lease_until_recovered(lc: LeanCtx,
                                                                          names: dict[str, str]) -> None:
    ok(lc, CreateTask(task_id="a", title="A"))
    ok(lc, ClaimTask(task_id="a", lease_seconds=10), actor="bob")
    msg = refused(lc, UpdateTask(task_id="a", title="mine now"), "LEASE_EXPIRED_RECOVER_REQUIRED", now=T0 + 20)
    assert "ctx_task action=recover task_id=a" in msg
    ok(lc, UpdateTask(task_id="a", title="still mine"), actor="bob", now=T0 + 20)  # the holder itself may


def test_a_write_by_nobody_in_particular_is_refused_under_a_lease(lc: LeanCtx, names: dict[str, str]) -> None:
    ok(lc, CreateTask(task_id="a", title="A"))
    ok(lc, ClaimTask(task_id="a", lease_seconds=100))
    refused(lc, UpdateTask(task_id="a", acceptance="x"), "LEASE_OWNER_MISMATCH", actor=None)


# --- a task starts only by a claim ----------------------------------------------------------------


@pytest.mark.parametrize("frm", ["open", "blocked"])
def test_update_cannot_start_a_task(lc: LeanCtx, names: dict[str, str], frm: str) -> None:
    ok(lc, CreateTask(task_id="a", title="A", channel="dev"))
    if frm == "blocked":
        ok(lc, ClaimTask(task_id="a", channel="dev"), actor="bob")
        ok(lc, BlockTask(task_id="a", channel="dev", reason="needs the API key"), actor="bob")
    msg = refused(lc, UpdateTask(task_id="a", channel="dev", status="in_progress"), "TASK_CLAIM_REQUIRED")
    assert "ctx_task action=claim task_id=a channel=dev" in msg
    assert "`lean-ctx chat task claim a --channel dev`" in msg
    # not with an owner either: the owner of a task in progress is whoever holds its lease
    refused(lc, UpdateTask(task_id="a", channel="dev", status="in_progress", owner="carol"), "TASK_CLAIM_REQUIRED")
    # the claim does it, with a lease; `recover` then finds one once it expires
    res = ok(lc, ClaimTask(task_id="a", channel="dev", lease_seconds=30))
    assert (res.task.status, res.task.owner, res.task.lease_state) == ("in_progress", "alice", "active")
    refused(lc, CompleteTask(task_id="a", channel="dev"), "LEASE_OWNER_MISMATCH", actor="carol", now=T0 + 1)


def test_finished_tasks_still_report_the_transition(lc: LeanCtx, names: dict[str, str]) -> None:
    ok(lc, CreateTask(task_id="a", title="A"))
    ok(lc, UpdateTask(task_id="a", status="cancelled"))
    refused(lc, UpdateTask(task_id="a", status="in_progress"), "TASK_INVALID_TRANSITION")


def test_the_holder_leaves_in_progress_with_a_consistent_owner(lc: LeanCtx, names: dict[str, str]) -> None:
    """Moves out of in_progress by update end the lease; what stays is an assignment."""
    for tid, to in (("o", "open"), ("b", "blocked"), ("c", "cancelled"), ("d", "done")):
        ok(lc, CreateTask(task_id=tid, title=tid))
        ok(lc, ClaimTask(task_id=tid, lease_seconds=60), actor="bob")
        refused(lc, UpdateTask(task_id=tid, status=to, reason="r"), "LEASE_OWNER_MISMATCH")
        res = ok(lc, UpdateTask(task_id=tid, status=to, reason="r"), actor="bob")
        assert (res.task.status, res.task.owner, res.task.lease_state) == (to, "bob", "none")
    # the holder cannot pass its task on by update; it releases it, or hands it over with a handoff
    ok(lc, CreateTask(task_id="e", title="e"))
    ok(lc, ClaimTask(task_id="e", lease_seconds=60), actor="bob")
    refused(lc, UpdateTask(task_id="e", owner="carol"), "LEASE_CONFLICT", actor="bob")
    refused(lc, UpdateTask(task_id="e", clear_owner=True), "LEASE_CONFLICT", actor="bob")
    assert task(lc, "e").owner == "bob"


def test_a_task_an_older_version_started_without_a_lease_is_claimed(lc: LeanCtx, names: dict[str, str]) -> None:
    """Logs written before this rule may hold a task in progress without a lease (``update
    status=in_progress`` appended a bare status change): it is not given an owner by update; a
    claim gives it one, with a lease."""
    ok(lc, CreateTask(task_id="a", title="A"))
    lc.store.append(stream_of("general", "a"), [NewEvent(
        event=TaskStatusChanged(channel="general", task_id="a", from_status="open", to_status="in_progress"),
        actor="alice", channel="general")], expected_version=1)
    assert (task(lc, "a").status, task(lc, "a").owner, task(lc, "a").lease_state) == ("in_progress", None, "none")
    for cmd in (UpdateTask(task_id="a", owner="carol"), UpdateTask(task_id="a", owner=names["bob"])):
        msg = refused(lc, cmd, "TASK_CLAIM_REQUIRED")
        assert "ctx_task action=claim task_id=a channel=general" in msg
    res = ok(lc, ClaimTask(task_id="a", lease_seconds=60), actor="bob")
    assert (res.task.status, res.task.owner, res.task.lease_state) == ("in_progress", "bob", "active")
    assert all(p.match for p in replay(lc, verify=True).projections)


# --- events stay the truth --------------------------------------------------------------------------


def test_replay_matches_after_refusals(lc: LeanCtx, names: dict[str, str]) -> None:
    ok(lc, CreateTask(task_id="a", title="A", to_agent=names["bob"]))
    ok(lc, CreateTask(task_id="b", title="B"))
    refused(lc, CreateTask(title="x", to_agent="ghost"), "AGENT_NOT_FOUND")
    ok(lc, ClaimTask(task_id="a", lease_seconds=60), actor="bob")
    refused(lc, UpdateTask(task_id="a", depends_on=["b"]), "LEASE_OWNER_MISMATCH")
    refused(lc, UpdateTask(task_id="b", status="in_progress"), "TASK_CLAIM_REQUIRED")
    ok(lc, CompleteTask(task_id="a"), actor="bob", now=T0 + 1)
    before = lc.projections.digest("tasks")
    report = replay(lc, verify=True)
    assert report.ok and report.chain_ok
    assert all(p.match for p in report.projections), [p.name for p in report.projections if not p.match]
    lc.projections.rebuild("tasks")
    assert lc.projections.digest("tasks") == before


def _cli(env: dict[str, str], *args: str, agent: str = "alice") -> subprocess.CompletedProcess[str]:
    return subprocess.run([LEAN_CTX, *args], capture_output=True, text=True, check=False, timeout=60,
                          env={**env, "LEAN_CTX_AGENT_ID": agent})


def test_the_cli_refuses_and_replay_verifies(tmp_path: Path) -> None:
    env = {**os.environ, "LEAN_CTX_DB": str(tmp_path / "cli.db")}
    for who in ("alice", "bob"):
        assert _cli(env, "agent", "register", "--type", "cli", "--id", who, agent=who).returncode == 0
    listed = json.loads(_cli(env, "agent", "list", "--json").stdout)
    bob_name = next(a["name"] for a in (listed["agents"] if isinstance(listed, dict) else listed)
                    if a["agent_id"] == "bob")
    t = ("chat", "task")
    created = json.loads(_cli(env, *t, "create", "--title", "P", "--id", "p", "--to", bob_name, "--json").stdout)
    assert created["task"]["to_agent"] == "bob"
    p = _cli(env, *t, "create", "--title", "Q", "--to", "ghost")
    assert p.returncode == 2 and p.stderr.startswith("error[AGENT_NOT_FOUND]:")
    p = _cli(env, *t, "update", "p", "--status", "in_progress")
    assert p.returncode == 2 and p.stderr.startswith("error[TASK_CLAIM_REQUIRED]:") and "task claim p" in p.stderr
    assert _cli(env, *t, "claim", "p", agent="bob").returncode == 0
    p = _cli(env, *t, "update", "p", "--title", "mine")
    assert p.returncode == 2 and p.stderr.startswith("error[LEASE_OWNER_MISMATCH]:")
    p = _cli(env, "replay", "--verify")
    assert p.returncode == 0, p.stdout + p.stderr


# --- through the real MCP client --------------------------------------------------------------------


async def _mcp(tmp_path: Path) -> None:
    from mcp import Client
    from mcp.client.stdio import StdioServerParameters
    from mcp_types import Implementation

    project = tmp_path / "mcp-proj"
    project.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith("LEAN_CTX")}
    env.update(LEAN_CTX_DB=str(tmp_path / "mcp.db"), LEAN_CTX_HOME=str(tmp_path / "home"))
    meta = {"lean-ctx/structured": True}

    def server() -> Any:
        return StdioServerParameters(command=LEAN_CTX, args=["mcp"], env=env, cwd=str(project))

    async with Client(server(), mode="legacy", client_info=Implementation(name="claude-code", version="1"),
                      read_timeout_seconds=60) as a, \
            Client(server(), mode="legacy", client_info=Implementation(name="cursor", version="1"),
                   read_timeout_seconds=60) as b:
        async def call(c: Any, tool: str, **args: Any) -> Any:
            return await c.call_tool(tool, args, meta=meta)

        agents = (await call(b, "ctx_agent", action="list")).structured_content["agents"]
        me = next(x for x in agents if x["agent_type"] == "cursor")
        r = await call(a, "ctx_task", action="create", title="for cursor", task_id="n1", channel="s3", to=me["name"])
        assert not r.is_error and r.structured_content["task"]["to_agent"] == me["agent_id"]
        mine = (await call(b, "ctx_task", action="list", channel="s3", mine=True)).structured_content["tasks"]
        assert [t["task_id"] for t in mine] == ["n1"]
        polled = await call(b, "ctx_agent", action="poll_events", since=0, kinds=["task.created"])
        assert "n1" in "\n".join(c.text for c in polled.content if getattr(c, "type", "") == "text")
        overview = await call(b, "ctx_overview")
        assert "delegated to you" in "\n".join(c.text for c in overview.content if getattr(c, "type", "") == "text")
        r = await call(a, "ctx_task", action="create", title="x", channel="s3", to="cursor-dev-99")
        assert r.is_error and r.structured_content["error"]["code"] == "AGENT_NOT_FOUND"
        r = await call(b, "ctx_task", action="update", task_id="n1", channel="s3", status="in_progress")
        assert r.is_error and r.structured_content["error"]["code"] == "TASK_CLAIM_REQUIRED"


def test_names_resolve_through_the_real_mcp_client(tmp_path: Path) -> None:
    anyio.run(_mcp, tmp_path)
