"""The overview's task section: counts by status in the words of ``chat state`` (open / in
progress / blocked), per channel when tasks live in more than one; each in-progress line with its
lease state (live until …, or expired and recoverable with the call that recovers it); the
"+N more" line names the channels of the tasks it leaves out; the token budget still holds.
Through ``build_overview``, the ``ctx_overview`` tool and the real ``lean-ctx overview``."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from leanctx.api import registry
from leanctx.api.registry import Caller
from leanctx.app import LeanCtx
from leanctx.channel_state import channel_state, render_state
from leanctx.commands.agents import RegisterAgent
from leanctx.commands.chat import PostMessage
from leanctx.commands.tasks import BlockTask, ClaimTask, CreateTask
from leanctx.context.tokens import count_tokens
from leanctx.overview import build_overview

LEAN_CTX = str(Path(sys.executable).with_name("lean-ctx"))
T0 = 1_800_000_000.0  # 2027-01-15T08:00:00Z
pytestmark = pytest.mark.timeout(120)


@pytest.fixture
def project(tmp_path: Path) -> Path:
    p = tmp_path / "proj"
    p.mkdir()
    return Path(os.path.realpath(p))


@pytest.fixture
def app(tmp_path: Path) -> Iterator[LeanCtx]:
    with LeanCtx(tmp_path / "events.db") as a:
        yield a


def do(app: LeanCtx, cmd: Any, actor: str, project: Path, now: float = T0) -> Any:
    return app.bus.dispatch(cmd, actor=actor, session_id=None, project=str(project), now=now).value


def register(app: LeanCtx, project: Path, *agents: str) -> None:
    for agent in agents:
        do(app, RegisterAgent(agent_type="claude", role="dev", project_root=str(project), agent_id=agent), agent,
           project)


def general_board(app: LeanCtx, project: Path) -> None:
    """general: t1 in progress (bob, lease 60 s from T0), t2 in progress (carl, lease 1 h),
    t3 blocked, t4 open."""
    register(app, project, "ana", "bob", "carl")
    for title in ("fix the lexer", "write the docs", "review the parser", "tag the version"):
        do(app, CreateTask(title=title), "bob", project)
    do(app, ClaimTask(task_id="t1", lease_seconds=60), "bob", project)
    do(app, ClaimTask(task_id="t2", lease_seconds=3600), "carl", project)
    do(app, ClaimTask(task_id="t3", lease_seconds=600), "bob", project)
    do(app, BlockTask(task_id="t3", reason="waiting on CI"), "bob", project)


def section(text: str) -> list[str]:
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("## tasks"))
    end = next((i for i in range(start + 1, len(lines)) if lines[i].startswith("## ")), len(lines))
    return lines[start:end]


def test_counts_by_status_match_chat_state(app: LeanCtx, project: Path) -> None:
    general_board(app, project)
    now = T0 + 12 * 60
    ov = build_overview(app, agent_id="ana", session_id=None, project=str(project), now=now)
    head = section(ov.text)[0]
    assert head == "## tasks in general: 1 open, 2 in progress, 1 blocked — 1 lease expired, 0 yours", ov.text
    state = render_state(channel_state(app.projections.reader("tasks"), "general", now=now, position=0))
    assert "## tasks (4 not finished;" in state  # the same four, in the same words
    assert ov.task_counts == {"general": {"open": 1, "in_progress": 2, "blocked": 1}}


def test_in_progress_lines_carry_their_lease_state(app: LeanCtx, project: Path) -> None:
    general_board(app, project)
    ov = build_overview(app, agent_id="ana", session_id=None, project=str(project), now=T0 + 12 * 60 + 5)
    by_id = {re.search(r"general/(t\d+)", line).group(1): line for line in ov.tasks}  # type: ignore[union-attr]
    assert by_id["t1"].endswith(" — owner bob — lease expired 11m ago: recoverable with ctx_task action=recover "
                                "channel=general task_id=t1 reason=…"), by_id["t1"]
    assert by_id["t2"].endswith(" — owner carl — lease live until 09:00:00Z (47m left)"), by_id["t2"]
    assert "lease" not in by_id["t3"] and by_id["t3"].endswith(" — blocked: waiting on CI")
    assert "lease" not in by_id["t4"]
    # a recoverable task comes before the others that are not the caller's
    assert ov.tasks[0].startswith("- [in_progress] general/t1:")


def test_own_expired_lease_says_renew(app: LeanCtx, project: Path) -> None:
    general_board(app, project)
    ov = build_overview(app, agent_id="bob", session_id=None, project=str(project), now=T0 + 3600 * 3)
    line = next(t for t in ov.tasks if "general/t1:" in t)
    assert line.endswith(" — your lease expired 2h ago: renew it with ctx_task action=renew channel=general "
                         "task_id=t1"), line
    other = next(t for t in ov.tasks if "general/t2:" in t)  # carl's, expired too: bob may recover it
    assert "lease expired 2h ago: recoverable with ctx_task action=recover" in other
    assert section(ov.text)[0].endswith("— 2 lease expired, 2 yours")  # t1 owned, t3 still assigned to bob


def test_counts_per_channel_and_more_names_the_channels(app: LeanCtx, project: Path) -> None:
    general_board(app, project)
    for i in range(6):
        do(app, CreateTask(title=f"ops job {i}", channel="ops"), "bob", project)
    do(app, CreateTask(title="update the changelog"), "bob", project)  # general/t5
    do(app, ClaimTask(task_id="t2", channel="ops", lease_seconds=60), "carl", project)
    ov = build_overview(app, agent_id="ana", session_id=None, project=str(project), now=T0 + 600)
    lines = section(ov.text)
    assert lines[0] == ("## tasks in 2 channels — general: 2 open, 2 in progress, 1 blocked; "
                        "ops: 5 open, 1 in progress — 2 lease expired, 0 yours"), lines[0]
    assert ov.task_counts == {"general": {"open": 2, "in_progress": 2, "blocked": 1},
                              "ops": {"open": 5, "in_progress": 1}}
    shown = lines[1:-1]
    assert len(shown) == 5
    assert shown[0].startswith("- [in_progress] general/t1:") and shown[1].startswith("- [in_progress] ops/t2:")
    hidden: dict[str, int] = {}
    for t in ov.tasks[5:]:
        ch = t.split("] ", 1)[1].split("/", 1)[0]
        hidden[ch] = hidden.get(ch, 0) + 1
    assert hidden == {"general": 1, "ops": 5}
    assert lines[-1] == "  (+6 more) in general: 1, ops: 5 — ctx_task action=list channel=…", lines[-1]
    one = build_overview(app, agent_id="ana", session_id=None, project=str(project), now=T0 + 600, per_section=7)
    assert section(one.text)[-1] == "  (+4 more) in ops: 4 — ctx_task action=list channel=ops"  # the one to list


def test_budget_holds_with_many_channels(app: LeanCtx, project: Path) -> None:
    general_board(app, project)
    for c in range(8):
        for i in range(4):
            do(app, CreateTask(title=f"job {i} of a channel with a fairly long descriptive title", channel=f"ch{c}"),
               "bob", project)
        do(app, ClaimTask(task_id="t1", channel=f"ch{c}", lease_seconds=60), "carl", project)
    do(app, PostMessage(title="hello", body="standup"), "bob", project)
    for budget in (700, 300, 150):
        ov = build_overview(app, agent_id="ana", session_id=None, project=str(project), now=T0 + 600,
                            max_tokens=budget)
        assert ov.tokens == count_tokens(ov.text) <= budget, (budget, ov.text)
        lines = section(ov.text)
        assert lines[0].startswith("## tasks in 9 channels — ch0: 3 open, 1 in progress; ")
        assert "+5 channels" in lines[0] and lines[0].endswith("— 9 lease expired, 0 yours")
        assert lines[-1].startswith("  (+")
        if budget >= 300:  # at 150 the hint may not fit beside a long project path (pytest's tmp dirs vary)
            assert "ctx_task action=list channel=…" in lines[-1]


def test_ctx_overview_tool_returns_the_counts(app: LeanCtx, project: Path) -> None:
    general_board(app, project)
    out = registry.call(app, Caller("ana", "s1", str(project)), "ctx_overview", {})
    assert "## tasks in general: 1 open, 2 in progress, 1 blocked" in out["text"]
    assert out["overview"]["task_counts"] == {"general": {"open": 1, "in_progress": 2, "blocked": 1}}


def test_cli_overview_shows_recoverable_task(tmp_path: Path, project: Path) -> None:
    db = tmp_path / "cli.db"
    then = time.time() - 600
    with LeanCtx(db) as app:
        register(app, project, "bob")
        do(app, CreateTask(title="fix the lexer"), "bob", project, now=then)
        do(app, CreateTask(title="ship it", channel="ops"), "bob", project, now=then)
        do(app, ClaimTask(task_id="t1", lease_seconds=1), "bob", project, now=then)
    env = {k: v for k, v in os.environ.items() if not k.startswith("LEAN_CTX_")}
    env.update(LEAN_CTX_DB=str(db), LEAN_CTX_HOME=str(tmp_path / "home"), LEAN_CTX_AGENT_ID="ana")
    p = subprocess.run([LEAN_CTX, "overview"], check=False, env=env, cwd=project, capture_output=True, text=True,
                       timeout=60)
    assert p.returncode == 0, p.stderr
    assert "## tasks in 2 channels — general: 1 in progress; ops: 1 open — 1 lease expired, 0 yours" in p.stdout
    assert re.search(r"general/t1: fix the lexer — owner bob — lease expired (9|10)m ago: recoverable with "
                     r"ctx_task action=recover channel=general task_id=t1 reason=…", p.stdout), p.stdout


def test_budget_holds_under_a_long_project_path(app: LeanCtx, tmp_path: Path) -> None:
    """The headings name the project's path: under a small budget and a long path they alone
    can be over it. The overview still fits (the rest cut, marked with …)."""
    deep = tmp_path.joinpath(*[f"a-rather-long-folder-name-{k}" for k in range(12)])
    deep.mkdir(parents=True)
    general_board(app, deep)
    for c in range(8):
        do(app, CreateTask(title=f"job of channel {c}", channel=f"ch{c}"), "bob", deep)
    for budget in (150, 90, 60):
        ov = build_overview(app, agent_id="ana", session_id=None, project=str(deep), now=T0 + 600, max_tokens=budget)
        assert ov.tokens == count_tokens(ov.text) <= budget, (budget, ov.tokens, ov.text)
