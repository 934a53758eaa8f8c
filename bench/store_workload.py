"""Workload and machine helpers of ``bench_store.py``: realistic events, the same events as
rows of a bare table (the raw-insert baseline), and what the machine is.

100 agents; a batch of events goes to one agent stream, streams round-robin. Events alternate
a ``tool.called`` record (what the command bus writes for every dispatch, ~300 B of JSON) and
an ``agent.heartbeat`` (folded by the agents projection, ~65 B): ~185 B of payload on average.
"""

from __future__ import annotations

import json
import os
import platform
import random
import statistics
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import apsw

from leanctx import clock
from leanctx.events import NewEvent
from leanctx.events.codec import encode_payload
from leanctx.events.envelope import COLUMNS
from leanctx.events.kinds import AgentHeartbeat, AgentRegistered, ToolCalled

N_STREAMS = 100
PROJECT = "/home/dev/src/lean-ctx"
COMMANDS = ("agent.heartbeat", "file.read", "shell.run", "search.code", "task.claim", "message.post")
STATUSES = ("active", "busy", "idle", None)

# The bare table of the baseline: the columns of schema/events.sql with the same PRIMARY KEY
# and UNIQUE(stream, version); no CHECKs, no other index, no trigger, no FTS.
RAW_DDL = """CREATE TABLE events (
    position INTEGER PRIMARY KEY, stream TEXT NOT NULL, version INTEGER NOT NULL, kind TEXT NOT NULL,
    schema_version INTEGER NOT NULL, ts TEXT NOT NULL, actor TEXT, to_agent TEXT, project TEXT,
    channel TEXT, consistency TEXT NOT NULL, correlation_id TEXT, causation_id INTEGER,
    idempotency_key TEXT, payload BLOB NOT NULL, prev_hash TEXT NOT NULL, hash TEXT NOT NULL,
    UNIQUE (stream, version))"""
RAW_INSERT = f"INSERT INTO events ({', '.join(COLUMNS)}) VALUES ({', '.join('?' * len(COLUMNS))})"


# --- workload -----------------------------------------------------------------------------


class Workload:
    """100 agents; the events of one batch go to one agent stream, streams round-robin.

    Events alternate a ``tool.called`` record (the command record the bus writes, ~300 B of
    JSON) and an ``agent.heartbeat`` (folded by the agents projection, ~65 B): the payload
    mix of a real session, ~180 B on average.
    """

    def __init__(self, seed: int = 7) -> None:
        rnd = random.Random(seed)
        self.rnd = rnd
        self.agents = [f"{rnd.getrandbits(32):08x}" for _ in range(N_STREAMS)]
        self.sessions = [uuid.UUID(int=rnd.getrandbits(128)).hex for _ in range(N_STREAMS)]
        self.t0 = 1_790_000_000.0

    def registrations(self) -> list[tuple[str, NewEvent]]:
        out = []
        for i, a in enumerate(self.agents):
            ev = AgentRegistered(
                agent_id=a,
                name=f"claude-code-dev-{i + 1}",
                agent_type="claude-code",
                role="dev",
                project_root=PROJECT,
                pid=10_000 + i,
                host="devbox",
                session_id=self.sessions[i],
            )
            out.append((f"agent:{a}", NewEvent(event=ev, actor=a, project=PROJECT, ts=clock.iso(self.t0))))
        return out

    def event(self, i: int, s: int) -> NewEvent:
        """The ``i``-th event of the run, for stream index ``s``."""
        rnd = self.rnd
        agent = self.agents[s]
        ts = clock.iso(self.t0 + i * 0.01)
        corr = uuid.UUID(int=rnd.getrandbits(128)).hex
        if i % 2 == 0:
            cmd = COMMANDS[i % len(COMMANDS)]
            ev: Any = ToolCalled(
                command=cmd,
                outcome="ok",
                duration_ms=round(rnd.uniform(0.2, 40.0), 3),
                session_id=self.sessions[s],
                events=1,
                result=json.dumps(
                    {
                        "agent_id": agent,
                        "name": f"claude-code-dev-{s + 1}",
                        "ok": True,
                        "ttl_seconds": 60.0,
                        "already_left": False,
                    },
                    separators=(",", ":"),
                ),
            )
        else:
            ev = AgentHeartbeat(agent_id=agent, status=STATUSES[i % len(STATUSES)])
        return NewEvent(event=ev, actor=agent, project=PROJECT, correlation_id=corr, ts=ts)

    def batches(self, n: int, batch: int, start: int = 0) -> Iterator[tuple[str, list[NewEvent]]]:
        """``n`` events in batches of ``batch``, batch ``k`` on stream ``k % 100``."""
        i = start
        k = 0
        while i < start + n:
            s = k % N_STREAMS
            m = min(batch, start + n - i)
            yield f"agent:{self.agents[s]}", [self.event(i + j, s) for j in range(m)]
            i += m
            k += 1


def raw_rows(batches: list[tuple[str, list[NewEvent]]], start_pos: int = 0) -> list[list[tuple[Any, ...]]]:
    """The same events as rows of the bare table (positions, versions, stand-in hashes)."""
    versions: dict[str, int] = {}
    pos = start_pos
    prev = "0" * 64
    out = []
    for stream, evs in batches:
        rows = []
        for ne in evs:
            pos += 1
            v = versions[stream] = versions.get(stream, 0) + 1
            h = f"{pos * 2654435761 % (1 << 64):016x}" * 4  # 64 hex chars, like a sha256
            ev = ne.event
            rows.append(
                (
                    pos,
                    stream,
                    v,
                    ev.kind,
                    ev.schema_version,
                    ne.ts,
                    ne.actor,
                    ne.to_agent,
                    ne.project,
                    ne.channel,
                    ne.consistency,
                    ne.correlation_id,
                    ne.causation_id,
                    None,
                    encode_payload(ev),
                    prev,
                    h,
                )
            )
            prev = h
        out.append(rows)
    return out


def machine() -> dict[str, Any]:
    cpu = platform.processor() or ""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return {
        "cores": os.cpu_count(),
        "cpu": cpu,
        "python": platform.python_version(),
        "sqlite": apsw.sqlite_lib_version(),
        "apsw": apsw.apsw_version(),
        "platform": platform.platform(),
    }


def cpu_busy(seconds: float = 1.0) -> float | None:
    """Share of all cores busy over ``seconds`` (from /proc/stat), i.e. what else is running."""

    def sample() -> tuple[int, int]:
        f = [int(x) for x in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:9]]
        return sum(f), f[3] + f[4]  # total, idle + iowait

    try:
        t0, i0 = sample()
        time.sleep(seconds)
        t1, i1 = sample()
    except (OSError, ValueError, IndexError):
        return None
    return 1.0 - (i1 - i0) / max(1, t1 - t0)


def payload_stats() -> dict[str, float]:
    wl = Workload(seed=1)
    sizes = [len(encode_payload(ne.event)) for _, evs in wl.batches(1000, 100) for ne in evs]
    return {"mean": statistics.mean(sizes), "min": min(sizes), "max": max(sizes)}
