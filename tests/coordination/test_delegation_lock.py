"""Delegation holds: a task delegated to an agent is claimed by that agent while it is here.

``task create --to bob`` makes bob the delegate. While bob is live (active or idle: a heartbeat
or a command of its own within the last 60 s) nobody else may claim the task — not its creator
either — and the refusal (``TASK_DELEGATED_TO_OTHER``) names bob and what to do. Once bob has
left (deregistered) or gone stale (recorded or not), the task is open to any claimer. A claimer
who already holds the lease renews it as before, and a lease held by anyone is still governed by
the lease rules. Real SQLite logs, the real command bus, and the real ``lean-ctx`` CLI.
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

from leanctx.app import LeanCtx
from leanctx.commands.agents import Deregister, Heartbeat, RegisterAgent, SweepAgents
from leanctx.commands.chat import PostMessage
from leanctx.commands.tasks import ClaimTask, CreateTask, ReleaseTask, TaskResult
from leanctx.errors import LeanCtxError
from leanctx.events.codec import payload_dict
from tools.replay import replay

T0 = 1_900_000_000.0
P = "/p"
LEAN_CTX = str(Path(sys.executable).with_name("lean-ctx"))


@pytest.fixture
def lc(tmp_path: Path) -> Iterator[LeanCtx]:
    with LeanCtx(tmp_path / "e.db") as app:
        for a in ("alice", "bob", "carol"):
            app.bus.dispatch(RegisterAgent(agent_type="cli", agent_id=a, project_root=P), actor=a, now=T0, project=P)
        app.bus.dispatch(CreateTask(task_id="d", title="Review the parser", to_agent="bob"), actor="alice", now=T0,
                         project=P)
        yield app


def do(lc: LeanCtx, cmd: Any, actor: str, now: float) -> Any:
    return lc.bus.dispatch(cmd, actor=actor, now=now, project=P).value


def refused(lc: LeanCtx, cmd: Any, actor: str, now: float, code: str) -> LeanCtxError:
    with pytest.raises(LeanCtxError) as ei:
        do(lc, cmd, actor, now)
    assert ei.value.code == code, ei.value
    return ei.value


def test_only_the_live_delegate_may_claim(lc: LeanCtx) -> None:
    err = refused(lc, ClaimTask(task_id="d"), "carol", T0 + 5, "TASK_DELEGATED_TO_OTHER")
    assert "bob" in err.message and "ctx_agent action=post to=bob" in err.message
    assert "`lean-ctx chat post --to bob" in err.message and "60 s" in err.message
    assert err.details == {"to_agent": "bob", "delegate_status": "active"}
    refused(lc, ClaimTask(task_id="d"), "alice", T0 + 5, "TASK_DELEGATED_TO_OTHER")  # the creator too
    [record] = [payload_dict(e.payload) for e in lc.store.read_last(1)]
    assert (record["outcome"], record["error_code"]) == ("error", "TASK_DELEGATED_TO_OTHER")
    res: TaskResult = do(lc, ClaimTask(task_id="d"), "bob", T0 + 6)
    assert (res.task.status, res.task.owner) == ("in_progress", "bob")
    # bob gives it back: it is open again, and still bob's while bob is here
    do(lc, ReleaseTask(task_id="d"), "bob", T0 + 7)
    refused(lc, ClaimTask(task_id="d"), "carol", T0 + 8, "TASK_DELEGATED_TO_OTHER")


def test_a_delegate_that_works_without_heartbeats_is_live(lc: LeanCtx) -> None:
    do(lc, PostMessage(title="on it", body="soon"), "bob", T0 + 50)
    refused(lc, ClaimTask(task_id="d"), "carol", T0 + 100, "TASK_DELEGATED_TO_OTHER")  # idle: 50 s since its post
    res = do(lc, ClaimTask(task_id="d"), "carol", T0 + 111)  # 61 s: stale
    assert (res.task.owner, res.task.to_agent) == ("carol", "bob")


def test_a_stale_delegate_opens_the_task_and_the_lease_rules_take_over(lc: LeanCtx) -> None:
    do(lc, Heartbeat(agent="carol"), "carol", T0 + 55)
    res = do(lc, ClaimTask(task_id="d", lease_seconds=600), "carol", T0 + 61)  # bob: no sign for 61 s
    assert res.task.owner == "carol"
    do(lc, Heartbeat(agent="bob"), "bob", T0 + 62)  # bob is back (its timeout was never recorded)
    err = refused(lc, ClaimTask(task_id="d"), "bob", T0 + 63, "LEASE_CONFLICT")  # carol's lease holds
    assert "carol" in err.message
    again = do(lc, ClaimTask(task_id="d", lease_seconds=600), "carol", T0 + 64)  # the holder renews
    assert again.events == ["task.renewed"]


def test_a_delegate_that_left_or_timed_out_opens_the_task(lc: LeanCtx) -> None:
    do(lc, CreateTask(task_id="e", title="Other", to_agent="carol"), "alice", T0 + 1)
    do(lc, Deregister(agent="bob"), "bob", T0 + 2)
    assert do(lc, ClaimTask(task_id="d"), "alice", T0 + 3).task.owner == "alice"
    do(lc, SweepAgents(project_root=P), "alice", T0 + 70)  # records carol's timeout
    assert do(lc, ClaimTask(task_id="e"), "alice", T0 + 71).task.owner == "alice"


def test_replay_matches_after_refused_claims(lc: LeanCtx) -> None:
    refused(lc, ClaimTask(task_id="d"), "carol", T0 + 5, "TASK_DELEGATED_TO_OTHER")
    do(lc, ClaimTask(task_id="d"), "bob", T0 + 6)
    report = replay(lc, verify=True)
    assert report.ok and all(p.match for p in report.projections), [p.name for p in report.projections if not p.match]


def test_the_cli_refuses_another_agent_and_lets_the_delegate_claim(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("LEAN_CTX_")}
    env["LEAN_CTX_DB"] = str(tmp_path / "cli.db")

    def cli(agent: str, *args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([LEAN_CTX, *args], capture_output=True, text=True, check=False, timeout=60,
                              cwd=tmp_path, env={**env, "LEAN_CTX_AGENT_ID": agent})

    for who in ("alice", "bob", "carol"):
        assert cli(who, "agent", "register", "--type", "cli", "--id", who).returncode == 0
    made = cli("alice", "chat", "task", "create", "--id", "d", "--title", "Review the parser", "--to", "bob")
    assert made.returncode == 0, made.stderr
    p = cli("carol", "--json", "chat", "task", "claim", "d")
    assert p.returncode == 2, p.stdout
    err = json.loads(p.stdout)["error"]
    assert err["code"] == "TASK_DELEGATED_TO_OTHER" and "bob" in err["message"]
    p = cli("carol", "chat", "task", "claim", "d")
    assert p.returncode == 2 and p.stderr.startswith("error[TASK_DELEGATED_TO_OTHER]:"), p.stderr
    p = cli("bob", "--json", "chat", "task", "claim", "d")
    assert p.returncode == 0, p.stderr
    assert json.loads(p.stdout)["task"]["owner"] == "bob"
