"""``handoff import --apply-workflow`` continues the sender's work: the tasks of the bundle that
the sender still owns pass to the importer (``task.handed_over``, a fresh lease on those in
progress); finished tasks, tasks of other agents and tasks the sender claimed again after the
handoff are left alone with the reason; the result is the same after a replay."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from api.test_http_common import Api, make_server  # noqa: F401

from leanctx import clock
from leanctx.api import registry
from leanctx.api.registry import Caller
from leanctx.app import LeanCtx
from leanctx.commands.agents import RegisterAgent
from leanctx.commands.handoff import CreateHandoff, ImportHandoff
from leanctx.commands.tasks import (
    BlockTask,
    ClaimTask,
    CompleteTask,
    CreateTask,
    ReleaseTask,
    RenewTask,
)
from leanctx.errors import LeanCtxError
from leanctx.events import TopicFilter
from leanctx.projections.tasks import get_row, get_task, list_tasks

LEAN_CTX = str(Path(sys.executable).with_name("lean-ctx"))
pytestmark = pytest.mark.timeout(120)


@pytest.fixture
def project(tmp_path: Path) -> Path:
    p = tmp_path / "proj"
    p.mkdir()
    return p


@pytest.fixture
def app(tmp_path: Path) -> Any:
    with LeanCtx(tmp_path / "events.db") as a:
        yield a


def do(app: LeanCtx, cmd: Any, project: Path, actor: str = "a") -> Any:
    return app.bus.dispatch(cmd, actor=actor, session_id=f"s-{actor}", project=str(project)).value


def cli(db: Path, cwd: Path, *args: str, agent: str = "b", check: bool = True) -> subprocess.CompletedProcess[str]:
    e = {k: v for k, v in os.environ.items() if not k.startswith("LEAN_CTX_")}
    e.update(LEAN_CTX_DB=str(db), LEAN_CTX_HOME=os.environ["LEAN_CTX_HOME"], LEAN_CTX_AGENT_ID=agent,
             LEAN_CTX_SESSION_ID=f"s-{agent}", LEAN_CTX_NO_DAEMON="1")
    p = subprocess.run([LEAN_CTX, *args], capture_output=True, text=True, env=e, timeout=60, cwd=cwd,
                       stdin=subprocess.DEVNULL, check=False)
    if check and p.returncode != 0:
        raise AssertionError(f"lean-ctx {' '.join(args)} exited {p.returncode}\n{p.stdout}\n{p.stderr}")
    return p


def tasks_state(app: LeanCtx) -> list[tuple[Any, ...]]:
    conn = app.projections.reader("tasks")
    return [(t.task_id, t.status, t.owner, t.lease_expires_at, t.previous_owner, t.handoff_id, t.version)
            for t in list_tasks(conn, now=clock.now())]


def a_at_work(app: LeanCtx, project: Path, tmp_path: Path) -> Path:
    """a owns t1 (in progress), t2 (open, not started), t3 (in progress, finished after the
    handoff), t4 (released after the handoff, then claimed by c), t5 (blocked) and t6 (released
    and claimed again after the handoff); t7 is delegated to a but nobody claimed it."""
    for agent in ("a", "c"):
        do(app, RegisterAgent(agent_type="claude", agent_id=agent, project_root=str(project)), project, agent)
    for i in range(1, 8):
        owner = "a" if i != 7 else None
        do(app, CreateTask(title=f"task {i}", task_id=f"t{i}", owner=owner, to_agent="a" if i == 7 else None),
           project)
    for i in (1, 3, 4, 5, 6):
        do(app, ClaimTask(task_id=f"t{i}", lease_seconds=300), project)
    do(app, BlockTask(task_id="t5", reason="waits for the schema review"), project)
    res = do(app, CreateHandoff(message="over to you"), project)
    bundle = project / "h.json"  # ctx_handoff reads bundle files inside the project only
    bundle.write_text(res.bundle)
    assert res.counts["tasks"] == 7
    do(app, CompleteTask(task_id="t3"), project)
    do(app, ReleaseTask(task_id="t4"), project)
    do(app, ClaimTask(task_id="t4"), project, actor="c")
    do(app, ReleaseTask(task_id="t6"), project)
    do(app, ClaimTask(task_id="t6"), project)
    return bundle


def test_b_takes_over_as_open_tasks_in_another_process(app: LeanCtx, project: Path, tmp_path: Path) -> None:
    bundle = a_at_work(app, project, tmp_path)
    conn = app.projections.reader("tasks")
    t3_before, t4_before = get_row(conn, "general", "t3"), get_row(conn, "general", "t4")
    t1_lease_of_a = get_task(conn, "general", "t1", now=clock.now()).lease_expires_at
    before = app.store.head().position
    t0 = clock.now()
    p = cli(app.db, project, "--json", "handoff", "import", str(bundle), "--apply-workflow", "--lease", "600")
    out = json.loads(p.stdout)
    assert out["applied"] == ["workflow"] and out["receiver"] == "b"
    rep = {t["task_id"]: t for t in out["tasks"]}
    assert {k: (v["outcome"], v["code"]) for k, v in rep.items()} == {
        "t1": ("handed_over", None),
        "t2": ("handed_over", None),
        "t3": ("left_alone", "TASK_HANDOVER_FINISHED"),
        "t4": ("left_alone", "TASK_HANDOVER_NOT_SENDERS"),
        "t5": ("handed_over", None),
        "t6": ("left_alone", "TASK_HANDOVER_STALE"),
        "t7": ("left_alone", "TASK_HANDOVER_NOT_SENDERS"),
    }
    assert "owned by c" in rep["t4"]["reason"] and "already done" in rep["t3"]["reason"]
    assert "after the handoff was created" in rep["t6"]["reason"] and "nobody owns" in rep["t7"]["reason"]

    now = clock.now()
    conn = app.projections.reader("tasks")
    t1, t2, t5 = (get_task(conn, "general", i, now=now) for i in ("t1", "t2", "t5"))
    # in progress: b owns it with a live lease of its own (600 s from the import), a's lease on record
    assert (t1.status, t1.owner, t1.lease_state, t1.previous_owner) == ("in_progress", "b", "active", "a")
    assert t0 + 590 < clock.parse(t1.lease_expires_at) < now + 610 and t1.lease_seconds == 600
    assert t1.previous_lease_expires_at == t1_lease_of_a and t1.handoff_id == out["handoff_id"]
    assert rep["t1"]["lease_expires_at"] == t1.lease_expires_at
    # not in progress: b owns it, the status is unchanged and there is no lease
    assert (t2.status, t2.owner, t2.lease_state) == ("open", "b", "none")
    assert (t5.status, t5.owner, t5.lease_state, t5.blocked_reason) == ("blocked", "b", "none",
                                                                       "waits for the schema review")
    # left alone: exactly as they were (a's done task, c's task, a's newer claim)
    assert get_row(conn, "general", "t3") == t3_before and t3_before["status"] == "done"
    assert get_row(conn, "general", "t4") == t4_before and t4_before["owner"] == "c"
    assert get_task(conn, "general", "t6", now=now).owner == "a"

    # the events: one task.handed_over per task, caused by the import call, directed to a
    evs = [e for e in app.store.read_all(before)]
    handed = [e for e in evs if e.kind == "task.handed_over"]
    assert [e.stream for e in handed] == ["task:general/t1", "task:general/t2", "task:general/t5"]
    assert {(e.actor, e.to_agent, e.channel) for e in handed} == {("b", "a", "general")}
    call = next(e for e in evs if e.kind == "tool.called")
    assert {e.causation_id for e in handed} == {call.position}
    imported = next(e for e in evs if e.kind == "handoff.imported").to_dict()["payload"]
    assert imported["handed_over"] == ["general/t1", "general/t2", "general/t5"]
    assert app.store.read_last(1, TopicFilter(to_agent="a", kinds=["task.handed_over"]))

    # the lease is b's now: a can no longer renew it, b can finish it
    with pytest.raises(LeanCtxError) as ei:
        do(app, RenewTask(task_id="t1"), project)
    assert ei.value.code == "LEASE_OWNER_MISMATCH"
    assert do(app, CompleteTask(task_id="t1"), project, actor="b").task.status == "done"

    # replay: the rebuilt projection is the live one, row for row
    live = tasks_state(app)
    digest = app.projections.digest("tasks")
    app.projections.rebuild("tasks")
    assert tasks_state(app) == live and app.projections.digest("tasks") == digest
    p = cli(app.db, project, "replay", "--verify")
    assert p.returncode == 0


def test_without_apply_workflow_nothing_changes_and_a_second_import_hands_nothing(
        app: LeanCtx, project: Path, tmp_path: Path) -> None:
    bundle = a_at_work(app, project, tmp_path)
    state0 = tasks_state(app)
    out = json.loads(cli(app.db, project, "--json", "handoff", "import", str(bundle)).stdout)
    assert out["applied"] == [] and tasks_state(app) == state0
    assert {t["task_id"]: t["outcome"] for t in out["tasks"]} == {
        "t1": "can_hand_over", "t2": "can_hand_over", "t3": "left_alone", "t4": "left_alone",
        "t5": "can_hand_over", "t6": "left_alone", "t7": "left_alone"}
    text = cli(app.db, project, "handoff", "import", str(bundle)).stdout
    assert "task general/t1 [in_progress] task 1: can hand over" in text and "--apply-workflow" in text
    cli(app.db, project, "handoff", "import", str(bundle), "--apply-workflow")
    once = tasks_state(app)
    head = app.store.head().position
    out = json.loads(cli(app.db, project, "--json", "handoff", "import", str(bundle), "--apply-workflow").stdout)
    assert {t["task_id"]: t["outcome"] for t in out["tasks"] if t["outcome"] != "left_alone"} == {
        "t1": "already_yours", "t2": "already_yours", "t5": "already_yours"}
    assert tasks_state(app) == once
    assert [e.kind for e in app.store.read_all(head)] == ["tool.called", "handoff.imported"]


def test_a_bad_lease_refuses_the_whole_import(app: LeanCtx, project: Path, tmp_path: Path) -> None:
    bundle = a_at_work(app, project, tmp_path)
    state0, head = tasks_state(app), app.store.head().position
    p = cli(app.db, project, "handoff", "import", str(bundle), "--apply", "--lease", "0", check=False)
    assert p.returncode == 2 and "error[LEASE_INVALID_DURATION]" in p.stderr
    assert tasks_state(app) == state0
    assert [e.kind for e in app.store.read_all(head)] == ["tool.called"]  # the refusal, recorded


def test_ctx_handoff_tool_applies_the_workflow_with_its_lease(app: LeanCtx, project: Path, tmp_path: Path) -> None:
    bundle = a_at_work(app, project, tmp_path)
    t0 = clock.now()
    r = registry.call(app, Caller("b", "s-b", str(project)), "ctx_handoff",
                      {"action": "import", "path": str(bundle), "apply_workflow": True, "lease_seconds": 120})
    assert "task general/t1 [in_progress] task 1: handed over — from a, leased to b until" in r["text"]
    assert "[TASK_HANDOVER_FINISHED]" in r["text"]
    t1 = get_task(app.projections.reader("tasks"), "general", "t1", now=clock.now())
    assert t1.owner == "b" and t0 + 115 < clock.parse(t1.lease_expires_at) < clock.now() + 125


def test_importing_into_the_senders_own_hands_keeps_them(app: LeanCtx, project: Path, tmp_path: Path) -> None:
    bundle = a_at_work(app, project, tmp_path)
    state0 = tasks_state(app)
    v = do(app, ImportHandoff(bundle=bundle.read_text(), apply_workflow=True), project, actor="a")
    assert {t.task_id for t in v.tasks if t.outcome == "already_yours"} == {"t1", "t2", "t5", "t6"}
    assert tasks_state(app) == state0


def test_an_envelope_applied_over_http_hands_the_tasks_to_the_tokens_agent(
        tmp_path: Path, make_server: Any, monkeypatch: pytest.MonkeyPatch) -> None:  # noqa: F811
    from leanctx import envelope as env

    monkeypatch.setenv("LEAN_CTX_A2A_SECRET", "shared-s3cret")
    server = make_server()
    api = Api(server)
    try:
        b = api.register()
        with LeanCtx(tmp_path / "events.db") as lc:  # the server's log, written by a meanwhile
            bundle = a_at_work(lc, tmp_path / "project", tmp_path)
            data = env.seal(json.loads(bundle.read_text()), sender="a", created_at=clock.iso(clock.now()),
                            payload_kind="handoff", secret="shared-s3cret")
            t0 = clock.now()
            r = api.client.post("/v1/a2a/handoff?apply=1&lease_seconds=300", content=data, headers=b.headers)
            assert r.status_code == 200, r.text
            rep = {t["task_id"]: t["outcome"] for t in r.json()["import"]["tasks"]}
            assert [k for k, v in rep.items() if v == "handed_over"] == ["t1", "t2", "t5"]
            t1 = get_task(lc.projections.reader("tasks"), "general", "t1", now=clock.now())
            assert t1.owner == b.agent_id and t0 + 295 < clock.parse(t1.lease_expires_at) < clock.now() + 305
            r = api.client.post("/v1/a2a/handoff?apply=1&lease_seconds=soon", content=data, headers=b.headers)
            assert r.status_code == 422 and r.json()["error"]["code"] == "LEASE_INVALID_DURATION"
    finally:
        api.close()


def test_fold_a_recovery_after_a_handover_is_the_last_takeover() -> None:
    from leanctx.events.kinds.task import TaskCreated, TaskHandedOver, TaskRecovered
    from leanctx.projections.tasks import fold

    row = fold(None, TaskCreated(channel="g", task_id="t", title="x", owner="a"), ts="T1")
    row = fold(row, TaskHandedOver(channel="g", task_id="t", owner="b", previous_owner="a", handoff_id="h-1",
                                   status="in_progress", lease_seconds=60.0, lease_expires_at="T9"), ts="T2")
    assert row is not None and (row["owner"], row["handoff_id"], row["handed_over_at"], row["claimed_at"],
                                row["lease_expires_at"]) == ("b", "h-1", "T2", "T2", "T9")
    row = fold(row, TaskRecovered(channel="g", task_id="t", owner="c", previous_owner="b",
                                  previous_lease_expires_at="T9", recovery_reason="b vanished", lease_seconds=60.0,
                                  lease_expires_at="T99"), ts="T3")
    assert row is not None and (row["owner"], row["previous_owner"], row["handoff_id"], row["recovery_reason"]) == (
        "c", "b", None, "b vanished")


def test_a_task_that_came_back_to_the_sender_after_the_handoff_is_not_covered_by_it(
        app: LeanCtx, project: Path, tmp_path: Path) -> None:
    """a's open task t1 goes to c through another handoff and comes back to a: an older bundle
    of a's (made before all that) must not hand it to b, although a owns it again and no claim
    moved (an open task changes hands without a lease)."""
    for agent in ("a", "c"):
        do(app, RegisterAgent(agent_type="claude", agent_id=agent, project_root=str(project)), project, agent)
    do(app, CreateTask(title="task 1", task_id="t1", owner="a"), project)
    old = do(app, CreateHandoff(message="old"), project).bundle
    to_c = do(app, CreateHandoff(message="to c"), project).bundle
    assert do(app, ImportHandoff(bundle=to_c, apply_workflow=True), project, actor="c").tasks[0].outcome == "handed_over"
    back = do(app, CreateHandoff(message="back to a"), project, actor="c").bundle
    assert do(app, ImportHandoff(bundle=back, apply_workflow=True), project, actor="a").tasks[0].outcome == "handed_over"
    row = get_row(app.projections.reader("tasks"), "general", "t1")
    assert row["owner"] == "a" and row["claimed_at"] is None and row["owner_since"] is not None
    res = do(app, ImportHandoff(bundle=old, apply_workflow=True), project, actor="b")
    assert [(t.task_id, t.outcome, t.code) for t in res.tasks] == [("t1", "left_alone", "TASK_HANDOVER_STALE")]
    assert get_row(app.projections.reader("tasks"), "general", "t1")["owner"] == "a"
    # the bundle made after the return still covers it
    fresh = do(app, CreateHandoff(message="now"), project).bundle
    assert do(app, ImportHandoff(bundle=fresh, apply_workflow=True), project, actor="b").tasks[0].outcome == "handed_over"
