"""Token budgets (thresholds 79 / 80 / 100 %, set, raise, reset, enforcement by read
commands) and the per-agent context ledger (each agent sees only its own), CLI and replay."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import msgspec
import pytest

from leanctx import clock
from leanctx.app import LeanCtx
from leanctx.commands.agents import RegisterAgent
from leanctx.commands.budgets import (
    ConsumeTokens,
    RaiseBudget,
    ResetBudget,
    SetBudget,
    check_budget,
    consume,
    enforce_budget,
)
from leanctx.commands.bus import HANDLERS, Command, CommandContext, handles
from leanctx.commands.diaries import WriteDiary
from leanctx.errors import CommandError, InvalidInput, LeanCtxError
from leanctx.events.kinds.budget import BudgetRaised, BudgetReset, BudgetSet
from leanctx.projections.budgets import BudgetState, budget_view
from leanctx.projections.ledger import ledger_for

T0 = 1_800_000_000.0
LEAN_CTX = str(Path(sys.executable).with_name("lean-ctx"))  # this interpreter's, not whatever PATH finds

pytestmark = pytest.mark.timeout(120)


@pytest.fixture
def app(tmp_path: Path) -> Iterator[LeanCtx]:
    with LeanCtx(tmp_path / "events.db") as a:
        yield a


def run(app: LeanCtx, cmd: Command, actor: str | None = "ana", **kw: Any) -> Any:
    return app.bus.dispatch(cmd, actor=actor, project="/p", now=kw.pop("now", T0), **kw).value


def state(app: LeanCtx, agent: str = "ana") -> BudgetState:
    return check_budget(app.projections.reader("budgets"), agent)


def kinds_since(app: LeanCtx, head: int) -> list[str]:
    return [e.kind for e in app.store.read_all(since=head)]


# ------------------------------------------------------------------------------------------
# thresholds
# ------------------------------------------------------------------------------------------
def test_thresholds_79_80_100(app: LeanCtx) -> None:
    assert state(app) == BudgetState(0, 0, 0.0, "ok", None, "ana")  # no budget: unlimited
    assert run(app, SetBudget(limit=1000)) == BudgetState(1000, 0, 0.0, "ok", None, "ana")
    r79 = run(app, ConsumeTokens(tokens=790, tool="ctx_read"))
    assert (r79.level, r79.ratio, r79.warning_line) == ("ok", 0.79, None)
    assert state(app) == r79
    r80 = run(app, ConsumeTokens(tokens=10, tool="ctx_shell"))
    assert (r80.level, r80.ratio, r80.used, r80.limit) == ("warning", 0.8, 800, 1000)
    assert "800 of 1000 tokens (80%)" in r80.warning_line and "refused at 100%" in r80.warning_line
    assert state(app) == r80
    r99 = run(app, ConsumeTokens(tokens=199, tool="ctx_read"))
    assert (r99.level, r99.used) == ("warning", 999)
    r100 = run(app, ConsumeTokens(tokens=1, tool="ctx_read"))
    assert (r100.level, r100.ratio, r100.used) == ("exceeded", 1.0, 1000)
    assert "1000 of 1000 tokens (100%)" in r100.warning_line
    assert state(app) == r100
    over = run(app, ConsumeTokens(tokens=500, tool="ctx_search"))  # spending is recorded even past 100 %
    assert (over.level, over.used, over.ratio) == ("exceeded", 1500, 1.5)
    v = budget_view(app.projections.reader("budgets"), "ana")
    assert [(t.tool, t.tokens, t.calls) for t in v.by_tool] == [
        ("ctx_read", 990, 3), ("ctx_search", 500, 1), ("ctx_shell", 10, 1)]
    assert (v.agent_token_budget, v.remaining, v.consumed_total) == (1000, 0, 1500)


def test_budgets_are_per_agent_and_unlimited_by_default(app: LeanCtx) -> None:
    run(app, SetBudget(limit=100, agent="bob"))
    run(app, ConsumeTokens(tokens=10_000, tool="ctx_read"))  # ana: no budget
    run(app, ConsumeTokens(tokens=90, tool="ctx_read", agent="bob"))
    assert (state(app).level, state(app).used, state(app).limit) == ("ok", 10_000, 0)
    assert (state(app, "bob").level, state(app, "bob").used) == ("warning", 90)


def test_set_by_registered_name_and_idempotent_set(app: LeanCtx) -> None:
    reg = app.bus.dispatch(RegisterAgent(agent_type="cursor", project_root="/p")).value
    res = app.bus.dispatch(SetBudget(limit=500, agent="cursor-dev-1"), project="/p")
    assert res.value.agent_id == reg.agent_id
    e = app.store.get(res.positions[0])
    assert (e.stream, e.data()) == (f"budget:{reg.agent_id}", BudgetSet(agent_id=reg.agent_id, limit=500,
                                                                        previous=0))
    head = app.store.head().position
    run(app, SetBudget(limit=500, agent=reg.agent_id))
    assert kinds_since(app, head) == ["tool.called"]  # same limit: nothing appended


def test_raise(app: LeanCtx) -> None:
    run(app, SetBudget(limit=1000))
    run(app, ConsumeTokens(tokens=1000, tool="ctx_read"))
    res = app.bus.dispatch(RaiseBudget(by=500), actor="ana", now=T0)
    assert app.store.get(res.positions[0]).data() == BudgetRaised(agent_id="ana", by=500, limit=1500)
    assert (res.value.limit, res.value.used, res.value.level) == (1500, 1000, "ok")
    assert state(app) == res.value
    run(app, RaiseBudget(by=1))
    assert state(app).limit == 1501


def test_raise_needs_a_budget_and_a_positive_amount(app: LeanCtx) -> None:
    with pytest.raises(CommandError) as ei:
        run(app, RaiseBudget(by=10))
    assert ei.value.code == "BUDGET_UNLIMITED"
    run(app, SetBudget(limit=10))
    for bad in (0, -5):
        with pytest.raises(InvalidInput) as ei:
            run(app, RaiseBudget(by=bad))
        assert ei.value.code == "BUDGET_INVALID_AMOUNT"
    with pytest.raises(InvalidInput) as ei:
        run(app, SetBudget(limit=-1))
    assert ei.value.code == "BUDGET_INVALID_LIMIT"
    with pytest.raises(InvalidInput) as ei:
        run(app, ConsumeTokens(tokens=-1, tool="x"))
    assert ei.value.code == "BUDGET_INVALID_AMOUNT"
    with pytest.raises(InvalidInput) as ei:
        run(app, ConsumeTokens(tokens=1, tool="  "))
    assert ei.value.code == "BUDGET_INVALID_TOOL"
    with pytest.raises(InvalidInput) as ei:
        run(app, SetBudget(limit=5), actor=None)
    assert ei.value.code == "BUDGET_NO_AGENT"
    assert state(app).limit == 10


def test_reset_zeroes_usage_and_keeps_the_limit(app: LeanCtx) -> None:
    run(app, SetBudget(limit=1000))
    run(app, ConsumeTokens(tokens=1200, tool="ctx_read"))
    res = app.bus.dispatch(ResetBudget(), actor="ana", now=T0)
    assert app.store.get(res.positions[0]).data() == BudgetReset(agent_id="ana", used_before=1200)
    assert res.value == BudgetState(1000, 0, 0.0, "ok", None, "ana") == state(app)
    v = budget_view(app.projections.reader("budgets"), "ana")
    assert (v.by_tool, v.consumed_total, v.resets) == ([], 1200, 1)
    head = app.store.head().position
    run(app, ResetBudget())  # nothing used: nothing appended
    assert kinds_since(app, head) == ["tool.called"]
    assert run(app, ConsumeTokens(tokens=0, tool="ctx_read")).used == 0  # zero tokens: no event
    assert kinds_since(app, head) == ["tool.called", "tool.called"]


# ------------------------------------------------------------------------------------------
# enforcement, as a read command uses it
# ------------------------------------------------------------------------------------------
class GuardedRead(Command, frozen=True):
    name = "test.guarded_read"
    tokens: int


class ReadResult(msgspec.Struct, frozen=True):
    text: str
    warning: str | None


@pytest.fixture
def guarded_read() -> Iterator[type[GuardedRead]]:
    """A read command as the context engine will write one (registered for this test only)."""

    @handles(GuardedRead, emits=("budget.consumed",), result=ReadResult)
    def read(ctx: CommandContext, cmd: GuardedRead) -> ReadResult:
        st = enforce_budget(ctx)
        consume(ctx, ctx.actor or "", cmd.tokens, "test.guarded_read")
        return ReadResult("content", st.warning_line)

    try:
        yield GuardedRead
    finally:
        HANDLERS.pop(GuardedRead, None)


def test_reads_warn_at_80_and_are_refused_at_100(app: LeanCtx, guarded_read: type[GuardedRead]) -> None:
    run(app, SetBudget(limit=100))
    assert run(app, guarded_read(tokens=79)).warning is None
    assert run(app, guarded_read(tokens=1)).warning is None  # 80 % is reached by this read
    warned = run(app, guarded_read(tokens=20))
    assert warned.text == "content" and "80 of 100 tokens (80%)" in warned.warning
    head = app.store.head().position
    with pytest.raises(CommandError) as ei:
        run(app, guarded_read(tokens=5))
    err = ei.value
    assert err.code == "BUDGET_EXCEEDED"
    assert "used 100 of 100 tokens" in err.message and "--raise" in err.message
    assert err.details == {"agent_id": "ana", "used": 100, "limit": 100}
    new = app.store.read_all(since=head)
    assert [e.kind for e in new] == ["tool.called"]
    assert (new[0].data().outcome, new[0].data().error_code) == ("error", "BUDGET_EXCEEDED")
    assert state(app).used == 100  # the refused read spent nothing
    run(app, RaiseBudget(by=100))
    assert run(app, guarded_read(tokens=5)).warning is None
    run(app, ResetBudget())
    assert state(app).used == 0


def test_enforce_budget_in_a_plain_context(app: LeanCtx) -> None:
    run(app, SetBudget(limit=10, agent="bob"))
    run(app, ConsumeTokens(tokens=10, tool="t", agent="bob"))
    with app.store.transaction() as tx:
        ctx = CommandContext(tx, app.projections, "ana", None, "/p", T0, clock.iso(T0), "c")
        assert enforce_budget(ctx).level == "ok"  # the caller: unlimited
        with pytest.raises(CommandError) as ei:
            enforce_budget(ctx, "bob")
        assert ei.value.code == "BUDGET_EXCEEDED"


# ------------------------------------------------------------------------------------------
# the ledger
# ------------------------------------------------------------------------------------------
def test_the_ledger_counts_calls_errors_and_tokens_per_agent(app: LeanCtx) -> None:
    run(app, WriteDiary(category="insight", text="a"), actor="ana")
    run(app, WriteDiary(category="insight", text="b"), actor="ana")
    with pytest.raises(LeanCtxError):
        run(app, WriteDiary(category="nope", text="c"), actor="ana")
    run(app, ConsumeTokens(tokens=300, tool="ctx_read"), actor="ana")
    run(app, WriteDiary(category="insight", text="bob's"), actor="bob")
    run(app, ConsumeTokens(tokens=7, tool="ctx_shell", agent="bob"), actor="ana")  # charged to bob
    conn = app.projections.reader("ledger")
    mine = ledger_for(conn, "ana")
    assert mine.agent_id == "ana"
    rows = {(e.area, e.item): e for e in mine.entries}
    assert set(rows) == {("tool", "diary.write"), ("tool", "budget.consume"), ("tokens", "ctx_read")}
    assert (rows["tool", "diary.write"].count, rows["tool", "diary.write"].errors) == (3, 1)
    assert rows["tool", "budget.consume"].count == 2
    assert (rows["tokens", "ctx_read"].tokens, mine.tokens) == (300, 300)
    assert (mine.calls, mine.errors) == (5, 1) and mine.duration_ms > 0
    bobs = ledger_for(conn, "bob")
    assert {(e.area, e.item, e.count, e.tokens) for e in bobs.entries} == {
        ("tool", "diary.write", 1, 0), ("tokens", "ctx_shell", 1, 7)}
    assert [e.area for e in ledger_for(conn, "ana", area="tokens").entries] == ["tokens"]
    assert ledger_for(conn, "stranger").entries == []


def test_one_agent_cannot_read_another_agents_ledger(app: LeanCtx) -> None:
    run(app, WriteDiary(category="insight", text="secret"), actor="bob")
    conn = app.projections.reader("ledger")
    with pytest.raises(CommandError) as ei:
        ledger_for(conn, "ana", agent="bob")
    assert ei.value.code == "LEDGER_FORBIDDEN" and "bob" not in str(ledger_for(conn, "ana"))
    assert ledger_for(conn, "bob", agent="bob").calls == 1  # naming yourself is fine
    for caller in ("", "   "):
        with pytest.raises(InvalidInput) as ei2:
            ledger_for(conn, caller)
        assert ei2.value.code == "LEDGER_NO_IDENTITY"


def test_replay_reproduces_budgets_and_ledger(app: LeanCtx, guarded_read: type[GuardedRead]) -> None:
    from tools.replay import replay

    for i, who in enumerate(["ana", "bob", "cy"] * 4):
        run(app, SetBudget(limit=100 * (i + 1)), actor=who, now=T0 + i)
        run(app, guarded_read(tokens=37 + i), actor=who, now=T0 + i)
        if i % 3 == 0:
            run(app, RaiseBudget(by=5), actor=who)
        if i % 4 == 0:
            run(app, ResetBudget(), actor=who)
    with pytest.raises(LeanCtxError):
        run(app, RaiseBudget(by=0), actor="ana")
    rep = replay(app, verify=True)
    assert rep.chain_ok
    mine = {p.name: p.match for p in rep.projections if p.name in ("budgets", "ledger")}
    assert mine == {"budgets": True, "ledger": True}
    assert all(p.match for p in rep.projections), [p.name for p in rep.projections if not p.match]
    before = {n: app.projections.digest(n) for n in mine}
    replay(app)  # in place: the same rows
    assert {n: app.projections.digest(n) for n in mine} == before


# ------------------------------------------------------------------------------------------
# CLI
# ------------------------------------------------------------------------------------------
def cli(db: Path, *args: str, check: bool = True, **env: str) -> subprocess.CompletedProcess[str]:
    full = {k: v for k, v in os.environ.items() if k not in ("LEAN_CTX_AGENT_ID", "LEAN_CTX_SESSION_ID")}
    full.update({"LEAN_CTX_DB": str(db), **env})
    p = subprocess.run([LEAN_CTX, *args], capture_output=True, text=True, env=full, timeout=60)
    if check and p.returncode != 0:
        raise AssertionError(f"lean-ctx {' '.join(args)} exited {p.returncode}\n{p.stdout}\n{p.stderr}")
    return p


def test_cli_budget(tmp_path: Path) -> None:
    db = tmp_path / "events.db"
    v = json.loads(cli(db, "agent", "budget", "ana", "--set", "1000", "--json").stdout)
    assert (v["agent_id"], v["agent_token_budget"], v["used"], v["level"]) == ("ana", 1000, 0, "ok")
    with LeanCtx(db) as lc:
        lc.bus.dispatch(ConsumeTokens(tokens=850, tool="ctx_read", agent="ana"))
    human = cli(db, "agent", "budget", LEAN_CTX_AGENT_ID="ana").stdout  # default: yourself
    assert "850 of 1000 tokens used (85%)" in human and "[warning]" in human and "ctx_read: 850 tokens" in human
    v = json.loads(cli(db, "agent", "budget", "ana", "--raise", "500", "--json").stdout)
    assert (v["agent_token_budget"], v["used"], v["level"], v["remaining"]) == (1500, 850, "ok", 650)
    v = json.loads(cli(db, "agent", "budget", "ana", "--reset", "--json").stdout)
    assert (v["agent_token_budget"], v["used"], v["by_tool"], v["resets"]) == (1500, 0, [], 1)
    p = cli(db, "agent", "budget", "bob", "--raise", "5", check=False)
    assert p.returncode == 2 and p.stderr.startswith("error[BUDGET_UNLIMITED]:")
    p = cli(db, "agent", "budget", "bob", "--set", "-3", "--json", check=False)
    assert p.returncode == 2 and json.loads(p.stdout)["error"]["code"] == "BUDGET_INVALID_LIMIT"
    assert "unlimited" in cli(db, "agent", "budget", "bob").stdout


def test_cli_ledger_shows_only_the_callers_own(tmp_path: Path) -> None:
    db = tmp_path / "events.db"
    cli(db, "agent", "diary", "-c", "insight", "ana's note", LEAN_CTX_AGENT_ID="ana")
    cli(db, "agent", "diary", "-c", "insight", "bob's note", LEAN_CTX_AGENT_ID="bob")
    cli(db, "agent", "budget", "--set", "9", LEAN_CTX_AGENT_ID="bob")
    mine = json.loads(cli(db, "agent", "ledger", "--json", LEAN_CTX_AGENT_ID="ana").stdout)
    assert mine["agent_id"] == "ana"
    assert [(e["area"], e["item"], e["count"]) for e in mine["entries"]] == [("tool", "diary.write", 1)]
    human = cli(db, "agent", "ledger", LEAN_CTX_AGENT_ID="bob").stdout
    assert "ledger of bob: 2 tool calls" in human and "budget.set" in human
    # no way to name another agent: a hidden flag fails with a stable code, an argument is not accepted
    p = cli(db, "agent", "ledger", "--agent", "bob", "--json", check=False, LEAN_CTX_AGENT_ID="ana")
    assert p.returncode == 2 and json.loads(p.stdout)["error"]["code"] == "LEDGER_FORBIDDEN"
    assert "budget.set" not in p.stdout
    p = cli(db, "agent", "ledger", "bob", check=False, LEAN_CTX_AGENT_ID="ana")
    assert p.returncode == 2 and "budget.set" not in p.stdout
