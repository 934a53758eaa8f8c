"""The command bus: tool.called records, lineage, refusals, validation, idempotency."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import msgspec
import pytest

from leanctx import clock
from leanctx.app import LeanCtx
from leanctx.commands import HANDLERS, Command, CommandContext, commands_by_name, handles
from leanctx.commands.agents import AgentRegistration, Heartbeat, RegisterAgent
from leanctx.errors import CommandError, ConcurrencyError, InvalidInput
from leanctx.events import NO_STREAM, NewEvent, StoredEvent
from leanctx.events.kinds import AgentHeartbeat, AgentRegistered, ToolCalled
from leanctx.projections.agents import find_agent

T0 = 1_800_000_000.0


@pytest.fixture
def db(tmp_path: Path) -> Path:
    return tmp_path / "events.db"


@pytest.fixture
def app(db: Path) -> Iterator[LeanCtx]:
    with LeanCtx(db) as a:
        yield a


def new_events(app: LeanCtx, since: int) -> list[StoredEvent]:
    return app.store.read_all(since=since)


def call_record(e: StoredEvent) -> ToolCalled:
    assert e.kind == "tool.called"
    data = e.data()
    assert isinstance(data, ToolCalled)
    return data


# --- a test-only command (registered for one test at a time, then removed) ----------------
class Probe(Command, frozen=True):
    name = "test.probe"
    agent_id: str
    heartbeats: int = 1
    fail_with: str | None = None
    undeclared: bool = False
    expected_version: int | str = "any"


@pytest.fixture
def probe() -> Iterator[type[Probe]]:
    def handler(ctx: CommandContext, cmd: Probe) -> dict[str, Any]:
        for i in range(cmd.heartbeats):
            ctx.emit(f"agent:{cmd.agent_id}", AgentHeartbeat(agent_id=cmd.agent_id, status=f"s{i}"),
                     expected_version=cmd.expected_version)  # type: ignore[arg-type]
        if cmd.undeclared:
            ctx.emit("x", ToolCalled(command="nested", outcome="ok", duration_ms=0.0))
        if cmd.fail_with:
            raise CommandError(cmd.fail_with, "refused on purpose")
        return {"emitted": len(ctx.pending), "ts": ctx.ts}

    handles(Probe, emits=("agent.heartbeat",))(handler)
    try:
        yield Probe
    finally:
        HANDLERS.pop(Probe, None)


# ------------------------------------------------------------------------------------------
def test_every_dispatch_records_a_tool_called_event(app: LeanCtx) -> None:
    res = app.bus.dispatch(RegisterAgent(agent_type="cursor", project_root="/p"), actor="me", session_id="s-1",
                           project="/p", now=T0)
    events = new_events(app, 0)
    assert [e.kind for e in events] == ["tool.called", "agent.registered"]
    call = events[0]
    rec = call_record(call)
    assert (rec.command, rec.outcome, rec.events, rec.session_id, rec.error_code) == (
        "agent.register", "ok", 1, "s-1", None
    )
    assert rec.duration_ms >= 0
    assert rec.result is None  # kept only with an idempotency key
    assert call.stream == "calls:s-1"
    assert (call.actor, call.project, call.ts) == ("me", "/p", clock.iso(T0))
    assert res.call_position == call.position == 1
    assert res.positions == [2]
    assert not res.duplicate


@pytest.mark.parametrize(
    ("kwargs", "stream"),
    [({"session_id": "abc"}, "calls:abc"), ({"actor": "bob"}, "calls:bob"),
     ({"actor": "bob", "session_id": "abc"}, "calls:abc"), ({}, "calls:anonymous")],
)
def test_tool_called_stream(app: LeanCtx, kwargs: dict[str, Any], stream: str) -> None:
    res = app.bus.dispatch(RegisterAgent(agent_type="cursor", project_root="/p"), **kwargs)
    assert app.store.get(res.call_position).stream == stream


def test_caused_events_carry_the_correlation_and_name_the_call(app: LeanCtx, probe: type[Probe]) -> None:
    app.bus.dispatch(RegisterAgent(agent_type="cursor", project_root="/p"))  # something before
    head = app.store.head().position
    res = app.bus.dispatch(Probe(agent_id="a1", heartbeats=3), actor="me", project="/p", now=T0)
    events = new_events(app, head)
    assert [e.kind for e in events] == ["tool.called"] + ["agent.heartbeat"] * 3
    call, caused = events[0], events[1:]
    assert res.call_position == call.position == head + 1
    assert res.positions == [e.position for e in caused]
    assert call.correlation_id == res.correlation_id
    assert len(res.correlation_id) >= 16
    for e in caused:
        assert e.correlation_id == res.correlation_id
        assert e.causation_id == call.position
        assert (e.actor, e.project, e.ts) == ("me", "/p", clock.iso(T0))
    assert call_record(call).events == 3
    assert res.value == {"emitted": 3, "ts": clock.iso(T0)}
    lineage = app.store.lineage(res.positions[-1])
    assert [e.position for e in lineage.ancestors] == [call.position]
    assert [e.position for e in app.store.lineage(call.position).descendants] == res.positions


def test_explicit_correlation_and_causation(app: LeanCtx) -> None:
    first = app.bus.dispatch(RegisterAgent(agent_type="cursor", project_root="/p"))
    res = app.bus.dispatch(Heartbeat(agent=first.value.agent_id), correlation_id="corr-42",
                           causation_id=first.positions[0])
    call = app.store.get(res.call_position)
    assert (call.correlation_id, call.causation_id) == ("corr-42", first.positions[0])
    caused = app.store.get(res.positions[0])
    assert (caused.correlation_id, caused.causation_id) == ("corr-42", res.call_position)
    # the chain of causes crosses commands
    assert [e.position for e in app.store.lineage(res.positions[0]).ancestors] == [
        first.call_position, first.positions[0], res.call_position
    ]


def test_a_refused_command_appends_only_an_error_record(app: LeanCtx) -> None:
    app.bus.dispatch(RegisterAgent(agent_type="cursor", project_root="/p"))
    head = app.store.head().position
    with pytest.raises(CommandError) as ei:
        app.bus.dispatch(Heartbeat(agent="nobody"), actor="me", correlation_id="corr-x", now=T0)
    assert ei.value.code == "AGENT_NOT_FOUND"
    events = new_events(app, head)
    assert len(events) == 1
    rec = call_record(events[0])
    assert (rec.command, rec.outcome, rec.error_code, rec.events) == ("agent.heartbeat", "error", "AGENT_NOT_FOUND", 0)
    assert rec.error_message and "nobody" in rec.error_message
    assert (events[0].correlation_id, events[0].actor, events[0].ts) == ("corr-x", "me", clock.iso(T0))
    assert app.store.verify().ok


def test_a_refusal_after_emitting_rolls_the_emissions_back(app: LeanCtx, probe: type[Probe]) -> None:
    with pytest.raises(CommandError) as ei:
        app.bus.dispatch(Probe(agent_id="a1", heartbeats=2, fail_with="PROBE_REFUSED"))
    assert ei.value.code == "PROBE_REFUSED"
    events = new_events(app, 0)
    assert [e.kind for e in events] == ["tool.called"]
    rec = call_record(events[0])
    assert (rec.outcome, rec.error_code, rec.command) == ("error", "PROBE_REFUSED", "test.probe")
    assert app.store.stream_version("agent:a1") == 0


def test_a_concurrency_conflict_in_an_emit_is_a_refusal(app: LeanCtx, probe: type[Probe]) -> None:
    app.bus.dispatch(Probe(agent_id="a1", heartbeats=1, expected_version=NO_STREAM))
    head = app.store.head().position
    with pytest.raises(ConcurrencyError):
        app.bus.dispatch(Probe(agent_id="a1", heartbeats=1, expected_version=NO_STREAM))
    events = new_events(app, head)
    assert [call_record(e).error_code for e in events] == ["CONCURRENCY_CONFLICT"]
    assert app.store.stream_version("agent:a1") == 1


def test_an_undeclared_kind_is_an_internal_error(app: LeanCtx, probe: type[Probe]) -> None:
    with pytest.raises(TypeError):
        app.bus.dispatch(Probe(agent_id="a1", undeclared=True))
    events = new_events(app, 0)
    assert [(call_record(e).outcome, call_record(e).error_code) for e in events] == [("error", "INTERNAL_ERROR")]


@pytest.mark.parametrize(
    "payload",
    [
        {"role": "dev", "project_root": "/p"},  # agent_type missing
        {"agent_type": 7, "project_root": "/p"},  # wrong type
        {"agent_type": "cursor", "pid": "not a number"},
    ],
)
def test_invalid_input_from_a_mapping(app: LeanCtx, payload: dict[str, Any]) -> None:
    with pytest.raises(InvalidInput) as ei:
        app.bus.dispatch(payload, command_type=RegisterAgent)
    assert ei.value.code == "INVALID_INPUT"
    assert "agent.register" in ei.value.message
    events = new_events(app, 0)
    assert len(events) == 1
    rec = call_record(events[0])
    assert (rec.command, rec.outcome, rec.error_code) == ("agent.register", "error", "INVALID_INPUT")


def test_a_mapping_without_a_command_type(app: LeanCtx) -> None:
    with pytest.raises(InvalidInput) as ei:
        app.bus.dispatch({"agent_type": "cursor"})
    assert ei.value.code == "COMMAND_UNKNOWN"


def test_a_valid_mapping_is_dispatched(app: LeanCtx) -> None:
    res = app.bus.dispatch({"agent_type": "cursor", "project_root": "/p"}, command_type=RegisterAgent)
    assert isinstance(res.value, AgentRegistration)
    assert res.value.name == "cursor-dev-1"


def test_commands_by_name() -> None:
    names = commands_by_name()
    assert names["agent.register"] is RegisterAgent
    assert names["agent.heartbeat"] is Heartbeat


# ------------------------------------------------------------------------------------------
# idempotency
# ------------------------------------------------------------------------------------------
def test_idempotent_dispatch_returns_the_original_result(app: LeanCtx) -> None:
    cmd = RegisterAgent(agent_type="cursor", project_root="/p")
    first = app.bus.dispatch(cmd, idempotency_key="req-1", now=T0)
    head = app.store.head()
    again = app.bus.dispatch(cmd, idempotency_key="req-1", now=T0 + 5)
    assert again.duplicate and not first.duplicate
    assert again.value == first.value
    assert isinstance(again.value, AgentRegistration)
    assert again.value.agent_id == first.value.agent_id
    assert (again.call_position, again.positions, again.correlation_id) == (
        first.call_position, first.positions, first.correlation_id
    )
    assert app.store.head() == head  # nothing appended, not even a tool.called
    rec = call_record(app.store.get(first.call_position))
    assert msgspec.json.decode(rec.result) == msgspec.to_builtins(first.value)
    conn = app.store.read_connection()
    assert len(conn.execute("SELECT * FROM agents").fetchall()) == 1


def test_idempotent_dispatch_survives_a_reopen(db: Path) -> None:
    with LeanCtx(db) as app:
        first = app.bus.dispatch(RegisterAgent(agent_type="cursor", project_root="/p"), idempotency_key="req-2")
    with LeanCtx(db) as app:
        head = app.store.head()
        again = app.bus.dispatch(RegisterAgent(agent_type="cursor", project_root="/p"), idempotency_key="req-2")
        assert again.duplicate and again.value == first.value
        assert app.store.head() == head


def test_different_keys_dispatch_twice(app: LeanCtx) -> None:
    a = app.bus.dispatch(RegisterAgent(agent_type="cursor", project_root="/p"), idempotency_key="k-a")
    b = app.bus.dispatch(RegisterAgent(agent_type="cursor", project_root="/p"), idempotency_key="k-b")
    assert a.value.agent_id != b.value.agent_id
    assert (a.value.name, b.value.name) == ("cursor-dev-1", "cursor-dev-2")


def test_a_refused_keyed_dispatch_can_be_retried(app: LeanCtx) -> None:
    with pytest.raises(CommandError):
        app.bus.dispatch(Heartbeat(agent="late"), idempotency_key="hb-1")
    registered = AgentRegistered(agent_id="late", name="late", agent_type="cursor", role="dev", project_root="/p")
    app.store.append("agent:late", [NewEvent(event=registered)])
    res = app.bus.dispatch(Heartbeat(agent="late"), idempotency_key="hb-1")
    assert not res.duplicate and res.value.agent_id == "late"


# ------------------------------------------------------------------------------------------
# strong consistency and linearizability
# ------------------------------------------------------------------------------------------
def test_strong_projection_is_current_when_dispatch_returns(app: LeanCtx) -> None:
    res = app.bus.dispatch(RegisterAgent(agent_type="cursor", project_root="/p"), now=T0)
    conn = app.store.read_connection()  # plain reader: no catch-up on this path
    assert find_agent(conn, res.value.agent_id, now=T0) is not None
    cp = conn.execute("SELECT position FROM projection_checkpoints WHERE name = 'agents'").fetchone()[0]
    assert cp == app.store.head().position


def test_decisions_are_linearizable_across_connections(db: Path) -> None:
    """Several writers (each its own store and connection) register agents at once: the
    generated names are unique and gap-free, because each decision runs under the write lock."""
    apps = [LeanCtx(db) for _ in range(4)]
    try:
        per_app = 6
        barrier = threading.Barrier(len(apps))
        names: list[str] = []
        lock = threading.Lock()
        errors: list[BaseException] = []

        def work(a: LeanCtx) -> None:
            try:
                barrier.wait()
                for _ in range(per_app):
                    n = a.bus.dispatch(RegisterAgent(agent_type="cursor", project_root="/p")).value.name
                    with lock:
                        names.append(n)
            except BaseException as exc:  # pragma: no cover - reported below
                errors.append(exc)

        threads = [threading.Thread(target=work, args=(a,)) for a in apps]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert errors == []
        total = per_app * len(apps)
        assert sorted(names) == sorted(f"cursor-dev-{i}" for i in range(1, total + 1))
        assert apps[0].store.verify().ok
    finally:
        for a in apps:
            a.close()


def test_a_locked_log_fails_once_after_its_timeout_not_twice(tmp_path: Path) -> None:
    """A command refused because another writer holds the log (STORE_BUSY) is not recorded: its
    failure record would wait the whole busy timeout again on the same lock."""
    import time

    import apsw

    path = tmp_path / "locked.db"
    with LeanCtx(path, busy_timeout_ms=2000) as lc:
        other = apsw.Connection(str(path))
        other.execute("BEGIN EXCLUSIVE")
        try:
            t = time.perf_counter()
            with pytest.raises(Exception) as e:
                lc.bus.dispatch(RegisterAgent(agent_type="claude", role="dev"), actor="a", project=str(tmp_path))
            elapsed = time.perf_counter() - t
        finally:
            other.execute("ROLLBACK")
            other.close()
        assert getattr(e.value, "code", None) == "STORE_BUSY"
        assert 1.9 <= elapsed < 3.6, elapsed  # one busy timeout (2 s), not two (4 s)
