"""Sessions: commands and projection, the resume block (token budget, expired archives, trimming),
compaction detection (unit and one MCP round trip), the PreCompact hook and the CLI, replay."""

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
from leanctx.archive import ArchiveInfo, ArchiveStore
from leanctx.commands.agents import RegisterAgent
from leanctx.commands.diaries import WriteDiary
from leanctx.commands.sessions import (
    AddNote,
    LoadSession,
    ResetSession,
    SaveSession,
    SetTask,
)
from leanctx.commands.shell import RecordShell
from leanctx.context.tokens import count_tokens
from leanctx.errors import LeanCtxError
from leanctx.projections.sessions import (
    get_session,
    list_sessions,
    session_archives,
    session_files,
    session_notes,
)
from leanctx.resume import build_resume, compaction_gap, resume_path, write_resume

LEAN_CTX = str(Path(sys.executable).with_name("lean-ctx"))  # this interpreter's, not whatever PATH finds
pytestmark = pytest.mark.timeout(120)


@pytest.fixture
def project(tmp_path: Path) -> Path:
    p = tmp_path / "proj"
    p.mkdir()
    return p


@pytest.fixture
def app(tmp_path: Path) -> Iterator[LeanCtx]:
    with LeanCtx(tmp_path / "events.db") as a:
        yield a


def do(app: LeanCtx, cmd: Any, project: Path, sid: str = "s1", actor: str = "ana") -> Any:
    return app.bus.dispatch(cmd, actor=actor, session_id=sid, project=str(project)).value


def tool(app: LeanCtx, project: Path, name: str, args: dict[str, Any], sid: str = "s1",
         actor: str = "ana") -> dict[str, Any]:
    return registry.call(app, Caller(actor, sid, str(project)), name, args)


def archive(app: LeanCtx, project: Path, text: str, sid: str = "s1") -> str:
    aid, digest, _ = ArchiveStore.beside(app.db).put(text)
    info = ArchiveInfo(aid, digest, len(text), text.count("\n"), count_tokens(text))
    do(app, RecordShell(command="make", pattern="generic", exit_code=0, raw_tokens=100, sent_tokens=10, archive=info),
       project, sid)
    return aid


# --- commands and projection -------------------------------------------------------------------


def test_task_notes_save_load_reset(app: LeanCtx, project: Path) -> None:
    do(app, SetTask(task="port the parser", step=1, total=4), project)
    do(app, AddNote(note="finding", text="BOM breaks the lexer", path="src/lex.py"), project)
    do(app, AddNote(note="decision", text="strip BOM on read"), project)
    do(app, SaveSession(snapshot="before"), project)
    do(app, AddNote(note="finding", text="later finding"), project)
    conn = app.projections.reader("sessions")
    s = get_session(conn, "s1")
    assert s is not None and (s.task, s.step, s.total, s.findings, s.decisions) == ("port the parser", 1, 4, 2, 1)
    assert [n.text for n in session_notes(conn, "s1")] == ["BOM breaks the lexer", "strip BOM on read", "later finding"]

    do(app, LoadSession(snapshot="before"), project, sid="s2", actor="bob")  # another agent continues
    conn = app.projections.reader("sessions")
    s2 = get_session(conn, "s2")
    assert s2 is not None and (s2.task, s2.step, s2.loaded_from, s2.agent_id) == ("port the parser", 1, "before", "bob")
    assert [n.text for n in session_notes(conn, "s2")] == ["BOM breaks the lexer", "strip BOM on read"]

    d = tool(app, project, "ctx_session", {"action": "diff", "name": "before"})["diff"]
    assert d["added"] == [["finding", "later finding"]] and d["removed"] == [] and d["task"] is None

    do(app, ResetSession(), project)
    conn = app.projections.reader("sessions")
    assert session_notes(conn, "s1") == [] and get_session(conn, "s1").task is None  # type: ignore[union-attr]
    assert [s.session_id for s in list_sessions(conn, project=str(project))] == ["s1", "s2"]


def test_refusals(app: LeanCtx, project: Path) -> None:
    with pytest.raises(LeanCtxError) as ei:
        do(app, LoadSession(snapshot="missing"), project)
    assert ei.value.code == "SESSION_SNAPSHOT_NOT_FOUND"
    with pytest.raises(LeanCtxError) as ei:
        do(app, SetTask(task="x", step=5, total=3), project)
    assert ei.value.code == "SESSION_INVALID_STEP"
    with pytest.raises(LeanCtxError) as ei:
        do(app, AddNote(note="rumour", text="x"), project)
    assert ei.value.code == "SESSION_INVALID_NOTE"
    with pytest.raises(LeanCtxError) as ei:
        app.bus.dispatch(AddNote(note="finding", text="x"), actor=None, session_id="s1")
    assert ei.value.code == "SESSION_NO_AGENT"


def test_file_refs_and_archives_come_from_reads_and_runs(app: LeanCtx, project: Path) -> None:
    (project / "a.py").write_text("x = 1\n")
    (project / "b.py").write_text("y = 2\n")
    tool(app, project, "ctx_read", {"paths": ["a.py", "b.py"]})
    aid = archive(app, project, "big output\n" * 50)
    conn = app.projections.reader("sessions")
    files = session_files(conn, "s1", project=str(project))
    assert [(f.ref, f.path) for f in files] == [("F1", "a.py"), ("F2", "b.py")]
    assert all(f.content_hash and len(f.content_hash) == 64 for f in files)
    assert [a.archive_id for a in session_archives(conn, "s1")] == [aid]


# --- the resume block --------------------------------------------------------------------------


def test_resume_block_restores_everything_and_marks_expired_archives(app: LeanCtx, project: Path) -> None:
    do(app, RegisterAgent(agent_type="claude", role="dev", project_root=str(project), agent_id="ana"), project)
    do(app, SetTask(task="port the parser", step=2, total=5), project)
    do(app, AddNote(note="decision", text="strip BOM on read"), project)
    do(app, AddNote(note="finding", text="lexer is quadratic"), project)
    (project / "a.py").write_text("x = 1\n")
    tool(app, project, "ctx_read", {"paths": ["a.py"]})
    kept = archive(app, project, "kept output\n" * 40)
    gone = archive(app, project, "gone output\n" * 40)
    ArchiveStore.beside(app.db).path(gone).unlink()
    do(app, WriteDiary(category="discovery", text="d1"), project)
    do(app, WriteDiary(category="decision", text="d2"), project)
    b = build_resume(app, "s1", "ana", str(project))
    name = app.bus.dispatch(RegisterAgent(agent_type="claude", role="dev", project_root=str(project),
                                          agent_id="ana"), actor="ana").value.name
    assert not b.empty and b.left_out == {} and b.tokens == count_tokens(b.text) <= 500
    assert f"you are {name} (agent_id ana, claude/dev)" in b.text
    assert "task: port the parser — step 2/5" in b.text
    assert "- strip BOM on read" in b.text and "- lexer is quadratic" in b.text
    assert "F1 a.py sha256:" in b.text
    assert f"{kept} (shell)\n" in b.text + "\n" and f"{gone} (shell) [expired]" in b.text
    assert f"{kept} (shell) [expired]" not in b.text
    assert "diary: 2 entries (decision 1, discovery 1)" in b.text


def test_resume_block_fits_500_tokens_on_a_large_session(app: LeanCtx, project: Path) -> None:
    do(app, SetTask(task="migrate every module " * 5, step=7, total=40), project)
    for i in range(300):
        do(app, AddNote(note="finding" if i % 3 else "decision",
                        text=f"finding number {i}: the module m{i} still imports the legacy codec and needs a shim "
                             f"because its callers pass bytes"), project)
    for i in range(150):
        (project / f"mod_{i:03d}.py").write_text(f"v = {i}\n")
    for k in range(0, 150, 30):
        tool(app, project, "ctx_read", {"paths": [f"mod_{i:03d}.py" for i in range(k, k + 30)]})
    for i in range(20):
        archive(app, project, f"output {i}\n" * 30)
    b = build_resume(app, "s1", "ana", str(project))
    assert b.tokens == count_tokens(b.text) and b.tokens <= 500
    assert "task: migrate every module" in b.text and "step 7/40" in b.text
    assert b.left_out["findings"] > 100 and b.left_out["files"] > 100 and "left out:" in b.text
    assert "F150 mod_149.py" in b.text  # newest first
    assert "finding number 299" in b.text  # the newest note (a finding) is kept
    small = build_resume(app, "s1", "ana", str(project), max_tokens=120)
    assert small.tokens <= 120 and "task: migrate" in small.text
    os.environ["LEAN_CTX_RESUME_MAX_TOKENS"] = "200"
    try:
        assert build_resume(app, "s1", "ana", str(project)).tokens <= 200
    finally:
        del os.environ["LEAN_CTX_RESUME_MAX_TOKENS"]


def test_precompact_writes_the_session_folder(app: LeanCtx, project: Path, tmp_path: Path) -> None:
    do(app, SetTask(task="t"), project)
    path = write_resume(build_resume(app, "s1", "ana", str(project)), tmp_path / "data")
    assert path == resume_path("s1", tmp_path / "data") == tmp_path / "data" / "sessions" / "s1" / "resume.md"
    assert "task: t" in path.read_text()


# --- compaction detection ----------------------------------------------------------------------


def test_compaction_gap_rule() -> None:
    assert not compaction_gap(5, None)
    assert not compaction_gap(5, 5) and not compaction_gap(5, 4)  # in step, or lag 1
    assert compaction_gap(5, 3) and compaction_gap(10, 1)
    assert not compaction_gap(5, 3, threshold=3) and compaction_gap(6, 3, threshold=3)
    assert not compaction_gap(11, 3, last_injected=10)  # the same gap seen again
    assert compaction_gap(30, 12, last_injected=10)  # a new loss after the last injection


def test_mcp_round_trip_injects_the_resume_block_once(tmp_path: Path, project: Path) -> None:
    from mcp import Client
    from mcp_types import Implementation

    from leanctx.api.mcp_server import build_server

    async def main() -> list[Any]:
        with LeanCtx(tmp_path / "mcp.db") as lc:
            server = build_server(lc, project=project, structured=True)  # to see the block in structuredContent
            async with Client(server, client_info=Implementation(name="claude-code", version="1")) as c:
                out = []
                r = await c.call_tool("ctx_session", {"action": "task", "task": "survive compaction", "step": 3,
                                                      "total": 9})
                out.append(r)
                for _ in range(3):
                    out.append(await c.call_tool("ctx_session", {"action": "status"}))
                # the client lost its context: it still expects call 2 while the server is at 5
                out.append(await c.call_tool("ctx_session", {"action": "status", "expected_call": 2}))
                out.append(await c.call_tool("ctx_session", {"action": "status", "expected_call": 2}))
                out.append(await c.call_tool("ctx_session", {"action": "status", "expected_call": 7}))
                return out

    results = anyio.run(main)
    calls = [r.meta["lean-ctx/call"] for r in results]
    assert calls == [1, 2, 3, 4, 5, 6, 7]
    assert all(not r.is_error for r in results)
    with_resume = [i for i, r in enumerate(results) if len(r.content) == 2]
    assert with_resume == [4]
    r = results[4]
    assert "## lean-ctx resume" in r.content[1].text and "survive compaction — step 3/9" in r.content[1].text
    assert r.structured_content["resume"] == r.content[1].text and r.meta["lean-ctx/resume"] <= 500


# --- replay and the CLI ------------------------------------------------------------------------


def test_replay_reproduces_sessions(app: LeanCtx, project: Path) -> None:
    from tools.replay import replay

    for i in range(20):
        sid = f"s{i % 3}"
        do(app, SetTask(task=f"task {i}", step=i % 4, total=4), project, sid)
        do(app, AddNote(note="finding", text=f"f {i} ü"), project, sid)
        if i % 5 == 0:
            do(app, SaveSession(snapshot=f"snap{i}"), project, sid)
        if i % 7 == 6:
            do(app, LoadSession(snapshot="snap0"), project, sid)
        if i == 13:
            do(app, ResetSession(), project, sid)
    archive(app, project, "o\n" * 20)
    rep = replay(app, verify=True)
    assert rep.chain_ok and [p.match for p in rep.projections if p.name == "sessions"] == [True]


def cli(db: Path, home: Path, cwd: Path, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("LEAN_CTX_")}
    env.update(LEAN_CTX_DB=str(db), LEAN_CTX_HOME=str(home), LEAN_CTX_AGENT_ID="ana", LEAN_CTX_SESSION_ID="cli-1")
    p = subprocess.run([LEAN_CTX, *args], check=False, capture_output=True, text=True, env=env, timeout=60, cwd=cwd,
                       stdin=subprocess.DEVNULL)
    if check and p.returncode != 0:
        raise AssertionError(f"lean-ctx {' '.join(args)} exited {p.returncode}\n{p.stdout}\n{p.stderr}")
    return p


def test_cli_session_verbs_and_precompact_hook(tmp_path: Path, project: Path) -> None:
    db, home = tmp_path / "cli.db", tmp_path / "home"
    cli(db, home, project, "session", "task", "ship it", "--step", "1", "--total", "3")
    cli(db, home, project, "session", "finding", "the cache is cold", "--path", "a.py")
    cli(db, home, project, "session", "decision", "warm it at start")
    cli(db, home, project, "session", "save", "v1")
    cli(db, home, project, "session", "task", "--step", "2")
    status = json.loads(cli(db, home, project, "session", "status", "--json").stdout)
    assert status["session"]["task"] == "ship it" and status["session"]["step"] == 2
    assert [n["text"] for n in status["notes"]] == ["the cache is cold", "warm it at start"]
    diff = cli(db, home, project, "session", "diff", "v1").stdout
    assert "task: ['ship it', 1, 3] → ['ship it', 2, 3]" in diff
    assert "saved v1 ← cli-1" in cli(db, home, project, "session", "list").stdout
    out = cli(db, home, project, "hooks", "precompact").stdout
    written = home / "sessions" / "cli-1" / "resume.md"
    assert str(written) in out and "task: ship it — step 2/3" in written.read_text()
    assert "the cache is cold" in cli(db, home, project, "session", "resume").stdout
    cli(db, home, project, "session", "reset")
    assert "nothing recorded yet" in cli(db, home, project, "session", "status").stdout
    bad = cli(db, home, project, "session", "load", "nope", check=False)
    assert bad.returncode == 2 and bad.stderr.startswith("error[SESSION_SNAPSHOT_NOT_FOUND]")


def test_mcp_error_answers_carry_the_resume_block_too(tmp_path: Path, project: Path) -> None:
    from mcp import Client
    from mcp_types import Implementation

    from leanctx.api.mcp_server import build_server

    async def main() -> list[Any]:
        with LeanCtx(tmp_path / "mcp.db") as lc:
            async with Client(build_server(lc, project=project),
                              client_info=Implementation(name="claude-code", version="1")) as c:
                out = [await c.call_tool("ctx_session", {"action": "task", "task": "keep going"})]
                out.append(await c.call_tool("ctx_session", {"action": "status"}))
                out.append(await c.call_tool("ctx_session", {"action": "load", "name": "nope", "expected_call": 1}))
                return out

    r = anyio.run(main)[2]
    assert r.is_error and r.content[0].text.startswith("SESSION_SNAPSHOT_NOT_FOUND")
    assert len(r.content) == 2 and "task: keep going" in r.content[1].text


def test_mcp_reads_after_a_compaction_gap_send_content_not_stubs(tmp_path: Path, project: Path) -> None:
    """The client lost its context: the stub it would have got points at text it no longer has."""
    from mcp import Client
    from mcp_types import Implementation

    from leanctx.api.mcp_server import build_server

    (project / "app.py").write_text("def main():\n    return 42\n")

    async def main() -> list[Any]:
        with LeanCtx(tmp_path / "mcp.db") as lc:
            async with Client(build_server(lc, project=project),
                              client_info=Implementation(name="claude-code", version="1")) as c:
                out = []
                for _ in range(4):
                    out.append(await c.call_tool("ctx_read", {"paths": ["app.py"], "mode": "full"}))
                out.append(await c.call_tool("ctx_read", {"paths": ["app.py"], "mode": "full", "expected_call": 2}))
                out.append(await c.call_tool("ctx_read", {"paths": ["app.py"], "mode": "full", "expected_call": 7}))
                lost = [e for e in lc.store.read_all(0) if e.kind == "session.context_lost"]
                out.append([(e.data().reason, e.data().call) for e in lost])
                return out

    *results, lost = anyio.run(main)
    texts = [r.content[0].text for r in results]
    assert "return 42" in texts[0] and all("unchanged" in t for t in texts[1:4])
    assert "return 42" in texts[4] and "unchanged" not in texts[4]  # the gap: content again
    assert len(results[4].content) == 2  # with the resume block
    assert "unchanged" in texts[5]  # received again after the loss: stubs resume
    assert lost == [("compaction", 5)]


def test_cli_precompact_hook_ends_stubs_for_what_was_read_before(tmp_path: Path, project: Path) -> None:
    db, home = tmp_path / "cli.db", tmp_path / "home"
    (project / "app.py").write_text("def main():\n    return 42\n")
    assert "return 42" in cli(db, home, project, "read", "app.py", "--mode", "full").stdout
    assert "unchanged" in cli(db, home, project, "read", "app.py", "--mode", "full").stdout
    cli(db, home, project, "hooks", "precompact")
    after = cli(db, home, project, "read", "app.py", "--mode", "full").stdout
    assert "return 42" in after and "unchanged" not in after
    assert "unchanged" in cli(db, home, project, "read", "app.py", "--mode", "full").stdout
