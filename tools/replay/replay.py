"""Replay: rebuild projections from the log.

- ``replay(app)``: drop and rebuild the live projections in place (``lean-ctx replay``).
- ``replay(app, verify=True)``: rebuild every projection into a fresh database from the log
  alone and compare each digest with the live one; nothing live is touched
  (``lean-ctx replay --verify``). The log's hash chain is verified first.
"""

from __future__ import annotations

import os
import tempfile
import time
from collections.abc import Callable

import msgspec

from leanctx.app import LeanCtx
from leanctx.events import TopicFilter
from leanctx.projections.fresh import build_fresh

Progress = Callable[[int, int], None]


class ProjectionReport(msgspec.Struct):
    name: str
    version: int
    digest: str
    live_digest: str | None = None
    match: bool | None = None


class ReplayReport(msgspec.Struct):
    mode: str  # "in-place" | "verify"
    events: int
    head_position: int
    seconds: float
    events_per_second: float
    projections: list[ProjectionReport]
    chain_ok: bool | None = None
    chain_first_broken: int | None = None
    fresh_db: str | None = None

    @property
    def ok(self) -> bool:
        if self.chain_ok is False:
            return False
        return all(p.match is not False for p in self.projections)


def replay(
    app: LeanCtx,
    projection: str | None = None,
    verify: bool = False,
    out: str | None = None,
    progress: Progress | None = None,
) -> ReplayReport:
    projections = [app.projections.get(projection)] if projection else list(app.projections.all.values())
    head = app.store.head().position
    t0 = time.perf_counter()
    if not verify:
        counts = app.projections.rebuild(projection, progress=progress)
        secs = time.perf_counter() - t0
        reports = [ProjectionReport(p.name, p.version, app.projections.digest(p.name)) for p in projections]
        n = max(counts.values(), default=0)
        return ReplayReport("in-place", n, head, round(secs, 3), round(n / secs if secs else 0.0, 1), reports)

    chain = app.store.verify()
    kinds = tuple(sorted({k for p in projections for k in p.kinds}))
    events = (e for e in app.store.iter_all(0, TopicFilter(kinds=kinds)) if e.position <= head)
    tmpdir = None
    if out is None:
        tmpdir = tempfile.mkdtemp(prefix="lean-ctx-replay-")
        path = os.path.join(tmpdir, "fresh.db")
    else:
        path = out
    try:
        app.projections.ensure_current()
        n, digests = build_fresh(path, events, projections, head, progress)
        secs = time.perf_counter() - t0
        reports = []
        for p in projections:
            live = app.projections.digest(p.name)
            reports.append(ProjectionReport(p.name, p.version, digests[p.name], live, digests[p.name] == live))
    finally:
        if tmpdir is not None:
            for f in os.listdir(tmpdir):
                os.unlink(os.path.join(tmpdir, f))
            os.rmdir(tmpdir)
    return ReplayReport(
        "verify", n, head, round(secs, 3), round(n / secs if secs else 0.0, 1), reports,
        chain_ok=chain.ok, chain_first_broken=chain.first_broken, fresh_db=out,
    )
