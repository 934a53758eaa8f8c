"""Tasks: the full transition table, dependencies, leases with injected `now`, delegation,
replay, the real CLI, and a barrier race of real processes. The agents a task names (alice,
bob, carol) are registered: an owner or delegate nobody registered is refused (see
``test_task_integrity``)."""

from __future__ import annotations

import json
import multiprocessing
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from leanctx import clock
from leanctx.app import LeanCtx
from leanctx.commands.agents import RegisterAgent
from leanctx.commands.bus import Command
from leanctx.commands.tasks import (
    BlockTask,
    ClaimTask,
    CompleteTask,
    CreateTask,
    RecoverTask,
    ReleaseTask,
    RenewTask,
    TaskResult,
    UpdateTask,
    stream_of,
)
from leanctx.errors import LeanCtxError
from leanctx.events import TopicFilter
from leanctx.events.codec import payload_dict
from leanctx.projections.tasks import TaskView, get_task, list_tasks
from tools.replay import replay

T0 = 1_900_000_000.0
LEAN_CTX = str(Path(sys.executable).with_name("lean-ctx"))  # this interpreter's, not whatever PATH finds
STATES = ("open", "in_progress", "blocked", "done", "cancelled")
# written out independently of the code under test
ALLOWED = {
    ("open", "in_progress"), ("open", "blocked"), ("open", "cancelled"),
    ("in_progress", "open"), ("in_progress", "blocked"), ("in_progress", "done"), ("in_progress", "cancelled"),
    ("blocked", "open"), ("blocked", "in_progress"), ("blocked", "cancelled"),
}


AGENTS = ("alice", "bob", "carol")


@pytest.fixture()
def lc(tmp_path: Path) -> Iterator[LeanCtx]:
    with LeanCtx(tmp_path / "e.db") as app:
        for agent in AGENTS:
            app.bus.dispatch(RegisterAgent(agent_type="cli", agent_id=agent, project_root=str(tmp_path)), actor=agent)
        yield app


def view(lc: LeanCtx, task_id: str, *, now: float = T0, channel: str = "general") -> TaskView:
    v = get_task(lc.projections.reader("tasks"), channel, task_id, now=now)
    assert v is not None, task_id
    return v


def version(lc: LeanCtx, task_id: str, channel: str = "general") -> int:
    return lc.store.stream_version(stream_of(channel, task_id))


def ok(lc: LeanCtx, cmd: Command, actor: str | None = "alice", now: float = T0) -> TaskResult:
    """Dispatch; the result must be exactly what the projection then shows."""
    res = lc.bus.dispatch(cmd, actor=actor, now=now).value
    assert isinstance(res, TaskResult) and res.ok
    assert res.task == view(lc, res.task.task_id, now=now, channel=res.task.channel)
    return res


def refused(lc: LeanCtx, cmd: Command, code: str, actor: str | None = "alice", now: float = T0) -> LeanCtxError:
    head = lc.store.head().position
    task_id = getattr(cmd, "task_id", None)
    before = version(lc, task_id) if task_id else None
    with pytest.raises(LeanCtxError) as ei:
        lc.bus.dispatch(cmd, actor=actor, now=now)
    err = ei.value
    assert err.code == code, err.message
    assert err.exit_code == 2 and len(err.message) > 20
    assert lc.store.head().position == head + 1  # only the failed tool.called record
    if task_id:
        assert version(lc, task_id) == before
    return err


def put_in(lc: LeanCtx, task_id: str, state: str, **create: Any) -> None:
    ok(lc, CreateTask(task_id=task_id, title=f"task {task_id}", **create))
    if state in ("in_progress", "done"):
        ok(lc, ClaimTask(task_id=task_id))  # only a claim starts a task
    if state == "done":
        ok(lc, UpdateTask(task_id=task_id, status="done"))
    if state in ("blocked", "cancelled"):
        ok(lc, UpdateTask(task_id=task_id, status=state, reason="waiting on review"))
    assert view(lc, task_id).status == state


# --- the transition table ------------------------------------------------------------


@pytest.mark.parametrize("frm", STATES)
@pytest.mark.parametrize("to", STATES)
def test_transition_table(lc: LeanCtx, frm: str, to: str) -> None:
    put_in(lc, "x", frm)
    v0 = version(lc, "x")
    if frm == to:
        head = lc.store.head().position
        res = ok(lc, UpdateTask(task_id="x", status=to))
        assert res.unchanged and res.events == [] and res.task.status == frm
        assert version(lc, "x") == v0 and lc.store.head().position == head + 1  # no task event
    elif (frm, to) in ALLOWED and to == "in_progress":  # the claim does it (test_verbs_follow_the_transition_table)
        err = refused(lc, UpdateTask(task_id="x", status=to), "TASK_CLAIM_REQUIRED")
        assert "ctx_task action=claim task_id=x" in err.message
    elif (frm, to) in ALLOWED:
        res = ok(lc, UpdateTask(task_id="x", status=to, reason="r" if to == "blocked" else None))
        assert res.task.status == to and not res.unchanged and res.events == ["task.status_changed"]
        assert version(lc, "x") == v0 + 1
        ev = lc.store.read_stream(stream_of("general", "x"))[-1]
        assert payload_dict(ev.payload).items() >= {"from_status": frm, "to_status": to}.items()
    else:
        err = refused(lc, UpdateTask(task_id="x", status=to), "TASK_INVALID_TRANSITION")
        assert frm in err.message and to in err.message


VERBS = {
    "claim": (lambda: ClaimTask(task_id="x"), "in_progress"),
    "done": (lambda: CompleteTask(task_id="x"), "done"),
    "block": (lambda: BlockTask(task_id="x", reason="waiting on review"), "blocked"),
}


@pytest.mark.parametrize("frm", STATES)
@pytest.mark.parametrize("verb", sorted(VERBS))
def test_verbs_follow_the_transition_table(lc: LeanCtx, verb: str, frm: str) -> None:
    make, to = VERBS[verb]
    put_in(lc, "x", frm)
    v0 = version(lc, "x")
    if frm == to and verb != "claim":
        res = ok(lc, make())
        assert res.unchanged and version(lc, "x") == v0
    elif verb == "claim" and frm == "in_progress":  # put_in claimed it: the holder claiming again renews
        res = ok(lc, make())
        assert res.task.status == to and version(lc, "x") == v0 + 1 and res.events == ["task.renewed"]
    elif (frm, to) in ALLOWED:
        res = ok(lc, make())
        assert res.task.status == to and version(lc, "x") == v0 + 1
        assert res.events == [{"claim": "task.claimed", "done": "task.completed", "block": "task.blocked"}[verb]]
    else:
        refused(lc, make(), "TASK_INVALID_TRANSITION")


def test_same_state_field_writes_are_idempotent(lc: LeanCtx) -> None:
    ok(lc, CreateTask(task_id="a", title="Parser", owner="bob", files_hint=["a.py"], branch="feat/p"))
    v0 = version(lc, "a")
    res = ok(lc, UpdateTask(task_id="a", title=" Parser ", owner="bob", files_hint=["a.py"], branch="feat/p",
                            status="open", depends_on=[]))
    assert res.unchanged and version(lc, "a") == v0
    res = ok(lc, UpdateTask(task_id="a", clear_owner=True, clear_branch=True, acceptance="tests pass"))
    assert (res.task.owner, res.task.branch, res.task.acceptance) == (None, None, "tests pass")
    assert res.events == ["task.updated"] and version(lc, "a") == v0 + 1
    assert ok(lc, UpdateTask(task_id="a", clear_owner=True, clear_branch=True)).unchanged
    res = ok(lc, UpdateTask(task_id="a", acceptance=""))
    assert res.task.acceptance is None
    refused(lc, UpdateTask(task_id="a", owner="bob", clear_owner=True), "TASK_INVALID_ARGUMENT")
    refused(lc, UpdateTask(task_id="a", status="finished"), "TASK_INVALID_ARGUMENT")
    refused(lc, UpdateTask(task_id="nope", title="x"), "TASK_NOT_FOUND")


def test_block_keeps_reason_and_owner(lc: LeanCtx) -> None:
    ok(lc, CreateTask(task_id="a", title="A"))
    ok(lc, ClaimTask(task_id="a", lease_seconds=60))
    refused(lc, BlockTask(task_id="a", reason="   "), "TASK_INVALID_ARGUMENT")
    res = ok(lc, BlockTask(task_id="a", reason="needs the API key"))
    assert (res.task.status, res.task.owner, res.task.blocked_reason, res.task.lease_state) == (
        "blocked", "alice", "needs the API key", "none")
    assert ok(lc, BlockTask(task_id="a", reason="needs the API key")).unchanged
    assert ok(lc, BlockTask(task_id="a", reason="needs two keys")).task.blocked_reason == "needs two keys"
    res = ok(lc, ClaimTask(task_id="a"), actor="bob")  # a blocked task has no lease: anyone may take it
    assert (res.task.status, res.task.owner, res.task.blocked_reason) == ("in_progress", "bob", None)


# --- creation and ids ------------------------------------------------------------------


def test_create_generates_readable_ids_and_validates(lc: LeanCtx) -> None:
    assert ok(lc, CreateTask(title="one")).task.task_id == "t1"
    ok(lc, CreateTask(task_id="t2", title="explicit"))
    assert ok(lc, CreateTask(title="three")).task.task_id == "t3"
    assert ok(lc, CreateTask(title="other channel", channel="backend")).task.task_id == "t1"
    refused(lc, CreateTask(task_id="t1", title="again"), "TASK_ALREADY_EXISTS")
    refused(lc, CreateTask(task_id="bad id", title="x"), "TASK_INVALID_ARGUMENT")
    refused(lc, CreateTask(title="x", channel="no/slash"), "TASK_INVALID_ARGUMENT")
    # a task's channel follows the chat channel rule: one nobody could post to or create is refused
    refused(lc, CreateTask(title="x", channel="Work"), "TASK_INVALID_ARGUMENT")
    refused(lc, CreateTask(title="x", channel="v1.2"), "TASK_INVALID_ARGUMENT")
    assert ok(lc, CreateTask(title="hash", channel="#ops")).task.channel == "ops"
    refused(lc, CreateTask(title="   "), "TASK_INVALID_ARGUMENT")
    refused(lc, CreateTask(title="two\nlines"), "TASK_INVALID_ARGUMENT")
    refused(lc, CreateTask(title="x", owner="bad owner"), "TASK_INVALID_ARGUMENT")
    res = ok(lc, CreateTask(task_id="full", title="Full", owner="bob", to_agent="carol", depends_on=["t3", "t1", "t1"],
                            files_hint=["src/a.py", "src/b.py", "src/a.py"], acceptance="tests pass\nand docs",
                            branch="feat/full"))
    t = res.task
    assert (t.owner, t.to_agent, t.created_by, t.depends_on, t.waiting_on, t.files_hint, t.branch) == (
        "bob", "carol", "alice", ["t1", "t3"], ["t1", "t3"], ["src/a.py", "src/b.py"], "feat/full")
    assert (t.status, t.lease_state, t.version, t.created_at) == ("open", "none", 1, clock.iso(T0))
    refused(lc, ClaimTask(task_id="t9"), "TASK_NOT_FOUND")
    refused(lc, ClaimTask(task_id="t1", channel="backend2"), "TASK_NOT_FOUND")
    assert view(lc, "t1").status == "open"


# --- dependencies ------------------------------------------------------------------------


def test_dependencies_gate_start_and_finish(lc: LeanCtx) -> None:
    ok(lc, CreateTask(task_id="a", title="A"))
    ok(lc, CreateTask(task_id="b", title="B", depends_on=["a"]))
    assert view(lc, "b").waiting_on == ["a"]
    err = refused(lc, ClaimTask(task_id="b"), "TASK_DEPENDENCY_NOT_READY")
    assert "a (open)" in err.message
    ok(lc, UpdateTask(task_id="b", status="blocked", reason="waits for a"))  # blocking needs no readiness
    # a task already running can gain a dependency, but then cannot finish before it
    ok(lc, CreateTask(task_id="c", title="C"))
    ok(lc, ClaimTask(task_id="c"))
    ok(lc, UpdateTask(task_id="c", depends_on=["a"]))
    refused(lc, CompleteTask(task_id="c"), "TASK_DEPENDENCY_NOT_READY")
    refused(lc, UpdateTask(task_id="c", status="done"), "TASK_DEPENDENCY_NOT_READY")
    ok(lc, ClaimTask(task_id="a"))
    ok(lc, CompleteTask(task_id="a"))
    assert view(lc, "b").waiting_on == [] and view(lc, "b").depends_on == ["a"]
    assert ok(lc, CompleteTask(task_id="c")).task.status == "done"
    assert ok(lc, ClaimTask(task_id="b"), actor="bob").task.owner == "bob"
    # a cancelled dependency is not done
    ok(lc, CreateTask(task_id="d", title="D"))
    ok(lc, UpdateTask(task_id="d", status="cancelled"))
    ok(lc, CreateTask(task_id="e", title="E", depends_on=["d"]))
    refused(lc, ClaimTask(task_id="e"), "TASK_DEPENDENCY_NOT_READY")
    ok(lc, UpdateTask(task_id="e", depends_on=[]))
    assert ok(lc, ClaimTask(task_id="e")).task.status == "in_progress"


def test_unknown_dependencies_are_refused(lc: LeanCtx) -> None:
    ok(lc, CreateTask(task_id="a", title="A"))
    ok(lc, CreateTask(task_id="z", title="Z", channel="backend"))
    err = refused(lc, CreateTask(task_id="b", title="B", depends_on=["a", "ghost"]), "TASK_UNKNOWN_DEPENDENCY")
    assert "ghost" in err.message
    refused(lc, CreateTask(task_id="b", title="B", depends_on=["z"]), "TASK_UNKNOWN_DEPENDENCY")  # other channel
    refused(lc, UpdateTask(task_id="a", depends_on=["ghost"]), "TASK_UNKNOWN_DEPENDENCY")
    refused(lc, CreateTask(task_id="b", title="B", depends_on=["bad id"]), "TASK_INVALID_ARGUMENT")
    assert view(lc, "a").depends_on == []


def test_dependency_cycles_are_refused(lc: LeanCtx) -> None:
    refused(lc, CreateTask(task_id="a", title="A", depends_on=["a"]), "TASK_DEPENDENCY_CYCLE")
    ok(lc, CreateTask(task_id="a", title="A"))
    refused(lc, UpdateTask(task_id="a", depends_on=["a"]), "TASK_DEPENDENCY_CYCLE")
    ok(lc, CreateTask(task_id="b", title="B", depends_on=["a"]))
    ok(lc, CreateTask(task_id="c", title="C", depends_on=["b"]))
    ok(lc, CreateTask(task_id="d", title="D"))
    err = refused(lc, UpdateTask(task_id="a", depends_on=["b"]), "TASK_DEPENDENCY_CYCLE")  # direct
    assert "a → b → a" in err.message
    err = refused(lc, UpdateTask(task_id="a", depends_on=["d", "c"]), "TASK_DEPENDENCY_CYCLE")  # indirect
    assert "a → c → b → a" in err.message
    ok(lc, UpdateTask(task_id="d", depends_on=["c"]))
    refused(lc, UpdateTask(task_id="a", depends_on=["d"]), "TASK_DEPENDENCY_CYCLE")  # a → d → c → b → a
    # replacing the edge that closed the loop makes the same dependency legal
    ok(lc, UpdateTask(task_id="b", depends_on=[]))
    assert ok(lc, UpdateTask(task_id="a", depends_on=["d"])).task.depends_on == ["d"]
    refused(lc, UpdateTask(task_id="b", depends_on=["a"]), "TASK_DEPENDENCY_CYCLE")
    assert view(lc, "b").depends_on == []


# --- leases --------------------------------------------------------------------------------


def test_lease_conflict_and_owner_mismatch(lc: LeanCtx) -> None:
    ok(lc, CreateTask(task_id="a", title="A"))
    res = ok(lc, ClaimTask(task_id="a", lease_seconds=100), now=T0)
    assert res.events == ["task.claimed"]
    assert (res.task.owner, res.task.lease_state, res.task.lease_expires_at, res.task.lease_remaining_seconds) == (
        "alice", "active", clock.iso(T0 + 100), 100.0)
    err = refused(lc, ClaimTask(task_id="a"), "LEASE_CONFLICT", actor="bob", now=T0 + 50)
    assert "alice" in err.message
    for cmd in (RenewTask(task_id="a"), ReleaseTask(task_id="a"), CompleteTask(task_id="a"),
                BlockTask(task_id="a", reason="mine now"), UpdateTask(task_id="a", status="open"),
                UpdateTask(task_id="a", status="cancelled"), UpdateTask(task_id="a", owner="bob")):
        refused(lc, cmd, "LEASE_OWNER_MISMATCH", actor="bob", now=T0 + 50)
    # no other field either (test_task_integrity); the holder cannot hand its lease over by update
    refused(lc, UpdateTask(task_id="a", title="A, renamed"), "LEASE_OWNER_MISMATCH", actor="bob", now=T0 + 50)
    refused(lc, UpdateTask(task_id="a", owner="bob"), "LEASE_CONFLICT", now=T0 + 50)
    # the holder renews from now; re-claiming is a renewal too
    res = ok(lc, RenewTask(task_id="a", lease_seconds=100), now=T0 + 50)
    assert res.task.lease_expires_at == clock.iso(T0 + 150) and res.events == ["task.renewed"]
    res = ok(lc, ClaimTask(task_id="a", lease_seconds=200), now=T0 + 60)
    assert res.events == ["task.renewed"] and res.task.lease_expires_at == clock.iso(T0 + 260)
    res = ok(lc, ReleaseTask(task_id="a", reason="going home"), now=T0 + 70)
    assert (res.task.status, res.task.owner, res.task.lease_state) == ("open", None, "none")
    assert ok(lc, ClaimTask(task_id="a"), actor="bob", now=T0 + 71).task.owner == "bob"
    assert ok(lc, CompleteTask(task_id="a"), actor="bob", now=T0 + 72).task.status == "done"


def test_expired_lease_is_never_taken_silently(lc: LeanCtx) -> None:
    ok(lc, CreateTask(task_id="a", title="A"))
    ok(lc, ClaimTask(task_id="a", lease_seconds=100), now=T0)
    assert view(lc, "a", now=T0 + 99.9).lease_state == "active"
    v = view(lc, "a", now=T0 + 100)
    assert (v.lease_state, v.lease_remaining_seconds, v.status, v.owner) == ("expired", 0.0, "in_progress", "alice")
    assert [t.task_id for t in list_tasks(lc.projections.reader("tasks"), now=T0 + 100, lease="expired")] == ["a"]
    assert list_tasks(lc.projections.reader("tasks"), now=T0 + 99, lease="expired") == []
    for cmd in (ClaimTask(task_id="a"), RenewTask(task_id="a"), ReleaseTask(task_id="a"), CompleteTask(task_id="a"),
                UpdateTask(task_id="a", status="open")):
        err = refused(lc, cmd, "LEASE_EXPIRED_RECOVER_REQUIRED", actor="bob", now=T0 + 100)
        assert "recover" in err.message
    refused(lc, RecoverTask(task_id="a", reason="alice is gone"), "LEASE_NOT_EXPIRED", actor="bob", now=T0 + 99)
    refused(lc, RecoverTask(task_id="a", reason="   "), "LEASE_INVALID_REASON", actor="bob", now=T0 + 200)
    refused(lc, RecoverTask(task_id="a", reason=""), "LEASE_INVALID_REASON", actor="bob", now=T0 + 200)
    refused(lc, RecoverTask(task_id="a", reason="x"), "TASK_INVALID_ARGUMENT", actor=None, now=T0 + 200)
    res = ok(lc, RecoverTask(task_id="a", reason="alice is gone", lease_seconds=300), actor="bob", now=T0 + 200)
    t = res.task
    assert (t.owner, t.status, t.lease_state, t.lease_expires_at) == ("bob", "in_progress", "active",
                                                                       clock.iso(T0 + 500))
    assert (t.previous_owner, t.previous_lease_expires_at, t.recovery_reason, t.recovered_at) == (
        "alice", clock.iso(T0 + 100), "alice is gone", clock.iso(T0 + 200))
    ev = lc.store.read_stream(stream_of("general", "a"))[-1]
    assert ev.kind == "task.recovered" and ev.actor == "bob"
    assert {k: payload_dict(ev.payload)[k] for k in ("owner", "previous_owner", "previous_lease_expires_at",
                                                     "recovery_reason")} == {
        "owner": "bob", "previous_owner": "alice", "previous_lease_expires_at": clock.iso(T0 + 100),
        "recovery_reason": "alice is gone"}
    # the previous owner is now the outsider
    refused(lc, ClaimTask(task_id="a"), "LEASE_CONFLICT", actor="alice", now=T0 + 201)
    refused(lc, CompleteTask(task_id="a"), "LEASE_OWNER_MISMATCH", actor="alice", now=T0 + 201)
    # recover on behalf of another agent
    res = ok(lc, RecoverTask(task_id="a", owner="carol", reason="bob timed out too"), actor="lead", now=T0 + 600)
    assert (res.task.owner, res.task.previous_owner) == ("carol", "bob")
    assert ok(lc, CompleteTask(task_id="a"), actor="carol", now=T0 + 601).task.status == "done"


def test_holder_may_act_on_its_own_expired_lease(lc: LeanCtx) -> None:
    ok(lc, CreateTask(task_id="a", title="A"))
    ok(lc, ClaimTask(task_id="a", lease_seconds=10), now=T0)
    res = ok(lc, ClaimTask(task_id="a", lease_seconds=10), now=T0 + 20)
    assert res.events == ["task.renewed"] and res.task.lease_expires_at == clock.iso(T0 + 30)
    assert ok(lc, RenewTask(task_id="a", lease_seconds=5), now=T0 + 40).task.lease_state == "active"
    assert ok(lc, ReleaseTask(task_id="a"), now=T0 + 60).task.status == "open"


def test_missing_leases(lc: LeanCtx) -> None:
    ok(lc, CreateTask(task_id="a", title="A"))
    refused(lc, RenewTask(task_id="a"), "LEASE_NOT_FOUND")
    refused(lc, ReleaseTask(task_id="a"), "LEASE_NOT_FOUND")
    refused(lc, RecoverTask(task_id="a", reason="why not"), "LEASE_NOT_FOUND")
    refused(lc, UpdateTask(task_id="a", status="in_progress"), "TASK_CLAIM_REQUIRED")  # never without a lease
    refused(lc, ClaimTask(task_id="a"), "TASK_INVALID_ARGUMENT", actor=None)
    assert ok(lc, ClaimTask(task_id="a"), actor="bob").task.lease_state == "active"
    assert ok(lc, CompleteTask(task_id="a"), actor="bob").task.lease_state == "none"
    refused(lc, RenewTask(task_id="a"), "LEASE_NOT_FOUND", actor="bob")


@pytest.mark.parametrize("seconds", [0, 0.0, -1, -0.5, float("inf"), float("-inf"), float("nan"), 1e12])
def test_invalid_lease_durations(lc: LeanCtx, seconds: float) -> None:
    ok(lc, CreateTask(task_id="a", title="A"))
    refused(lc, ClaimTask(task_id="a", lease_seconds=seconds), "LEASE_INVALID_DURATION")
    ok(lc, ClaimTask(task_id="a", lease_seconds=10))
    refused(lc, RenewTask(task_id="a", lease_seconds=seconds), "LEASE_INVALID_DURATION")
    refused(lc, RecoverTask(task_id="a", reason="r", lease_seconds=seconds), "LEASE_INVALID_DURATION", actor="bob",
            now=T0 + 60)
    assert view(lc, "a").lease_expires_at == clock.iso(T0 + 10)


# --- delegation and queries ------------------------------------------------------------------


def test_delegated_task_events_are_directed(lc: LeanCtx) -> None:
    ok(lc, CreateTask(task_id="d", title="Review the parser", to_agent="bob"), actor="alice")
    ok(lc, CreateTask(task_id="open", title="Anyone"), actor="alice")
    ok(lc, UpdateTask(task_id="d", acceptance="two approvals"), actor="alice")
    ok(lc, ClaimTask(task_id="d"), actor="bob")
    ok(lc, CreateTask(task_id="other", title="Elsewhere", to_agent="bob", channel="backend"), actor="alice")

    def seen(who: str, **kw: Any) -> list[tuple[str, str]]:
        events = lc.store.read_all(filter=TopicFilter(to_agent=who, kinds=("task.*",), **kw))
        return [(e.kind, e.stream) for e in events]

    assert seen("bob") == [("task.created", "task:general/d"), ("task.created", "task:general/open"),
                           ("task.updated", "task:general/d"), ("task.created", "task:backend/other")]
    # the delegate's own moves are directed to the delegator
    assert seen("alice") == [("task.created", "task:general/open"), ("task.claimed", "task:general/d")]
    assert seen("carol") == [("task.created", "task:general/open")]
    assert seen("bob", channel="backend") == [("task.created", "task:backend/other")]
    everything = lc.store.read_all(filter=TopicFilter(kinds=("task.*",)))
    assert all(e.channel == e.stream.split(":")[1].split("/")[0] for e in everything)
    assert [e.to_agent for e in everything] == ["bob", None, "bob", "alice", "bob"]

    conn = lc.projections.reader("tasks")
    mine = list_tasks(conn, now=T0, assigned_to="bob")
    assert [(t.channel, t.task_id) for t in mine] == [("backend", "other"), ("general", "d")]
    assert [t.task_id for t in list_tasks(conn, now=T0, channel="general", to_agent="bob")] == ["d"]
    assert [t.task_id for t in list_tasks(conn, now=T0, owner="bob")] == ["d"]
    assert [t.task_id for t in list_tasks(conn, now=T0, channel="general", status="open")] == ["open"]
    assert [t.task_id for t in list_tasks(conn, now=T0, status=["open", "in_progress"])] == ["other", "d", "open"]


def test_list_is_deterministic(lc: LeanCtx) -> None:
    for i, ch in enumerate(["b", "a", "b", "a"]):
        ok(lc, CreateTask(task_id=f"x{9 - i}", title=f"task {i}", channel=ch), now=T0)
    conn = lc.projections.reader("tasks")
    first = list_tasks(conn, now=T0 + 5)
    assert [(t.channel, t.task_id) for t in first] == [("a", "x8"), ("a", "x6"), ("b", "x9"), ("b", "x7")]
    assert list_tasks(conn, now=T0 + 5) == first


def test_retried_dispatch_is_idempotent_and_mappings_validate(lc: LeanCtx) -> None:
    ok(lc, CreateTask(task_id="a", title="A"))
    first = lc.bus.dispatch(ClaimTask(task_id="a"), actor="alice", now=T0, idempotency_key="claim-a")
    again = lc.bus.dispatch(ClaimTask(task_id="a"), actor="alice", now=T0 + 5, idempotency_key="claim-a")
    assert again.duplicate and again.value == first.value and again.positions == first.positions
    assert version(lc, "a") == 2
    res = lc.bus.dispatch({"task_id": "a", "lease_seconds": 60}, command_type=RenewTask, actor="alice",
                          now=T0 + 10).value
    assert res.task.lease_expires_at == clock.iso(T0 + 70)
    with pytest.raises(LeanCtxError) as ei:
        lc.bus.dispatch({"task_id": "a", "lease_seconds": "soon"}, command_type=RenewTask, actor="alice")
    assert ei.value.code == "INVALID_INPUT"


# --- replay ---------------------------------------------------------------------------------


def test_replay_reproduces_the_tasks(lc: LeanCtx) -> None:
    ok(lc, CreateTask(task_id="a", title="A", files_hint=["x.py"]))
    ok(lc, CreateTask(task_id="b", title="B", depends_on=["a"], to_agent="bob", branch="feat/b"))
    ok(lc, ClaimTask(task_id="a", lease_seconds=30), now=T0)
    ok(lc, RecoverTask(task_id="a", reason="stale"), actor="carol", now=T0 + 60)
    ok(lc, CompleteTask(task_id="a"), actor="carol", now=T0 + 61)
    ok(lc, UpdateTask(task_id="b", clear_branch=True, title="B2", status="blocked", reason="later"), now=T0 + 62)
    refused(lc, UpdateTask(task_id="b", status="in_progress"), "TASK_CLAIM_REQUIRED", now=T0 + 63)
    refused(lc, RenewTask(task_id="b"), "LEASE_NOT_FOUND", actor="bob", now=T0 + 64)  # refusals are logged too
    before = lc.projections.digest("tasks")
    report = replay(lc, verify=True)
    assert report.ok and report.chain_ok
    assert {p.name: p.match for p in report.projections}["tasks"] is True
    assert all(p.match for p in report.projections), [p.name for p in report.projections if not p.match]
    lc.projections.rebuild("tasks")
    assert lc.projections.digest("tasks") == before
    assert view(lc, "a", now=T0 + 70).previous_owner == "alice"


# --- the CLI ----------------------------------------------------------------------------------


def _cli(db: Path, *args: str, agent: str = "alice", check: bool = True) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "LEAN_CTX_DB": str(db), "LEAN_CTX_AGENT_ID": agent}
    p = subprocess.run([LEAN_CTX, *args], capture_output=True, text=True, env=env, timeout=60)
    if check and p.returncode != 0:
        raise AssertionError(f"lean-ctx {' '.join(args)} exited {p.returncode}\n{p.stdout}\n{p.stderr}")
    return p


def test_cli_end_to_end(tmp_path: Path) -> None:
    db = tmp_path / "cli.db"
    _cli(db, "agent", "register", "--type", "cli", "--id", "bob", agent="bob")  # a delegate is a registered agent
    t = ["chat", "task"]
    a = json.loads(_cli(db, *t, "create", "--title", "Write parser", "--id", "parse", "--files", "a.py,b.py",
                        "--json").stdout)
    assert a["task"]["task_id"] == "parse" and a["task"]["files_hint"] == ["a.py", "b.py"]
    assert a["task"]["created_by"] == "alice" and a["events"] == ["task.created"]
    _cli(db, *t, "create", "--title", "Docs", "--id", "docs")
    b = json.loads(_cli(db, *t, "create", "--title", "Ship", "--depends-on", "parse", "--depends-on", "docs,parse",
                        "--to", "bob", "--channel", "general", "--json").stdout)["task"]
    assert (b["task_id"], b["depends_on"], b["to_agent"]) == ("t3", ["docs", "parse"], "bob")
    c = json.loads(_cli(db, *t, "claim", "parse", "--ttl", "120", "--json").stdout)["task"]
    assert (c["owner"], c["lease_state"], c["lease_seconds"]) == ("alice", "active", 120.0)
    p = _cli(db, *t, "claim", "parse", "--as", "bob", check=False)
    assert p.returncode == 2 and p.stderr.startswith("error[LEASE_CONFLICT]:") and "alice" in p.stderr
    p = _cli(db, *t, "claim", "parse", "--json", check=False, agent="bob")
    assert p.returncode == 2 and json.loads(p.stdout)["error"]["code"] == "LEASE_CONFLICT"
    p = _cli(db, *t, "done", "parse", "--as", "bob", check=False)
    assert p.returncode == 2 and "LEASE_OWNER_MISMATCH" in p.stderr
    for flag, value in (("--lease", "0"), ("--ttl", "-5"), ("--lease-seconds", "inf"), ("--lease", "nan")):
        p = _cli(db, *t, "renew", "parse", flag, value, check=False)
        assert p.returncode == 2 and "LEASE_INVALID_DURATION" in p.stderr, (flag, value, p.stderr)
    r = json.loads(_cli(db, *t, "renew", "parse", "--lease", "600", "--json").stdout)["task"]
    assert r["lease_seconds"] == 600.0
    out = _cli(db, *t, "done", "parse").stdout
    assert "parse" in out and "done" in out
    p = _cli(db, *t, "update", "parse", "--status", "open", check=False)
    assert p.returncode == 2 and "TASK_INVALID_TRANSITION" in p.stderr
    p = _cli(db, *t, "update", "parse", "--depends-on", "t3", check=False)
    assert p.returncode == 2 and "TASK_DEPENDENCY_CYCLE" in p.stderr
    p = _cli(db, *t, "recover", "t3", "--reason", "", check=False)
    assert p.returncode == 2 and "LEASE_INVALID_REASON" in p.stderr
    p = _cli(db, *t, "show", "nope", check=False)
    assert p.returncode == 2 and "TASK_NOT_FOUND" in p.stderr
    mine = json.loads(_cli(db, *t, "list", "--mine", "--json", agent="bob").stdout)
    assert [x["task_id"] for x in mine] == ["t3"] and mine[0]["waiting_on"] == ["docs"]
    listed = _cli(db, *t, "list", "--status", "open,done").stdout
    assert listed.splitlines()[0].split()[:3] == ["ID", "STATUS", "OWNER"] and len(listed.splitlines()) == 4
    shown = json.loads(_cli(db, *t, "show", "parse", "--json").stdout)
    assert (shown["status"], shown["owner"]) == ("done", "alice")


def test_every_task_verb_has_help() -> None:
    from typer.testing import CliRunner

    from leanctx.api.cli.app import app

    runner = CliRunner()
    verbs = ("create", "list", "show", "update", "claim", "renew", "done", "block", "release", "recover")
    res = runner.invoke(app, ["chat", "task", "--help"])
    assert res.exit_code == 0 and all(v in res.output for v in verbs)
    for verb in verbs:
        res = runner.invoke(app, ["chat", "task", verb, "--help"])
        assert res.exit_code == 0 and "Usage" in res.output and len(res.output) > 300, verb
    res = runner.invoke(app, ["chat", "task", "claim", "--help"])
    assert all(f in res.output for f in ("--lease-seconds", "--lease", "--ttl", "--as", "--channel", "--json"))


# --- the barrier race --------------------------------------------------------------------------

WORKERS = 8
ROUNDS = 100


def _race_worker(db: str, idx: int, rounds: int, barrier: Any, queue: Any) -> None:
    from leanctx.app import LeanCtx as App
    from leanctx.commands.tasks import ClaimTask as Claim
    from leanctx.errors import LeanCtxError as Err

    out: list[str] = []
    try:
        with App(db) as app:
            for r in range(rounds):
                barrier.wait(timeout=120)
                try:
                    app.bus.dispatch(Claim(task_id=f"r{r}"), actor=f"w{idx}")
                    out.append("WON")
                except Err as exc:
                    out.append(exc.code)
    finally:
        queue.put((idx, out))


def test_barrier_race_one_winner_per_round(tmp_path: Path) -> None:
    db = tmp_path / "race.db"
    with LeanCtx(db) as lc:
        for r in range(ROUNDS):
            lc.bus.dispatch(CreateTask(task_id=f"r{r}", title=f"round {r}"), actor="lead")
    ctx = multiprocessing.get_context("spawn")
    barrier = ctx.Barrier(WORKERS)
    queue = ctx.Queue()
    procs = [ctx.Process(target=_race_worker, args=(str(db), i, ROUNDS, barrier, queue)) for i in range(WORKERS)]
    t0 = time.perf_counter()
    for p in procs:
        p.start()
    results = dict(queue.get(timeout=240) for _ in procs)
    for p in procs:
        p.join(timeout=60)
        assert p.exitcode == 0
    elapsed = time.perf_counter() - t0
    assert sorted(results) == list(range(WORKERS)) and all(len(v) == ROUNDS for v in results.values()), results
    with LeanCtx(db) as lc:
        conn = lc.projections.reader("tasks")
        for r in range(ROUNDS):
            outcomes = [results[i][r] for i in range(WORKERS)]
            winners = [i for i in range(WORKERS) if outcomes[i] == "WON"]
            assert len(winners) == 1, (r, outcomes)
            assert sorted(outcomes) == ["LEASE_CONFLICT"] * (WORKERS - 1) + ["WON"], (r, outcomes)
            t = get_task(conn, "general", f"r{r}", now=clock.now())
            assert t is not None and (t.owner, t.status, t.version) == (f"w{winners[0]}", "in_progress", 2)
        winners_overall = {i for r in range(ROUNDS) for i in range(WORKERS) if results[i][r] == "WON"}
        assert len(winners_overall) >= 2  # the processes really raced (no single process always first)
        claimed = lc.store.read_all(filter=TopicFilter(kinds=("task.claimed",)))
        assert len(claimed) == ROUNDS
        assert lc.store.verify().ok
    print(f"\n{WORKERS} processes x {ROUNDS} rounds: {elapsed:.1f}s")
