"""The wake-up briefing (``ctx_overview``, ``lean-ctx overview [TASK]``): what an agent needs
when it starts or resumes, in a few hundred tokens.

Live agents of this project (stale, left and other projects' agents pruned, and counted),
open and delegated tasks, unread messages for the caller, active path locks and scent claims,
relevant diary entries (and knowledge entries when the knowledge family is installed), and the
caller's resume block when its session has state. Lists are cut to a few lines each, then the
whole text is fitted into ``max_tokens`` by dropping the last lines of the lowest sections.
"""

from __future__ import annotations

import importlib.util
import os
from typing import Any

import msgspec

from . import clock
from .context.tokens import count_tokens

DEFAULT_MAX_TOKENS = 700
RESUME_SHARE = 250  # tokens of the resume block inside the overview
LIVE = ("active", "idle")


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

    open_tasks = list_tasks(conn, now=now, status=("open", "in_progress", "blocked"))
    mine = [t for t in open_tasks if me and (t.to_agent == me or t.owner == me)]
    rest = [t for t in open_tasks if t not in mine]
    tasks = []
    for t in mine + rest:
        line = f"- [{t.status}] {t.channel}/{t.task_id}: {_one(t.title, 80)}"
        if t.owner:
            line += f" — owner {t.owner}"
        if t.to_agent:
            line += f" — delegated to {'you' if t.to_agent == me else t.to_agent}"
        tasks.append(line)

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
        (f"tasks ({len(open_tasks)} open, {len(mine)} yours)", tasks, len(tasks)),
        ("unread messages", [f"- {k}: {v} unread — ctx_agent read channel={k}" for k, v in unread.items()],
         len(unread)),
        (f"path locks ({len(locks)})", locks, len(locks)),
        (f"claims ({len(claims)})", claims, len(claims)),
        ("diary" + (f" (matching {task!r})" if task else " (yours, latest)"), diary, len(diary)),
        ("knowledge", knowledge, len(knowledge)),
    ]
    head = f"# lean-ctx overview — {project}" + (f"\ntask: {_one(task, 200)}" if task else "")
    cut = {title: lines[:per_section] for title, lines, _ in sections}
    text = _render(head, sections, cut, resume_text)
    order = [t for t, _, _ in reversed(sections)]
    while count_tokens(text) > max_tokens:
        victim = next((t for t in order if len(cut[t]) > 1), None) or next((t for t in order if cut[t]), None)
        if victim is None:
            if resume_text is None:
                break
            resume_text = None
        else:
            cut[victim] = cut[victim][:-1]
        text = _render(head, sections, cut, resume_text)
    return Overview(text, count_tokens(text), [a.agent_id for a in live], pruned, tasks, unread, locks, claims, diary,
                    knowledge, resume_text)


def _render(head: str, sections: list[tuple[str, list[str], int]], cut: dict[str, list[str]],
            resume_text: str | None) -> str:
    out = [head]
    for title, _, total in sections:
        lines = cut[title]
        if not total:
            continue
        out.append(f"## {title}")
        out.extend(lines)
        if total > len(lines):
            out.append(f"  (+{total - len(lines)} more)")
    if resume_text:
        out.append(resume_text)
    return "\n".join(out)
