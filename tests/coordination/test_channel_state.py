"""chat roster / chat state: one deterministic summary composed from every coordination projection."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from leanctx.app import LeanCtx
from leanctx.channel_state import channel_state, render_state, roster
from leanctx.commands.agents import RegisterAgent
from leanctx.commands.chat import InitChannel, PostMessage
from leanctx.commands.locks import LockPaths
from leanctx.commands.scent import ClaimScent
from leanctx.commands.tasks import BlockTask, ClaimTask, CreateTask
from leanctx.errors import CommandError

LEAN_CTX = str(Path(sys.executable).with_name("lean-ctx"))
T0 = 1_800_000_000.0


@pytest.fixture()
def world(tmp_path: Path):  # type: ignore[no-untyped-def]
    proj = tmp_path / "proj"
    (proj / "src").mkdir(parents=True)
    lc = LeanCtx(tmp_path / "e.db")
    d = lambda cmd, actor, t: lc.bus.dispatch(cmd, actor=actor, project=str(proj), now=T0 + t)  # noqa: E731
    d(RegisterAgent(agent_type="cursor", role="dev", agent_id="a"), "a", 0)
    d(RegisterAgent(agent_type="claude", role="review", agent_id="b"), "b", 1)
    d(InitChannel(channel="dev", members=["a", "b", "c"], topic="backend"), "a", 2)
    d(PostMessage(channel="dev", to="all", title="found a bug", body="in x", category="finding"), "a", 3)
    d(PostMessage(channel="dev", to="b", title="secret for b", body="psst"), "a", 4)
    d(CreateTask(task_id="t1", title="fix bug", channel="dev"), "a", 5)
    d(CreateTask(task_id="t2", title="test it", channel="dev", depends_on=["t1"]), "a", 6)
    d(CreateTask(task_id="t3", title="docs", channel="dev"), "b", 7)
    d(ClaimTask(task_id="t1", channel="dev", lease_seconds=600), "a", 8)
    d(BlockTask(task_id="t3", channel="dev", reason="needs input"), "b", 9)
    d(LockPaths(paths=["src/a.py"], lease_seconds=600), "a", 10)
    d(ClaimScent(target="src/b.py"), "b", 11)
    yield lc, str(proj)
    lc.close()


def test_state_lists_tasks_locks_claims_and_broadcasts_only(world) -> None:  # type: ignore[no-untyped-def]
    lc, proj = world
    conn = lc.projections.reader("channels")
    st = channel_state(conn, "dev", now=T0 + 20, position=lc.store.head().position, project=proj)
    assert [t.task_id for t in st.tasks["in_progress"]] == ["t1"]
    assert st.tasks["in_progress"][0].owner == "a" and st.tasks["in_progress"][0].lease_state == "active"
    assert [(t.task_id, t.waiting_on) for t in st.tasks["open"]] == [("t2", ["t1"])]
    assert [(t.task_id, t.blocked_reason) for t in st.tasks["blocked"]] == [("t3", "needs input")]
    assert [(lk.path, lk.owner) for lk in st.locks] == [("src/a.py", "a")]
    assert [(c.target, c.agent) for c in st.claims] == [("src/b.py", "b")]
    assert [m.title for m in st.messages] == ["found a bug"]  # the directed message stays private
    text = render_state(st)
    assert "secret for b" not in text and "psst" not in text
    # later: the lease has expired, the claim decayed below its threshold
    later = channel_state(conn, "dev", now=T0 + 3600, position=lc.store.head().position, project=proj)
    assert later.tasks["in_progress"][0].lease_state == "expired"
    assert later.claims == [] and later.locks == []


def test_roster_has_live_status_and_unregistered_members(world) -> None:  # type: ignore[no-untyped-def]
    lc, proj = world
    conn = lc.projections.reader("channels")
    members = {m.agent: m for m in roster(conn, "dev", now=T0 + 20, project=proj)}
    assert {k: v.status for k, v in members.items()} == {"a": "active", "b": "active", "c": "unregistered"}
    assert members["a"].name == "cursor-dev-1" and members["b"].name == "claude-review-1"
    stale = {m.agent: m.status for m in roster(conn, "dev", now=T0 + 500, project=proj)}
    assert stale["a"] == "stale"
    with pytest.raises(CommandError) as ei:
        roster(conn, "nope", now=T0, project=proj)
    assert ei.value.code == "CHAT_CHANNEL_NOT_FOUND"


def test_cli_state_is_byte_identical_for_the_same_log_and_after_replay(world, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    lc, proj = world
    db = str(lc.db)
    env = {**os.environ, "LEAN_CTX_DB": db, "LEAN_CTX_AGENT_ID": "a"}

    def cli(*args: str) -> str:
        p = subprocess.run([LEAN_CTX, "--project", proj, *args], env=env, capture_output=True, text=True,
                           timeout=60)
        assert p.returncode == 0, p.stderr
        return p.stdout

    first = cli("chat", "state", "dev")
    assert first == cli("chat", "state", "dev")
    assert "## tasks (3 not finished; 0 done, 0 cancelled)" in first
    assert "- [in_progress] t1: fix bug — owner a" in first
    cli("replay")
    assert cli("chat", "state", "dev") == first
    as_json = json.loads(cli("chat", "state", "dev", "--json"))
    assert as_json["channel"] == "dev" and as_json["position"] == lc.store.head().position
    roster_json = json.loads(cli("chat", "roster", "dev", "--json"))
    assert [m["agent"] for m in roster_json] == ["a", "b", "c"]
