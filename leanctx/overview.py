"""The wake-up briefing (``ctx_overview``, ``lean-ctx overview [TASK]``): what an agent needs
when it starts or resumes, in a few hundred tokens.

Live agents of this project (stale, left and other projects' agents pruned, and counted),
tasks not finished, unread messages for the caller, active path locks and scent claims,
relevant diary entries (and knowledge entries when the knowledge family is installed), and the
caller's resume block when its session has state. Lists are cut to a few lines each, then the
whole text is fitted into ``max_tokens`` by dropping the last lines of the lowest sections.

Tasks: the heading counts them by status in the words of ``chat state`` (open, in progress,
blocked), per channel when they live in more than one, with the expired leases and the caller's.
The caller's tasks come first, then those whose lease expired (recoverable), then the rest;
an in-progress line says its lease state — live until when, or expired how long ago with the
``ctx_task`` call that takes it over (``recover``, or ``renew`` for the caller's own) — and the
"+N more" line names the channels of the tasks it leaves out.
"""

from __future__ import annotations

import importlib.util
import os
from collections.abc import Callable
from typing import Any

import msgspec

from . import clock
from .context.tokens import DEFAULT_ENCODING, count_tokens
from .projections.scent import format_age

DEFAULT_MAX_TOKENS = 700
RESUME_SHARE = 250  # tokens of the resume block inside the overview
LIVE = ("active", "idle")
NOT_FINISHED = ("open", "in_progress", "blocked")
STATUS_WORDS = {"open": "open", "in_progress": "in progress", "blocked": "blocked"}  # as `chat state` says them
HEAD_CHANNELS = 4  # channels counted one by one in the tasks heading


class Overview(msgspec.Struct, frozen=True):
    text: str
    tokens: int
    agents: list[str]
    pruned_agents: int
    tasks: list[str]
    unread: dict[str, int]
    locks: list[str]
    claims: list[str]
    diary: list[str]
    knowledge: list[str]
    resume: str | None
    task_counts: dict[str, dict[str, int]] = {}  # channel → status → tasks not finished (no zeros)


def _one(text: str | None, limit: int = 120) -> str:
    t = " ".join((text or "").split())
    return t if len(t) <= limit else t[: limit - 1] + "…"


def _words(task: str | None) -> list[str]:
    return [w for w in (task or "").lower().split() if len(w) > 2]


def _knowledge_lines(lc: Any, task: str | None, limit: int) -> list[str]:
    """Knowledge entries, only if that family exists (it is built separately); never fails."""
    if importlib.util.find_spec("leanctx.projections.knowledge") is None:
        return []
    try:
        from .projections import knowledge as kn

        conn = lc.projections.reader(getattr(getattr(kn, "Knowledge", None), "name", "knowledge"))
        if task and hasattr(kn, "recall"):
            hits = kn.recall(conn, task, limit=limit)
            keys = [getattr(h, "key", None) for h in hits]
            entries: list[Any] = [kn.get_entry(conn, k) for k in keys if k] if hasattr(kn, "get_entry") else []
        else:
            entries = list(kn.list_entries(conn))[-limit:] if hasattr(kn, "list_entries") else []
        return [f"- {e.key}: {_one(str(e.value), 100)}" for e in entries if e is not None][:limit]
    except Exception:  # noqa: BLE001 - a family under construction must not break the briefing
        return []


def _counted(counts: dict[str, int]) -> str:
    return ", ".join(f"{n} {STATUS_WORDS[s]}" for s, n in counts.items())


def _lease_note(t: Any, me: str | None, now: float) -> str:
    """What an in-progress task's lease lets others do: wait (live until …), take it over
    (expired: the ``recover`` call), or, for the caller's own, ``renew`` it."""
    if t.lease_state == "active":
        exp = t.lease_expires_at  # fixed-width ISO: the time of day alone while under a day away
        until = (exp[11:19] if t.lease_remaining_seconds < 86400 else exp[:19]) + "Z"
        return f" — lease live until {until} ({format_age(t.lease_remaining_seconds)} left)"
    if t.lease_state == "expired":
        ago = format_age(now - clock.parse(t.lease_expires_at))
        ids = f"channel={t.channel} task_id={t.task_id}"
        if me and t.owner == me:
            return f" — your lease expired {ago} ago: renew it with ctx_task action=renew {ids}"
        return f" — lease expired {ago} ago: recoverable with ctx_task action=recover {ids} reason=…"
    return " — no lease"


def _task_section(views: list[Any], me: str | None, now: float
                  ) -> tuple[str, list[str], dict[str, dict[str, int]], Callable[[int], str]]:
    """(heading, lines, channel → status → count, "+N more" suffix given the lines shown) of the
    tasks not finished."""
    counts: dict[str, dict[str, int]] = {}
    for t in views:
        per = counts.setdefault(t.channel, {s: 0 for s in NOT_FINISHED})
        per[t.status] += 1
    counts = {ch: {s: n for s, n in per.items() if n} for ch, per in counts.items()}
    mine = [t for t in views if me and (t.to_agent == me or t.owner == me)]
    expired = [t for t in views if t.status == "in_progress" and t.lease_state == "expired"]
    ordered = mine + [t for t in expired if t not in mine] + [t for t in views if t not in mine and t not in expired]
    lines = []
    for t in ordered:
        line = f"- [{t.status}] {t.channel}/{t.task_id}: {_one(t.title, 80)}"
        if t.owner:
            line += f" — owner {t.owner}"
        if t.to_agent:
            line += f" — delegated to {'you' if t.to_agent == me else t.to_agent}"
        if t.status == "in_progress":
            line += _lease_note(t, me, now)
        if t.status == "blocked" and t.blocked_reason:
            line += f" — blocked: {_one(t.blocked_reason, 60)}"
        lines.append(line)

    tail = f" — {len(expired)} lease expired, {len(mine)} yours" if expired else f" — {len(mine)} yours"
    if not counts:
        title = "tasks"  # an empty section is not rendered
    elif len(counts) == 1:
        (channel, per), = counts.items()
        title = f"tasks in {channel}: {_counted(per)}{tail}"
    else:
        parts = [f"{ch}: {_counted(per)}" for ch, per in list(counts.items())[:HEAD_CHANNELS]]
        rest = list(counts.values())[HEAD_CHANNELS:]
        if rest:
            parts.append(f"+{len(rest)} channels with {sum(sum(p.values()) for p in rest)} tasks")
        title = f"tasks in {len(counts)} channels — {'; '.join(parts)}{tail}"

    def where(shown: int) -> str:
        left: dict[str, int] = {}
        for t in ordered[shown:]:
            left[t.channel] = left.get(t.channel, 0) + 1
        named = [f"{ch}: {n}" for ch, n in sorted(left.items())[:HEAD_CHANNELS]]
        if len(left) > HEAD_CHANNELS:
            named.append(f"+{len(left) - HEAD_CHANNELS} channels")
        channel = next(iter(left)) if len(left) == 1 else "…"
        return f" in {', '.join(named)} — ctx_task action=list channel={channel}"

    return title, lines, counts, where


def build_overview(lc: Any, *, agent_id: str | None, session_id: str | None, project: str, task: str | None = None,
                   now: float | None = None, max_tokens: int = DEFAULT_MAX_TOKENS, per_section: int = 5,
                   with_resume: bool = True) -> Overview:
    from .projections.agents import list_agents
    from .projections.channels import list_channels
    from .projections.diaries import recall_diary
    from .projections.locks import active_locks
    from .projections.scent import sync
    from .projections.sessions import get_session
    from .projections.tasks import list_tasks

    now = clock.now() if now is None else now
    project = os.path.realpath(project)
    lc.projections.ensure_current()
    conn = lc.projections.reader("agents")
    me = agent_id

    everyone = list_agents(conn, now=now, include_left=True)
    live = [a for a in everyone if a.project_root == project and a.status in LIVE and not a.left_at]
    pruned = len(everyone) - len(live)
    agents = [f"- {a.name} ({a.agent_id}) {a.status}, {a.agent_type}/{a.role}" + (" ← you" if a.agent_id == me else "")
              for a in live]

    tasks_title, tasks, task_counts, tasks_more = _task_section(
        list_tasks(conn, now=now, status=NOT_FINISHED), me, now)

    unread: dict[str, int] = {}
    if me:
        for ch in list_channels(conn, reader=me):
            if ch.unread:
                unread[ch.name] = ch.unread

    locks = [f"- {lk.display} — {lk.owner}, expires {lk.expires_at}" for lk in active_locks(conn, now=now,
                                                                                          workspace=project)]
    claims = [f"- {v.target} — {v.name}" for v in sync(conn, now=now, project=project, kinds=("CLAIMED",))
              if v.active]

    words = _words(task)
    authors = list(dict.fromkeys([*([me] if me else []), *(a.agent_id for a in live)]))
    scored: list[tuple[int, int, str]] = []
    for author in authors:
        for e in recall_diary(conn, author, limit=30):
            hay = f"{e.text} {' '.join(e.tags)} {' '.join(e.paths)}".lower()
            score = sum(w in hay for w in words)
            if words and not score:
                continue
            if not words and author != me:
                continue
            scored.append((score, e.position, f"- {author} {e.category}: {_one(e.text, 100)}"))
    diary = [line for _, _, line in sorted(scored, key=lambda x: (-x[0], -x[1]))]

    knowledge = _knowledge_lines(lc, task, per_section)

    resume_text = None
    if with_resume and session_id:
        sess = get_session(lc.projections.reader("sessions"), session_id)
        if sess is not None:
            from .resume import build_resume

            block = build_resume(lc, session_id, me, project, max_tokens=RESUME_SHARE, now=now)
            if not block.empty:
                resume_text = block.text

    sections: list[tuple[str, list[str], int]] = [
        (f"agents ({len(live)} live, {pruned} stale/left/elsewhere pruned)", agents, len(agents)),
        (tasks_title, tasks, len(tasks)),
        ("unread messages", [f"- {k}: {v} unread — ctx_agent read channel={k}" for k, v in unread.items()],
         len(unread)),
        (f"path locks ({len(locks)})", locks, len(locks)),
        (f"claims ({len(claims)})", claims, len(claims)),
        ("diary" + (f" (matching {task!r})" if task else " (yours, latest)"), diary, len(diary)),
        ("knowledge", knowledge, len(knowledge)),
    ]
    head = f"# lean-ctx overview — {project}" + (f"\ntask: {_one(task, 200)}" if task else "")
    cut = {title: lines[:per_section] for title, lines, _ in sections}
    more = {tasks_title: tasks_more}
    text = _render(head, sections, cut, resume_text, more)
    order = [t for t, _, _ in reversed(sections)]
    while count_tokens(text) > max_tokens:
        victim = next((t for t in order if len(cut[t]) > 1), None) or next((t for t in order if cut[t]), None)
        if victim is None:
            if resume_text is None:
                break
            resume_text = None
        else:
            cut[victim] = cut[victim][:-1]
        text = _render(head, sections, cut, resume_text, more)
    if count_tokens(text) > max_tokens and more:  # the "+N more" lines without where they are
        more = {}
        text = _render(head, sections, cut, resume_text, more)
    if count_tokens(text) > max_tokens:  # headings alone (a long project path) over a small budget: cut, said
        from .ops.cap import char_prefix

        keep = char_prefix(text, max_tokens - 1, DEFAULT_ENCODING)
        while keep and count_tokens(text[:keep].rstrip() + "…") > max_tokens:
            keep -= 1
        text = text[:keep].rstrip() + "…"
    return Overview(text, count_tokens(text), [a.agent_id for a in live], pruned, tasks, unread, locks, claims, diary,
                    knowledge, resume_text, task_counts)


def _render(head: str, sections: list[tuple[str, list[str], int]], cut: dict[str, list[str]],
            resume_text: str | None, more: dict[str, Callable[[int], str]]) -> str:
    out = [head]
    for title, _, total in sections:
        lines = cut[title]
        if not total:
            continue
        out.append(f"## {title}")
        out.extend(lines)
        if total > len(lines):
            where = more[title](len(lines)) if title in more else ""
            out.append(f"  (+{total - len(lines)} more){where}")
    if resume_text:
        out.append(resume_text)
    return "\n".join(out)
