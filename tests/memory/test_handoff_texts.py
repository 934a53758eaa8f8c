"""What an agent reads about handoffs says it in words it can act on: counts as text (not a
Python dict; ``--json`` keeps them structured), how each import really came (``via``: a bundle
file, the bundle text inline, stdin, an envelope), and every next step named as the MCP tool
action first, then the CLI command, both runnable as written. Through the registry (as an MCP
client calls it) and the real CLI in another process."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from leanctx import clock
from leanctx.api import registry
from leanctx.api.registry import Caller
from leanctx.app import LeanCtx
from leanctx.errors import LeanCtxError
from leanctx.projections.handoffs import list_imported
from leanctx.projections.tasks import get_task

LEAN_CTX = str(Path(sys.executable).with_name("lean-ctx"))
pytestmark = pytest.mark.timeout(120)
DICT_MARKS = ("{'", "':", "{\"")


@pytest.fixture
def lc(tmp_path: Path) -> Iterator[LeanCtx]:
    with LeanCtx(tmp_path / "e.db") as app:
        yield app


def call(lc: LeanCtx, who: Caller, tool: str, /, **args: Any) -> dict[str, Any]:
    out = registry.call(lc, who, tool, args)
    assert isinstance(out.get("text"), str) and out["text"], f"{tool} {args}: no text"
    return out


def join(lc: LeanCtx, project: Path, agent: str) -> Caller:
    me = Caller(agent, f"s-{agent}", str(project))
    call(lc, me, "ctx_agent", action="register", role="dev")
    return me


def cli(db: Path, cwd: Path, *args: str, agent: str = "b", stdin: str | None = None,
        check: bool = True) -> subprocess.CompletedProcess[str]:
    e = {k: v for k, v in os.environ.items() if not k.startswith("LEAN_CTX_")}
    e.update(LEAN_CTX_DB=str(db), LEAN_CTX_HOME=os.environ["LEAN_CTX_HOME"], LEAN_CTX_AGENT_ID=agent,
             LEAN_CTX_SESSION_ID=f"s-{agent}", LEAN_CTX_NO_DAEMON="1")
    p = subprocess.run([LEAN_CTX, *args], capture_output=True, text=True, env=e, timeout=60, cwd=cwd,
                       input=stdin, stdin=None if stdin is not None else subprocess.DEVNULL, check=False)
    if check and p.returncode != 0:
        raise AssertionError(f"lean-ctx {' '.join(args)} exited {p.returncode}\n{p.stdout}\n{p.stderr}")
    return p


def no_dict(text: str) -> None:
    assert not any(m in text for m in DICT_MARKS), f"a dict in the text:\n{text}"


def a_hands_over(lc: LeanCtx, project: Path) -> tuple[Caller, dict[str, Any]]:
    """a: one finding, one fact, one open task it owns; its handoff with a message, as text."""
    a = join(lc, project, "a")
    call(lc, a, "ctx_session", action="finding", text="x is slow")
    call(lc, a, "ctx_knowledge", action="remember", category="architecture", key="db.engine", value="sqlite")
    call(lc, a, "ctx_task", action="create", title="write the migration", task_id="t1", owner="a")
    return a, call(lc, a, "ctx_handoff", action="create", message="over to you")["handoff"]


# --- counts ---------------------------------------------------------------------------------


def test_tool_list_and_show_say_the_counts_in_words(lc: LeanCtx, project: Path) -> None:
    _, h = a_hands_over(lc, project)
    b = join(lc, project, "b")
    call(lc, b, "ctx_handoff", action="import", bundle=h["bundle"])
    assert h["counts"] == {"notes": 1, "knowledge": 1, "tasks": 1, "files": 0, "diary": h["counts"]["diary"]}
    words = ["1 note,", "1 fact,", "1 open task,", "0 files,"]
    listed = call(lc, b, "ctx_handoff", action="list")
    shown = call(lc, b, "ctx_handoff", action="show", handoff_id=h["handoff_id"])
    for out in (listed, shown):
        no_dict(out["text"])
        assert all(w in out["text"] for w in words), out["text"]
    # the mapping keeps the counts structured
    assert listed["created"][0]["counts"] == h["counts"] and shown["created"]["counts"] == h["counts"]


# --- via ------------------------------------------------------------------------------------


def test_an_inline_bundle_is_recorded_as_inline_and_a_file_as_a_file(lc: LeanCtx, project: Path) -> None:
    _, h = a_hands_over(lc, project)
    b = join(lc, project, "b")
    (project / "h.json").write_text(h["bundle"])
    inline = call(lc, b, "ctx_handoff", action="import", bundle=h["bundle"].strip())
    from_file = call(lc, b, "ctx_handoff", action="import", path="h.json")
    assert (inline["import"]["via"], from_file["import"]["via"]) == ("inline", "file")
    assert "via inline" in inline["text"] and "via file" in from_file["text"]
    rows = list_imported(lc.projections.reader("handoffs"))  # newest first
    assert [r.via for r in rows] == ["file", "inline"]
    hid = h["handoff_id"]
    listed = call(lc, b, "ctx_handoff", action="list")["text"]
    assert f"imported {hid} from a by b" in listed and "via inline" in listed and "via file" in listed
    shown = call(lc, b, "ctx_handoff", action="show", handoff_id=hid)["text"].splitlines()
    assert [ln.split(" via ")[1].split(",")[0] for ln in shown if ln.startswith("imported")] == ["inline", "file"]


def test_the_cli_records_file_and_stdin_and_keeps_json_structured(lc: LeanCtx, project: Path,
                                                                 tmp_path: Path) -> None:
    _, h = a_hands_over(lc, project)
    join(lc, project, "b")
    bundle = tmp_path / "h.json"
    bundle.write_text(h["bundle"])
    cli(lc.db, project, "handoff", "import", str(bundle))
    cli(lc.db, project, "handoff", "import", "-", stdin=h["bundle"])
    hid = h["handoff_id"]
    listed = cli(lc.db, project, "handoff", "list").stdout
    shown = cli(lc.db, project, "handoff", "show", hid).stdout
    for text in (listed, shown):
        no_dict(text)
        assert "1 note, 1 fact, 1 open task, 0 files" in text and "via file" in text and "via stdin" in text
    as_json = json.loads(cli(lc.db, project, "--json", "handoff", "list").stdout)
    assert as_json["created"][0]["counts"] == h["counts"]
    assert [i["via"] for i in as_json["imported"]] == ["stdin", "file"]
    one = json.loads(cli(lc.db, project, "--json", "handoff", "show", hid).stdout)
    assert one["created"]["counts"] == h["counts"] and [i["via"] for i in one["imports"]] == ["file", "stdin"]


def test_an_unknown_via_is_refused_with_the_known_ones(lc: LeanCtx, project: Path) -> None:
    from leanctx.commands.handoff import ImportHandoff

    _, h = a_hands_over(lc, project)
    with pytest.raises(LeanCtxError) as err:
        lc.bus.dispatch(ImportHandoff(bundle=h["bundle"], via="pigeon"), actor="a", session_id="s-a",
                        project=str(project))
    assert err.value.code == "HANDOFF_INVALID_VIA"
    assert all(v in err.value.message for v in ("file", "inline", "stdin", "envelope"))


# --- next steps -----------------------------------------------------------------------------


def test_a_task_not_in_this_log_names_ctx_task_create_then_the_cli_both_runnable(
        lc: LeanCtx, project: Path, tmp_path: Path) -> None:
    _, h = a_hands_over(lc, project)
    # another log, same data dir: a is registered there with the same key, the task is not
    with LeanCtx(tmp_path / "other.db") as other:
        join(other, project, "a")
        b = join(other, project, "b")
        got = call(other, b, "ctx_handoff", action="import", bundle=h["bundle"])
        (t,) = got["import"]["tasks"]
        assert t["code"] == "TASK_NOT_FOUND"
        text = got["text"]
        mcp_at, cli_at = text.find("ctx_task action=create"), text.find("`lean-ctx chat task create")
        assert 0 <= mcp_at < cli_at, text
        # the MCP form, as written, creates the task here, owned by the importer
        mcp = shlex.split(text[mcp_at:].split(", or `")[0])
        args = dict(kv.split("=", 1) for kv in mcp[1:])
        call(other, b, mcp[0], **args)
        here = get_task(other.projections.reader("tasks"), "general", "t1", now=clock.now())
        assert here is not None and (here.title, here.owner) == ("write the migration", "b")
    # the CLI form, as written, too (in a fresh log where b is registered)
    argv = shlex.split(text[cli_at + 1:].split("`")[0])
    assert argv[0] == "lean-ctx"
    cli(tmp_path / "third.db", project, "agent", "register", "--type", "claude")
    cli(tmp_path / "third.db", project, *argv[1:])
    out = json.loads(cli(tmp_path / "third.db", project, "--json", "chat", "task", "show", "t1").stdout)
    assert (out["title"], out["owner"]) == ("write the migration", "b")


def test_without_apply_workflow_the_text_says_how_to_take_the_tasks_over(lc: LeanCtx, project: Path) -> None:
    _, h = a_hands_over(lc, project)
    b = join(lc, project, "b")
    got = call(lc, b, "ctx_handoff", action="import", bundle=h["bundle"])
    line = next(ln for ln in got["text"].splitlines() if ln.startswith("task general/t1"))
    assert "can hand over" in line
    mcp_at, cli_at = line.find("ctx_handoff action=import"), line.find("`lean-ctx handoff import")
    assert 0 <= mcp_at < cli_at and "apply_workflow=true" in line and "--apply-workflow" in line, line
    # nothing applied: the text says how to apply, tool action first
    assert "applied: nothing" in got["text"] and "apply_session=true" in got["text"], got["text"]


def test_the_bundle_line_and_not_found_name_the_tool_action(lc: LeanCtx, project: Path) -> None:
    a = join(lc, project, "a")
    made = call(lc, a, "ctx_handoff", action="create")
    assert "ctx_handoff action=import bundle=" in made["text"]
    with pytest.raises(LeanCtxError) as err:
        registry.call(lc, a, "ctx_handoff", {"action": "show", "handoff_id": "h-nope"})
    msg = err.value.message
    assert msg.find("ctx_handoff action=list") < msg.find("`lean-ctx handoff list`") and "action=list" in msg
