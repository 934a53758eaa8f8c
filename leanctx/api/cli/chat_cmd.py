"""``lean-ctx chat``: channels and messages (init, channels, post, read, peek, wait), adapter
events (``event post|read``) and ``export``.

Who you are: ``--as`` (``--from`` on post), else ``$LEAN_CTX_AGENT_ID``, else ``local-<ppid>``.
Flag names follow agent-chat's. Imports of the family stay inside the verbs (fast start).
"""

from __future__ import annotations

import sys
import unicodedata
from typing import Any, Optional

import typer

from .app import state
from .common import JSON, dispatch
from .groups import chat_app

event_app = typer.Typer(
    help="Adapter-neutral events (schema version 1): capability and status.", no_args_is_help=True
)
chat_app.add_typer(event_app, name="event")

CHANNEL = typer.Option("general", "--channel", "-c", help="Channel name (default: general).")
AS = typer.Option(None, "--as", help="Act as this agent (default: $LEAN_CTX_AGENT_ID, else local-<ppid>).")


def _who(as_: Optional[str]) -> str:
    from ...identity import agent_identity

    return as_ or agent_identity()


def _safe(text: str, *, multiline: bool = False) -> str:
    """Text for a terminal: control characters shown escaped (no escape sequences, no forged lines)."""
    out = []
    for c in text:
        if (multiline and c in "\n\t") or unicodedata.category(c) not in ("Cc", "Cf", "Zl", "Zp"):
            out.append(c)
        else:
            out.append(repr(c)[1:-1] if ord(c) < 0x10000 else f"\\U{ord(c):08x}")
    return "".join(out)


def _print_message(m: Any) -> None:
    reply = f"  ↩ #{m.reply_to}" if m.reply_to is not None else ""
    sys.stdout.write(
        f"#{m.seq}  {m.ts[:19].replace('T', ' ')}  {_safe(m.sender)} → {_safe(m.to)}  [{_safe(m.category)}]{reply}\n"
        f"    {_safe(m.title)}\n"
    )
    for line in _safe(m.body.rstrip("\n"), multiline=True).split("\n"):
        sys.stdout.write(f"    {line}\n" if line else "\n")
    sys.stdout.write("\n")


def _read_body(body: Optional[str], body_file: Optional[str]) -> str:
    from ...errors import InvalidInput

    if body is not None and body_file is not None:
        raise InvalidInput("CHAT_INVALID_ARGUMENT", "give the body once: --body or --body-file")
    if body == "-" or body_file == "-":
        return sys.stdin.read()
    if body_file is not None:
        try:
            with open(body_file, encoding="utf-8") as f:
                return f.read()
        except FileNotFoundError:
            raise InvalidInput("CHAT_BODY_FILE_NOT_FOUND", f"no file {body_file!r}") from None
        except (OSError, UnicodeDecodeError) as exc:
            raise InvalidInput("CHAT_INVALID_BODY", f"cannot read {body_file!r} as UTF-8 text: {exc}") from None
    return body or ""


@chat_app.command("init")
def init(
    ctx: typer.Context,
    channel: str = typer.Argument(..., help="Channel name: a lower-case slug (e.g. backend-team)."),
    members: list[str] = typer.Option([], "--members", "-m", help="Members, comma-separated (repeatable)."),
    topic: Optional[str] = typer.Option(None, "--topic", help="What the channel is for."),
    as_: Optional[str] = AS,
    json_: bool = JSON,
) -> None:
    """Create a channel with members and a topic (general exists without init)."""
    from ...commands.chat import InitChannel

    st = state(ctx)
    names = [m.strip() for group in members for m in group.split(",") if m.strip()]
    v = dispatch(st, InitChannel(channel=channel, members=names, topic=topic), actor=_who(as_))
    if st.want_json(json_):
        from .render import emit_json

        emit_json(v)
    else:
        extra = f"; members: {', '.join(v.members)}" if v.members else ""
        extra += f"; topic: {_safe(v.topic)}" if v.topic else ""
        sys.stdout.write(f"created #{v.name}{extra}\n")


@chat_app.command("channels")
def channels_(ctx: typer.Context, as_: Optional[str] = AS, json_: bool = JSON) -> None:
    """Channels with their message counts, your unread count and the last message you can see;
    names that only tasks use are listed too (post there after `chat init`)."""
    from ...commands.chat_reads import summaries

    st = state(ctx)
    found = summaries(st.open(), _who(as_))
    if st.want_json(json_):
        from .render import emit_json

        emit_json([c.channel for c in found if c.channel is not None])
        return
    from .render import table

    rows: list[dict[str, Any]] = []
    for s in found:
        c = s.channel
        tasks = f"{s.tasks} task{'s' if s.tasks != 1 else ''} not finished"
        if c is None:
            rows.append({"channel": _safe(s.name), "messages": "-", "unread": "-",
                         "topic": f"(tasks only: {tasks}; lean-ctx chat init {_safe(s.name)})", "last": ""})
            continue
        rows.append({
            "channel": c.name,
            "messages": c.messages,
            "unread": c.unread,
            "topic": " ".join(filter(None, [_safe(c.topic or ""), f"({tasks})" if s.tasks else ""])),
            "last": f"#{c.last.seq} {_safe(c.last.sender)}: {_safe(c.last.title)[:50]}" if c.last else "",
        })
    sys.stdout.write(table(rows, ["channel", "messages", "unread", "topic", "last"]) + "\n")


@chat_app.command("post")
def post(
    ctx: typer.Context,
    title: str = typer.Option(..., "--title", "-t", help="One line."),
    body: Optional[str] = typer.Option(None, "--body", "-b", help="The message ('-' reads stdin)."),
    body_file: Optional[str] = typer.Option(None, "--body-file", help="Read the body from this file ('-': stdin)."),
    to: str = typer.Option("all", "--to", help="An agent id or name, or 'all' (a broadcast)."),
    channel: str = CHANNEL,
    category: str = typer.Option("note", "--category", "-k",
                                 help="finding, warning, request, status, or your own slug."),
    reply: Optional[int] = typer.Option(None, "--reply", help="The seq (#N) of the message this answers."),
    from_: Optional[str] = typer.Option(None, "--from", "--as",
                                        help="Post as this agent (default: $LEAN_CTX_AGENT_ID)."),
    json_: bool = JSON,
) -> None:
    """Post a message to one agent or to all; prints its seq."""
    from ...commands.chat import PostMessage

    st = state(ctx)
    text = _read_body(body, body_file)
    v = dispatch(st, PostMessage(channel=channel, to=to, title=title, body=text, category=category,
                                 reply_to=reply), actor=_who(from_))
    if st.want_json(json_):
        from .render import emit_json

        emit_json(v)
    else:
        sys.stdout.write(f"posted #{v.seq} to #{v.channel} → {_safe(v.to)}\n")


def _print_read(res: Any, as_json: bool, empty: str) -> None:
    if as_json:
        from .render import emit_json

        emit_json(res)
        return
    if not res.messages:
        sys.stderr.write(empty + "\n")
    for m in res.messages:
        _print_message(m)
    if res.unread:
        sys.stderr.write(f"{res.unread} more unread; read again (or --all)\n")


@chat_app.command("read")
def read(
    ctx: typer.Context,
    channel: str = CHANNEL,
    limit: Optional[int] = typer.Option(
        None, "-n", "--limit", min=1, help="At most this many messages (default 50, and ~20,000 tokens of text)."),
    all_: bool = typer.Option(False, "--all", help="Every new message: no count limit, no token budget."),
    as_: Optional[str] = AS,
    json_: bool = JSON,
) -> None:
    """New messages for you (after your cursor), in order; moves your cursor past those shown
    only. Bounded by default: what is left is counted ("N more unread"); --all reads it all."""
    from ...commands.chat import ReadMessages

    st = state(ctx)
    if all_ and limit is not None:
        from ...errors import InvalidInput

        raise InvalidInput("CHAT_INVALID_ARGUMENT", "give --all or --limit, not both")
    if all_:
        cmd = ReadMessages(channel=channel, limit=None, max_tokens=None)
    else:
        cmd = ReadMessages(channel=channel) if limit is None else ReadMessages(channel=channel, limit=limit)
    res = dispatch(st, cmd, actor=_who(as_))
    _print_read(res, st.want_json(json_), f"no new messages for {res.reader} in #{res.channel}")


@chat_app.command("peek")
def peek_(
    ctx: typer.Context,
    channel: str = CHANNEL,
    n: int = typer.Option(10, "-n", "--limit", min=0, help="How many of the last messages."),
    seq: Optional[int] = typer.Option(None, "--seq", min=1, help="Only message #N, whole."),
    as_: Optional[str] = AS,
    json_: bool = JSON,
) -> None:
    """The last N messages you can see (or message #N with --seq); your cursor does not move."""
    from ...commands.chat_reads import peek

    st = state(ctx)
    found = peek(st.open(), channel, _who(as_), n, seq=seq)
    if st.want_json(json_):
        from .render import emit_json

        emit_json(found)
        return
    for m in found:
        _print_message(m)


@chat_app.command("wait")
def wait_(
    ctx: typer.Context,
    channel: str = CHANNEL,
    timeout: float = typer.Option(60.0, "--timeout", help="Give up after this many seconds (exit 2)."),
    limit: Optional[int] = typer.Option(None, "-n", "--limit", min=1, help="At most this many messages."),
    no_advance: bool = typer.Option(False, "--no-advance", help="Show the messages without moving your cursor."),
    as_: Optional[str] = AS,
    json_: bool = JSON,
) -> None:
    """Block until a message for you arrives (or is already unread), then read it.
    Exits 2 with CHAT_WAIT_TIMEOUT when the timeout passes first."""
    from ...commands.chat_reads import wait
    from ...identity import session_identity

    st = state(ctx)
    res = wait(st.open(), channel, _who(as_), timeout, advance=not no_advance, limit=limit,
               session_id=session_identity(), project=st.project_root())
    _print_read(res, st.want_json(json_), "")


@chat_app.command("export")
def export(
    ctx: typer.Context,
    channel: str = typer.Argument(..., help="The channel to export."),
    directory: str = typer.Argument(..., help="Where to write NNNN-<from>-<slug>.md files (created if missing)."),
    as_: Optional[str] = AS,
    json_: bool = JSON,
) -> None:
    """Write the channel (as you see it) as markdown files with frontmatter, for git and humans."""
    from ...chat_export import export_channel
    from ...commands.chat import check_channel
    from ...commands.chat_reads import identity, info

    st = state(ctx)
    lc = st.open()
    name = check_channel(channel)
    info(lc, name, None)  # CHAT_CHANNEL_NOT_FOUND for an unknown channel
    who = identity(lc, _who(as_))
    from .failures import output_dir

    output_dir(directory, "the export directory")
    res = export_channel(lc.store.read_connection(), name, directory, reader=who)
    if st.want_json(json_):
        from .render import emit_json

        emit_json(res)
    else:
        sys.stdout.write(f"exported {res.messages} messages of #{res.channel} to {res.directory}\n")


@event_app.command("post")
def event_post(
    ctx: typer.Context,
    type_: Optional[str] = typer.Option(None, "--type", help="capability or status (the event's 'event' field)."),
    harness: Optional[str] = typer.Option(None, "--harness", help="Your harness: claude-code, cursor, codex, ..."),
    status: Optional[str] = typer.Option(None, "--status", help="ready, busy, idle, blocked or stopped."),
    detail: Optional[str] = typer.Option(None, "--detail", help="One line about the status."),
    primitives: list[str] = typer.Option(
        [], "--primitives", help="Supported primitives, comma-separated or repeated (default: all): messages, "
        "cursors, wait, tasks, dependencies, leases, path_locks, state_summary."),
    json_body: Optional[str] = typer.Option(
        None, "--json-body", "--data", "-d",
        help="The whole event as JSON instead of the flags ('-' reads stdin), e.g. "
             "'{\"event\": \"status\", \"harness\": \"cursor\", \"status\": \"busy\"}'."),
    channel: Optional[str] = typer.Option(None, "--channel", "-c", help="Put the event on a channel."),
    as_: Optional[str] = typer.Option(None, "--from", "--as", help="Post as this agent (default: $LEAN_CTX_AGENT_ID)."),
    json_: bool = JSON,
) -> None:
    """Declare capabilities or report a status: an adapter-neutral event (schema version 1),
    validated strictly (unknown fields or values exit 2 with an EVENT_* code)."""
    from ...commands.chat import PostAdapterEvent
    from ...errors import InvalidInput
    from ...events.kinds.chat import PRIMITIVES

    st = state(ctx)
    fields: dict[str, Any] = {}
    if harness is not None:
        fields["harness"] = harness
    if status is not None:
        fields["status"] = status
    if detail is not None:
        fields["detail"] = detail
    if primitives:
        fields["primitives"] = [p.strip() for group in primitives for p in group.split(",") if p.strip()]
    body: Any
    if json_body is not None:
        if fields:
            raise InvalidInput("CHAT_INVALID_ARGUMENT", "give the event either as --json-body or with the field flags")
        body = sys.stdin.read() if json_body == "-" else json_body
    else:
        if type_ == "capability":
            fields.setdefault("primitives", list(PRIMITIVES))
        body = fields
    v = dispatch(st, PostAdapterEvent(type=type_, body=body, channel=channel), actor=_who(as_))
    if st.want_json(json_):
        from .render import emit_json

        emit_json(v)
    elif v.type == "capability":
        sys.stdout.write(f"{v.agent} ({v.harness}) supports: {', '.join(v.primitives or [])}\n")
    else:
        sys.stdout.write(f"{v.agent} ({v.harness}) is {v.status}\n")


@event_app.command("read")
def event_read(
    ctx: typer.Context,
    since: int = typer.Option(0, "--since", min=0, help="Events after this position (the last next_cursor)."),
    type_: Optional[str] = typer.Option(None, "--type", help="Only capability or only status events."),
    kind: list[str] = typer.Option([], "--kind", help="Kinds (repeatable, 'message.*' for a family); default: "
                                   "adapter.capability_declared and adapter.status_reported."),
    channel: Optional[str] = typer.Option(None, "--channel", "-c", help="Only this channel."),
    actor: Optional[str] = typer.Option(None, "--actor", help="Only events appended by this agent."),
    consistency: Optional[str] = typer.Option(None, "--consistency", help="strong or eventual."),
    limit: Optional[int] = typer.Option(None, "-n", "--limit", min=1, help="At most this many events."),
    as_: Optional[str] = AS,
    json_: bool = JSON,
) -> None:
    """Events since a position as you may see them (never those directed to another agent),
    and the cursor to pass as --since next time."""
    from ...commands.chat import ADAPTER_KINDS
    from ...commands.chat_reads import identity, poll_events
    from ...errors import InvalidInput
    from ...events import TopicFilter

    st = state(ctx)
    lc = st.open()
    kinds = tuple(kind) or ADAPTER_KINDS
    if type_ is not None:
        by_type = {"capability": "adapter.capability_declared", "status": "adapter.status_reported"}
        if type_ not in by_type:
            raise InvalidInput("EVENT_INVALID_TYPE", f"--type must be capability or status, not {type_!r}")
        kinds = (by_type[type_],)
    flt = TopicFilter(kinds=kinds, actor=actor, to_agent=identity(lc, _who(as_)),
                      channel=channel, consistency=consistency)
    res = poll_events(lc.store, since, flt, limit)
    from .render import emit_json, event_json, event_line

    if st.want_json(json_):
        emit_json({"events": [event_json(e) for e in res.events], "next_cursor": res.next_cursor})
        return
    for e in res.events:
        sys.stdout.write(_safe(event_line(e)) + "\n")
    sys.stdout.write(f"next cursor: {res.next_cursor}\n")
