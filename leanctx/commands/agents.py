"""Agent registry commands: register, heartbeat, deregister."""

from __future__ import annotations

import re
import secrets

import msgspec

from ..errors import CommandError, InvalidInput
from ..events import NO_STREAM
from ..events.kinds import AgentDeregistered, AgentHeartbeat, AgentRegistered
from ..projections.agents import HEARTBEAT_INTERVAL, HEARTBEAT_TTL, count_names, find_agent
from .bus import Command, CommandContext, handles

_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")
_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$")


def _check(value: str, what: str, code: str) -> str:
    value = value.strip()
    if not _NAME.match(value):
        raise InvalidInput(
            code,
            f"{what} {value!r} is not valid: use 1-64 letters, digits, '.', '_' or '-', starting with a letter or digit",
        )
    return value


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


class RegisterAgent(Command, frozen=True):
    name = "agent.register"
    agent_type: str
    role: str = "dev"
    project_root: str | None = None
    agent_id: str | None = None  # an explicit identity (LEAN_CTX_AGENT_ID); generated when absent
    pid: int | None = None
    host: str | None = None
    session_id: str | None = None


class Heartbeat(Command, frozen=True):
    name = "agent.heartbeat"
    agent: str  # agent_id or name
    status: str | None = None


class Deregister(Command, frozen=True):
    name = "agent.deregister"
    agent: str
    reason: str = "deregistered"


class AgentAck(msgspec.Struct, frozen=True):
    agent_id: str
    name: str
    ok: bool = True
    ttl_seconds: float = HEARTBEAT_TTL
    already_left: bool = False


@handles(RegisterAgent, emits=("agent.registered",), result=AgentRegistration)
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
        if existing is not None and existing.agent_id == agent_id:
            rejoined = True
    else:
        agent_id = secrets.token_hex(4)
        while find_agent(ctx.conn, agent_id, now=ctx.now) is not None:  # pragma: no cover - 2^-32
            agent_id = secrets.token_hex(4)
        existing = None
    if rejoined and existing is not None and (existing.agent_type, existing.role, existing.project_root) == (
        agent_type, role, project_root
    ):
        name = existing.name
    else:
        name = f"{agent_type}-{role}-{count_names(ctx.conn, project_root, agent_type, role) + 1}"
    ctx.emit(
        stream_of(agent_id),
        AgentRegistered(agent_id=agent_id, name=name, agent_type=agent_type, role=role, project_root=project_root,
                        pid=cmd.pid, host=cmd.host, session_id=cmd.session_id),
        expected_version=ctx.tx.stream_version(stream_of(agent_id)) if rejoined else NO_STREAM,
    )
    return AgentRegistration(agent_id, name, agent_type, role, project_root, HEARTBEAT_INTERVAL, HEARTBEAT_TTL,
                             rejoined)


def _known(ctx: CommandContext, ref: str):  # type: ignore[no-untyped-def]
    agent = find_agent(ctx.conn, ref, now=ctx.now, project_root=None)
    if agent is None:
        raise CommandError("AGENT_NOT_FOUND", f"no agent {ref!r} is registered; see `lean-ctx agent list`")
    return agent


@handles(Heartbeat, emits=("agent.heartbeat",), result=AgentAck)
def heartbeat(ctx: CommandContext, cmd: Heartbeat) -> AgentAck:
    agent = _known(ctx, cmd.agent)
    if agent.status == "left":
        raise CommandError(
            "AGENT_LEFT",
            f"agent {agent.name} ({agent.agent_id}) left ({agent.left_reason}); register again to rejoin",
        )
    if cmd.status is not None:
        _check(cmd.status, "status", "AGENT_INVALID_STATUS")
    ctx.emit(stream_of(agent.agent_id), AgentHeartbeat(agent_id=agent.agent_id, status=cmd.status))
    return AgentAck(agent.agent_id, agent.name)


@handles(Deregister, emits=("agent.deregistered",), result=AgentAck)
def deregister(ctx: CommandContext, cmd: Deregister) -> AgentAck:
    agent = _known(ctx, cmd.agent)
    if agent.status == "left":  # same-state write: idempotent, nothing appended
        return AgentAck(agent.agent_id, agent.name, already_left=True)
    reason = cmd.reason.strip() or "deregistered"
    ctx.emit(stream_of(agent.agent_id), AgentDeregistered(agent_id=agent.agent_id, reason=reason[:200]))
    return AgentAck(agent.agent_id, agent.name)
