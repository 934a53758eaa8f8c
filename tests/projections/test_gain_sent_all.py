"""``lean-ctx gain`` counts every token lean-ctx sent: a refused context call's error answer
(``CODE: message``, recorded on its ``tool.called`` event) is sent, not free. Synthetic events on
a real log, a replay, and the real CLI (a refused ``lean-ctx edit``).

(The resume block the MCP server appends after a context loss is not on record: no event holds
its tokens, see ``leanctx.projections.savings``; nothing here guesses them.)"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from leanctx.app import LeanCtx
from leanctx.context.tokens import count_tokens
from leanctx.events.kinds import ToolCalled
from leanctx.events.kinds.context import FileRead
from leanctx.projections import savings as sv
from tools.replay import replay

from .test_savings_capped import Log as _Log

LEAN_CTX = str(Path(sys.executable).with_name("lean-ctx"))
DAY = "2026-03-04"
BUDGET_MSG = "agent a has used 10,412 of its 10,000-token budget; raise it (lean-ctx agent budget raise) or reset it"


def Log(lc: LeanCtx) -> _Log:
    return _Log(lc, DAY)


def refused(command: str, code: str, message: str, session: str | None = "s1") -> ToolCalled:
    return ToolCalled(command=command, outcome="error", duration_ms=1.0, error_code=code, error_message=message,
                      session_id=session)


def read(path: str, mode: str, raw: int, sent: int, *, encoding: str = "o200k_base", session: str = "s1",
         h: str = "h1") -> FileRead:
    return FileRead(path=path, mode=mode, requested_mode=mode, content_hash=h, lines=700, raw_tokens=raw,
                    sent_tokens=sent, session_id=session, encoding=encoding)


@pytest.fixture()
def lc(tmp_path: Path):
    app = LeanCtx(tmp_path / "e.db")
    yield app
    app.close()


def rep(lc: LeanCtx, *by: str, **kw: Any) -> sv.SavingsReport:
    return sv.report(lc.projections.reader("savings"), by=by or ("tool",), **kw)


def rows(r: sv.SavingsReport) -> dict[tuple[str, ...], sv.SavingsRow]:
    return {tuple(x.group.values()): x for x in r.rows}


def test_a_refused_context_call_counts_its_error_answer_as_sent(lc: LeanCtx) -> None:
    log = Log(lc)
    log.call("a", read("big.py", "map", 8_400, 900))
    log.call("a", refused("read.record", "BUDGET_EXCEEDED", BUDGET_MSG))
    log.call("a", refused("file.edit", "EDIT_NO_MATCH", "the old text does not occur in big.py"))
    log.call("a", refused("shell.check", "BUDGET_EXCEEDED", BUDGET_MSG))
    answer = count_tokens(f"BUDGET_EXCEEDED: {BUDGET_MSG}")
    edit = count_tokens("EDIT_NO_MATCH: the old text does not occur in big.py")
    r = rep(lc)
    t = r.totals
    assert t.sent_tokens == 900 + 2 * answer + edit  # was 900: the refusals cost nothing
    assert t.calls == 4 and t.raw_tokens == 8_400  # a refusal is a call; no plain answer on record: raw 0
    assert t.saved_tokens == 8_400 - 900 - 2 * answer - edit
    by = rows(r)
    assert by[("read",)].sent_tokens == 900 + answer and by[("edit",)].sent_tokens == edit
    assert by[("shell",)].sent_tokens == answer and by[("shell",)].raw_tokens == 0
    modes = rows(rep(lc, "tool", "mode"))
    assert modes[("read", "error")].sent_tokens == answer and modes[("read", "error")].calls == 1


def test_only_context_refusals_count_not_coordination_nor_successes(lc: LeanCtx) -> None:
    log = Log(lc)
    log.call("a", refused("task.claim", "TASK_NOT_FOUND", "no task t-9; list them with ctx_task action=list"))
    log.call("a", refused("agent.heartbeat", "AGENT_UNKNOWN", "agent a is not registered"))
    log.call("a", ToolCalled(command="read.record", outcome="ok", duration_ms=1.0, session_id="s1", events=2))
    assert rep(lc).totals.calls == 0 and rep(lc).totals.sent_tokens == 0


def test_an_error_answer_is_counted_in_the_conversation_s_encoding(lc: LeanCtx) -> None:
    log = Log(lc)
    log.call("a", read("big.py", "map", 8_400, 900, encoding="cl100k_base*1.1", session="g"))
    log.call("a", refused("read.record", "BUDGET_EXCEEDED", BUDGET_MSG, session="g"))
    log.call("b", refused("read.record", "BUDGET_EXCEEDED", BUDGET_MSG, session=None))  # nothing earlier: o200k
    text = f"BUDGET_EXCEEDED: {BUDGET_MSG}"
    assert rep(lc, agent="a").totals.sent_tokens == 900 + count_tokens(text, "cl100k_base*1.1")
    assert rep(lc, agent="b").totals.sent_tokens == count_tokens(text, "o200k_base")
    assert set(rep(lc).encodings) == {"cl100k_base*1.1", "o200k_base"}


def test_a_refused_call_moves_no_bounce_window(lc: LeanCtx) -> None:
    # a compressed read, two refused edits, then the whole file: still one bounce (the refusals
    # are calls of their own in the figures, but, as before, they push no read out of its window)
    log = Log(lc)
    log.call("a", read("big.py", "map", 8_400, 900))
    for _ in range(4):
        log.call("a", refused("file.edit", "EDIT_NO_MATCH", "the old text does not occur in big.py"))
    log.call("a", read("big.py", "full", 8_400, 8_400))
    t = rep(lc).totals
    assert t.bounces == 1 and t.wasted_tokens == 900 and t.calls == 6


def test_replay_is_digest_equal(lc: LeanCtx) -> None:
    log = Log(lc)
    log.call("a", read("big.py", "map", 8_400, 900))
    log.call("a", refused("read.record", "BUDGET_EXCEEDED", BUDGET_MSG))
    log.call("a", refused("archive.expand", "ARCHIVE_NOT_FOUND", "no archive A0123456789abcdef; check the id"))
    before = rep(lc, "tool", "mode"), rep(lc, "tool")
    r = replay(lc, verify=True)
    assert r.ok, r
    replay(lc)
    assert (rep(lc, "tool", "mode"), rep(lc, "tool")) == before
    assert before[1].totals.calls == 3


# --- through the real CLI ----------------------------------------------------------------------


def _cli(root: Path, *args: str, ok: bool = True) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("LEAN_CTX_")}
    env.update(LEAN_CTX_HOME=str(root / "home"), LEAN_CTX_DB=str(root / "home" / "events.db"),
               LEAN_CTX_NO_DAEMON="1", LEAN_CTX_AGENT_ID="gain-all")
    p = subprocess.run([LEAN_CTX, *args], check=False, capture_output=True, text=True, env=env, cwd=root / "proj",
                       timeout=120)
    assert (p.returncode == 0) == ok and "Traceback" not in p.stderr, p.stderr
    return p


@pytest.mark.timeout(180)
def test_cli_gain_counts_a_refused_edit_as_sent(tmp_path: Path) -> None:
    (tmp_path / "proj" / ".git").mkdir(parents=True)
    (tmp_path / "proj" / "x.py").write_text("".join(f"def f{i}(a):\n    return a * {i}\n" for i in range(40)))
    ans = json.loads(_cli(tmp_path, "read", "x.py", "-m", "map", "--json", "--session", "s1").stdout)
    ans = ans[0] if isinstance(ans, list) else ans
    _cli(tmp_path, "edit", "x.py", "--old", "no such text", "--new", "y", "--session", "s1", ok=False)
    tail = _cli(tmp_path, "events", "tail", "--json", "-n", "50").stdout.splitlines()
    errors = [e["payload"] for e in map(json.loads, tail)
              if e["kind"] == "tool.called" and e["payload"]["outcome"] == "error"]
    assert [e["command"] for e in errors] == ["file.edit"]
    answer = count_tokens(f"{errors[0]['error_code']}: {errors[0]['error_message']}")
    g = json.loads(_cli(tmp_path, "gain", "--json").stdout)
    t = g["totals"]
    assert t["sent_tokens"] == ans["sent_tokens"] + answer  # was the read's only
    assert t["calls"] == 2 and t["raw_tokens"] == ans["raw_tokens"]
    text = _cli(tmp_path, "gain", "--by", "tool").stdout
    assert "edit" in text
