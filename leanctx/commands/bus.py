"""The command bus: the only writer of the log.

``dispatch(command)`` validates the command (msgspec), then inside one ``BEGIN IMMEDIATE``
transaction brings the strong projections current, runs the handler (read projections →
decide → ``ctx.emit``), and appends a ``tool.called`` record followed by the events the
handler emitted; those carry the record's correlation id and name its position as their
causation. A refusal (``LeanCtxError``) rolls everything back and is itself recorded as a
``tool.called`` event with the error code, then re-raised — except a failure of the log itself
(``STORE_*``: busy, closed), whose record would wait on the same lock for another busy timeout.

With an ``idempotency_key`` a retried dispatch appends nothing and returns the original
result (kept in the ``tool.called`` record, which carries the key and the digest of the
command: ``request``). A key stands for one request: used again for another command or the
same command with other fields, or found on an event that is no command's record (a plain
append's key), it is refused (``IDEMPOTENCY_KEY_REUSED``), recorded like any refusal. (Records
written before ``request`` existed bind their key to the command's name only.)
"""

from __future__ import annotations

import hashlib
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, ClassVar, TypeVar

import msgspec

from .. import clock
from ..errors import InvalidInput, LeanCtxError
from ..events import ANY, ExpectedVersion, NewEvent, SqliteEventStore, WriteTx
from ..events.codec import payload_dict
from ..events.envelope import Consistency
from ..events.kinds import Event, ToolCalled, kind_of
from ..projections import Projections

_CALLED = kind_of(ToolCalled)


class Command(msgspec.Struct, kw_only=True, frozen=True):
    """Base of every command. ``name`` is the stable dotted name (``agent.register``)."""

    name: ClassVar[str]


C = TypeVar("C", bound=Command)
Handler = Callable[["CommandContext", Any], Any]


@dataclass(frozen=True)
class HandlerSpec:
    command: type[Command]
    handler: Handler
    emits: tuple[str, ...]
    result: type | None


HANDLERS: dict[type[Command], HandlerSpec] = {}


def handles(
    command: type[C], *, emits: tuple[str, ...], result: type | None = None
) -> Callable[[Handler], Handler]:
    """Register ``fn`` as the handler of ``command``, declaring the kinds it may emit and
    the type of its result."""

    def register(fn: Handler) -> Handler:
        if command in HANDLERS:
            raise TypeError(f"{command.__name__} already has a handler")
        HANDLERS[command] = HandlerSpec(command, fn, emits, result)
        return fn

    return register


def commands_by_name() -> dict[str, type[Command]]:
    return {c.name: c for c in HANDLERS}


@dataclass
class _Pending:
    stream: str
    event: Event
    expected_version: ExpectedVersion
    to_agent: str | None
    channel: str | None
    consistency: Consistency


@dataclass
class CommandContext:
    """What a handler sees: the open transaction, who is asking, and the time."""

    tx: WriteTx
    projections: Projections
    actor: str | None
    session_id: str | None
    project: str | None
    now: float
    ts: str
    correlation_id: str
    pending: list[_Pending] = field(default_factory=list)

    @property
    def conn(self) -> Any:
        return self.tx.conn

    def emit(
        self,
        stream: str,
        event: Event,
        *,
        expected_version: ExpectedVersion = ANY,
        to_agent: str | None = None,
        channel: str | None = None,
        consistency: Consistency = "strong",
    ) -> None:
        """Queue ``event`` for ``stream``; written when the handler returns without error."""
        self.pending.append(_Pending(stream, event, expected_version, to_agent, channel, consistency))


class DispatchResult(msgspec.Struct, frozen=True):
    value: Any
    correlation_id: str
    call_position: int
    positions: list[int]
    duplicate: bool = False


def _validate(command: Command | dict[str, Any], command_type: type[Command] | None) -> Command:
    if isinstance(command, Command):
        return command
    if command_type is None:
        raise InvalidInput("COMMAND_UNKNOWN", "dispatch needs a Command instance or a command_type for a mapping")
    try:
        return msgspec.convert(command, command_type)
    except msgspec.ValidationError as exc:
        raise InvalidInput("INVALID_INPUT", f"{command_type.name}: {exc}") from None


def request_digest(cmd: Command) -> str:
    """What an idempotency key is bound to: the command's name and its fields, as a sha256
    (the fields' texts never reach the log)."""
    return hashlib.sha256(cmd.name.encode() + b"\0" + msgspec.json.encode(cmd)).hexdigest()


class CommandBus:
    def __init__(self, store: SqliteEventStore, projections: Projections) -> None:
        self.store = store
        self.projections = projections

    def dispatch(
        self,
        command: Command | dict[str, Any],
        *,
        command_type: type[Command] | None = None,
        actor: str | None = None,
        session_id: str | None = None,
        project: str | None = None,
        correlation_id: str | None = None,
        causation_id: int | None = None,
        idempotency_key: str | None = None,
        now: float | Callable[[], float] | None = None,
    ) -> DispatchResult:
        """Run ``command`` (see the module's doc). The time (``ctx.now``, every event's ``ts``) is
        read once, *after* the write lock is held: a command that waited for another writer is
        stamped when it runs, and since writers take the lock one at a time, timestamps follow
        positions as long as the wall clock does. ``now`` is a fixed time, which wins as is (tests),
        or the clock to read (the HTTP server's); by default ``clock.now``. No clamp to the last
        event's ``ts`` when the wall clock steps back: a log holding a future time (an injected
        test time, another machine's clock) would pin every later command to it, which is worse
        than one backwards step. A refusal before the lock is held is stamped when it is recorded."""
        name = command.name if isinstance(command, Command) else getattr(command_type, "name", "unknown")
        corr = correlation_id or uuid.uuid4().hex
        fixed, read_clock = (None, now) if callable(now) else (now, clock.now)

        def stamp() -> float:
            return read_clock() if fixed is None else fixed

        ts: str | None = None  # set once the write lock is held
        calls_stream = f"calls:{session_id or actor or 'anonymous'}"
        t0 = time.perf_counter()
        try:
            cmd = _validate(command, command_type)
            spec = HANDLERS.get(type(cmd))
            if spec is None:
                raise InvalidInput("COMMAND_UNKNOWN", f"no handler is registered for {type(cmd).__name__}")
            with self.store.transaction() as tx:
                t_now = stamp()
                ts = clock.iso(t_now)
                if idempotency_key is not None:
                    prior = tx.find_key(idempotency_key)
                    if prior is not None:
                        return self._replayed(prior, spec, cmd)
                self.projections.sync_in(tx)
                ctx = CommandContext(tx, self.projections, actor, session_id, project, t_now, ts, corr)
                value = spec.handler(ctx, cmd)
                for p in ctx.pending:
                    if p.event.kind not in spec.emits:
                        raise TypeError(f"{cmd.name} emitted {p.event.kind}, which it does not declare")
                record = ToolCalled(
                    command=cmd.name,
                    outcome="ok",
                    duration_ms=round((time.perf_counter() - t0) * 1000, 3),
                    session_id=session_id,
                    events=len(ctx.pending),
                    result=msgspec.json.encode(value).decode() if idempotency_key is not None else None,
                    request=request_digest(cmd) if idempotency_key is not None else None,
                )
                call = tx.append(
                    calls_stream,
                    [NewEvent(event=record, actor=actor, project=project, correlation_id=corr,
                              causation_id=causation_id, ts=ts)],
                    idempotency_key=idempotency_key,
                )
                call_pos = call.positions[0]
                positions: list[int] = []
                for p in ctx.pending:
                    res = tx.append(
                        p.stream,
                        [NewEvent(event=p.event, actor=actor, to_agent=p.to_agent, project=project,
                                  channel=p.channel, consistency=p.consistency, correlation_id=corr,
                                  causation_id=call_pos, ts=ts)],
                        expected_version=p.expected_version,
                    )
                    positions.extend(res.positions)
                return DispatchResult(value, corr, call_pos, positions)
        except LeanCtxError as exc:
            if exc.code.startswith("STORE_"):  # the log itself failed (busy, closed): a record would wait on it again
                raise
            self._record_failure(name, exc.code, exc.message, t0, actor, session_id, project, corr,
                                 causation_id, ts or clock.iso(stamp()), calls_stream)
            raise
        except Exception as exc:
            self._record_failure(name, "INTERNAL_ERROR", f"{type(exc).__name__}: {exc}", t0, actor, session_id,
                                 project, corr, causation_id, ts or clock.iso(stamp()), calls_stream)
            raise

    def _replayed(self, prior: Any, spec: HandlerSpec, cmd: Command) -> DispatchResult:
        data = payload_dict(prior.payload) if prior.kind == _CALLED else {}
        first, name = data.get("command"), cmd.name
        if first == name and data.get("request") not in (None, request_digest(cmd)):
            raise InvalidInput(
                "IDEMPOTENCY_KEY_REUSED",
                f"this idempotency key already stands for a {name} request with other fields; a key answers"
                f" one request only: retry with the same fields, or send these with a new key",
                first_command=first, position=prior.position,
            )
        if first != name:
            what = f"a {first} request" if isinstance(first, str) else f"a {prior.kind} event, which no command put there"
            raise InvalidInput(
                "IDEMPOTENCY_KEY_REUSED",
                f"this idempotency key already stands for {what}; a key answers one request only:"
                f" send {name} with a new key",
                first_command=first if isinstance(first, str) else None, position=prior.position,
            )
        n = data.get("events", 0)
        positions = [e.position for e in self.store.read_all(prior.position, limit=n)] if n else []
        result = data.get("result")
        value = None
        if result is not None:
            value = msgspec.json.decode(result, type=spec.result) if spec.result else msgspec.json.decode(result)
        return DispatchResult(value, prior.correlation_id or "", prior.position, positions, duplicate=True)

    def _record_failure(self, name: str, code: str, message: str, t0: float, actor: str | None,
                        session_id: str | None, project: str | None, corr: str, causation_id: int | None,
                        ts: str, stream: str) -> None:
        record = ToolCalled(
            command=name,
            outcome="error",
            duration_ms=round((time.perf_counter() - t0) * 1000, 3),
            error_code=code,
            error_message=message[:500],
            session_id=session_id,
        )
        self.store.append(
            stream,
            [NewEvent(event=record, actor=actor, project=project, correlation_id=corr, causation_id=causation_id,
                      ts=ts)],
        )
