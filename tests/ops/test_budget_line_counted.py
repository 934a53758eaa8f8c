"""The budget warning line (``\\n[token budget ...]``) a shell run or an expansion appends is
sent, so it is counted: ``shell.ran`` / ``archive.expanded``'s ``sent_tokens``, the budget spent
and the result's ``sent_tokens`` are the tokens of the text returned, warning included (reads
count it already). Real subprocesses, a real log, the real tokenizer."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from leanctx.app import LeanCtx
from leanctx.commands.budgets import SetBudget
from leanctx.context.tokens import count_tokens
from leanctx.events.codec import payload_dict
from leanctx.ops.shell import expand, run_shell

pytestmark = pytest.mark.timeout(60)
PY = sys.executable
ENC = "o200k_base"


@pytest.fixture()
def lc(tmp_path: Path):  # type: ignore[no-untyped-def]
    app = LeanCtx(tmp_path / "e.db")
    yield app
    app.close()


def events(lc: LeanCtx, kind: str) -> list[dict]:
    return [payload_dict(e.payload) for e in lc.store.read_all(0) if e.kind == kind]


def spent(lc: LeanCtx, agent: str) -> int:
    return sum(p["tokens"] for p in events(lc, "budget.consumed") if p["agent_id"] == agent)


@pytest.mark.parametrize("limit", [40, 34, 20])  # warning (85 %), at the edge, exceeded at once
def test_shell_records_the_warning_it_sends(lc: LeanCtx, limit: int) -> None:
    lc.bus.dispatch(SetBudget(limit=limit), actor="agent-b")
    r = run_shell(lc, [PY, "-c", "print(' '.join(['word'] * 33))"], actor="agent-b", session_id="s1")
    assert r.budget_warning and r.text.endswith(f"\n[{r.budget_warning}]")
    [ran] = events(lc, "shell.ran")
    assert ran["sent_tokens"] == count_tokens(r.text, ENC) == r.sent_tokens
    assert spent(lc, "agent-b") == r.sent_tokens
    assert f"used {r.sent_tokens} of {limit}" in r.budget_warning  # the line names what was spent


def test_shell_without_a_warning_is_unchanged(lc: LeanCtx) -> None:
    lc.bus.dispatch(SetBudget(limit=10_000), actor="agent-c")
    r = run_shell(lc, ["echo", "ok"], actor="agent-c")
    assert r.budget_warning is None and r.text == "ok"
    assert events(lc, "shell.ran")[0]["sent_tokens"] == count_tokens("ok", ENC) == r.sent_tokens


def test_expansion_records_the_warning_it_sends(lc: LeanCtx) -> None:
    code = "for i in range(1, 301): print(f'step {i} of 300: state={i*i%97}')"
    first = run_shell(lc, [PY, "-c", code], actor="agent-a", session_id="s1")
    assert first.archive_id
    lc.bus.dispatch(SetBudget(limit=first.sent_tokens + 150), actor="agent-a")
    x = expand(lc, first.archive_id, head=20, actor="agent-a", session_id="s1")
    assert x.budget_warning and x.text.endswith(f"\n[{x.budget_warning}]")
    [exp] = events(lc, "archive.expanded")
    assert exp["sent_tokens"] == count_tokens(x.text, ENC) == x.sent_tokens
    assert spent(lc, "agent-a") == first.sent_tokens + x.sent_tokens
    assert exp["text_tokens"] < exp["sent_tokens"]  # what it delivered of the archive is not the warning
