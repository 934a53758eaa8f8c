"""Diaries: categories, validation, recall (newest first, by category, limit, words),
persistence across sessions and processes, the CLI, and replay."""

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
from leanctx.commands.agents import RegisterAgent
from leanctx.commands.diaries import DiaryAck, WriteDiary
from leanctx.errors import InvalidInput, LeanCtxError
from leanctx.events.kinds.diary import DiaryWritten
from leanctx.projections.diaries import CATEGORIES, DiaryEntry, diary_size, recall_diary

T0 = 1_800_000_000.0
LEAN_CTX = str(Path(sys.executable).with_name("lean-ctx"))  # this interpreter's, not whatever PATH finds

pytestmark = pytest.mark.timeout(120)


@pytest.fixture
def app(tmp_path: Path) -> Iterator[LeanCtx]:
    with LeanCtx(tmp_path / "events.db") as a:
        yield a


def write(app: LeanCtx, actor: str | None, category: str, text: str, now: float = T0, **kw: Any) -> DiaryAck:
    return app.bus.dispatch(WriteDiary(category=category, text=text, **kw), actor=actor, now=now).value


def refused(app: LeanCtx, cmd: WriteDiary, actor: str | None = "me") -> LeanCtxError:
    head = app.store.head().position
    with pytest.raises(LeanCtxError) as ei:
        app.bus.dispatch(cmd, actor=actor)
    assert [e.kind for e in app.store.read_all(since=head)] == ["tool.called"]  # the refusal's record only
    return ei.value


def recall(app: LeanCtx, agent: str, **kw: Any) -> list[DiaryEntry]:
    return recall_diary(app.projections.reader("diaries"), agent, **kw)


def test_every_category_is_written_to_the_agents_stream(app: LeanCtx) -> None:
    assert CATEGORIES == ("discovery", "decision", "blocker", "progress", "insight")
    for i, cat in enumerate(CATEGORIES):
        ack = write(app, "ana", cat, f"entry {i}", now=T0 + i)
        assert ack == DiaryAck("ana", i + 1, cat, clock.iso(T0 + i))
    events = app.store.read_stream("diary:ana")
    assert [e.version for e in events] == [1, 2, 3, 4, 5]
    assert events[1].data() == DiaryWritten(agent_id="ana", category="decision", text="entry 1")
    assert {e.actor for e in events} == {"ana"}


def test_category_is_normalised_and_others_are_refused(app: LeanCtx) -> None:
    assert write(app, "ana", "  Decision ", "x").category == "decision"
    for bad in ("note", "", "blockers", "todo"):
        err = refused(app, WriteDiary(category=bad, text="x"))
        assert isinstance(err, InvalidInput) and err.code == "DIARY_INVALID_CATEGORY"
        assert "discovery, decision, blocker, progress, insight" in err.message
    assert diary_size(app.projections.reader("diaries"), "me") == 0


@pytest.mark.parametrize(
    ("cmd", "code"),
    [
        (WriteDiary(category="insight", text="   \n"), "DIARY_EMPTY_TEXT"),
        (WriteDiary(category="insight", text="x" * 20_001), "DIARY_TEXT_TOO_LONG"),
        (WriteDiary(category="insight", text="x", tags=("two words",)), "DIARY_INVALID_TAG"),
        (WriteDiary(category="insight", text="x", tags=tuple(f"t{i}" for i in range(33))), "DIARY_INVALID_TAG"),
        (WriteDiary(category="insight", text="x", paths=("a\nb",)), "DIARY_INVALID_PATH"),
    ],
)
def test_bad_entries_are_refused(app: LeanCtx, cmd: WriteDiary, code: str) -> None:
    assert refused(app, cmd).code == code


def test_an_entry_needs_an_identity(app: LeanCtx) -> None:
    assert refused(app, WriteDiary(category="insight", text="x"), actor=None).code == "DIARY_NO_AGENT"


def test_recall_newest_first_by_category_limit_and_words(app: LeanCtx) -> None:
    write(app, "ana", "discovery", "The cache key ignores the mode", tags=("cache",), paths=("src/cache.py",))
    write(app, "ana", "decision", "Use WAL mode for readers", now=T0 + 1)
    write(app, "bob", "decision", "bob's own decision", now=T0 + 2)
    write(app, "ana", "blocker", "CI runner lacks sqlite 3.45", now=T0 + 3, tags=("ci", "ci"))
    write(app, "ana", "decision", "Keep FTS as a catch-up index", now=T0 + 4)
    entries = recall(app, "ana")
    assert [e.seq for e in entries] == [4, 3, 2, 1]
    assert [e.text for e in recall(app, "ana", category="decision")] == [
        "Keep FTS as a catch-up index", "Use WAL mode for readers"]
    assert [e.seq for e in recall(app, "ana", limit=2)] == [4, 3]
    assert [e.seq for e in recall(app, "ana", matching="MODE")] == [2, 1]
    assert [e.seq for e in recall(app, "ana", matching="mode cache")] == [1]
    assert [e.seq for e in recall(app, "ana", matching="src/cache.py")] == [1]  # paths match too
    assert recall(app, "ana", matching="bob") == []
    blocker = recall(app, "ana", category="blocker")[0]
    assert (blocker.tags, blocker.paths, blocker.ts) == (["ci"], [], clock.iso(T0 + 3))  # tags deduplicated
    first = recall(app, "ana", category="discovery")[0]
    assert (first.tags, first.paths) == (["cache"], ["src/cache.py"])
    assert [e.agent_id for e in recall(app, "bob")] == ["bob"]
    assert recall(app, "nobody") == []
    by_pos = recall(app, "ana", positions=[first.position])
    assert [e.seq for e in by_pos] == [1]


def test_diaries_persist_across_sessions_and_reopening(tmp_path: Path) -> None:
    db = tmp_path / "events.db"
    with LeanCtx(db) as lc:
        lc.bus.dispatch(WriteDiary(category="insight", text="from session one"), actor="ana", session_id="s1")
    with LeanCtx(db) as lc:
        lc.bus.dispatch(WriteDiary(category="progress", text="from session two"), actor="ana", session_id="s2")
        got = recall_diary(lc.projections.reader("diaries"), "ana")
        assert [(e.text, e.session_id) for e in got] == [("from session two", "s2"), ("from session one", "s1")]


def test_replay_reproduces_diaries(app: LeanCtx) -> None:
    from tools.replay import replay

    for i in range(30):
        write(app, f"agent-{i % 3}", CATEGORIES[i % 5], f"entry {i} ü ✓", tags=(f"t{i % 4}",), paths=(f"f{i}.py",))
    rep = replay(app, verify=True)
    assert rep.chain_ok and [p.match for p in rep.projections if p.name == "diaries"] == [True]
    assert all(p.match for p in rep.projections), [p.name for p in rep.projections if not p.match]


# ------------------------------------------------------------------------------------------
# CLI
# ------------------------------------------------------------------------------------------
def cli(db: Path, *args: str, check: bool = True, stdin: str | None = None,
        **env: str) -> subprocess.CompletedProcess[str]:
    full = {k: v for k, v in os.environ.items() if k not in ("LEAN_CTX_AGENT_ID", "LEAN_CTX_SESSION_ID")}
    full.update({"LEAN_CTX_DB": str(db), **env})
    p = subprocess.run([LEAN_CTX, *args], capture_output=True, text=True, env=full, timeout=60, input=stdin)
    if check and p.returncode != 0:
        raise AssertionError(f"lean-ctx {' '.join(args)} exited {p.returncode}\n{p.stdout}\n{p.stderr}")
    return p


def test_cli_diary_and_recall(tmp_path: Path) -> None:
    db, proj = tmp_path / "events.db", str(tmp_path / "proj")
    (tmp_path / "proj").mkdir()  # a project must exist (PROJECT_NOT_FOUND)
    with LeanCtx(db) as lc:
        lc.bus.dispatch(RegisterAgent(agent_type="cursor", project_root=proj, agent_id="ana"))
    ana = {"LEAN_CTX_AGENT_ID": "ana", "LEAN_CTX_SESSION_ID": "morning"}
    ack = json.loads(cli(db, "agent", "diary", "--category", "decision", "Adopt msgspec", "--tag", "deps",
                         "--json", **ana).stdout)
    assert (ack["agent_id"], ack["seq"], ack["category"]) == ("ana", 1, "decision")
    out = cli(db, "agent", "diary", "-c", "blocker", "--text", "Flaky test in CI", "--path", "tests/x.py", **ana)
    assert out.stdout.strip() == "blocker #2 written in the diary of ana"
    cli(db, "agent", "diary", "-c", "insight", "-", stdin="multi\nline\n", **ana)
    bad = cli(db, "agent", "diary", "-c", "rumour", "x", check=False, **ana)
    assert bad.returncode == 2 and bad.stderr.startswith("error[DIARY_INVALID_CATEGORY]:")
    both = cli(db, "agent", "diary", "-c", "insight", "x", "--text", "y", "--json", check=False, **ana)
    assert both.returncode == 2 and json.loads(both.stdout)["error"]["code"] == "DIARY_INVALID_ARGUMENT"

    # another process, another session, another agent: recall by id or by registered name
    bob = {"LEAN_CTX_AGENT_ID": "bob", "LEAN_CTX_SESSION_ID": "evening"}
    entries = json.loads(cli(db, "--project", proj, "agent", "recall-diary", "cursor-dev-1", "--json", **bob).stdout)
    assert [(e["seq"], e["category"]) for e in entries] == [(3, "insight"), (2, "blocker"), (1, "decision")]
    assert entries[0]["text"] == "multi\nline" and entries[2]["tags"] == ["deps"]
    assert entries[2]["session_id"] == "morning"
    only = json.loads(cli(db, "agent", "recall-diary", "ana", "-c", "blocker", "--json", **bob).stdout)
    assert [e["text"] for e in only] == ["Flaky test in CI"]
    assert [e["seq"] for e in json.loads(cli(db, "agent", "recall-diary", "ana", "-n", "1", "--json").stdout)] == [3]
    assert [e["seq"] for e in json.loads(cli(db, "agent", "recall-diary", "ana", "--grep", "msgspec",
                                             "--json").stdout)] == [1]
    human = cli(db, "agent", "recall-diary", **ana).stdout  # default: your own diary
    assert "decision" in human and "Adopt msgspec" in human and "[deps]" in human and "line" in human
    assert json.loads(cli(db, "agent", "recall-diary", "--json", **bob).stdout) == []  # bob wrote nothing
    bad = cli(db, "agent", "recall-diary", "ana", "-c", "gossip", check=False)
    assert bad.returncode == 2 and "DIARY_INVALID_CATEGORY" in bad.stderr
