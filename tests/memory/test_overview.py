"""The wake-up briefing: live agents (stale and foreign ones pruned), open and delegated tasks,
unread messages, locks and claims, relevant diary entries, the resume block, the token budget;
through the tool registry and the real ``lean-ctx overview``."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from leanctx.api import registry
from leanctx.api.registry import Caller
from leanctx.app import LeanCtx
from leanctx.commands.agents import RegisterAgent
from leanctx.commands.chat import PostMessage
from leanctx.commands.diaries import WriteDiary
from leanctx.commands.locks import LockPaths
from leanctx.commands.scent import ClaimScent
from leanctx.commands.sessions import AddNote, SetTask
from leanctx.commands.tasks import CreateTask
from leanctx.context.tokens import count_tokens
from leanctx.overview import build_overview

LEAN_CTX = str(Path(sys.executable).with_name("lean-ctx"))  # this interpreter's, not whatever PATH finds
T0 = 1_800_000_000.0
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


def do(app: LeanCtx, cmd: Any, actor: str, project: Path, now: float = T0, sid: str | None = None) -> Any:
    return app.bus.dispatch(cmd, actor=actor, session_id=sid, project=str(project), now=now).value


def populate(app: LeanCtx, project: Path, other: Path) -> None:
    for agent, root, at in (("ana", project, T0), ("bob", project, T0), ("carl", project, T0 - 3600),
                            ("dave", other, T0)):
        do(app, RegisterAgent(agent_type="claude", role="dev", project_root=str(root), agent_id=agent), agent, root,
           now=at)
    do(app, CreateTask(title="review the parser", to_agent="ana"), "bob", project)
    do(app, CreateTask(title="write the changelog"), "bob", project)
    do(app, PostMessage(title="ping ana", body="look at t1", to="ana"), "bob", project)
    do(app, PostMessage(title="hello all", body="standup"), "bob", project)
    do(app, LockPaths(paths=["src/parser.py"]), "bob", project)
    do(app, ClaimScent(target="src/lexer.py"), "bob", project)
    do(app, WriteDiary(category="discovery", text="the parser chokes on BOM"), "bob", project)
    do(app, WriteDiary(category="insight", text="unrelated deploy note"), "bob", project)
    do(app, WriteDiary(category="progress", text="set up the tokenizer"), "ana", project)


def test_overview_content_and_pruning(app: LeanCtx, project: Path, tmp_path: Path) -> None:
    populate(app, project, tmp_path / "elsewhere")
    do(app, SetTask(task="fix the parser", step=2, total=3), "ana", project, sid="s-ana")
    do(app, AddNote(note="finding", text="BOM at offset 0"), "ana", project, sid="s-ana")
    ov = build_overview(app, agent_id="ana", session_id="s-ana", project=str(project), task="parser BOM",
                        now=T0 + 5)
    assert ov.agents == ["ana", "bob"] and ov.pruned_agents == 2  # carl is stale, dave in another project
    assert "carl" not in ov.text and "dave" not in ov.text
    assert ov.tasks[0].startswith("- [open] general/t1: review the parser") and "delegated to you" in ov.tasks[0]
    assert any("write the changelog" in t for t in ov.tasks)
    assert ov.unread == {"general": 2}
    assert ov.locks and "src/parser.py — bob" in ov.locks[0]
    assert ov.claims and "src/lexer.py" in ov.claims[0]
    assert ov.diary and "the parser chokes on BOM" in ov.diary[0]
    assert not any("unrelated deploy note" in d for d in ov.diary)
    assert ov.resume is not None and "task: fix the parser — step 2/3" in ov.resume and "BOM at offset 0" in ov.resume
    assert ov.resume in ov.text and ov.tokens == count_tokens(ov.text) <= 700


def test_overview_without_session_state_and_within_budget(app: LeanCtx, project: Path, tmp_path: Path) -> None:
    populate(app, project, tmp_path / "elsewhere")
    for i in range(40):
        do(app, CreateTask(title=f"task number {i} with a reasonably long descriptive title"), "bob", project)
    ov = build_overview(app, agent_id="ana", session_id="s-none", project=str(project), now=T0 + 5, max_tokens=300)
    assert ov.resume is None and "## lean-ctx resume" not in ov.text
    assert ov.tokens == count_tokens(ov.text) <= 300
    assert "more)" in ov.text  # lists are cut and say so
    assert [d for d in ov.diary] == ["- ana progress: set up the tokenizer"]  # without a task: my own latest


def test_ctx_overview_tool(app: LeanCtx, project: Path, tmp_path: Path) -> None:
    populate(app, project, tmp_path / "elsewhere")
    tool = registry.get("ctx_overview")
    assert tool.category == "session"
    out = registry.call(app, Caller("ana", "s1", str(project)), "ctx_overview", {"task": "parser"})
    assert out["text"].startswith(f"# lean-ctx overview — {project}") and "review the parser" in out["text"]


def test_cli_overview(tmp_path: Path, project: Path) -> None:
    db = tmp_path / "cli.db"
    with LeanCtx(db) as app:
        import time

        now = time.time()
        for agent in ("bob", "ana"):  # a task is delegated to a registered agent
            do(app, RegisterAgent(agent_type="claude", role="dev", project_root=str(project), agent_id=agent), agent,
               project, now=now)
        do(app, CreateTask(title="review the parser", to_agent="ana"), "bob", project, now=now)
        do(app, WriteDiary(category="discovery", text="the parser chokes on BOM"), "bob", project, now=now)
    env = {k: v for k, v in os.environ.items() if not k.startswith("LEAN_CTX_")}
    env.update(LEAN_CTX_DB=str(db), LEAN_CTX_HOME=str(tmp_path / "home"), LEAN_CTX_AGENT_ID="ana")
    subprocess.run([LEAN_CTX, "session", "task", "fix the parser", "--step", "1", "--total", "2"], env=env,
                   cwd=project, check=True, capture_output=True, timeout=60)
    p = subprocess.run([LEAN_CTX, "overview", "parser"], check=False, env=env, cwd=project, capture_output=True, text=True,
                       timeout=60)
    assert p.returncode == 0, p.stderr
    assert "delegated to you" in p.stdout and "the parser chokes on BOM" in p.stdout
    assert "task: fix the parser — step 1/2" in p.stdout and "bob" in p.stdout
