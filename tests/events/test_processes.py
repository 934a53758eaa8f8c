"""The SQLite store under real concurrency: separate OS processes on one file."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from leanctx.events import NewEvent, SqliteEventStore, TopicFilter
from leanctx.events.kinds import AgentDeregistered, AgentHeartbeat

HELPER = Path(__file__).with_name("proc_helper.py")
ROOT = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.timeout(60)


def spawn(*args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, str(HELPER), *args],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=ROOT,
    )


def expect_line(p: subprocess.Popen[str], want: str) -> None:
    line = p.stdout.readline()  # type: ignore[union-attr]
    if line.strip() != want:
        p.kill()
        raise AssertionError(f"child said {line!r}, stderr: {p.stderr.read()}")  # type: ignore[union-attr]


def test_four_processes_append_concurrently(tmp_path: Path) -> None:
    path = tmp_path / "events.db"
    SqliteEventStore(path).close()  # schema created once, before the race
    workers, n = 4, 2000
    procs = [spawn("append", str(path), f"w{w}", str(n)) for w in range(workers)]
    for p in procs:
        expect_line(p, "ready")
    for p in procs:  # start them together
        p.stdin.write("go\n")  # type: ignore[union-attr]
        p.stdin.flush()  # type: ignore[union-attr]
    reports = []
    for p in procs:
        out, err = p.communicate(timeout=40)
        assert p.returncode == 0, err
        reports.append(json.loads(out.strip().splitlines()[-1]))

    with SqliteEventStore(path) as store:
        events = store.read_all()
        assert [e.position for e in events] == list(range(1, workers * n + 1))
        assert store.count() == workers * n
        for rep in reports:
            w = rep["worker"]
            mine = [e for e in events if e.stream == f"worker:{w}"]
            assert [e.position for e in mine] == rep["positions"]  # each saw its own positions
            assert [e.version for e in mine] == list(range(1, n + 1))
            assert [e.data().agent_id for e in mine] == [f"{w}-{i}" for i in range(n)]
        all_reported = sorted(p for rep in reports for p in rep["positions"])
        assert all_reported == list(range(1, workers * n + 1))  # unique, gap-free
        res = store.verify()
        assert res.ok and res.checked == workers * n
    # they really ran at the same time: the appends overlap in time and interleave in the log
    assert max(r["t0"] for r in reports) < min(r["t1"] for r in reports)
    switches = sum(1 for a, b in zip(events, events[1:]) if a.stream != b.stream)
    print(f"stream switches in the log: {switches}; durations: "
          + ", ".join(f"{r['t1'] - r['t0']:.2f}s" for r in reports))
    assert switches > workers - 1


def test_wait_wakes_on_an_append_from_another_process(tmp_path: Path) -> None:
    path = tmp_path / "events.db"
    with SqliteEventStore(path) as store:
        store.append("s", [NewEvent(event=AgentHeartbeat(agent_id="before"))])
        head = store.head().position
        child = spawn("append-after", str(path), "0.3")
        try:
            flt = TopicFilter(kinds=("agent.deregistered",))
            got = store.wait(head, flt, timeout=20)
            t_wake = time.time()
            out, err = child.communicate(timeout=20)
        finally:
            if child.poll() is None:
                child.kill()
        assert child.returncode == 0, err
        rep = json.loads(out)
        assert [e.position for e in got] == [rep["position"]] == [head + 2]  # the noise did not wake us
        latency = t_wake - rep["t_before_append"]
        print(f"cross-process wait latency (this process waiting): {latency * 1000:.1f} ms")
        assert latency < 1.0


def test_wait_in_another_process_wakes_on_our_append(tmp_path: Path) -> None:
    path = tmp_path / "events.db"
    with SqliteEventStore(path) as store:
        store.append("s", [NewEvent(event=AgentHeartbeat(agent_id="before"))])
        child = spawn("wait", str(path), "1", "20")
        try:
            expect_line(child, "ready")
            time.sleep(0.3)  # let it block in wait()
            store.append("noise", [NewEvent(event=AgentHeartbeat(agent_id="noise"))])
            time.sleep(0.2)
            t_before = time.time()
            r = store.append("signal", [NewEvent(event=AgentDeregistered(agent_id="x", reason="wake up"))])
            out, err = child.communicate(timeout=20)
        finally:
            if child.poll() is None:
                child.kill()
        assert child.returncode == 0, err
        rep = json.loads(out)
        assert rep["positions"] == r.positions == [3]
        latency = rep["t_wake"] - t_before
        print(f"cross-process wait latency (child waiting): {latency * 1000:.1f} ms")
        assert latency < 1.0


def test_sigkill_mid_load_loses_no_returned_append(tmp_path: Path) -> None:
    path = tmp_path / "events.db"
    SqliteEventStore(path).close()
    child = spawn("forever", str(path))
    acked: list[tuple[int, int]] = []
    try:
        while len(acked) < 400:
            line = child.stdout.readline()  # type: ignore[union-attr]
            assert line, f"the writer died early: {child.stderr.read()}"  # type: ignore[union-attr]
            i, pos = map(int, line.split())
            acked.append((i, pos))
        os.kill(child.pid, signal.SIGKILL)
        child.wait(timeout=10)
        # read the rest through the same buffered reader: communicate() would read the raw pipe and
        # miss the lines readline() already pulled into the buffer (lost whenever the writer is ahead)
        rest = child.stdout.read()  # type: ignore[union-attr]
        child.stdout.close()  # type: ignore[union-attr]
        child.stderr.close()  # type: ignore[union-attr]
    finally:
        if child.poll() is None:
            child.kill()
    assert child.returncode == -signal.SIGKILL
    for line in rest.splitlines():  # appends that returned before the kill landed
        if line.strip():
            i, pos = map(int, line.split())
            acked.append((i, pos))
    assert [i for i, _ in acked] == list(range(len(acked)))

    with SqliteEventStore(path) as store:
        for i, pos in acked:
            e = store.get(pos)
            assert e is not None, f"append #{i} returned position {pos} but the event is gone"
            assert e.stream == "forever" and e.version == i + 1
            assert e.data() == AgentHeartbeat(agent_id=f"forever-{i}", status="x" * 200)
        res = store.verify()
        assert res.ok, res
        assert res.checked == store.count() >= acked[-1][1]
        # the log is still writable and its chain continues
        r = store.append("after", [NewEvent(event=AgentHeartbeat(agent_id="after"))])
        assert r.positions == [res.head_position + 1]
        assert store.verify().ok
    print(f"acknowledged before the kill: {len(acked)}; in the log: {res.checked}")
