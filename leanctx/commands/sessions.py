"""Session commands: set the task (step i/n), note findings and decisions, save, load, reset,
and mark the conversation's context lost (compaction: no stubs for what it was sent before).

The session is the caller's conversation (``ctx.session_id``); a caller without one (the CLI
without ``$LEAN_CTX_SESSION_ID``) works in ``default-<agent_id>``. Events go to the stream
``session:<session_id>``.
"""

from __future__ import annotations

import re

import msgspec

from ..errors import CommandError, InvalidInput
from ..events.kinds.session import (
    SessionContextLost,
    SessionLoaded,
    SessionNoted,
    SessionReset,
    SessionSaved,
    SessionTaskSet,
)
from ..projections.sessions import NOTE_KINDS, get_snapshot
from .bus import Command, CommandContext, handles

MAX_TEXT = 4_000
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._:-]{0,63}$")


def stream_of(session_id: str) -> str:
    return f"session:{session_id}"


def session_of(actor: str | None, session_id: str | None) -> str:
    """The session a caller works in (see the module doc)."""
    if session_id:
        return session_id
    if actor:
        return f"default-{actor}"
    raise InvalidInput("SESSION_NO_ID", "a session needs a session id or an agent identity "
                       "(set $LEAN_CTX_SESSION_ID or $LEAN_CTX_AGENT_ID)")


def _agent(ctx: CommandContext) -> str:
    if not ctx.actor:
        raise InvalidInput("SESSION_NO_AGENT", "session state needs the agent's identity (set $LEAN_CTX_AGENT_ID)")
    return ctx.actor


def _text(text: str, what: str) -> str:
    t = text.strip()
    if not t:
        raise InvalidInput("SESSION_EMPTY_TEXT", f"a {what} needs some text")
    if len(t) > MAX_TEXT:
        raise InvalidInput("SESSION_TEXT_TOO_LONG", f"a {what} holds at most {MAX_TEXT} characters; split it")
    return t


class SessionAck(msgspec.Struct, frozen=True):
    session_id: str
    agent_id: str
    action: str
    ts: str
    detail: str = ""


class SetTask(Command, frozen=True):
    name = "session.task"
    task: str
    step: int = 0
    total: int = 0


@handles(SetTask, emits=("session.task_set",), result=SessionAck)
def set_task(ctx: CommandContext, cmd: SetTask) -> SessionAck:
    me = _agent(ctx)
    sid = session_of(me, ctx.session_id)
    task = _text(cmd.task, "task")
    if cmd.step < 0 or cmd.total < 0 or (cmd.total and cmd.step > cmd.total):
        raise InvalidInput("SESSION_INVALID_STEP", f"step {cmd.step}/{cmd.total}: the step is 0..total, total >= 0")
    ctx.emit(stream_of(sid), SessionTaskSet(session_id=sid, agent_id=me, task=task, step=cmd.step, total=cmd.total))
    return SessionAck(sid, me, "task", ctx.ts, f"{task} ({cmd.step}/{cmd.total})" if cmd.total else task)


class AddNote(Command, frozen=True):
    name = "session.note"
    note: str  # finding | decision
    text: str
    path: str | None = None


@handles(AddNote, emits=("session.noted",), result=SessionAck)
def add_note(ctx: CommandContext, cmd: AddNote) -> SessionAck:
    me = _agent(ctx)
    sid = session_of(me, ctx.session_id)
    if cmd.note not in NOTE_KINDS:
        raise InvalidInput("SESSION_INVALID_NOTE", f"a note is one of {', '.join(NOTE_KINDS)}, not {cmd.note!r}")
    text = _text(cmd.text, cmd.note)
    ctx.emit(stream_of(sid), SessionNoted(session_id=sid, agent_id=me, note=cmd.note, text=text,
                                          path=(cmd.path or None)))
    return SessionAck(sid, me, cmd.note, ctx.ts, text)


def _name(name: str) -> str:
    n = name.strip()
    if not _NAME.match(n):
        raise InvalidInput("SESSION_INVALID_NAME", "a snapshot name is 1-64 letters, digits or '._:-', "
                           "starting with a letter or digit")
    return n


class SaveSession(Command, frozen=True):
    name = "session.save"
    snapshot: str


@handles(SaveSession, emits=("session.saved",), result=SessionAck)
def save(ctx: CommandContext, cmd: SaveSession) -> SessionAck:
    me = _agent(ctx)
    sid = session_of(me, ctx.session_id)
    name = _name(cmd.snapshot)
    ctx.emit(stream_of(sid), SessionSaved(session_id=sid, agent_id=me, name=name))
    return SessionAck(sid, me, "save", ctx.ts, name)


class LoadSession(Command, frozen=True):
    name = "session.load"
    snapshot: str


@handles(LoadSession, emits=("session.loaded",), result=SessionAck)
def load(ctx: CommandContext, cmd: LoadSession) -> SessionAck:
    me = _agent(ctx)
    sid = session_of(me, ctx.session_id)
    name = _name(cmd.snapshot)
    if get_snapshot(ctx.conn, name, project=ctx.project or "") is None:
        raise CommandError("SESSION_SNAPSHOT_NOT_FOUND", f"no saved session {name!r}; see the snapshots"
                           " (ctx_session action=list, or `lean-ctx session list`)")
    ctx.emit(stream_of(sid), SessionLoaded(session_id=sid, agent_id=me, name=name))
    return SessionAck(sid, me, "load", ctx.ts, name)


class ResetSession(Command, frozen=True):
    name = "session.reset"


@handles(ResetSession, emits=("session.reset",), result=SessionAck)
def reset(ctx: CommandContext, cmd: ResetSession) -> SessionAck:
    me = _agent(ctx)
    sid = session_of(me, ctx.session_id)
    ctx.emit(stream_of(sid), SessionReset(session_id=sid, agent_id=me))
    return SessionAck(sid, me, "reset", ctx.ts)


CONTEXT_LOSS_REASONS = ("compaction", "precompact")


class MarkContextLost(Command, frozen=True):
    """The caller's conversation no longer holds what it was sent (see ``SessionContextLost``)."""

    name = "session.context_lost"
    reason: str = "compaction"
    call: int | None = None


@handles(MarkContextLost, emits=("session.context_lost",), result=SessionAck)
def mark_context_lost(ctx: CommandContext, cmd: MarkContextLost) -> SessionAck:
    me = _agent(ctx)
    sid = session_of(me, ctx.session_id)
    if cmd.reason not in CONTEXT_LOSS_REASONS:
        raise InvalidInput("SESSION_INVALID_REASON",
                           f"a context loss is one of {', '.join(CONTEXT_LOSS_REASONS)}, not {cmd.reason!r}")
    if cmd.call is not None and (isinstance(cmd.call, bool) or cmd.call < 1):
        raise InvalidInput("SESSION_INVALID_CALL", f"a call number is 1 or more, not {cmd.call!r}")
    ctx.emit(stream_of(sid), SessionContextLost(session_id=sid, agent_id=me, reason=cmd.reason, call=cmd.call))
    return SessionAck(sid, me, "context_lost", ctx.ts, cmd.reason)
