"""The resume block honours its priority order under every budget: identity and the task are
always sent (cut short with "…" when they alone do not fit, never dropped), a section is never
dropped while a lower-priority one is sent, more budget never sends less, and every answer is at
most ``max_tokens`` tokens counted with the real tokenizer. Below ``MIN_MAX_TOKENS`` the block is
refused with ``RESUME_INVALID_MAX_TOKENS`` (the library, the tool layer and a real MCP client)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from leanctx.api import registry
from leanctx.api.registry import Caller
from leanctx.app import LeanCtx
from leanctx.commands.agents import RegisterAgent
from leanctx.commands.diaries import WriteDiary
from leanctx.commands.sessions import AddNote, SetTask
from leanctx.context.tokens import count_tokens
from leanctx.errors import LeanCtxError
from leanctx.resume import MIN_MAX_TOKENS, SHARES, build_resume, fit, sections

pytestmark = pytest.mark.timeout(300)
ORDER = [name for name, _ in SHARES]
SHARE = dict(SHARES)
MANDATORY = ("identity", "task")


@pytest.fixture
def app(tmp_path: Path) -> Iterator[LeanCtx]:
    with LeanCtx(tmp_path / "events.db") as a:
        yield a


def do(app: LeanCtx, cmd: Any, project: Path, sid: str = "s1", actor: str = "ana") -> Any:
    return app.bus.dispatch(cmd, actor=actor, session_id=sid, project=str(project)).value


def check(parts: dict[str, list[str]], budget: int) -> dict[str, int]:
    """Run ``fit`` and check every promise of one answer; returns the lines sent per section."""
    text, tokens, left = fit(parts, budget)
    assert tokens == count_tokens(text) <= budget, (budget, tokens)
    sent = {n: len(parts.get(n, [])) - left.get(n, 0) for n in ORDER}
    assert all(0 <= sent[n] <= len(parts.get(n, [])) for n in ORDER)
    assert all(left[n] > 0 for n in left)
    lines = text.split("\n")
    full = [x for n in MANDATORY for x in parts.get(n, [])]
    assert "identity" not in left and "task" not in left, left
    assert len(lines) >= len(full)
    for x, line in zip(lines, full):  # never dropped: first, whole or cut short with "…" (a "— step i/n" kept)
        head, ellipsis, tail = x.rpartition("…")
        assert x == line or (ellipsis and line.startswith(head) and line.endswith(tail)), (budget, line, x)
        if x != line:
            assert "cut short: " in lines[-1] and line.endswith((" — step 3/9", " — step 4")) <= bool(tail)
    for n in ORDER[2:]:  # newest first: the lines sent are a section's first lines
        assert set(parts[n][: sent[n]]) <= set(lines[len(full):]), (n, text)
    for i, hi in enumerate(ORDER):  # priority: a section is cut only when every lower one is at most its share,
        have = len(parts.get(hi, []))  # and below its share only when every lower one is empty
        for lo in ORDER[i + 1:]:
            if sent[hi] < min(SHARE[hi], have):
                assert sent[lo] == 0, (budget, hi, lo, sent, text)
            elif sent[hi] < have:
                assert sent[lo] <= SHARE[lo], (budget, hi, lo, sent, text)
    if left:
        assert "left out: " in lines[-1] and all(f"{k} {n}" in lines[-1] for n, k in left.items())
    return sent


def check_budgets(parts: dict[str, list[str]], budgets: range) -> None:
    before: dict[str, int] | None = None
    for b in budgets:
        sent = check(parts, b)
        if before is not None:  # more budget never sends fewer lines of any section
            assert all(sent[n] >= before[n] for n in ORDER), (b, before, sent)
        before = sent


def test_audit_repro_identity_and_task_come_first(app: LeanCtx, tmp_path: Path) -> None:
    project = tmp_path / "proj"
    project.mkdir()
    do(app, RegisterAgent(agent_type="claude", role="dev", project_root=str(project), agent_id="ana"), project)
    do(app, SetTask(task="port the parser to the new tokenizer and keep the old API working", step=2, total=5),
       project)
    for i in range(6):
        do(app, AddNote(note="decision", text=f"d{i}: keep the shim"), project)
    for budget in (60, 80, 100, 120):
        b = build_resume(app, "s1", "ana", str(project), max_tokens=budget)
        assert b.tokens == count_tokens(b.text) <= budget
        assert b.text.startswith("## lean-ctx resume — session s1\n"), b.text
        assert "you are " in b.text and "task: port the parser" in b.text and "step 2/5" in b.text, b.text
        assert "identity" not in b.left_out and "task" not in b.left_out, (budget, b.left_out)
    assert build_resume(app, "s1", "ana", str(project), max_tokens=120).left_out.get("decisions", 0) < 6


def test_every_budget_on_real_sessions(app: LeanCtx, tmp_path: Path) -> None:
    project = tmp_path / "proj"
    project.mkdir()
    do(app, RegisterAgent(agent_type="claude", role="dev", project_root=str(project), agent_id="ana"), project)
    mixes: list[dict[str, list[str]]] = []
    parts, _ = sections(app, "s1", "ana", str(project))  # identity only
    mixes.append(parts)
    do(app, SetTask(task="migrate every module to the new codec " * 6, step=7, total=40), project)
    for i in range(12):
        do(app, AddNote(note="decision" if i % 3 else "finding",
                        text=f"note {i}: module m{i} still imports the legacy codec " + "and more " * (i % 5)), project)
    do(app, WriteDiary(category="discovery", text="d1"), project)
    for i in range(10):
        (project / f"mod_{i:02d}.py").write_text(f"v = {i}\n")
    registry.call(app, Caller("ana", "s1", str(project)), "ctx_read", {"paths": [f"mod_{i:02d}.py" for i in range(10)]})
    parts, _ = sections(app, "s1", "ana", str(project))
    mixes.append(parts)
    long_sid = "session-" + "x" * 120  # a long session id and project path: identity must be cut, not dropped
    do(app, SetTask(task="ünïcödé task ✨ " * 30, step=1, total=2), project, sid=long_sid)
    do(app, AddNote(note="decision", text="only one"), project, sid=long_sid)
    parts, _ = sections(app, long_sid, "ana", str(project / ("deep/" * 30)))
    mixes.append(parts)
    for parts in mixes:
        check_budgets(parts, range(MIN_MAX_TOKENS, 501))
        for b in range(20, MIN_MAX_TOKENS):
            with pytest.raises(LeanCtxError) as ei:
                fit(parts, b)
            assert ei.value.code == "RESUME_INVALID_MAX_TOKENS"
    tight = fit(mixes[2], MIN_MAX_TOKENS)[0]
    assert "…" in tight and "task: ünï" in tight and "step 1/2" in tight, tight


_CHARS = st.sampled_from(list("abcdefghij klmnop/._-0123456789") + ["é", "✨", "中", "—", "…", "𝔘"])
_LINE = st.text(_CHARS, min_size=1, max_size=300).map(lambda s: s.strip() or "x")


@st.composite
def section_mixes(draw: st.DrawFn) -> dict[str, list[str]]:
    parts: dict[str, list[str]] = {n: [] for n in ORDER}
    parts["identity"] = ["## lean-ctx resume — session " + draw(_LINE), "you are " + draw(_LINE)]
    if draw(st.booleans()):
        parts["task"] = ["task: " + draw(_LINE) + draw(st.sampled_from(["", " — step 3/9", " — step 4"]))]
    for n in ORDER[2:]:
        parts[n] = draw(st.lists(_LINE.map(lambda s: "- " + s), max_size=12, unique=True))
    return parts


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(parts=section_mixes(), budget=st.integers(20, 500))
def test_any_mix_any_budget(parts: dict[str, list[str]], budget: int) -> None:
    if budget < MIN_MAX_TOKENS:
        with pytest.raises(LeanCtxError) as ei:
            fit(parts, budget)
        assert ei.value.code == "RESUME_INVALID_MAX_TOKENS"
        return
    check(parts, budget)
    check_budgets(parts, range(budget, min(budget + 25, 501)))


def test_too_small_a_budget_is_refused_at_every_surface(app: LeanCtx, tmp_path: Path) -> None:
    from mcp import Client
    from mcp_types import Implementation

    from leanctx.api.mcp_server import build_server

    project = tmp_path / "proj"
    project.mkdir()
    caller = Caller("ana", "s1", str(project))
    registry.call(app, caller, "ctx_session", {"action": "task", "task": "t"})
    for bad in (MIN_MAX_TOKENS - 1, 0, -5):
        with pytest.raises(LeanCtxError) as ei:
            registry.call(app, caller, "ctx_session", {"action": "resume", "max_tokens": bad})
        assert ei.value.code == "RESUME_INVALID_MAX_TOKENS" and str(MIN_MAX_TOKENS) in ei.value.message
    ok = registry.call(app, caller, "ctx_session", {"action": "resume", "max_tokens": MIN_MAX_TOKENS})
    assert count_tokens(ok["text"]) <= MIN_MAX_TOKENS and "task: t" in ok["text"]

    async def main() -> list[Any]:
        server = build_server(app, project=project)
        async with Client(server, client_info=Implementation(name="claude-code", version="1")) as c:
            await c.call_tool("ctx_session", {"action": "task", "task": "port the parser to the new tokenizer "
                                                                          "and keep the old API working",
                                              "step": 2, "total": 5})
            for i in range(6):
                await c.call_tool("ctx_session", {"action": "decision", "text": f"d{i}: keep the shim"})
            return [await c.call_tool("ctx_session", {"action": "resume", "max_tokens": m}) for m in (59, 60, 80, 100)]

    refused, *answers = anyio.run(main)
    assert refused.is_error and "RESUME_INVALID_MAX_TOKENS" in refused.content[0].text
    for r, m in zip(answers, (60, 80, 100)):
        text = r.content[0].text
        assert not r.is_error and count_tokens(text) <= m, (m, text)
        assert "you are " in text and "task: port the parser" in text and " identity" not in text.split("cut short")[0]
