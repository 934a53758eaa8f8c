"""Replay: rebuild projections from the log.

- ``replay(app)``: drop and rebuild the live projections in place (``lean-ctx replay``), in
  one write transaction, up to the head that transaction sees.
- ``replay(app, verify=True)``: rebuild every projection into a fresh database from the log
  alone and compare each digest with the live one; nothing live is touched
  (``lean-ctx replay --verify``). The log's hash chain is verified first. Both sides stand at
  one position: the live digests are read in one snapshot at a head H (``snapshot``), and the
  fresh build folds exactly the events up to H. ``out`` keeps the fresh database; what it may
  name is ``leanctx.projections.fresh``'s rule (never the log, never a file a replay did not make).

Counts: ``events`` is the log's events up to the head (positions are gap-free, so the head
position); each projection's ``applied`` is how many of them were of its kinds.
"""

from __future__ import annotations

import shutil
import tempfile
import time
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from itertools import takewhile

import msgspec

from leanctx.app import LeanCtx
from leanctx.events import StoredEvent, TopicFilter
from leanctx.projections import digest_tables
from leanctx.projections.fresh import build_fresh

from .snapshot import live_digests

Progress = Callable[[int, int], None]
READ_BATCH = 5000


class ProjectionReport(msgspec.Struct):
    name: str
    version: int
    digest: str
    live_digest: str | None = None
    match: bool | None = None
    applied: int | None = None  # events of its kinds up to the head


class ReplayReport(msgspec.Struct):
    mode: str  # "in-place" | "verify"
    events: int  # the log's events up to head_position
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


def _counted(events: Iterable[StoredEvent], by_kind: Counter[str]) -> Iterator[StoredEvent]:
    for e in events:
        by_kind[e.kind] += 1
        yield e


def _rate(n: int, secs: float) -> float:
    return round(n / secs if secs else 0.0, 1)


def replay(
    app: LeanCtx,
    projection: str | None = None,
    verify: bool = False,
    out: str | None = None,
    progress: Progress | None = None,
) -> ReplayReport:
    projections = [app.projections.get(projection)] if projection else list(app.projections.all.values())
    t0 = time.perf_counter()
    if not verify:
        with app.store.transaction() as tx:  # rebuild() joins it: the head is the one it rebuilds to
            head = tx.head().position
            counts = app.projections.rebuild(projection, progress=progress)
            reports = [ProjectionReport(p.name, p.version, digest_tables(tx.conn, p), applied=counts[p.name])
                       for p in projections]
        secs = time.perf_counter() - t0
        return ReplayReport("in-place", head, head, round(secs, 3), _rate(head, secs), reports)

    chain = app.store.verify()
    head, live = live_digests(app, projections)
    kinds = tuple(sorted({k for p in projections for k in p.kinds}))
    by_kind: Counter[str] = Counter()
    events = _counted(takewhile(lambda e: e.position <= head,
                                app.store.iter_all(0, TopicFilter(kinds=kinds), READ_BATCH)), by_kind)
    tmpdir = tempfile.mkdtemp(prefix="lean-ctx-replay-") if out is None else None
    try:
        path = out if out is not None else f"{tmpdir}/fresh.db"
        _, digests = build_fresh(path, events, projections, head, progress, live=app.store.path)
    finally:
        if tmpdir is not None:
            shutil.rmtree(tmpdir, ignore_errors=True)
    secs = time.perf_counter() - t0
    reports = [
        ProjectionReport(p.name, p.version, digests[p.name], live[p.name], digests[p.name] == live[p.name],
                         applied=sum(by_kind[k] for k in p.kinds))
        for p in projections
    ]
    return ReplayReport(
        "verify", head, head, round(secs, 3), _rate(head, secs), reports,
        chain_ok=chain.ok, chain_first_broken=chain.first_broken, fresh_db=out,
    )
