"""The projection runner: checkpoints, catch-up, rebuild, version bumps, digests."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import apsw
import pytest

from leanctx.app import LeanCtx
from leanctx.commands.agents import Deregister, Heartbeat, RegisterAgent
from leanctx.errors import CommandError, InvalidInput, StoreError
from leanctx.events import NewEvent, SqliteEventStore, StoredEvent
from leanctx.events.kinds import AgentDeregistered, AgentHeartbeat, AgentRegistered, ToolCalled
from leanctx.projections import AgentRegistry, Projection, Projections, digest_tables, replay_into
from leanctx.projections.agents import find_agent, list_agents

T0 = 1_800_000_000.0
V = AgentRegistry.version  # the code's current version of the registry


class ShoutingRegistry(AgentRegistry):
    """The next version of the registry: same tables, names stored upper-case."""

    version = V + 1

    def apply(self, conn: Any, event: StoredEvent) -> None:
        super().apply(conn, event)
        ev = event.data()
        if isinstance(ev, AgentRegistered):
            conn.execute("UPDATE agents SET name = upper(name) WHERE agent_id = ?", (ev.agent_id,))


class HeartbeatTally(Projection):
    """A small eventual projection: heartbeats per agent."""

    name = "tally"
    version = 1
    consistency = "eventual"
    kinds = frozenset({"agent.heartbeat"})
    tables = {"tally": "CREATE TABLE IF NOT EXISTS tally (agent_id TEXT PRIMARY KEY, n INTEGER NOT NULL)"}

    def apply(self, conn: Any, event: StoredEvent) -> None:
        ev = event.data()
        conn.execute(
            "INSERT INTO tally (agent_id, n) VALUES (?, 1) ON CONFLICT(agent_id) DO UPDATE SET n = n + 1",
            (ev.agent_id,),
        )


class Exploding(Projection):
    """Fails on the heartbeat of agent ``boom`` (to prove rows and checkpoints roll back together)."""

    name = "exploding"
    version = 1
    kinds = frozenset({"agent.heartbeat"})
    tables = {"seen": "CREATE TABLE IF NOT EXISTS seen (position INTEGER PRIMARY KEY)"}

    def apply(self, conn: Any, event: StoredEvent) -> None:
        conn.execute("INSERT INTO seen (position) VALUES (?)", (event.position,))
        if event.data().agent_id == "boom":
            raise RuntimeError("boom")


def reg(agent_id: str, name: str | None = None, **env: Any) -> NewEvent:
    return NewEvent(
        event=AgentRegistered(agent_id=agent_id, name=name or f"cursor-dev-{agent_id}", agent_type="cursor",
                              role="dev", project_root="/p"),
        **env,
    )


def hb(agent_id: str, **env: Any) -> NewEvent:
    return NewEvent(event=AgentHeartbeat(agent_id=agent_id), **env)


def checkpoint(projections: Projections, name: str) -> dict[str, Any]:
    return next(c for c in projections.checkpoints() if c["name"] == name)


def raw_checkpoints(path: Path) -> dict[str, tuple[int, int]]:
    conn = apsw.Connection(str(path), flags=apsw.SQLITE_OPEN_READONLY)
    try:
        return {n: (v, p) for n, v, p in conn.execute("SELECT name, version, position FROM projection_checkpoints")}
    finally:
        conn.close()


def rows(conn: Any, table: str = "agents") -> list[tuple[Any, ...]]:
    return conn.execute(f"SELECT * FROM {table} ORDER BY 1").fetchall()


@pytest.fixture
def db(tmp_path: Path) -> Path:
    return tmp_path / "events.db"


@pytest.fixture
def app(db: Path) -> Iterator[LeanCtx]:
    with LeanCtx(db) as a:
        yield a


def populate(app: LeanCtx) -> list[str]:
    """A little history: registrations, heartbeats, a departure, a refusal, a rejoin."""
    bus = app.bus
    ids = []
    for i in range(3):
        ids.append(bus.dispatch(RegisterAgent(agent_type="cursor", project_root="/p"), now=T0 + i).value.agent_id)
    bus.dispatch(RegisterAgent(agent_type="claude", role="review", project_root="/q"), now=T0 + 3)
    bus.dispatch(Heartbeat(agent=ids[0], status="busy"), now=T0 + 10)
    bus.dispatch(Heartbeat(agent=ids[1]), now=T0 + 11)
    bus.dispatch(Deregister(agent=ids[2], reason="done"), now=T0 + 12)
    with pytest.raises(CommandError):
        bus.dispatch(Heartbeat(agent=ids[2]), now=T0 + 13)
    bus.dispatch(RegisterAgent(agent_type="codex", project_root="/p", agent_id="fixed-1"), now=T0 + 14)
    bus.dispatch(RegisterAgent(agent_type="codex", project_root="/p", agent_id="fixed-1"), now=T0 + 15)
    return ids


# ------------------------------------------------------------------------------------------
# checkpoints
# ------------------------------------------------------------------------------------------
def test_a_new_store_starts_with_checkpoints_at_zero(app: LeanCtx) -> None:
    cp = checkpoint(app.projections, "agents")
    assert (cp["version"], cp["stored_version"], cp["position"], cp["consistency"]) == (V, V, 0, "strong")
    assert cp["kinds"] == sorted(AgentRegistry.kinds)


def test_checkpoint_equals_the_head_after_every_append(app: LeanCtx, db: Path) -> None:
    store = app.store
    steps = [
        lambda: app.bus.dispatch(RegisterAgent(agent_type="cursor", project_root="/p")),
        lambda: store.append("calls:x", [NewEvent(event=ToolCalled(command="c", outcome="ok", duration_ms=1.0))]),
        lambda: store.append("agent:zz", [reg("zz"), hb("zz"), hb("zz")]),
        lambda: app.bus.dispatch(Heartbeat(agent="zz")),
    ]
    for step in steps:
        step()
        head = store.head().position
        assert checkpoint(app.projections, "agents")["position"] == head
        assert raw_checkpoints(db)["agents"] == (V, head)  # committed with the rows
    assert {r[0] for r in rows(store.read_connection())} == {"zz", find_agent(
        store.read_connection(), "cursor-dev-1", now=T0).agent_id}


def test_rows_and_checkpoint_roll_back_together(db: Path) -> None:
    store = SqliteEventStore(db)
    try:
        projections = Projections(store, [AgentRegistry(), Exploding()])
        store.append("agent:a", [reg("a"), hb("a")])
        conn = store.read_connection()
        before = (rows(conn), rows(conn, "seen"), raw_checkpoints(db), store.head())
        assert before[2] == {"agents": (V, 2), "exploding": (1, 2)}
        with pytest.raises(RuntimeError, match="boom"):
            store.append("agent:b", [reg("b"), hb("a"), hb("boom")])
        assert (rows(conn), rows(conn, "seen"), raw_checkpoints(db), store.head()) == before
        # and the next append goes on from there
        store.append("agent:b", [reg("b"), hb("b")])
        assert raw_checkpoints(db) == {"agents": (V, 4), "exploding": (1, 4)}
        assert [r[0] for r in rows(conn, "seen")] == [2, 4]
        assert projections.digest("agents") == digest_tables(conn, AgentRegistry())
    finally:
        store.close()


def test_eventual_projection_catches_up_when_read(db: Path) -> None:
    store = SqliteEventStore(db)
    try:
        projections = Projections(store, [AgentRegistry(), HeartbeatTally()])
        store.append("agent:a", [reg("a"), hb("a"), hb("a")])
        store.append("agent:b", [hb("b")])
        assert checkpoint(projections, "tally")["position"] == 0  # not applied in the append
        assert checkpoint(projections, "agents")["position"] == 4  # strong: applied
        conn = projections.reader("tally")
        assert rows(conn, "tally") == [("a", 2), ("b", 1)]
        assert checkpoint(projections, "tally")["position"] == 4
        assert projections.ensure_current() == 0  # nothing left
    finally:
        store.close()


# ------------------------------------------------------------------------------------------
# catch-up of events appended without projections
# ------------------------------------------------------------------------------------------
def test_ensure_current_catches_up_appends_made_without_projections(app: LeanCtx, db: Path) -> None:
    app.bus.dispatch(RegisterAgent(agent_type="cursor", project_root="/p"))
    with SqliteEventStore(db) as bare:  # e.g. an older tool, or a process without projections
        bare.append("agent:ghost", [reg("ghost"), hb("ghost")])
        head = bare.head().position
    assert checkpoint(app.projections, "agents")["position"] == head - 2
    assert find_agent(app.store.read_connection(), "ghost", now=T0) is None  # not folded yet
    assert app.projections.ensure_current(["agents"]) == 2
    assert checkpoint(app.projections, "agents")["position"] == head
    ghost = find_agent(app.store.read_connection(), "ghost", now=T0)
    assert ghost is not None and ghost.heartbeats == 1


def test_the_next_command_syncs_before_deciding(app: LeanCtx, db: Path) -> None:
    with SqliteEventStore(db) as bare:
        bare.append("agent:ghost", [reg("ghost")])
    # without a sync the command would refuse with AGENT_NOT_FOUND
    res = app.bus.dispatch(Heartbeat(agent="ghost"))
    assert res.value.agent_id == "ghost"
    assert checkpoint(app.projections, "agents")["position"] == app.store.head().position
    ghost = find_agent(app.store.read_connection(), "ghost", now=T0)
    assert ghost is not None and ghost.heartbeats == 1


def test_an_append_catches_up_inside_its_transaction(app: LeanCtx, db: Path) -> None:
    with SqliteEventStore(db) as bare:
        bare.append("agent:g1", [reg("g1")])
    app.store.append("agent:g2", [reg("g2")])  # the hook folds g1 first, then g2
    conn = app.store.read_connection()  # no ensure_current on this path
    assert [r[0] for r in rows(conn)] == ["g1", "g2"]
    assert raw_checkpoints(db)["agents"] == (V, 2)


def test_opening_projections_on_an_existing_log_folds_it(db: Path) -> None:
    with SqliteEventStore(db) as bare:
        bare.append("agent:a", [reg("a"), hb("a")])
        bare.append("agent:b", [reg("b")])
    with LeanCtx(db) as app:
        assert checkpoint(app.projections, "agents")["position"] == 3
        assert [r[0] for r in rows(app.store.read_connection())] == ["a", "b"]


# ------------------------------------------------------------------------------------------
# rebuild and digests
# ------------------------------------------------------------------------------------------
def test_rebuild_gives_the_same_digest_as_the_live_projection(app: LeanCtx, tmp_path: Path) -> None:
    populate(app)
    live = app.projections.digest("agents")
    live_rows = rows(app.store.read_connection())
    assert len(live_rows) == 5
    counts = app.projections.rebuild()
    assert counts["agents"] == sum(1 for e in app.store.read_all() if e.kind in AgentRegistry.kinds)
    assert app.projections.digest("agents") == live
    assert rows(app.store.read_connection()) == live_rows
    # a fold into a fresh database gives the same digest as well
    fresh = apsw.Connection(str(tmp_path / "fresh.db"))
    try:
        p = AgentRegistry()
        with fresh:
            p.create(fresh)
            replay_into(fresh, app.store.iter_all(), [p])
        assert digest_tables(fresh, p) == live
    finally:
        fresh.close()


def test_rebuild_restores_damaged_rows(app: LeanCtx) -> None:
    populate(app)
    good = app.projections.digest("agents")
    with app.store.transaction() as tx:
        tx.conn.execute("DELETE FROM agents WHERE agent_type = 'cursor'")
        tx.conn.execute("UPDATE agents SET heartbeats = 99")
    assert app.projections.digest("agents") != good
    app.projections.rebuild("agents")
    assert app.projections.digest("agents") == good
    assert checkpoint(app.projections, "agents")["position"] == app.store.head().position


def test_digest_changes_when_data_changes(app: LeanCtx) -> None:
    d0 = app.projections.digest("agents")
    r = app.bus.dispatch(RegisterAgent(agent_type="cursor", project_root="/p"), now=T0)
    d1 = app.projections.digest("agents")
    app.bus.dispatch(Heartbeat(agent=r.value.agent_id), now=T0 + 5)
    d2 = app.projections.digest("agents")
    app.bus.dispatch(Heartbeat(agent=r.value.agent_id, status="idle"), now=T0 + 5)
    d3 = app.projections.digest("agents")
    assert len({d0, d1, d2, d3}) == 4
    # a refused command appends a tool.called record only: the agents digest does not move
    with pytest.raises(CommandError):
        app.bus.dispatch(Heartbeat(agent="nobody"))
    assert app.projections.digest("agents") == d3


def test_digest_is_stable_across_reopen(db: Path) -> None:
    with LeanCtx(db) as app:
        populate(app)
        before = app.projections.digest("agents")
    with LeanCtx(db) as app:
        assert app.projections.digest("agents") == before


def test_same_history_gives_same_digest_in_another_file(tmp_path: Path) -> None:
    digests = []
    for name in ("a.db", "b.db"):
        with LeanCtx(tmp_path / name) as app:
            for n in ("x", "y"):
                app.store.append(f"agent:{n}", [reg(n, ts="2026-01-01T00:00:00.000000Z"),
                                                hb(n, ts="2026-01-01T00:00:05.000000Z")])
            digests.append(app.projections.digest("agents"))
    assert digests[0] == digests[1]


# ------------------------------------------------------------------------------------------
# version bumps
# ------------------------------------------------------------------------------------------
def test_a_bumped_version_is_rebuilt_at_the_next_open(db: Path) -> None:
    with LeanCtx(db) as app:
        populate(app)
        v1_digest = app.projections.digest("agents")
        names = sorted(r[1] for r in rows(app.store.read_connection()))
        head = app.store.head().position
    assert any(n != n.upper() for n in names)

    store = SqliteEventStore(db)
    try:
        projections = Projections(store, [ShoutingRegistry()])
        cp = checkpoint(projections, "agents")
        assert (cp["version"], cp["stored_version"], cp["position"]) == (V + 1, V + 1, head)
        assert sorted(r[1] for r in rows(store.read_connection())) == sorted(n.upper() for n in names)
        assert raw_checkpoints(db)["agents"] == (V + 1, head)
        # v2 is maintained from now on
        store.append("agent:new", [reg("new", name="lower-name")])
        assert find_agent(store.read_connection(), "new", now=T0).name == "LOWER-NAME"
    finally:
        store.close()

    # the current code is older now: opening does not take the projection back, it refuses it...
    with LeanCtx(db) as app:
        assert checkpoint(app.projections, "agents")["stored_version"] == V + 1
        with pytest.raises(StoreError) as ei:
            app.projections.reader("agents")
        assert ei.value.code == "PROJECTION_VERSION_CHANGED"
        # ...until a rebuild (`lean-ctx replay`) takes it back on purpose
        app.projections.rebuild()
        assert checkpoint(app.projections, "agents")["stored_version"] == V
        assert find_agent(app.store.read_connection(), "new", now=T0).name == "lower-name"
        again = app.projections.digest("agents")
    with LeanCtx(db) as app:
        assert app.projections.digest("agents") == again != v1_digest


def test_a_process_with_other_code_does_not_fold_into_a_newer_projection(db: Path) -> None:
    old = LeanCtx(db)  # v1, open first
    new_store = SqliteEventStore(db)
    try:
        old.store.append("agent:a", [reg("a", name="alpha")])
        new = Projections(new_store, [ShoutingRegistry()])  # rebuilds to the next version
        assert raw_checkpoints(db)["agents"] == (V + 1, 1)
        old.store.append("agent:b", [reg("b", name="beta")])  # older code must not write its rows
        assert raw_checkpoints(db)["agents"] == (V + 1, 1)
        assert [r[1] for r in rows(new_store.read_connection())] == ["ALPHA"]
        new.ensure_current()
        assert [r[1] for r in rows(new_store.read_connection())] == ["ALPHA", "BETA"]
        assert raw_checkpoints(db)["agents"] == (V + 1, 2)
    finally:
        old.close()
        new_store.close()


# ------------------------------------------------------------------------------------------
# misc
# ------------------------------------------------------------------------------------------
def test_unknown_projection_name(app: LeanCtx) -> None:
    with pytest.raises(InvalidInput) as ei:
        app.projections.digest("nope")
    assert ei.value.code == "PROJECTION_NOT_FOUND"


def test_duplicate_projection_names_are_refused(db: Path) -> None:
    with SqliteEventStore(db) as store:
        with pytest.raises(ValueError):
            Projections(store, [AgentRegistry(), ShoutingRegistry()])


def test_projections_fold_only_their_kinds(app: LeanCtx) -> None:
    app.store.append("agent:a", [reg("a")])
    app.store.append("x", [NewEvent(event=AgentDeregistered(agent_id="a", reason="x"))])  # folded
    app.store.append("calls:x", [NewEvent(event=ToolCalled(command="c", outcome="ok", duration_ms=1.0))])
    views = list_agents(app.projections.reader("agents"), now=T0, include_left=True)
    assert [(v.agent_id, v.status, v.left_reason) for v in views] == [("a", "left", "x")]
