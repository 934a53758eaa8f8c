"""MCP resources (``lean-ctx://context/...``) and prompts (``context-*``): plain text composed
from the projections for the calling session. Blocking (run them in a worker thread).

Resources:

- ``summary``: who you are in this session, then the ``general`` channel's state (members,
  tasks, locks, claims, last messages) and your savings so far;
- ``pressure``: your token budget and the tokens lean-ctx has sent you (per agent: the log
  does not attribute context-window use per session), plus this session's call count;
- ``bounce``: compressed reads you followed with a full read of the same file within 3 calls
  (their savings were retracted), per file and mode;
- ``pinned``: your diary entries tagged ``pinned`` (``/context-pin`` writes them): pins live in
  the log and survive context compaction and new sessions.

Prompts (slash commands in most clients): ``context-focus`` (task), ``context-review``,
``context-reset`` (starts a new lean-ctx session for this connection, so nothing is answered
with a stub of content the model may no longer have), ``context-pin`` (item, note: writes the
pin), ``context-budget``. ``context-reset`` and ``context-pin`` act when the prompt is fetched:
a client fetches a prompt when the user invokes it.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

from .. import clock
from ..errors import InvalidInput
from .mcp_session import McpSession

PREFIX = "lean-ctx://context/"
PIN_TAG = "pinned"


def _me(sess: McpSession) -> str:
    name = f"{sess.agent_name} ({sess.agent_id})" if sess.agent_name else (sess.agent_id or "unregistered")
    return f"agent {name}, session {sess.session_id}, {sess.calls} tool calls"


def _savings_line(lc: Any, agent: str | None) -> str:
    from ..projections.savings import report

    t = report(lc.projections.reader("savings"), agent=agent, by=("tool",)).totals
    pct = "-" if t.savings_pct is None else f"{t.savings_pct:.1f}%"
    return (f"tokens: raw {t.raw_tokens:,} → sent {t.sent_tokens:,}, saved {t.saved_tokens:,} ({pct}) over "
            f"{t.calls} calls; {t.bounces} bounces ({t.wasted_tokens:,} wasted)")


def summary(lc: Any, sess: McpSession, project: str) -> str:
    from ..channel_state import channel_state, render_state

    lc.projections.ensure_current()
    st = channel_state(lc.store.read_connection(), "general", now=clock.now(), position=lc.store.head().position,
                       project=project)
    return f"# lean-ctx — {_me(sess)}\nproject: {project}\n{_savings_line(lc, sess.agent_id)}\n\n{render_state(st)}"


def pressure(lc: Any, sess: McpSession, project: str) -> str:
    from ..projections.budgets import budget_view

    lines = [f"# context pressure — {_me(sess)}", _savings_line(lc, sess.agent_id)]
    if sess.agent_id:
        v = budget_view(lc.projections.reader("budgets"), sess.agent_id)
        if v.agent_token_budget:
            lines.append(f"budget: {v.used:,} of {v.agent_token_budget:,} tokens ({v.ratio:.0%}), level {v.level}")
        else:
            lines.append(f"budget: unlimited; {v.used:,} tokens used since the last reset")
        if v.warning_line:
            lines.append(v.warning_line)
        lines.extend(f"- {t.tool}: {t.tokens:,} tokens in {t.calls} calls" for t in v.by_tool)
    return "\n".join(lines) + "\n"


def bounce(lc: Any, sess: McpSession, project: str) -> str:
    from ..projections.savings import bounced_files

    rows = bounced_files(lc.projections.reader("savings"), agent=sess.agent_id, limit=20)
    lines = [f"# bounced reads — {_me(sess)}",
             "a compressed read followed by a full read of the same file within 3 calls: read these in full first"]
    lines.extend(f"- {b.path} ({b.mode}): {b.bounces} bounces, {b.wasted_tokens:,} tokens wasted" for b in rows)
    if not rows:
        lines.append("(no bounces)")
    return "\n".join(lines) + "\n"


def pins(lc: Any, sess: McpSession) -> list[Any]:
    from ..projections.diaries import recall_diary

    if not sess.agent_id:
        return []
    entries = recall_diary(lc.projections.reader("diaries"), sess.agent_id, limit=200, matching=PIN_TAG)
    return [e for e in entries if PIN_TAG in e.tags]


def pinned(lc: Any, sess: McpSession, project: str) -> str:
    lines = [f"# pinned — {_me(sess)}"]
    for e in pins(lc, sess):
        where = f" [{', '.join(e.paths)}]" if e.paths else ""
        lines.append(f"- #{e.seq} {e.text}{where}")
    if len(lines) == 1:
        lines.append("(nothing pinned: use the context-pin prompt)")
    return "\n".join(lines) + "\n"


RESOURCES: dict[str, tuple[str, Callable[[Any, McpSession, str], str]]] = {
    "summary": ("Who you are here, the team's tasks, locks, claims and messages, your savings", summary),
    "pressure": ("Your token budget and the tokens lean-ctx sent you", pressure),
    "bounce": ("Compressed reads you re-read in full soon after", bounce),
    "pinned": ("What you pinned (survives compaction)", pinned),
}


# --- prompts ---------------------------------------------------------------------------------

PROMPTS: dict[str, tuple[str, list[tuple[str, str, bool]]]] = {
    "context-focus": ("Focus the context on one task", [("task", "what you are working on", True)]),
    "context-review": ("Review what is in your context and what it cost", []),
    "context-reset": ("Start a fresh lean-ctx session after clearing or compacting the conversation", []),
    "context-pin": ("Pin a file or a fact so it survives compaction",
                    [("item", "a file path or a fact", True), ("note", "why it matters", False)]),
    "context-budget": ("Show your token budget and how to stay within it", []),
}


def _arg(args: dict[str, str] | None, name: str) -> str:
    value = (args or {}).get(name, "")
    return value.strip() if isinstance(value, str) else ""


def prompt_text(name: str, args: dict[str, str] | None, lc: Any, sess: McpSession, project: str) -> str:
    if name == "context-focus":
        task = _arg(args, "task")
        if not task:
            raise InvalidInput("INVALID_ARGUMENT", "context-focus needs a task")
        return (f"Focus on: {task}\n"
                f"- Find the code with ctx_search (query words from the task), then read with ctx_read mode=task "
                f"and task={task!r} for large files, mode=full only for what you will edit.\n"
                "- Claim the files you will change (ctx_agent action=claim) and check ctx_agent action=read for "
                "messages from other agents first.\n"
                "- Keep shell output compressed (ctx_shell); expand only what you need (ctx_expand).")
    if name == "context-review":
        return ("Review your working context. Drop what the task no longer needs; re-read in full only files "
                "you will edit.\n\n" + summary(lc, sess, project) + "\n" + bounce(lc, sess, project))
    if name == "context-reset":
        old = sess.session_id
        new = sess.rotate()
        return (f"lean-ctx session reset: {old} → {new}. Files read before this point are sent in full again "
                "(no 'unchanged' stubs), so re-read what you need. Your pins are kept:\n"
                + pinned(lc, sess, project))
    if name == "context-pin":
        return _pin(lc, sess, project, _arg(args, "item"), _arg(args, "note"))
    if name == "context-budget":
        return (pressure(lc, sess, project) + "\nTo stay within budget: prefer ctx_read modes map/signatures/task, "
                "search before reading, and avoid raw shell output.")
    raise InvalidInput("PROMPT_UNKNOWN", f"no prompt {name!r}; the prompts are {', '.join(PROMPTS)}")


def _pin(lc: Any, sess: McpSession, project: str, item: str, note: str) -> str:
    from ..commands.diaries import WriteDiary

    if not item:
        raise InvalidInput("INVALID_ARGUMENT", "context-pin needs an item (a file path or a fact)")
    path = item if os.path.isfile(os.path.join(project, item)) else None
    text = f"{item} — {note}" if note else item
    v = lc.bus.dispatch(WriteDiary(category="decision", text=text, tags=(PIN_TAG,), paths=(path,) if path else ()),
                        actor=sess.agent_id, session_id=sess.session_id, project=project).value
    return f"Pinned #{v.seq}: {text}. It stays listed at {PREFIX}pinned across compaction and new sessions."
