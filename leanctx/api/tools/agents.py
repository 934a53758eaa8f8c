"""``ctx_agent``: the caller among other agents — registry, channels and messages, scent claims,
diary, events, heartbeat and budget, one ``action`` per verb (the coordination commands' wrappers).

``read`` takes at most ``limit`` messages (default 50) and at most what fits in the answer cap
(:mod:`leanctx.commands.chat_delivery`): the cursor moves past those only, and the text ends
with ``[N more unread …]`` when more wait. A single message larger than the cap is sent cut,
with the command that shows it whole.

An ``agent=`` argument is an agent id, or a name in the caller's project (names repeat per
project); one that names nobody is refused with ``AGENT_NOT_FOUND`` rather than answered as an
empty diary or an unlimited budget of nobody.

``poll_events`` shows the log as the caller may see it (``leanctx.commands.chat_reads.AgentScope``):
its own events, events directed to it, and the broadcast coordination events of its project
(messages, tasks, claims, locks, joins and leaves), never other agents' tool calls, reads or shell
runs; ``since="now"`` answers no past event and the head to poll from next."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Literal

import msgspec

from ... import clock
from ...errors import InvalidInput
from ..registry import Caller, tool

Action = Literal["register", "list", "channels", "init", "post", "read", "claim", "release", "sync", "diary",
                 "recall_diary", "poll_events", "heartbeat", "budget"]
DEFAULT_CHANNEL = "general"
POLL_LINE_CHARS = 160  # poll_events: an event's fields in the text, cut with "…" past this
READ_RESERVE_TOKENS = 300  # read: of the answer cap, kept for the "[N more unread]" line and a cut's notice


class AgentArgs(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    action: Action
    channel: str | None = None
    to: str | None = None
    title: str | None = None
    body: str | None = None
    category: str | None = None
    reply_to: int | None = None
    target: str | None = None
    text: str | None = None
    tags: list[str] | None = None
    paths: list[str] | None = None
    agent: str | None = None
    grep: str | None = None
    kinds: list[str] | None = None
    since: int | Literal["now"] | None = None
    limit: int | None = None
    status: str | None = None
    role: str | None = None
    members: list[str] | None = None
    topic: str | None = None


def _need(a: AgentArgs, *names: str) -> None:
    missing = [n for n in names if getattr(a, n) in (None, "")]
    if missing:
        raise InvalidInput("INVALID_ARGUMENT", f"ctx_agent {a.action} needs {', '.join(missing)}")


def _me(caller: Caller) -> str:
    if not caller.agent_id:
        raise InvalidInput("AGENT_NO_IDENTITY", "this call has no agent identity; register first (action=register)")
    return caller.agent_id


def _dispatch(lc: Any, caller: Caller, command: Any) -> Any:
    return lc.bus.dispatch(command, actor=caller.agent_id, session_id=caller.session_id,
                           project=caller.project).value


def _resolve(lc: Any, caller: Caller, ref: str | None, known: Callable[[str], bool]) -> str:
    """``ref`` (an agent id, or a name in the caller's project) as an agent id, else the caller.
    A ``ref`` no registered agent matches is kept only when ``known(ref)`` (the log holds
    something of that unregistered identity); otherwise ``AGENT_NOT_FOUND``."""
    from ...commands.chat import agent_not_found
    from ...projections.agents import find_agent

    if not ref or not ref.strip():
        return _me(caller)
    ref = ref.strip()
    found = find_agent(lc.projections.reader("agents"), ref, now=clock.now(), project_root=caller.project)
    if found is not None:
        return found.agent_id
    if known(ref):
        return ref
    raise agent_not_found(ref)


# --- the actions -----------------------------------------------------------------------------


def _register(lc: Any, caller: Caller, a: AgentArgs) -> dict[str, Any]:
    from ...commands.agents import RegisterAgent
    from ...projections.agents import find_agent

    me = _me(caller)
    known = find_agent(lc.projections.reader("agents"), me, now=clock.now())
    agent_type = known.agent_type if known is not None and known.agent_id == me else "mcp"
    v = _dispatch(lc, caller, RegisterAgent(agent_type=agent_type, role=a.role or "dev", project_root=caller.project,
                                            agent_id=me, session_id=caller.session_id))
    verb = "rejoined" if v.rejoined else "registered"
    key = (f"; key {v.key_fingerprint}" if v.key_fingerprint else "") + (
        f"; warning: no signing key ({v.key_warning})" if v.key_warning else "")
    return {"text": f"{verb} {v.name} (agent_id {v.agent_id}, role {v.role}){key}", "agent": v}


def _list(lc: Any, caller: Caller, a: AgentArgs) -> dict[str, Any]:
    from ...commands.agents import SweepAgents
    from ...projections.agents import list_agents

    now = clock.now()
    agents = list_agents(lc.projections.reader("agents"), now=now, project_root=caller.project)
    if any(x.status == "stale" and not x.timed_out for x in agents):
        _dispatch(lc, caller, SweepAgents(project_root=caller.project))
        agents = list_agents(lc.projections.reader("agents"), now=now, project_root=caller.project)
    lines = [f"{x.name} ({x.agent_id}) {x.status}, {x.agent_type}/{x.role}, seen {x.age_seconds:.0f}s ago"
             + (" ← you" if x.agent_id == caller.agent_id else "") for x in agents]
    return {"text": "\n".join(lines) or "no agents registered in this project", "agents": agents}


def _post(lc: Any, caller: Caller, a: AgentArgs) -> dict[str, Any]:
    from ...commands.chat import PostMessage

    _need(a, "title", "body")
    m = _dispatch(lc, caller, PostMessage(title=a.title or "", body=a.body or "", channel=a.channel or DEFAULT_CHANNEL,
                                          to=a.to or "all", category=a.category or "note", reply_to=a.reply_to))
    return {"text": f"posted #{m.seq} to {m.to} in {m.channel}", "message": m}


def _read(lc: Any, caller: Caller, a: AgentArgs) -> dict[str, Any]:
    from ...commands.chat import DEFAULT_READ_LIMIT, ReadMessages
    from ...ops.cap import ANSWER_CAP_TOKENS
    from .chat_text import read_text
    from .context import encoding_of

    encoding = encoding_of(caller)
    r = _dispatch(lc, caller, ReadMessages(channel=a.channel or DEFAULT_CHANNEL, encoding=encoding,
                                           limit=DEFAULT_READ_LIMIT if a.limit is None else a.limit,
                                           max_tokens=ANSWER_CAP_TOKENS - READ_RESERVE_TOKENS))
    return {"text": read_text(r, ANSWER_CAP_TOKENS, encoding), **msgspec.to_builtins(r)}


def _channels(lc: Any, caller: Caller, a: AgentArgs) -> dict[str, Any]:
    from ...commands.chat_reads import summaries
    from .chat_text import channel_line

    found = summaries(lc, _me(caller), project=caller.project)
    return {"text": "\n".join(channel_line(c) for c in found), "channels": found}


def _init(lc: Any, caller: Caller, a: AgentArgs) -> dict[str, Any]:
    from ...commands.chat import InitChannel

    _need(a, "channel")
    v = _dispatch(lc, caller, InitChannel(channel=a.channel or "", members=list(a.members or []), topic=a.topic))
    members = f"members: {', '.join(v.members)}" if v.members else "open to every agent"
    topic = f"; topic: {v.topic}" if v.topic else ""
    return {"text": f"created #{v.name} ({members}){topic}; post with ctx_agent action=post channel={v.name}",
            "channel": v}


def _claim(lc: Any, caller: Caller, a: AgentArgs) -> dict[str, Any]:
    from ...commands.scent import ClaimScent
    from ...projections.scent import format_age

    _need(a, "target")
    v = _dispatch(lc, caller, ClaimScent(target=a.target or ""))
    held = f" for {format_age(v.active_for_seconds)}" if v.active_for_seconds else ""
    extra = f"; took over {v.took_over_from}'s lapsed claim" if v.took_over_from else ""
    return {"text": f"{'refreshed claim on' if v.refreshed else 'claimed'} {v.target}{held}{extra}", "mark": v}


def _release(lc: Any, caller: Caller, a: AgentArgs) -> dict[str, Any]:
    from ...commands.scent import ReleaseScent

    _need(a, "target")
    v = _dispatch(lc, caller, ReleaseScent(target=a.target or ""))
    return {"text": f"released {v.target}", "release": v}


def _sync(lc: Any, caller: Caller, a: AgentArgs) -> dict[str, Any]:
    from ...commands.scent import check_kind, half_lives_from_env
    from ...projections.scent import format_age, sync

    kinds = [check_kind(k) for k in a.kinds] if a.kinds else None
    field = sync(lc.projections.reader("scent"), now=clock.now(), project=caller.project, kinds=kinds,
                 half_lives=half_lives_from_env())
    if a.limit:
        field = field[: a.limit]
    lines = [f"{v.target} {v.kind}{' (active)' if v.active else ''} by {v.name}, {v.intensity:.2f}, "
             f"{format_age(v.age_seconds)} ago" for v in field]
    return {"text": "\n".join(lines) or "the scent field is empty", "field": field}


def _diary(lc: Any, caller: Caller, a: AgentArgs) -> dict[str, Any]:
    from ...commands.diaries import WriteDiary

    _need(a, "category", "text")
    v = _dispatch(lc, caller, WriteDiary(category=a.category or "", text=a.text or "", tags=tuple(a.tags or ()),
                                         paths=tuple(a.paths or ())))
    return {"text": f"{v.category} #{v.seq} written in your diary", "entry": v}


def _recall(lc: Any, caller: Caller, a: AgentArgs) -> dict[str, Any]:
    from ...commands.diaries import check_category
    from ...projections.diaries import recall_diary

    conn = lc.projections.reader("diaries")
    who = _resolve(lc, caller, a.agent, lambda ref: bool(recall_diary(conn, ref, limit=1)))
    cat = check_category(a.category) if a.category else None
    entries = recall_diary(conn, who, category=cat, limit=a.limit or 20, matching=a.grep)
    lines = []
    for e in entries:
        extra = (" [" + ", ".join(e.tags) + "]" if e.tags else "") + (" " + " ".join(e.paths) if e.paths else "")
        lines.append(f"#{e.seq} {e.ts[:16]} {e.category}: {e.text}{extra}")
    return {"text": "\n".join(lines) or f"no diary entries for {who}", "entries": entries}


def _poll(lc: Any, caller: Caller, a: AgentArgs) -> dict[str, Any]:
    from ...commands.chat_reads import AgentScope, identity, poll_events
    from ...events import TopicFilter
    from ...events.codec import payload_dict

    me = identity(lc, _me(caller), project=caller.project)
    flt = TopicFilter(kinds=tuple(a.kinds) if a.kinds else None, channel=a.channel)
    res = poll_events(lc.store, a.since or 0, flt, a.limit or 100, scope=AgentScope(me, caller.project))
    lines = []
    for e in res.events:
        data = {k: v for k, v in payload_dict(e.payload).items() if k != "kind" and v not in (None, "", [], {})}
        body = " ".join(f"{k}={v}" for k, v in data.items())
        body = body if len(body) <= POLL_LINE_CHARS else body[: POLL_LINE_CHARS - 1] + "…"  # cut: said
        lines.append(f"{e.position} {e.kind} by {e.actor or '-'}: {body}")
    lines.append(f"[next since={res.next_cursor}]")
    return {"text": "\n".join(lines), "events": [e.to_dict() for e in res.events], "next_cursor": res.next_cursor}


def _heartbeat(lc: Any, caller: Caller, a: AgentArgs) -> dict[str, Any]:
    from ...commands.agents import Heartbeat

    v = _dispatch(lc, caller, Heartbeat(agent=_me(caller), status=a.status))
    return {"text": f"ok {v.name}; next heartbeat within {v.ttl_seconds / 3:.0f}s", "ack": v}


def _budget(lc: Any, caller: Caller, a: AgentArgs) -> dict[str, Any]:
    from ...projections.budgets import budget_view

    conn = lc.projections.reader("budgets")

    def known(ref: str) -> bool:  # a budget was set, or tokens recorded, for that identity
        v = budget_view(conn, ref)
        return bool(v.agent_token_budget or v.consumed_total or v.resets)

    v = budget_view(conn, _resolve(lc, caller, a.agent, known))
    if v.agent_token_budget == 0:
        text = f"budget of {v.agent_id}: unlimited; {v.used} tokens used"
    else:
        text = (f"budget of {v.agent_id}: {v.used} of {v.agent_token_budget} tokens ({v.ratio:.0%}), "
                f"{v.remaining} left [{v.level}]")
    if v.warning_line:
        text += f"\n{v.warning_line}"
    return {"text": text, "budget": v}


_ACTIONS = {
    "register": _register, "list": _list, "channels": _channels, "init": _init, "post": _post, "read": _read, "claim": _claim, "release": _release,
    "sync": _sync, "diary": _diary, "recall_diary": _recall, "poll_events": _poll, "heartbeat": _heartbeat,
    "budget": _budget,
}


@tool("ctx_agent", category="session", args=AgentArgs, description="""
Coordinate with other agents. action: list | channels | init(channel, members?, topic?) |
post(title, body, to?, channel?, category?) | read(channel?, limit?) |
claim/release(target: file or task) | sync (scent field) |
diary(category: discovery|decision|blocker|progress|insight, text, tags?) | recall_diary(agent?, grep?) |
poll_events(since|"now", kinds?): yours, to you, project messages/tasks/claims/locks/joins;
not others' tool calls | heartbeat(status?) | budget | register(role).""")
def ctx_agent(lc: Any, caller: Caller, a: AgentArgs) -> dict[str, Any]:
    return _ACTIONS[a.action](lc, caller, a)
