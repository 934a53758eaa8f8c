"""Agent registry commands: register, heartbeat, deregister, sweep.

Timeouts: an agent with no heartbeat and no command of its own for more than ``HEARTBEAT_TTL``
is stale (``leanctx.projections.agents``: every command an agent performs moves its
``last_seen``). The first command that observes it — ``agent.sweep`` (what ``lean-ctx agent
list`` dispatches when it sees one), or a ``register`` / ``heartbeat`` in the same project —
records ``agent.left`` (reason ``heartbeat_timeout``); never for the command's own actor, which
is alive since it is acting. The decision is taken on the registry inside the command's
write transaction, so two processes observing at once record it once, and a later
observation appends nothing. A timed-out agent's heartbeat is refused with ``AGENT_LEFT``; it
registers again with the same id (``--id`` / ``$LEAN_CTX_AGENT_ID``) to rejoin. A stale
agent whose timeout nobody has recorded yet may still heartbeat: the first writer wins.

Identity: wherever an agent is looked up (``find_agent``) an id wins over a name, so a new
explicit id may not be another agent's name — in any project and whatever its status, since a
name is never given twice and its holder may rejoin — (``AGENT_ID_TAKEN``, reason ``name``), and
an auto-name skips the ids of other agents. (An id that already collides in an older log still
rejoins.) ``new_only`` (``POST /v1/agents/register`` without the id's token) also refuses an id the
log knows, registered or the actor of an event (reason ``known``; HTTP answers ``403
AUTH_AGENT_ID_TAKEN``). Both are decided in the write transaction before anything is emitted, so a
refused registration appends only the bus's ``tool.called`` record of the refusal.

Claims: leaving gives up the agent's scent claims by events. ``deregister`` and every recorded
timeout append a ``scent.released`` (reason ``agent_deregistered`` / ``heartbeat_timeout``) for
each claim the agent holds, in whatever project it made them
(``leanctx.commands.scent.release_departed``), in the same transaction as the departure; an
agent that rejoins claims again like anyone.

Keys: registering gives the agent its Ed25519 signing key, ``<data dir>/keys/<agent_id>.key``
(0600) and ``.pub``, created when missing and never replaced (a rejoin keeps its key), and
records its public key and fingerprint on ``agent.registered``; ``leanctx.handoff_bundle``
trusts the keys of registered agents. The key is made here, in the ``register`` handler,
because this is the one place every surface goes through: the CLI (``agent register``, also
when the daemon runs it), ``POST /v1/agents/register``, the ``ctx_agent`` tool, the MCP
session's own registration and ``lean-ctx call`` all dispatch ``RegisterAgent``. It is also the
only place that knows the agent id (generated here when none is given) before the event is
written, and the fingerprint must be on that event. A post-dispatch hook could not put it on
the event (and runs after the commit), and an ops-level function would be skipped by the
callers that dispatch the command directly. The cost is file I/O inside the write
transaction, bounded and local: reading two small files, or on the first registration one
key generation and two small writes (no process, no network). If the transaction then rolls
back, the key stays behind unregistered: it is trusted by nobody until that id registers,
and that registration adopts it. A key that cannot be made or read (``KEY_INSECURE``,
``KEY_INVALID_FILE``, ``KEY_UNWRITABLE``) does not stop the registration — coordination does
not depend on it — but nothing is recorded and the result says why (``key_warning``).

One key per registration (``recorded_key``): the key the log binds to an agent is the first one
recorded on its ``agent.registered`` events since it last deregistered. A rejoin that brings
another key (another data dir, or someone else naming the id) still registers, but its key is
not recorded (``AGENT_KEY_MISMATCH`` in ``key_warning``): re-registering an id never adds a
signer that importers trust for it. Deregistering ends the binding, so the next registration
records its own key and the old one is no longer the agent's.
"""

from __future__ import annotations

import re
import secrets
from typing import Any

import msgspec

from .. import keys
from ..errors import CommandError, InvalidInput, LeanCtxError
from ..events import NO_STREAM, TopicFilter
from ..events.kinds.agent import (
    AgentDeregistered,
    AgentHeartbeat,
    AgentLeft,
    AgentRegistered,
)
from ..projections.agents import (
    HEARTBEAT_INTERVAL,
    HEARTBEAT_TTL,
    AgentView,
    count_names,
    find_agent,
    name_taken,
    named,
    unrecorded_stale,
)
from .bus import Command, CommandContext, handles
from .scent import release_departed

_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")
_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$")

TIMEOUT_REASON = "heartbeat_timeout"
DEREGISTERED_REASON = "agent_deregistered"  # the reason on the scent.released of a deregistered agent's claims
AGENT_KEY_MISMATCH = "AGENT_KEY_MISMATCH"
AGENT_ID_TAKEN = "AGENT_ID_TAKEN"


def _check(value: str, what: str, code: str) -> str:
    value = value.strip()
    if not _NAME.match(value):
        raise InvalidInput(
            code,
            f"{what} {value!r} is not valid: use 1-64 letters, digits, '.', '_' or '-', starting with a letter or digit",
        )
    return value


def valid_agent_id(agent_id: str) -> bool:
    return bool(_ID.match(agent_id))


def stream_of(agent_id: str) -> str:
    return f"agent:{agent_id}"


class AgentRegistration(msgspec.Struct, frozen=True):
    agent_id: str
    name: str
    agent_type: str
    role: str
    project_root: str
    heartbeat_interval: float
    ttl_seconds: float
    rejoined: bool = False
    key_fingerprint: str | None = None  # the agent's signing key (keys/<agent_id>.key in the data dir)
    key_created: bool = False  # this registration created it
    key_warning: str | None = None  # "CODE: sentence" when the key could not be made or read


class RegisterAgent(Command, frozen=True):
    name = "agent.register"
    agent_type: str
    role: str = "dev"
    project_root: str | None = None
    agent_id: str | None = None  # an explicit identity (LEAN_CTX_AGENT_ID); generated when absent
    pid: int | None = None
    host: str | None = None
    session_id: str | None = None
    # the caller claims ``agent_id`` as a new identity (HTTP without that id's token): an id this
    # log already knows is refused (AGENT_ID_TAKEN, reason "known") instead of rejoined
    new_only: bool = False
    # new_only: the caller already looked for agent_id as an actor in the log up to this position
    # (``acted_since``, outside the write lock); only the events after it are read here
    actors_checked_to: int = 0


class Heartbeat(Command, frozen=True):
    name = "agent.heartbeat"
    agent: str  # agent_id or name
    status: str | None = None


class Deregister(Command, frozen=True):
    name = "agent.deregister"
    agent: str
    reason: str = "deregistered"


class SweepAgents(Command, frozen=True):
    """Record ``agent.left`` (heartbeat_timeout) for every stale agent not yet recorded."""

    name = "agent.sweep"
    project_root: str | None = None  # default: the caller's project
    all_projects: bool = False


class AgentAck(msgspec.Struct, frozen=True):
    agent_id: str
    name: str
    ok: bool = True
    ttl_seconds: float = HEARTBEAT_TTL
    already_left: bool = False


class SweepResult(msgspec.Struct, frozen=True):
    recorded: list[AgentView]  # the agents whose timeout this sweep recorded (as seen before it)


def record_timeouts(ctx: CommandContext, project_root: str | None, *, exclude: str | None = None) -> list[AgentView]:
    """Inside a command: emit ``agent.left`` for each agent of ``project_root`` (every project
    when None) that is stale at ``ctx.now`` and not yet recorded, and release its claims. The
    command's own actor is never one of them: it is acting at ``ctx.now`` (its ``tool.called``
    is written with this command). The caller must declare ``agent.left`` and ``scent.released``
    in its ``emits``."""
    out = []
    for a in unrecorded_stale(ctx.conn, now=ctx.now, project_root=project_root):
        if a.agent_id in (exclude, ctx.actor):
            continue
        ctx.emit(stream_of(a.agent_id),
                 AgentLeft(agent_id=a.agent_id, reason=TIMEOUT_REASON, last_seen=a.last_seen,
                           ttl_seconds=HEARTBEAT_TTL))
        release_departed(ctx, a.agent_id, TIMEOUT_REASON)
        out.append(a)
    return out


def _new_name(ctx: CommandContext, project_root: str, agent_type: str, role: str, agent_id: str) -> str:
    n = count_names(ctx.conn, project_root, agent_type, role) + 1
    # skip names taken after rejoins under another role, and the ids of other agents
    while name_taken(ctx.conn, project_root, f"{agent_type}-{role}-{n}", agent_id=agent_id):
        n += 1
    return f"{agent_type}-{role}-{n}"


def acted_since(store: Any, agent_id: str, position: int = 0) -> bool:
    """Whether ``agent_id`` is the actor of an event after ``position`` (the whole log by default;
    the log has no index on actors, so this reads every event after ``position``)."""
    if position <= 0:
        return bool(store.read_last(1, TopicFilter(actor=agent_id)))
    return bool(store.read_all(position, TopicFilter(actor=agent_id), limit=1))


def _check_new_id(ctx: CommandContext, agent_id: str, *, registered: bool, new_only: bool,
                  checked_to: int = 0) -> None:
    """Refuse a new explicit id (``AGENT_ID_TAKEN``) that the log already knows when the caller
    asked for a new one (``new_only``: reason ``known``), or that is another agent's name
    (reason ``name``). Decided in the write transaction, before anything is emitted."""
    if new_only and (registered or acted_since(ctx.projections.store, agent_id, checked_to)):
        raise CommandError(AGENT_ID_TAKEN, f"agent id {agent_id!r} is already known to this log (registered, or "
                           "the actor of its events): rejoin as it with its own credentials, or register without "
                           "an id to get a new one", agent_id=agent_id, reason="known")
    other = named(ctx.conn, agent_id, now=ctx.now, exclude=agent_id)
    if other is not None:
        raise CommandError(AGENT_ID_TAKEN, f"agent id {agent_id!r} is the name of agent {other.agent_id} "
                           f"({other.agent_type}/{other.role} in {other.project_root}), and what is addressed to "
                           "that name would reach this id instead: register with another id, or without one to "
                           "get a new one", agent_id=agent_id, reason="name", holder=other.agent_id)


@handles(RegisterAgent, emits=("agent.registered", "agent.left", "scent.released"), result=AgentRegistration)
def register(ctx: CommandContext, cmd: RegisterAgent) -> AgentRegistration:
    agent_type = _check(cmd.agent_type, "agent type", "AGENT_INVALID_TYPE")
    role = _check(cmd.role, "role", "AGENT_INVALID_ROLE")
    project_root = cmd.project_root or ctx.project
    if not project_root:
        raise InvalidInput("AGENT_INVALID_PROJECT", "a project root is required (pass --project-root)")
    rejoined = False
    if cmd.agent_id is not None:
        if not _ID.match(cmd.agent_id):
            raise InvalidInput(
                "AGENT_INVALID_ID", f"agent id {cmd.agent_id!r} is not valid: 1-128 letters, digits, '.', '_', ':' or '-'"
            )
        agent_id = cmd.agent_id
        existing = find_agent(ctx.conn, agent_id, now=ctx.now)
        registered = existing is not None and existing.agent_id == agent_id
        if registered and not cmd.new_only:
            rejoined = True  # (an id that collides with a name in an older log still rejoins)
        else:
            _check_new_id(ctx, agent_id, registered=registered, new_only=cmd.new_only,
                          checked_to=cmd.actors_checked_to)
    else:
        agent_id = secrets.token_hex(4)
        while find_agent(ctx.conn, agent_id, now=ctx.now) is not None:  # pragma: no cover - 2^-32
            agent_id = secrets.token_hex(4)
        existing = None
    record_timeouts(ctx, project_root, exclude=agent_id)  # registering observes the project's registry
    if rejoined and existing is not None and (existing.agent_type, existing.role, existing.project_root) == (
        agent_type, role, project_root
    ):
        name = existing.name
    else:
        name = _new_name(ctx, project_root, agent_type, role, agent_id)
    key, created, warning = agent_key(agent_id)
    bound = recorded_key(ctx, agent_id) if rejoined else None
    if key is not None and bound is not None and key.public_key != bound:
        warning = (f"{AGENT_KEY_MISMATCH}: this data dir's key for {agent_id} ({key.fingerprint}) is not the key "
                   f"recorded when it registered ({keys.fingerprint(keys.unb64(bound))}), which stays its key; "
                   f"deregister {agent_id} first to register it with this key")
        key = None
    ctx.emit(
        stream_of(agent_id),
        AgentRegistered(agent_id=agent_id, name=name, agent_type=agent_type, role=role, project_root=project_root,
                        pid=cmd.pid, host=cmd.host, session_id=cmd.session_id,
                        public_key=key.public_key if key else None, fingerprint=key.fingerprint if key else None),
        expected_version=ctx.tx.stream_version(stream_of(agent_id)) if rejoined else NO_STREAM,
    )
    return AgentRegistration(agent_id, name, agent_type, role, project_root, HEARTBEAT_INTERVAL, HEARTBEAT_TTL,
                             rejoined, key.fingerprint if key else None, created, warning)


def agent_key(agent_id: str) -> tuple[keys.KeyInfo | None, bool, str | None]:
    """The agent's signing key in this process's data dir, created if missing (never replaced):
    (key or None, created, warning "CODE: sentence" when it could not be made or read)."""
    try:
        key, created = keys.ensure_key(agent_id)
    except LeanCtxError as exc:
        return None, False, f"{exc.code}: {exc.message}"
    return key, created, None


def recorded_key(ctx: CommandContext, agent_id: str) -> str | None:
    """The public key (base64) the log binds to ``agent_id``'s current registration: the first key
    recorded on its ``agent.registered`` events since its last ``agent.deregistered`` (None: none
    recorded). Read from the agent's own stream (the agents projection does not keep keys); the
    write lock is held, so this is the committed log the command decides on."""
    bound = bound_key_at(ctx, agent_id, None)
    return bound[0] if bound is not None else None


def bound_key_at(ctx: CommandContext, agent_id: str, position: int | None) -> tuple[str, int] | None:
    """The public key (base64) the log bound to ``agent_id`` just before ``position`` (None: now),
    with the position of the ``agent.registered`` that recorded it: the first key recorded since
    the last ``agent.deregistered`` before ``position`` (None: none was bound then)."""
    bound: tuple[str, int] | None = None
    for e in ctx.projections.store.read_stream(stream_of(agent_id)):
        if position is not None and e.position >= position:
            break
        if e.kind == "agent.deregistered":
            bound = None
        elif e.kind == "agent.registered" and bound is None:
            pk = getattr(e.data(), "public_key", None)
            try:
                raw = keys.unb64(pk) if pk else b""
            except InvalidInput:
                raw = b""
            bound = (keys.b64(raw), e.position) if len(raw) == 32 else None
    return bound


def _known(ctx: CommandContext, ref: str) -> AgentView:
    agent = find_agent(ctx.conn, ref, now=ctx.now, project_root=None)
    if agent is None:
        raise CommandError("AGENT_NOT_FOUND", f"no agent {ref!r} is registered; see the agents (ctx_agent action=list,"
                           " or `lean-ctx agent list`)")
    return agent


def _left_error(agent: AgentView) -> CommandError:
    how = f"timed out (no heartbeat for more than {HEARTBEAT_TTL:.0f}s)" if agent.timed_out else "left"
    return CommandError(
        "AGENT_LEFT",
        f"agent {agent.name} ({agent.agent_id}) {how} at {agent.left_at} ({agent.left_reason}); register again to"
        f" rejoin with the same id (ctx_agent action=register role={agent.role}, or `lean-ctx agent register"
        f" --type {agent.agent_type} --role {agent.role} --id {agent.agent_id}`)",
        agent_id=agent.agent_id,
        reason=agent.left_reason,
    )


@handles(Heartbeat, emits=("agent.heartbeat", "agent.left", "scent.released"), result=AgentAck)
def heartbeat(ctx: CommandContext, cmd: Heartbeat) -> AgentAck:
    agent = _known(ctx, cmd.agent)
    if agent.left_at is not None:
        raise _left_error(agent)
    if cmd.status is not None:
        _check(cmd.status, "status", "AGENT_INVALID_STATUS")
    record_timeouts(ctx, agent.project_root, exclude=agent.agent_id)
    ctx.emit(stream_of(agent.agent_id), AgentHeartbeat(agent_id=agent.agent_id, status=cmd.status))
    return AgentAck(agent.agent_id, agent.name)


@handles(Deregister, emits=("agent.deregistered", "scent.released"), result=AgentAck)
def deregister(ctx: CommandContext, cmd: Deregister) -> AgentAck:
    agent = _known(ctx, cmd.agent)
    if agent.status == "left":  # same-state write: idempotent, nothing appended
        return AgentAck(agent.agent_id, agent.name, already_left=True)
    # a timed-out agent (status stale) that deregisters turns into one that left on purpose
    reason = cmd.reason.strip() or "deregistered"
    ctx.emit(stream_of(agent.agent_id), AgentDeregistered(agent_id=agent.agent_id, reason=reason[:200]))
    release_departed(ctx, agent.agent_id, DEREGISTERED_REASON)  # a timed-out agent's were released then
    return AgentAck(agent.agent_id, agent.name)


@handles(SweepAgents, emits=("agent.left", "scent.released"), result=SweepResult)
def sweep(ctx: CommandContext, cmd: SweepAgents) -> SweepResult:
    project_root = None if cmd.all_projects else (cmd.project_root or ctx.project)
    if not cmd.all_projects and not project_root:
        raise InvalidInput("AGENT_INVALID_PROJECT", "a project root is required (or all_projects)")
    return SweepResult(record_timeouts(ctx, project_root))
