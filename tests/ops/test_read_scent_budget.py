"""Reads meet the scent field (claim notes inline, HOT deposits) and token budgets (refusal,
consumption, the 80 % warning line)."""

from __future__ import annotations


import pytest

from leanctx.commands.agents import Heartbeat, RegisterAgent
from leanctx.commands.budgets import SetBudget
from leanctx.commands.scent import ClaimScent
from leanctx.context.tokens import count_tokens
from leanctx.errors import CommandError
from leanctx.projections.budgets import check_budget
from leanctx.projections.scent import sync
from tools.replay import replay

from .test_read_common import T0, Reader, lc, project, reader  # noqa: F401


def _claim(reader: Reader, agent_id: str, target: str, now: float) -> None:
    p = str(reader.project)
    reader.lc.bus.dispatch(RegisterAgent(agent_type="cursor", role="dev", project_root=p, agent_id=agent_id),
                           actor=agent_id, project=p, now=now)
    reader.lc.bus.dispatch(ClaimScent(target=target), actor=agent_id, project=p, now=now)


def test_a_read_of_a_file_claimed_by_another_agent_says_so_inline(reader: Reader) -> None:
    _claim(reader, "ag1", "src/app.py", T0)
    p = str(reader.project)

    def beat(t: float) -> None:  # a registered holder holds its claim while it heartbeats
        reader.lc.bus.dispatch(Heartbeat(agent="ag1"), actor="ag1", project=p, now=t)

    beat(T0 + 200)
    a = reader.one("src/app.py", mode="signatures", now=T0 + 240)
    assert a.scent == "[scent: claimed by cursor-dev-1, 4m ago]"
    assert a.text.splitlines()[-1] == a.scent and a.sent_tokens == count_tokens(a.text)
    beat(T0 + 280)
    stub = reader.one("src/app.py", mode="signatures", now=T0 + 300)
    assert stub.stub and stub.text.endswith("\n[scent: claimed by cursor-dev-1, 5m ago]")
    own = reader.one("src/app.py", mode="map", agent="ag1", now=T0 + 300)
    assert own.scent is None and "[scent:" not in own.text  # your own claim is no news
    other = reader.one("README.md", now=T0 + 240)
    assert other.scent is None
    lapsed = reader.one("src/app.py", mode="full", now=T0 + 601)
    assert lapsed.scent is None


def test_every_read_deposits_hot_on_the_file(reader: Reader) -> None:
    reader(["src/app.py", "README.md"], mode="map")
    reader.one("src/app.py", mode="map")  # a stub deposits too: the agent is working on it
    ev = reader.events("scent.deposited")
    assert [(e["target"], e["scent"], e["agent"]) for e in ev] == [
        ("src/app.py", "HOT", "agent-a"), ("README.md", "HOT", "agent-a"), ("src/app.py", "HOT", "agent-a")]
    field = sync(reader.lc.projections.reader("scent"), now=T0, project=str(reader.project), kinds=["HOT"])
    assert {(v.target, v.agent, v.deposits) for v in field} == {("src/app.py", "agent-a", 2),
                                                                ("README.md", "agent-a", 1)}
    reader.one("README.md", agent=None, session=None)  # no agent: nothing to deposit, nothing to consume
    assert len(reader.events("scent.deposited")) == 3
    assert replay(reader.lc, verify=True).ok


def test_budget_refuses_the_read_with_the_figures(reader: Reader) -> None:
    p = str(reader.project)
    reader.lc.bus.dispatch(SetBudget(limit=150), actor="agent-a", project=p, now=T0)
    first = reader.one("src/app.py", mode="full")  # allowed: 0 used before it
    assert first.budget_warning and "token budget exceeded" in first.budget_warning
    assert first.text.endswith(f"[{first.budget_warning}]") and first.sent_tokens == count_tokens(first.text)
    st = check_budget(reader.lc.projections.reader("budgets"), "agent-a")
    assert st.used == first.sent_tokens and st.level == "exceeded"
    consumed = reader.events("budget.consumed")
    assert [(e["agent_id"], e["tokens"], e["tool"]) for e in consumed] == [("agent-a", first.sent_tokens, "ctx_read")]
    with pytest.raises(CommandError) as info:
        reader.one("README.md")
    err = info.value
    assert err.code == "BUDGET_EXCEEDED"
    assert err.details["used"] == first.sent_tokens and err.details["limit"] == 150
    assert f"used {first.sent_tokens} of 150 tokens" in err.message
    assert len(reader.events("file.read")) == 1  # the refused read recorded nothing but the failed call
    failed = reader.events("tool.called")[-1]
    assert failed["command"] == "read.record" and failed["error_code"] == "BUDGET_EXCEEDED"
    assert reader.one("README.md", agent="agent-b").sent_tokens > 0  # budgets are per agent


def test_budget_warning_line_at_80_percent(reader: Reader) -> None:
    reader.lc.bus.dispatch(SetBudget(limit=1000), actor="agent-a", project=str(reader.project), now=T0)
    a = reader(["src/app.py", "README.md"], mode="full")  # ~200 tokens: below 80 %
    assert all(x.budget_warning is None for x in a)
    total = sum(x.sent_tokens for x in a)
    while True:
        b = reader.one("src/app.py", mode="full", fresh=True)
        total += b.sent_tokens
        if total * 5 >= 4000:
            break
        assert b.budget_warning is None
    assert b.budget_warning and "token budget warning" in b.budget_warning
    assert b.text.endswith(f"[{b.budget_warning}]")
    assert sum(e["tokens"] for e in reader.events("budget.consumed")) == total
    assert sum(e["sent_tokens"] for e in reader.events("file.read")) == total
