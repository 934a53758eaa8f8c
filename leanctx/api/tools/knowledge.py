"""``ctx_knowledge``: the project's facts — remember, recall, show, remove, resolve,
consolidate, status, export, import (one ``action`` per verb; the knowledge commands' wrappers)."""

from __future__ import annotations

from typing import Any, Literal

import msgspec

from ...errors import InvalidInput, NotFound
from ..registry import Caller, tool

Action = Literal["remember", "recall", "show", "remove", "resolve", "consolidate", "status", "export", "import"]


class KnowledgeArgs(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    action: Action
    key: str | None = None
    value: str | None = None
    category: str | None = None
    confidence: float | None = None
    source: str | None = None
    query: str | None = None
    limit: int | None = None
    threshold: float | None = None
    dry_run: bool = False
    data: str | None = None  # import: JSON lines as written by export


def _need(a: KnowledgeArgs, *names: str) -> None:
    missing = [n for n in names if getattr(a, n) in (None, "")]
    if missing:
        raise InvalidInput("INVALID_ARGUMENT", f"ctx_knowledge {a.action} needs {', '.join(missing)}")


def _dispatch(lc: Any, caller: Caller, command: Any) -> Any:
    return lc.bus.dispatch(command, actor=caller.agent_id, session_id=caller.session_id,
                           project=caller.project).value


def _remember(lc: Any, caller: Caller, a: KnowledgeArgs) -> dict[str, Any]:
    from ...commands.knowledge import DEFAULT_CONFIDENCE, RememberKnowledge

    _need(a, "category", "key", "value")
    v = _dispatch(lc, caller, RememberKnowledge(
        category=a.category or "", key=a.key or "", value=a.value or "",
        confidence=DEFAULT_CONFIDENCE if a.confidence is None else a.confidence, source=a.source))
    text = f"remembered {v.key} [{v.category}] (version {v.version})"
    if v.conflict:
        text += f"\n⚠ CONFLICT on {v.key}: " + "; ".join(f"{x.agent}: {x.value}" for x in v.alternatives)
    return {"text": text, "ack": v}


def _recall(lc: Any, caller: Caller, a: KnowledgeArgs) -> dict[str, Any]:
    from ...commands.knowledge import check_category, entry_lines
    from ...commands.knowledge_recall import recall

    _need(a, "query")
    cat = check_category(a.category) if a.category else None
    ans = recall(lc, a.query or "", category=cat, limit=a.limit or 10)
    lines = [line for h in ans.hits for line in entry_lines(h.entry)]
    text = "\n".join(lines) or f"no facts match {a.query!r}"
    return {"text": f"{text}\n[{ans.summary}]", **ans.fields()}


def _show(lc: Any, caller: Caller, a: KnowledgeArgs) -> dict[str, Any]:
    from ...commands.knowledge import check_key, entry_lines
    from ...projections.knowledge import get_entry

    _need(a, "key")
    e = get_entry(lc.projections.reader("knowledge"), check_key(a.key or ""))
    if e is None:
        raise NotFound("KNOWLEDGE_NOT_FOUND", f"no fact with key {a.key!r}; try action=recall or action=status")
    return {"text": "\n".join(entry_lines(e)), "entry": e}


def _remove(lc: Any, caller: Caller, a: KnowledgeArgs) -> dict[str, Any]:
    from ...commands.knowledge import RemoveKnowledge

    _need(a, "key")
    v = _dispatch(lc, caller, RemoveKnowledge(key=a.key or ""))
    return {"text": f"removed {v.key}", "removed": v}


def _resolve(lc: Any, caller: Caller, a: KnowledgeArgs) -> dict[str, Any]:
    from ...commands.knowledge import ResolveKnowledge

    _need(a, "key")
    v = _dispatch(lc, caller, ResolveKnowledge(key=a.key or "", value=a.value))
    dropped = f" (discarded {'; '.join(v.discarded)})" if v.discarded else ""
    return {"text": f"resolved {v.key} = {v.value}{dropped}", "resolved": v}


def _consolidate(lc: Any, caller: Caller, a: KnowledgeArgs) -> dict[str, Any]:
    from ...commands.knowledge import DEFAULT_THRESHOLD, ConsolidateKnowledge

    v = _dispatch(lc, caller, ConsolidateKnowledge(
        threshold=DEFAULT_THRESHOLD if a.threshold is None else a.threshold, dry_run=a.dry_run))
    verb = "would merge" if v.dry_run else "merged"
    lines = [f"{verb} {', '.join(m.merged)} into {m.key} [{m.category}]" for m in v.merges]
    return {"text": "\n".join(lines) or "no near-duplicates", "result": v}


def _status(lc: Any, caller: Caller, a: KnowledgeArgs) -> dict[str, Any]:
    from ...projections.knowledge import status

    s = status(lc.projections.reader("knowledge"))
    cats = ", ".join(f"{c} {n}" for c, n in s.by_category.items())
    text = f"{s.total} fact(s){': ' + cats if cats else ''}; conflicts: {', '.join(s.conflicts) or 'none'}"
    return {"text": text, "status": s}


def _export(lc: Any, caller: Caller, a: KnowledgeArgs) -> dict[str, Any]:
    from ...commands.knowledge import check_category, export_jsonl
    from ...projections.knowledge import list_entries

    cat = check_category(a.category) if a.category else None
    data = export_jsonl(list_entries(lc.projections.reader("knowledge"), category=cat))
    return {"text": data or "(no facts)", "data": data}


def _import(lc: Any, caller: Caller, a: KnowledgeArgs) -> dict[str, Any]:
    from ...commands.knowledge import ImportKnowledge, parse_jsonl

    _need(a, "data")
    v = _dispatch(lc, caller, ImportKnowledge(entries=parse_jsonl(a.data or "")))
    return {"text": f"imported {len(v.imported)}, skipped {len(v.skipped)} identical", "result": v}


_ACTIONS = {
    "remember": _remember, "recall": _recall, "show": _show, "remove": _remove, "resolve": _resolve,
    "consolidate": _consolidate, "status": _status, "export": _export, "import": _import,
}


@tool("ctx_knowledge", category="memory", args=KnowledgeArgs, description="""
Project knowledge shared by agents. action: remember(category, key, value, confidence?, source?) |
recall(query, category?, limit?) | show(key) | remove(key) | resolve(key, value?) |
consolidate(threshold?, dry_run?) | status | export | import(data: JSON lines).
Conflicting writes by two agents are flagged on recall/show until resolved.""")
def ctx_knowledge(lc: Any, caller: Caller, a: KnowledgeArgs) -> dict[str, Any]:
    return _ACTIONS[a.action](lc, caller, a)
