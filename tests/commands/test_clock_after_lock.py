"""A command reads the clock once it holds the write lock, not before waiting for it: a claim
that waited for another writer gets a lease that starts when it is granted, and event
timestamps follow positions when several processes write at once. An explicit ``now=`` (tests)
still wins. Real SQLite files, a real lock held by another process, real HTTP."""

from __future__ import annotations

import itertools
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from leanctx import clock
from leanctx.app import LeanCtx
from leanctx.commands.chat import PostMessage
from leanctx.commands.tasks import ClaimTask, CreateTask
from tests.api.test_http_common import Api, make_server  # noqa: F401

pytestmark = pytest.mark.timeout(120)

HOLD = 1.5  # seconds another process keeps the write lock

_HOLDER = textwrap.dedent("""
    import sys, time, apsw
    c = apsw.Connection(sys.argv[1])
    c.execute("BEGIN IMMEDIATE")
    print("locked", flush=True)
    time.sleep(float(sys.argv[2]))
    released = time.time()
    c.execute("ROLLBACK")
    print(repr(released), flush=True)
""")


def hold_lock(db: Path) -> subprocess.Popen[str]:
    p = subprocess.Popen([sys.executable, "-c", _HOLDER, str(db), str(HOLD)], stdout=subprocess.PIPE, text=True)
    assert p.stdout is not None and p.stdout.readline().strip() == "locked"
    return p


def released_at(p: subprocess.Popen[str]) -> float:
    out, _ = p.communicate(timeout=30)
    return float(out.strip())


def claimed(lc: LeanCtx, since: int) -> tuple[float, float]:
    """(ts, lease expiry) of the task.claimed event after ``since``, as epoch seconds."""
    [e] = [e for e in lc.store.read_all(since=since) if e.kind == "task.claimed"]
    return clock.parse(e.ts), clock.parse(e.data().lease_expires_at)


def test_a_claim_that_waited_for_the_lock_gets_a_fresh_lease(tmp_path: Path) -> None:
    db = tmp_path / "events.db"
    with LeanCtx(db) as lc:
        lc.bus.dispatch(CreateTask(title="x", task_id="t1"), actor="alice")
        head = lc.store.head().position
        holder = hold_lock(db)
        lc.bus.dispatch(ClaimTask(task_id="t1", lease_seconds=5), actor="bob")
        returned = time.time()
        released = released_at(holder)
        ts, expires = claimed(lc, head)
    assert ts >= released - 0.01, f"clock read {released - ts:.3f} s before the lock was granted"
    assert expires - ts == pytest.approx(5, abs=1e-3)
    assert expires - returned > 4.5  # before: only 5 - 1.5 s of the lease were left when the claim returned


def test_an_explicit_now_still_wins(tmp_path: Path) -> None:
    t0 = 1_800_000_000.0
    with LeanCtx(tmp_path / "events.db") as lc:
        lc.bus.dispatch(CreateTask(title="x", task_id="t1"), actor="alice", now=t0)
        head = lc.store.head().position
        holder = hold_lock(tmp_path / "events.db")
        lc.bus.dispatch(ClaimTask(task_id="t1", lease_seconds=5), actor="bob", now=t0 + 1)
        released_at(holder)
        assert claimed(lc, head) == (t0 + 1, t0 + 6)
        assert {e.ts for e in lc.store.read_all(since=head)} == {clock.iso(t0 + 1)}


_WRITER = textwrap.dedent("""
    import sys
    from leanctx.app import LeanCtx
    from leanctx.commands.chat import PostMessage
    with LeanCtx(sys.argv[1]) as lc:
        for i in range(int(sys.argv[3])):
            lc.bus.dispatch(PostMessage(title=f"m{i}", body="x"), actor=sys.argv[2])
""")


def test_timestamps_follow_positions_under_concurrent_writers(tmp_path: Path) -> None:
    db = tmp_path / "events.db"
    with LeanCtx(db) as lc:
        lc.bus.dispatch(PostMessage(title="start", body="x"), actor="alice")
        head = lc.store.head().position
    procs = [subprocess.Popen([sys.executable, "-c", _WRITER, str(db), f"w{k}", "40"]) for k in range(4)]
    for p in procs:
        assert p.wait(timeout=90) == 0
    with LeanCtx(db) as lc:
        events = lc.store.read_all(since=head, limit=10_000)
    assert len(events) >= 4 * 40 * 2
    back = [(a.position, b.position, clock.parse(a.ts) - clock.parse(b.ts))
            for a, b in itertools.pairwise(events) if b.ts < a.ts]
    assert back == [], f"{len(back)} timestamps go backwards against positions, e.g. {back[:3]}"


def test_http_dispatch_reads_the_servers_clock_after_the_lock(make_server) -> None:  # noqa: F811
    reads: list[float] = []

    def recording_clock() -> float:
        reads.append(time.time())
        return reads[-1]

    server = make_server(clock=recording_clock)
    api = Api(server)
    a, b = api.register("claude"), api.register("cursor")
    tid = api.ok("/v1/tasks/create", a, title="x")["result"]["task"]["task_id"]
    lc = server.state.lc
    head = lc.store.head().position
    holder = hold_lock(Path(server.config.db))
    r = api.ok("/v1/tasks/claim", b, task_id=tid, lease_seconds=5)
    released = released_at(holder)
    ts, expires = claimed(lc, head)
    assert ts >= released - 0.01, f"clock read {released - ts:.3f} s before the lock was granted"
    assert clock.iso(ts) in {clock.iso(t) for t in reads}  # the server's (injected) clock, not the bus's own
    assert r["result"]["task"]["lease_expires_at"] == clock.iso(expires)
