"""The agent registry projection: its fold, and status computed from an injected ``now``.

The history is appended straight to the log with explicit timestamps (a projection is a
fold of events), so no command logic runs here.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from leanctx import clock
from leanctx.app import LeanCtx
from leanctx.events import NewEvent
from leanctx.events.kinds import AgentDeregistered, AgentHeartbeat, AgentRegistered
from leanctx.projections.agents import (
    HEARTBEAT_INTERVAL,
    HEARTBEAT_TTL,
    count_names,
    find_agent,
    list_agents,
    status_of,
)

T0 = 1_800_000_000.0


@pytest.fixture
def app(tmp_path: Path) -> Iterator[LeanCtx]:
    with LeanCtx(tmp_path / "events.db") as a:
        yield a


def registered(app: LeanCtx, agent_id: str, at: float, name: str | None = None, **fields: Any) -> None:
    fields.setdefault("agent_type", "cursor")
    fields.setdefault("role", "dev")
    fields.setdefault("project_root", "/p")
    ev = AgentRegistered(agent_id=agent_id, name=name or f"name-{agent_id}", **fields)
    app.store.append(f"agent:{agent_id}", [NewEvent(event=ev, ts=clock.iso(at))])


def beat(app: LeanCtx, agent_id: str, at: float, status: str | None = None) -> None:
    app.store.append(f"agent:{agent_id}", [NewEvent(event=AgentHeartbeat(agent_id=agent_id, status=status),
                                                    ts=clock.iso(at))])


def deregistered(app: LeanCtx, agent_id: str, at: float, reason: str = "deregistered") -> None:
    app.store.append(f"agent:{agent_id}", [NewEvent(event=AgentDeregistered(agent_id=agent_id, reason=reason),
                                                    ts=clock.iso(at))])


def view(app: LeanCtx, ref: str, now: float, **kw: Any):  # type: ignore[no-untyped-def]
    v = find_agent(app.projections.reader("agents"), ref, now=now, **kw)
    assert v is not None
    return v


def test_ttl_is_three_intervals() -> None:
    assert HEARTBEAT_TTL == 3 * HEARTBEAT_INTERVAL


@pytest.mark.parametrize(
    ("age", "expected"),
    [
        (0.0, "active"),
        (HEARTBEAT_INTERVAL, "active"),
        (2 * HEARTBEAT_INTERVAL, "active"),
        (2 * HEARTBEAT_INTERVAL + 0.01, "idle"),
        (HEARTBEAT_TTL, "idle"),
        (HEARTBEAT_TTL + 0.01, "stale"),
        (10 * HEARTBEAT_TTL, "stale"),
    ],
)
def test_status_from_the_age_of_the_last_heartbeat(app: LeanCtx, age: float, expected: str) -> None:
    registered(app, "a", T0)
    v = view(app, "a", T0 + age)
    assert v.status == expected
    assert v.age_seconds == pytest.approx(age, abs=0.001)
    status, computed_age = status_of(clock.iso(T0), None, None, T0 + age)
    assert (status, computed_age) == (expected, pytest.approx(age, abs=1e-6))


def test_a_clock_behind_the_last_heartbeat_gives_age_zero(app: LeanCtx) -> None:
    registered(app, "a", T0)
    v = view(app, "a", T0 - 30)
    assert (v.status, v.age_seconds) == ("active", 0.0)


def test_the_last_heartbeat_counts(app: LeanCtx) -> None:
    registered(app, "a", T0)
    assert view(app, "a", T0 + HEARTBEAT_TTL + 1).status == "stale"
    beat(app, "a", T0 + HEARTBEAT_TTL + 1)
    v = view(app, "a", T0 + HEARTBEAT_TTL + 2)
    assert (v.status, v.heartbeats) == ("active", 1)
    assert v.last_seen == clock.iso(T0 + HEARTBEAT_TTL + 1)
    assert v.registered_at == clock.iso(T0)
    assert v.age_seconds == pytest.approx(1.0)
    # the same rows, read later, age on their own
    assert view(app, "a", T0 + HEARTBEAT_TTL + 1 + 2 * HEARTBEAT_INTERVAL + 1).status == "idle"


def test_self_reported_idle(app: LeanCtx) -> None:
    registered(app, "a", T0)
    beat(app, "a", T0 + 1, "idle")
    assert view(app, "a", T0 + 2).status == "idle"
    beat(app, "a", T0 + 3)  # no status: the last report is kept
    v = view(app, "a", T0 + 4)
    assert (v.status, v.reported_status, v.heartbeats) == ("idle", "idle", 2)
    beat(app, "a", T0 + 5, "busy")
    v = view(app, "a", T0 + 6)
    assert (v.status, v.reported_status) == ("active", "busy")
    beat(app, "a", T0 + 7, "idle")
    assert view(app, "a", T0 + 7 + HEARTBEAT_TTL + 1).status == "stale"  # stale wins over the report


def test_left_whatever_the_time(app: LeanCtx) -> None:
    registered(app, "a", T0)
    deregistered(app, "a", T0 + 5, reason="shift over")
    for now in (T0 + 5, T0 + 6, T0 + 10 * HEARTBEAT_TTL):
        v = view(app, "a", now)
        assert (v.status, v.left_reason, v.left_at) == ("left", "shift over", clock.iso(T0 + 5))


def test_custom_ttl(app: LeanCtx) -> None:
    registered(app, "a", T0)
    conn = app.projections.reader("agents")
    assert [v.status for v in list_agents(conn, now=T0 + 5, ttl=9)] == ["active"]
    assert [v.status for v in list_agents(conn, now=T0 + 7, ttl=9)] == ["idle"]
    assert [v.status for v in list_agents(conn, now=T0 + 10, ttl=9)] == ["stale"]
    assert find_agent(conn, "a", now=T0 + 10, ttl=9).status == "stale"
    assert find_agent(conn, "a", now=T0 + 10).status == "active"  # the default TTL


def test_status_never_reads_the_clock(app: LeanCtx, monkeypatch: pytest.MonkeyPatch) -> None:
    registered(app, "a", T0)
    conn = app.projections.reader("agents")

    def no_clock() -> float:
        raise AssertionError("a projection read the clock")

    monkeypatch.setattr(clock, "now", no_clock)
    assert view(app, "a", T0 + 1).status == "active"
    assert [v.status for v in list_agents(conn, now=T0 + HEARTBEAT_TTL + 5)] == ["stale"]


def test_list_agents_filters_and_order(app: LeanCtx) -> None:
    registered(app, "b", T0 + 2)
    registered(app, "a", T0 + 1)
    registered(app, "c", T0 + 3, project_root="/other")
    registered(app, "d", T0 + 4)
    deregistered(app, "d", T0 + 5)
    conn = app.projections.reader("agents")
    assert [v.agent_id for v in list_agents(conn, now=T0 + 6)] == ["a", "b", "c"]  # by registration time
    assert [v.agent_id for v in list_agents(conn, now=T0 + 6, project_root="/p")] == ["a", "b"]
    assert [v.agent_id for v in list_agents(conn, now=T0 + 6, project_root="/p", include_left=True)] == [
        "a", "b", "d"
    ]
    assert [v.status for v in list_agents(conn, now=T0 + 6, include_left=True)] == [
        "active", "active", "active", "left"
    ]


def test_find_agent_by_id_and_by_name(app: LeanCtx) -> None:
    registered(app, "a", T0, name="cursor-dev-1")
    registered(app, "b", T0 + 1, name="cursor-dev-1", project_root="/other")
    conn = app.projections.reader("agents")
    assert find_agent(conn, "a", now=T0).name == "cursor-dev-1"
    assert find_agent(conn, "cursor-dev-1", now=T0 + 2).agent_id == "b"  # the newest of that name
    assert find_agent(conn, "cursor-dev-1", now=T0 + 2, project_root="/p").agent_id == "a"
    assert find_agent(conn, "cursor-dev-9", now=T0) is None
    assert find_agent(conn, "nobody", now=T0) is None


def test_registration_fields_are_folded(app: LeanCtx) -> None:
    registered(app, "a", T0, name="cursor-review-1", pid=4242, host="box", session_id="sess-1", role="review")
    v = view(app, "a", T0)
    assert (v.name, v.agent_type, v.role, v.project_root, v.pid, v.host, v.session_id, v.heartbeats) == (
        "cursor-review-1", "cursor", "review", "/p", 4242, "box", "sess-1", 0
    )


def test_heartbeat_of_an_unregistered_agent_is_ignored(app: LeanCtx) -> None:
    beat(app, "ghost", T0)
    assert find_agent(app.projections.reader("agents"), "ghost", now=T0) is None


def test_a_new_registration_clears_the_departure(app: LeanCtx) -> None:
    registered(app, "steady", T0)
    deregistered(app, "steady", T0 + 1)
    assert view(app, "steady", T0 + 2).status == "left"
    registered(app, "steady", T0 + 3)
    v = view(app, "steady", T0 + 4)
    assert (v.status, v.left_at, v.left_reason, v.registered_at) == ("active", None, None, clock.iso(T0 + 3))


def test_count_names(app: LeanCtx) -> None:
    registered(app, "a", T0)
    registered(app, "b", T0)
    registered(app, "c", T0, role="review")
    registered(app, "d", T0, project_root="/q")
    conn = app.projections.reader("agents")
    assert count_names(conn, "/p", "cursor", "dev") == 2
    assert count_names(conn, "/p", "cursor", "review") == 1
    assert count_names(conn, "/q", "cursor", "dev") == 1
    assert count_names(conn, "/p", "claude", "dev") == 0
