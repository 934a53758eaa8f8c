"""HTTP API benchmark: append → SSE delivery latency through a real ``lean-ctx serve``.

``lean-ctx serve`` runs in its own process on a free 127.0.0.1 port. The bench process holds
SSE streams on ``/v1/events?kinds=message.posted`` (one reader thread each) and appends in two
ways, one at a time with a short pause between appends:

* **HTTP**: ``POST /v1/chat/post`` as a registered agent. Latency = from the start of the POST
  to the moment the event is parsed off each SSE stream (the POST's own round trip is reported
  beside it);
* **other process**: the command bus of a third process (this one, opening the same log with
  ``LeanCtx``) appends; the server's hub wakes through ``PRAGMA data_version``. Latency = from
  the start of the dispatch to SSE delivery.

With several subscribers every stream's delivery counts as one sample. Target: p99 ≤ 50 ms.

    python bench/bench_api_http.py [--n 300] [--subscribers 1,20] [--json]

It prints what it measured; it asserts nothing.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import queue
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import httpx

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
LEAN = str(Path(sys.executable).with_name("lean-ctx"))
TARGET_P99_MS = 50.0


def pct(values: list[float], p: float) -> float:
    s = sorted(values)
    return s[max(0, min(len(s) - 1, math.ceil(p / 100 * len(s)) - 1))]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Subscriber(threading.Thread):
    """Reads one SSE stream; puts (title, perf_counter at parse) on ``out``."""

    def __init__(self, url: str, out: "queue.Queue[tuple[str, float]]") -> None:
        super().__init__(daemon=True)
        self.url, self.out = url, out
        self.ready = threading.Event()

    def run(self) -> None:
        try:
            with httpx.Client(timeout=httpx.Timeout(10, read=None)) as c:
                with c.stream("GET", self.url, params={"kinds": "message.posted"}) as r:
                    self.ready.set()
                    for line in r.iter_lines():
                        if line.startswith("data:"):
                            t = time.perf_counter()
                            self.out.put((json.loads(line[5:])["payload"]["title"], t))
        except httpx.HTTPError:  # the server went away at the end of the run
            pass


def start_server(tmp: Path) -> tuple[subprocess.Popen[str], str, dict[str, str]]:
    port = free_port()
    project = tmp / "project"
    project.mkdir()
    env = {**os.environ, "LEAN_CTX_DB": str(tmp / "events.db"), "LEAN_CTX_HOME": str(tmp / "home")}
    env.pop("LEAN_CTX_HTTP_TOKEN", None)
    proc = subprocess.Popen([LEAN, "--project", str(project), "serve", "--port", str(port), "--no-mcp",
                             "--log-level", "warning"], env=env, text=True)
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 30
    while True:
        try:
            if httpx.get(url + "/health", timeout=1).status_code == 200:
                return proc, url, env
        except httpx.TransportError:
            pass
        if proc.poll() is not None or time.monotonic() > deadline:
            raise SystemExit("lean-ctx serve did not start")
        time.sleep(0.05)


def run_case(url: str, subscribers: int, n: int, mode: str, db: str) -> dict[str, Any]:
    got: queue.Queue[tuple[str, float]] = queue.Queue()
    subs = [Subscriber(url + "/v1/events", got) for _ in range(subscribers)]
    for s in subs:
        s.start()
    for s in subs:
        s.ready.wait(10)
    time.sleep(0.2)
    client = httpx.Client(base_url=url, timeout=10)
    reg = client.post("/v1/agents/register", json={"agent_type": "bench", "role": mode}).json()
    headers = {"X-Agent-Token": reg["agent_token"]}
    lc = None
    if mode == "process":
        from leanctx.app import LeanCtx
        from leanctx.commands.chat import PostMessage

        lc = LeanCtx(db)
    lat: list[float] = []
    rtt: list[float] = []
    warm = 20
    for i in range(n + warm):
        title = f"{mode}-{subscribers}-{i}"
        t0 = time.perf_counter()
        if mode == "http":
            r = client.post("/v1/chat/post", json={"title": title, "body": "x"}, headers=headers)
            assert r.status_code == 200, r.text
        else:
            assert lc is not None
            lc.bus.dispatch(PostMessage(title=title, body="x"), actor="bench-writer")
        t1 = time.perf_counter()
        seen = 0
        while seen < subscribers:
            t_title, t = got.get(timeout=10)
            if t_title != title:
                continue
            seen += 1
            if i >= warm:
                lat.append((t - t0) * 1000)
        if i >= warm:
            rtt.append((t1 - t0) * 1000)
        time.sleep(0.003)
    if lc is not None:
        lc.close()
    client.close()
    return {"mode": mode, "subscribers": subscribers, "appends": n, "samples": len(lat),
            "append_p50_ms": statistics.median(rtt), "append_p99_ms": pct(rtt, 99),
            "p50_ms": statistics.median(lat), "p99_ms": pct(lat, 99), "max_ms": max(lat)}


def render(rows: list[dict[str, Any]], meta: dict[str, Any]) -> str:
    out = [f"HTTP append → SSE delivery ({meta['appends']} appends per row, after 20 warm-up; "
           f"{meta['cpu']}, {meta['cores']} cores, Python {meta['python']})", "",
           "| appended by | SSE streams | append p50 | append p99 | delivery p50 | delivery p99 | max | p99 ≤ 50 ms |",
           "|---|---:|---:|---:|---:|---:|---:|:---:|"]
    for r in rows:
        who = "HTTP POST /v1/chat/post" if r["mode"] == "http" else "another process (bus)"
        out.append(f"| {who} | {r['subscribers']} | {r['append_p50_ms']:.2f} ms | {r['append_p99_ms']:.2f} ms | "
                   f"{r['p50_ms']:.2f} ms | {r['p99_ms']:.2f} ms | {r['max_ms']:.1f} ms | "
                   f"{'yes' if r['p99_ms'] <= TARGET_P99_MS else 'NO'} |")
    out.append("")
    out.append("delivery = from the start of the append to the event parsed off the SSE stream (every stream).")
    return "\n".join(out)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=300, help="appends per case")
    ap.add_argument("--subscribers", default="1,20", help="comma-separated SSE stream counts")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="bench-api-http-"))
    proc, url, env = start_server(tmp)
    rows = []
    try:
        for subs in [int(x) for x in args.subscribers.split(",")]:
            for mode in ("http", "process"):
                rows.append(run_case(url, subs, args.n, mode, env["LEAN_CTX_DB"]))
                print(f"  {mode} x{subs}: p50 {rows[-1]['p50_ms']:.2f} ms, p99 {rows[-1]['p99_ms']:.2f} ms",
                      file=sys.stderr)
    finally:
        proc.terminate()
        proc.wait(10)
        shutil.rmtree(tmp, ignore_errors=True)
    cpu = platform.processor()
    try:
        cpu = next(line.split(":", 1)[1].strip() for line in Path("/proc/cpuinfo").read_text().splitlines()
                   if line.startswith("model name"))
    except (OSError, StopIteration):
        pass
    meta = {"appends": args.n, "cpu": cpu or "?", "cores": os.cpu_count(), "python": platform.python_version()}
    if args.json:
        print(json.dumps({"meta": meta, "rows": rows}, indent=2))
    else:
        print(render(rows, meta))


if __name__ == "__main__":
    main()
