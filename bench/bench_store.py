"""Benchmark of the event log (``leanctx.events.SqliteEventStore``) and its projections.

Not a test: it prints figures. One run measures, on this machine:

1. insert rate: a bare apsw table (same columns, same ``UNIQUE(stream, version)``; WAL, no
   FTS, no chain, no triggers) next to ``SqliteEventStore.append`` alone and with the
   projections attached as the app does it (``LeanCtx(path)``), at 1, 100 and 1000 events
   per transaction; median of ``--reps`` repetitions, each in a fresh database;
2. FTS indexing: catch-up (``index_fts()`` over an appended log) and inline
   (``fts_mode="inline"``, append rate at batch 100);
3. poll latency: ``read_all(since=random N, limit=500)`` over a big log, with and
   without a ``TopicFilter`` of kinds;
4. full replay (``Projections.rebuild`` and ``replay_into`` a fresh database) and ``verify()``;
5. cross-process ``wait`` wake latency (a child process blocked in ``store.wait``).

    python bench/bench_store.py [--quick] [--events N] [--log-events N] [--sync FULL] [--json]

Progress goes to stderr; the report (markdown, or JSON with ``--json``) to stdout. Every
file is created under one temporary directory that is removed at the end.
"""

from __future__ import annotations

import argparse
import gc
import json
import math
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
for _p in (str(HERE.parent), str(HERE)):  # the repository (leanctx) and bench/ (the helper)
    if _p not in sys.path:
        sys.path.insert(0, _p)

import apsw
from store_workload import N_STREAMS, RAW_DDL, RAW_INSERT, Workload, cpu_busy, machine, payload_stats, raw_rows

from leanctx.app import LeanCtx
from leanctx.events import NO_STREAM, NewEvent, SqliteEventStore, TopicFilter
from leanctx.projections import default_projections, replay_into

BATCHES = (1, 100, 1000)


def log(msg: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


def pct(values: list[float], p: float) -> float:
    """Nearest-rank percentile."""
    s = sorted(values)
    k = max(0, min(len(s) - 1, math.ceil(p / 100 * len(s)) - 1))
    return s[k]


# --- 1. insert rates --------------------------------------------------------------------


def raw_connection(path: str, sync: str) -> apsw.Connection:
    conn = apsw.Connection(path)
    conn.set_busy_timeout(30_000)
    assert conn.execute("PRAGMA journal_mode=WAL").fetchone()[0].lower() == "wal"
    conn.execute(f"PRAGMA synchronous={sync}")
    conn.execute(RAW_DDL)
    return conn


def run_raw(path: str, sync: str, rows: list[list[tuple[Any, ...]]]) -> float:
    conn = raw_connection(path, sync)
    n = sum(len(r) for r in rows)
    gc.collect()
    t = time.perf_counter()
    for batch in rows:
        conn.execute("BEGIN IMMEDIATE")
        conn.executemany(RAW_INSERT, batch)
        conn.execute("COMMIT")
    dt = time.perf_counter() - t
    conn.close()
    return n / dt


def open_target(kind: str, path: str, sync: str, fts_mode: str = "catchup") -> tuple[SqliteEventStore, Any]:
    """``store``: the bare event store; ``app``: LeanCtx (store + projections hook + bus)."""
    if kind == "app":
        app = LeanCtx(path, synchronous=sync, fts_mode=fts_mode)
        return app.store, app
    store = SqliteEventStore(path, synchronous=sync, fts_mode=fts_mode)
    return store, store


def register_agents(store: SqliteEventStore, wl: Workload) -> None:
    with store.transaction() as tx:
        for stream, ne in wl.registrations():
            tx.append(stream, [ne], expected_version=NO_STREAM)


def run_append(
    kind: str,
    path: str,
    sync: str,
    batches: list[tuple[str, list[NewEvent]]],
    wl: Workload,
    fts_mode: str = "catchup",
    profile: Any = None,
) -> float:
    store, owner = open_target(kind, path, sync, fts_mode)
    register_agents(store, wl)
    n = sum(len(evs) for _, evs in batches)
    append = store.append
    gc.collect()
    if profile is not None:
        profile.enable()
    t = time.perf_counter()
    for stream, evs in batches:
        append(stream, evs)
    dt = time.perf_counter() - t
    if profile is not None:
        profile.disable()
    owner.close()
    return n / dt


def fresh(tmp: Path, name: str) -> str:
    d = tmp / name
    if d.exists():
        shutil.rmtree(d)
    d.mkdir(parents=True)
    return str(d / "events.db")


def bench_inserts(tmp: Path, sync: str, counts: dict[int, int], reps: int) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for batch in BATCHES:
        n = counts[batch]
        wl = Workload(seed=batch)
        batches = list(wl.batches(n, batch))
        rows = raw_rows(batches, start_pos=N_STREAMS)  # after the 100 registrations, like the store
        res: dict[str, list[float]] = {"raw": [], "store": [], "app": []}
        for r in range(reps):
            for kind in ("raw", "store", "app"):  # interleaved: drift hits all three alike
                path = fresh(tmp, f"ins-{sync}-{batch}-{kind}-{r}")
                if kind == "raw":
                    rate = run_raw(path, sync, rows)
                else:
                    rate = run_append(kind, path, sync, batches, wl)
                res[kind].append(rate)
                shutil.rmtree(Path(path).parent)
        med = {k: statistics.median(v) for k, v in res.items()}
        out[str(batch)] = {
            "events": n,
            "raw": med["raw"],
            "store": med["store"],
            "app": med["app"],
            "store_ratio": med["store"] / med["raw"],
            "app_ratio": med["app"] / med["raw"],
            "samples": res,
        }
        log(
            f"  sync={sync} batch={batch:>4} n={n}: raw {med['raw']:,.0f}/s  store {med['store']:,.0f}/s  "
            f"app {med['app']:,.0f}/s  app/raw {med['app'] / med['raw']:.0%}"
        )
    return out


# --- 2. FTS ---------------------------------------------------------------------------------


def bench_fts(tmp: Path, n: int, reps: int) -> dict[str, Any]:
    catchup, inline, plain = [], [], []
    wl = Workload(seed=11)
    batches = list(wl.batches(n, 100))
    for r in range(reps):
        path = fresh(tmp, f"fts-c-{r}")
        plain.append(run_append("store", path, "NORMAL", batches, wl))
        store = SqliteEventStore(path)
        gc.collect()
        t = time.perf_counter()
        done = store.index_fts()
        catchup.append(done / (time.perf_counter() - t))
        assert store.fts_position() == store.head().position
        assert store.search("heartbeat", limit=1), "the FTS index answers"
        store.close()
        shutil.rmtree(Path(path).parent)
        path = fresh(tmp, f"fts-i-{r}")
        inline.append(run_append("store", path, "NORMAL", batches, wl, fts_mode="inline"))
        shutil.rmtree(Path(path).parent)
    out = {
        "events": n,
        "catchup_index": statistics.median(catchup),
        "inline_append_b100": statistics.median(inline),
        "catchup_append_b100": statistics.median(plain),
        "samples": {"catchup_index": catchup, "inline_append_b100": inline, "catchup_append_b100": plain},
    }
    log(
        f"  FTS n={n}: index_fts {out['catchup_index']:,.0f}/s, inline append b100 "
        f"{out['inline_append_b100']:,.0f}/s (vs {out['catchup_append_b100']:,.0f}/s without FTS)"
    )
    return out


# --- 3/4. the big log: polls, replay, verify ---------------------------------------------------


def build_log(path: str, n: int) -> float:
    wl = Workload(seed=3)
    store = SqliteEventStore(path)
    register_agents(store, wl)
    t = time.perf_counter()
    done = 0
    for stream, evs in wl.batches(n - N_STREAMS, 1000, start=0):
        store.append(stream, evs)
        done += len(evs)
        if done % 200_000 == 0:
            log(f"    {done + N_STREAMS:,} events")
    dt = time.perf_counter() - t
    store.close()
    return (n - N_STREAMS) / dt


def time_calls(fn: Callable[[int], Any], args: list[int]) -> list[float]:
    for a in args[:20]:  # warm-up
        fn(a)
    gc.collect()
    out = []
    pc = time.perf_counter_ns
    for a in args:
        t = pc()
        fn(a)
        out.append((pc() - t) / 1e6)
    return out


def bench_polls(path: str, samples: int) -> dict[str, Any]:
    store = SqliteEventStore(path)
    head = store.head().position
    rnd = random.Random(5)
    points = [rnd.randrange(0, head - 500) for _ in range(samples)]
    out: dict[str, Any] = {"head": head}
    cases = [
        ("none", None, samples),
        ("kinds=[agent.heartbeat] (50% of events)", TopicFilter(kinds=("agent.heartbeat",)), samples),
        ("kinds=[agent.*] (50%)", TopicFilter(kinds=("agent.*",)), samples),
        # only the 100 registrations at the start match: the query scans from N to the head
        (
            "kinds=[agent.registered] (rare, scans to head)",
            TopicFilter(kinds=("agent.registered",)),
            max(10, samples // 50),
        ),
    ]
    for name, flt, k in cases:
        lat = time_calls(lambda n, f=flt: store.read_all(since=n, filter=f, limit=500), points[:k])
        got = len(store.read_all(since=points[0], filter=flt, limit=500))
        out[name] = {"p50_ms": pct(lat, 50), "p99_ms": pct(lat, 99), "max_ms": max(lat), "samples": k, "rows": got}
        log(f"  poll filter={name}: p50 {pct(lat, 50):.3f} ms  p99 {pct(lat, 99):.3f} ms  ({k} samples)")
    # a subscriber at the head: since = head - 20 (the steady state of a live poll)
    rare = TopicFilter(kinds=("agent.registered",))
    lat = time_calls(lambda n: store.read_all(since=n, filter=rare, limit=500), [head - 20] * samples)
    out["kinds=[agent.registered], since=head-20"] = {
        "p50_ms": pct(lat, 50),
        "p99_ms": pct(lat, 99),
        "max_ms": max(lat),
        "samples": samples,
        "rows": 0,
    }
    store.close()
    return out


def bench_replay(tmp: Path, path: str) -> dict[str, Any]:
    out: dict[str, Any] = {}
    store = SqliteEventStore(path)
    head = store.head().position

    # a) every event through replay_into a fresh database with the default projections
    dst_path = str(tmp / "replay.db")
    dst = apsw.Connection(dst_path)
    dst.execute("PRAGMA journal_mode=WAL")
    dst.execute("PRAGMA synchronous=NORMAL")
    projections = default_projections()
    gc.collect()
    t = time.perf_counter()
    dst.execute("BEGIN IMMEDIATE")
    for p in projections:
        p.create(dst)
    n = replay_into(dst, store.iter_all(batch=5000), projections)
    dst.execute("COMMIT")
    dt = time.perf_counter() - t
    dst.close()
    out["replay_into_all"] = {"events": n, "seconds": dt, "rate": n / dt}
    log(f"  replay_into (every event, fresh db): {n:,} in {dt:.2f}s = {n / dt:,.0f} events/s")

    # b) the same read loop alone (what reading + decoding rows costs)
    gc.collect()
    t = time.perf_counter()
    m = sum(1 for _ in store.iter_all(batch=5000))
    dt = time.perf_counter() - t
    out["iter_all_only"] = {"events": m, "seconds": dt, "rate": m / dt}
    log(f"  iter_all alone: {m / dt:,.0f} events/s")
    store.close()

    # c) LeanCtx on the log: first open catches the projection up from 0; then rebuild("agents")
    gc.collect()
    t = time.perf_counter()
    app = LeanCtx(path)
    dt_open = time.perf_counter() - t
    gc.collect()
    t = time.perf_counter()
    folded = app.projections.rebuild("agents")["agents"]
    dt = time.perf_counter() - t
    out["first_open_catchup"] = {"events": head, "seconds": dt_open, "rate": head / dt_open}
    out["rebuild_agents"] = {
        "events": head,
        "folded": folded,
        "seconds": dt,
        "rate": head / dt,
        "folded_rate": folded / dt,
        "folded_kinds": sorted(app.projections.get("agents").kinds),
    }
    log(
        f"  LeanCtx first open (catch-up from 0): {dt_open:.2f}s; rebuild('agents'): {head:,} log events "
        f"({folded:,} folded) in {dt:.2f}s = {head / dt:,.0f} log events/s, {folded / dt:,.0f} folded/s"
    )

    # d) verify
    gc.collect()
    t = time.perf_counter()
    res = app.store.verify()
    dt = time.perf_counter() - t
    assert res.ok, res
    out["verify"] = {"events": res.checked, "seconds": dt, "rate": res.checked / dt}
    log(f"  verify: {res.checked:,} in {dt:.2f}s = {res.checked / dt:,.0f} events/s")
    app.close()
    os.remove(dst_path)
    for suffix in ("-wal", "-shm"):
        if os.path.exists(dst_path + suffix):
            os.remove(dst_path + suffix)
    return out


# --- 5. cross-process wait ----------------------------------------------------------------


def child_wait(path: str) -> None:
    """Child side: for each ``arm <since>`` line, block in ``wait`` and report the wall time."""
    store = SqliteEventStore(path)
    print("ready", flush=True)
    for line in sys.stdin:
        cmd, _, arg = line.strip().partition(" ")
        if cmd != "arm":
            break
        since = int(arg)
        print("armed", flush=True)
        events = store.wait(since, timeout=10.0)
        t = time.time()
        print(f"woke {t!r} {len(events)}", flush=True)
    store.close()


def bench_wait(tmp: Path, samples: int) -> dict[str, Any]:
    path = fresh(tmp, "wait")
    wl = Workload(seed=13)
    store = SqliteEventStore(path)
    register_agents(store, wl)
    child = subprocess.Popen(
        [sys.executable, str(Path(__file__).resolve()), "--child-wait", path],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        bufsize=1,
    )
    assert child.stdin is not None and child.stdout is not None
    rnd = random.Random(17)
    lat: list[float] = []
    try:
        assert child.stdout.readline().strip() == "ready"
        events = list(wl.batches(samples + 5, 1))
        for i in range(samples + 5):
            since = store.head().position
            child.stdin.write(f"arm {since}\n")
            child.stdin.flush()
            assert child.stdout.readline().strip() == "armed"
            time.sleep(rnd.uniform(0.003, 0.012))  # let the child block; random phase vs its poll
            stream, evs = events[i]
            store.append(stream, evs)
            t_commit = time.time()
            line = child.stdout.readline().split()
            assert line[0] == "woke" and int(line[2]) >= 1, line
            if i >= 5:  # the first ones warm up the child
                lat.append((float(line[1]) - t_commit) * 1000)
        child.stdin.write("quit\n")
        child.stdin.flush()
        child.wait(timeout=10)
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
        store.close()
        shutil.rmtree(Path(path).parent)
    out = {
        "samples": len(lat),
        "p50_ms": pct(lat, 50),
        "p99_ms": pct(lat, 99),
        "max_ms": max(lat),
        "min_ms": min(lat),
        "poll_interval_ms": 4.0,
    }
    log(f"  wait wake: p50 {out['p50_ms']:.2f} ms  p99 {out['p99_ms']:.2f} ms  max {out['max_ms']:.2f} ms")
    return out


def profile_appends(tmp: Path, n: int) -> None:
    import cProfile
    import pstats

    for batch, count in ((1, max(1000, n // 20)), (100, n)):
        wl = Workload(seed=batch)
        batches = list(wl.batches(count, batch))
        prof = cProfile.Profile()
        path = fresh(tmp, f"profile-{batch}")
        rate = run_append("app", path, "NORMAL", batches, wl, profile=prof)
        shutil.rmtree(Path(path).parent)
        log(f"profile: LeanCtx append, batch {batch}, {count:,} events ({rate:,.0f} ev/s under the profiler)")
        pstats.Stats(prof, stream=sys.stderr).sort_stats("tottime").print_stats(18)


# --- report -----------------------------------------------------------------------------------


def render(res: dict[str, Any]) -> str:
    L: list[str] = []
    m = res["machine"]
    L.append("# lean-ctx event store benchmark")
    L.append("")
    L.append(
        f"- machine: {m['cores']} cores ({m['cpu']}), Python {m['python']}, SQLite {m['sqlite']} "
        f"(apsw {m['apsw']}), {m['platform']}"
    )
    L.append(f"- command: `{res['command']}`  (total {res['seconds']:.0f} s)")
    busy = res.get("background_cpu") or {}
    if busy.get("before") is not None:
        warn = max(busy["before"], busy["after"] or 0) > 0.2
        L.append(
            f"- background CPU use (other processes, /proc/stat over 1 s): {busy['before']:.0%} before the run, "
            f"{busy['after']:.0%} after"
            + (
                " — **the machine was not idle: absolute rates are low and noisy; the interleaved ratios hold better**"
                if warn
                else ""
            )
        )
    L.append(
        "- durability: WAL, synchronous=NORMAL (the store's default): a process crash loses no committed "
        "event; a power loss may lose the last commits (FULL fsyncs every commit)."
        + (f" Also measured: {', '.join(s for s in res['sync'] if s != 'NORMAL')}." if len(res["sync"]) > 1 else "")
    )
    ps = res["payload"]
    L.append(
        f"- workload: {N_STREAMS} agent streams, one stream per batch, round-robin; events alternate "
        f"tool.called / agent.heartbeat; payload JSON {ps['min']:.0f}-{ps['max']:.0f} B (mean {ps['mean']:.0f} B);"
        f" NewEvents built before timing; rates are the median of {res['reps']} runs, each in a fresh database."
    )
    pj = res.get("projections", {})
    strong = sorted(k for k, v in pj.items() if v == "strong")
    eventual = sorted(k for k, v in pj.items() if v != "strong")
    L.append(
        f"- projections attached by `LeanCtx(path)` (the app rows): {len(strong)} strong, folded in every append "
        f"transaction ({', '.join(strong)}); {len(eventual)} eventual ({', '.join(eventual) or '-'})."
    )
    L.append("")
    L.append("| measure | figure | target | met? |")
    L.append("|---|---|---|---|")

    def row(measure: str, figure: str, target: str, met: bool | None) -> None:
        L.append(f"| {measure} | {figure} | {target} | {'—' if met is None else ('yes' if met else '**no**')} |")

    for sync in res["sync"] if "inserts" in res else ():
        ins = res["inserts"][sync]
        for b in BATCHES:
            d = ins[str(b)]
            tag = f"batch {b}" + ("" if sync == "NORMAL" else f", {sync}")
            row(f"raw apsw insert, {tag} ({d['events']:,} ev)", f"{d['raw']:,.0f} ev/s", "", None)
            row(
                f"store.append, {tag}",
                f"{d['store']:,.0f} ev/s ({d['store_ratio']:.1%} of raw)",
                "≥ 60% of raw",
                d["store_ratio"] >= 0.6,
            )
            row(
                f"LeanCtx append (store + projections), {tag}",
                f"{d['app']:,.0f} ev/s ({d['app_ratio']:.1%} of raw)",
                "≥ 60% of raw",
                d["app_ratio"] >= 0.6,
            )
    if "fts" in res:
        f = res["fts"]
        row(
            f"FTS catch-up `index_fts()` ({f['events']:,} ev)",
            f"{f['catchup_index']:,.0f} ev/s",
            "≥ 15,000 ev/s",
            f["catchup_index"] >= 15_000,
        )
        row(
            'FTS inline (`fts_mode="inline"`) append, batch 100',
            f"{f['inline_append_b100']:,.0f} ev/s ({f['inline_append_b100'] / f['catchup_append_b100']:.0%} of "
            f"catch-up mode's {f['catchup_append_b100']:,.0f})",
            "≥ 15,000 ev/s",
            f["inline_append_b100"] >= 15_000,
        )
    if "log" in res:
        big = res["log"]
        row(
            "build the big log (store.append, batch 1000, events generated in the loop)",
            f"{big['events']:,} ev at {big['build_rate']:,.0f} ev/s ({big['db_mb']:.0f} MB)",
            "",
            None,
        )
        for name, d in res["polls"].items():
            if not isinstance(d, dict):
                continue
            where = "since=head-20" if "since=" in name else "since=random N"
            row(
                f"poll `read_all({where}, limit=500)`, filter {name.split(', since')[0]}",
                f"p50 {d['p50_ms']:.2f} ms, p99 {d['p99_ms']:.2f} ms ({d['samples']} samples)",
                "p99 ≤ 2 ms",
                d["p99_ms"] <= 2.0,
            )
        rp = res["replay"]
        r = rp["rebuild_agents"]
        row(
            f"full replay: `Projections.rebuild('agents')` over {r['events']:,} ev",
            f"{r['rate']:,.0f} log ev/s ({r['folded']:,} folded: {r['folded_rate']:,.0f}/s)",
            "≥ 50,000 ev/s",
            r["rate"] >= 50_000,
        )
        r = rp["replay_into_all"]
        row(
            "full replay: `replay_into` fresh db, default projections, every event",
            f"{r['rate']:,.0f} ev/s",
            "≥ 50,000 ev/s",
            r["rate"] >= 50_000,
        )
        r = rp["first_open_catchup"]
        row(
            "`LeanCtx(path)` first open on that log (projection catch-up from 0)",
            f"{r['seconds']:.2f} s ({r['rate']:,.0f} ev/s)",
            "",
            None,
        )
        row("`iter_all` read + row decoding alone", f"{rp['iter_all_only']['rate']:,.0f} ev/s", "", None)
        r = rp["verify"]
        row("`verify()` (hash chain)", f"{r['rate']:,.0f} ev/s", "", None)
    if "wait" in res:
        w = res["wait"]
        row(
            "cross-process `wait` wake (commit → child wakes)",
            f"p50 {w['p50_ms']:.2f} ms, p99 {w['p99_ms']:.2f} ms, max {w['max_ms']:.2f} ms ({w['samples']} samples)",
            "p99 ≤ 25 ms",
            w["p99_ms"] <= 25.0,
        )
    return "\n".join(L)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="small sizes (~1 minute)")
    ap.add_argument(
        "--events", type=int, help="events per batched insert setting and for FTS (default 100k, quick 20k)"
    )
    ap.add_argument("--log-events", type=int, help="size of the big log (default 1M, quick 100k)")
    ap.add_argument("--reps", type=int, default=3, help="repetitions per insert setting (median)")
    ap.add_argument(
        "--sync",
        default="NORMAL",
        help="synchronous setting(s) for the insert rates, comma-separated; NORMAL is always measured "
        "(e.g. --sync FULL measures NORMAL and FULL)",
    )
    ap.add_argument("--json", action="store_true", help="print the results as JSON instead of markdown")
    ap.add_argument("--tmpdir", help="where the temporary databases go (default: the system temp dir)")
    ap.add_argument("--skip", default="", help="comma-separated sections to skip: inserts,fts,log,wait")
    ap.add_argument(
        "--profile",
        action="store_true",
        help="also profile LeanCtx appends (batch 1 and 100) with cProfile; top functions to stderr",
    )
    ap.add_argument("--child-wait", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child_wait:
        child_wait(args.child_wait)
        return

    n = args.events or (20_000 if args.quick else 100_000)
    n1 = max(500, min(10_000, n // 10))
    log_n = args.log_events or (100_000 if args.quick else 1_000_000)
    syncs = ["NORMAL"] + [s.strip().upper() for s in args.sync.split(",") if s.strip().upper() not in ("", "NORMAL")]
    skip = {s.strip() for s in args.skip.split(",") if s.strip()}
    t_start = time.perf_counter()
    tmp = Path(tempfile.mkdtemp(prefix="leanctx-bench-", dir=args.tmpdir))
    busy_before = cpu_busy()
    res: dict[str, Any] = {
        "command": "python bench/bench_store.py " + " ".join(sys.argv[1:]),
        "machine": machine(),
        "payload": payload_stats(),
        "projections": {p.name: p.consistency for p in default_projections()},
        "reps": args.reps,
        "sync": syncs,
    }
    try:
        if "inserts" not in skip:
            res["inserts"] = {}
            for sync in syncs:
                # FULL fsyncs every commit: fewer batch-1 events keep the run short
                counts = {1: n1 if sync == "NORMAL" else max(200, n1 // 5), 100: n, 1000: n}
                log(f"1. insert rates, synchronous={sync}")
                res["inserts"][sync] = bench_inserts(tmp, sync, counts, args.reps)
        if "fts" not in skip:
            log("2. FTS indexing")
            res["fts"] = bench_fts(tmp, n, args.reps)
        if "log" not in skip:
            path = fresh(tmp, "biglog")
            log(f"3. building a log of {log_n:,} events")
            rate = build_log(path, log_n)
            res["log"] = {"events": log_n, "build_rate": rate, "db_mb": os.path.getsize(path) / 1e6}
            log(f"  built at {rate:,.0f} events/s ({res['log']['db_mb']:.0f} MB)")
            # let the kernel write the fresh file back now, not during the latency samples, and
            # warm SQLite's and the OS's caches the way a running system has them
            os.sync()
            with SqliteEventStore(path) as warm:
                sum(1 for _ in warm.iter_all(batch=5000))
            res["polls"] = bench_polls(path, 500 if args.quick else 2000)
            log("4. replay and verify")
            res["replay"] = bench_replay(tmp, path)
            shutil.rmtree(Path(path).parent)
        if "wait" not in skip:
            log("5. cross-process wait")
            res["wait"] = bench_wait(tmp, 200)
        if args.profile:
            profile_appends(tmp, n)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    res["seconds"] = time.perf_counter() - t_start
    res["background_cpu"] = {"before": busy_before, "after": cpu_busy()}
    if args.json:
        print(json.dumps(res, indent=2))
    else:
        print(render(res))


if __name__ == "__main__":
    main()
