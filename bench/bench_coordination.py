"""Coordination benchmark: lean-ctx's CLI next to agent-chat's doing the same work.

In one run, on this machine, rounds interleaved (each round runs every operation on every path,
so a burst of load elsewhere on the machine hits all paths alike):
  * median wall time per CLI `post`, `read` and `task claim` for lean-ctx in-process (no daemon:
    ``$LEAN_CTX_NO_DAEMON=1``), for lean-ctx through its daemon (``lean-ctx daemon start`` in a
    data dir of the benchmark's own; the daemon's call counter checks every timed call was
    served by it), and for agent-chat (PyPI `agent-chat-plugin`, a dev dependency); the ratios
    lean-ctx / agent-chat for both lean-ctx paths (daemon target: <= 0.5);
  * the import floor of each CLI (`--version` / `--help`) and of the interpreter itself
    (``python -c "import os; os._exit(0)"`` in this environment), to show what start-up costs;
  * in-process operations per second through the command bus (no process start-up).

The benchmark's daemon runs with ``$LEAN_CTX_DAEMON_WATCH=0``: other work editing lean-ctx's source
during the run would otherwise make it restart (its counter then misses calls); the watcher
costs nothing per call.

Every process runs with bytecode caching on (``$PYTHONDONTWRITEBYTECODE`` removed) after one
untimed warm-up call per path, as an installed package (compiled at install time) would.

Usage: python bench/bench_coordination.py [--rounds N] [--json]
It prints what it measured; it asserts nothing.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

BIN = Path(sys.executable).parent
LEAN = str(BIN / "lean-ctx")
ACHAT = shutil.which("agent-chat", path=str(BIN)) or shutil.which("agent-chat")
OPS = ("post", "read", "task claim", "floor")
DAEMON_TARGET = 0.5


def timed(argv: list[str], env: dict[str, str], cwd: str) -> float:
    t0 = time.perf_counter()
    p = subprocess.run(argv, env=env, cwd=cwd, capture_output=True, text=True, stdin=subprocess.DEVNULL)
    dt = time.perf_counter() - t0
    if p.returncode != 0:
        raise SystemExit(f"benchmark step failed ({p.returncode}): {' '.join(argv)}\n{p.stdout}\n{p.stderr}")
    return dt


def median_ms(xs: list[float]) -> float:
    return round(statistics.median(xs) * 1000, 1)


def _base_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items()
           if k not in ("PYTHONDONTWRITEBYTECODE", "LEAN_CTX_AGENT_ID", "LEAN_CTX_DB", "LEAN_CTX_NO_DAEMON")}
    return env


def _daemon_served(env: dict[str, str], proj: str) -> int:
    p = subprocess.run([LEAN, "daemon", "status", "--json"], env=env, cwd=proj, capture_output=True, text=True)
    return int(json.loads(p.stdout).get("requests") or 0) if p.returncode == 0 else -1


class LeanPath:
    """lean-ctx on one path: in-process (``daemon=False``) or through a daemon."""

    def __init__(self, work: Path, name: str, daemon: bool) -> None:
        base = {**_base_env(), "LEAN_CTX_HOME": str(work / f"home-{name}"), "LEAN_CTX_DB": str(work / f"{name}.db")}
        if not daemon:
            base["LEAN_CTX_NO_DAEMON"] = "1"
        else:
            base["LEAN_CTX_DAEMON_WATCH"] = "0"
        self.env, self.env_b = {**base, "LEAN_CTX_AGENT_ID": "a"}, {**base, "LEAN_CTX_AGENT_ID": "b"}
        self.daemon = daemon
        self.times: dict[str, list[float]] = {op: [] for op in OPS}
        self.timed_calls = 0

    def setup(self, proj: str) -> None:
        if self.daemon:
            subprocess.run([LEAN, "daemon", "start"], env=self.env, cwd=proj, check=True, capture_output=True)
        subprocess.run([LEAN, "chat", "init", "dev", "--members", "a,b"], env=self.env, cwd=proj, check=True,
                       capture_output=True)
        timed([LEAN, "chat", "peek", "--channel", "dev"], self.env, proj)  # warm-up (bytecode, daemon pool)
        self.served_before = _daemon_served(self.env, proj) if self.daemon else 0

    def round(self, i: int, proj: str) -> None:
        env, env_b = self.env, self.env_b
        self.times["post"].append(timed([LEAN, "chat", "post", "--channel", "dev", "--to", "all", "--title", f"m{i}",
                                         "--body", "hello from a"], env, proj))
        self.times["read"].append(timed([LEAN, "chat", "read", "--channel", "dev"], env_b, proj))
        timed([LEAN, "chat", "task", "create", "--channel", "dev", "--id", f"t{i}", "--title", f"task {i}"], env, proj)
        self.times["task claim"].append(timed([LEAN, "chat", "task", "claim", f"t{i}", "--channel", "dev",
                                               "--lease-seconds", "600"], env, proj))
        self.times["floor"].append(timed([LEAN, "--version"], env, proj))
        self.timed_calls += 4  # post, read, create, claim (--version never goes to the daemon)

    def finish(self, proj: str) -> int | None:
        if not self.daemon:
            return None
        served = _daemon_served(self.env, proj) - self.served_before
        subprocess.run([LEAN, "daemon", "stop"], env=self.env, cwd=proj, capture_output=True)
        return served


class AgentChatPath:
    def __init__(self, work: Path) -> None:
        self.root = str(work / "achat")
        self.env = _base_env()
        self.times: dict[str, list[float]] = {op: [] for op in OPS}

    def setup(self, proj: str) -> None:
        subprocess.run([ACHAT, "--root", self.root, "init", "dev", "--members", "a,b"], env=self.env, cwd=proj,
                       check=True, capture_output=True)
        timed([ACHAT, "--root", self.root, "read", "dev", "--as", "a"], self.env, proj)  # warm-up

    def round(self, i: int, proj: str) -> None:
        r, env = self.root, self.env
        self.times["post"].append(timed([ACHAT, "--root", r, "post", "dev", "--from", "a", "--to", "all", "--title",
                                         f"m{i}", "--body", "hello from a"], env, proj))
        self.times["read"].append(timed([ACHAT, "--root", r, "read", "dev", "--as", "b"], env, proj))
        subprocess.run([ACHAT, "--root", r, "task", "create", "dev", f"t{i}", "--from", "a", "--title", f"task {i}"],
                       env=env, cwd=proj, check=True, capture_output=True)
        self.times["task claim"].append(timed([ACHAT, "--root", r, "task", "claim", "dev", f"t{i}", "--as", "a",
                                               "--lease-seconds", "600"], env, proj))
        self.times["floor"].append(timed([ACHAT, "--help"], env, proj))


def bench_cli(rounds: int, work: Path) -> tuple[dict[str, dict[str, float]], dict[str, object]]:
    proj = str(work)
    direct, daemon = LeanPath(work, "direct", False), LeanPath(work, "daemon", True)
    achat = AgentChatPath(work) if ACHAT is not None else None
    paths: list = [direct, daemon] + ([achat] if achat else [])
    interp: list[float] = []
    served = None
    try:
        for p in paths:
            p.setup(proj)
        for i in range(rounds):
            for p in paths:
                p.round(i, proj)
            interp.append(timed([sys.executable, "-c", "import os; os._exit(0)"], _base_env(), proj))
    finally:
        served = daemon.finish(proj)
    out = {"lean-ctx": {k: median_ms(v) for k, v in direct.times.items()},
           "lean-ctx daemon": {k: median_ms(v) for k, v in daemon.times.items() if k != "floor"},
           "agent-chat": {k: median_ms(v) for k, v in achat.times.items()} if achat else {},
           "interpreter": {"floor": median_ms(interp)}}
    info = {"timed_daemon_calls": daemon.timed_calls, "served_by_daemon": served,
            "all_served": served == daemon.timed_calls}
    return out, info


def bench_bus(n: int, work: Path) -> dict[str, float]:
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from leanctx.app import LeanCtx
    from leanctx.commands.chat import PostMessage
    from leanctx.commands.tasks import ClaimTask, CreateTask

    rates: dict[str, float] = {}
    with LeanCtx(work / "bus.db") as lc:
        t0 = time.perf_counter()
        for i in range(n):
            lc.bus.dispatch(PostMessage(channel="general", to="all", title=f"m{i}", body="hello"), actor="a",
                            project=str(work))
        rates["post"] = round(n / (time.perf_counter() - t0), 1)
        for i in range(n):
            lc.bus.dispatch(CreateTask(task_id=f"t{i}", title="x", channel="general"), actor="a", project=str(work))
        t0 = time.perf_counter()
        for i in range(n):
            lc.bus.dispatch(ClaimTask(task_id=f"t{i}", channel="general", lease_seconds=600), actor="a",
                            project=str(work))
        rates["task claim"] = round(n / (time.perf_counter() - t0), 1)
    return rates


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=15, help="CLI invocations per operation (median reported)")
    ap.add_argument("--bus-ops", type=int, default=2000, help="in-process dispatches per operation")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="lean-ctx-bench-coord-") as tmp:
        work = Path(tmp)
        cli, daemon_info = bench_cli(args.rounds, work)
        bus = bench_bus(args.bus_ops, work)
    ach = cli.get("agent-chat") or {}
    ratios = {op: round(cli["lean-ctx"][op] / ach[op], 2) for op in OPS if ach}
    dratios = {op: round(cli["lean-ctx daemon"][op] / ach[op], 2) for op in OPS[:3] if ach}
    report = {
        "machine": {"cores": os.cpu_count(), "python": platform.python_version()},
        "rounds": args.rounds,
        "cli_median_ms": cli,
        "ratio_lean_over_agent_chat": ratios,
        "ratio_daemon_over_agent_chat": dratios,
        "daemon_path": {**daemon_info, "target_ratio": DAEMON_TARGET,
                        "met": {op: r <= DAEMON_TARGET for op, r in dratios.items()}},
        "bus_ops_per_second": bus,
    }
    if args.json:
        print(json.dumps(report, indent=2))
        return
    print(f"# coordination benchmark ({report['machine']['cores']} cores, Python {report['machine']['python']}, "
          f"{args.rounds} rounds interleaved, medians)\n")
    print("| operation | lean-ctx CLI ms | lean-ctx via daemon ms | agent-chat CLI ms | ratio CLI | "
          f"ratio daemon (target <= {DAEMON_TARGET}) |")
    print("|---|---:|---:|---:|---:|---:|")
    for op in OPS:
        name = "start-up floor (--version / --help)" if op == "floor" else op
        print(f"| {name} | {cli['lean-ctx'][op]} | {cli['lean-ctx daemon'].get(op, 'n/a')} | {ach.get(op, 'n/a')} | "
              f"{ratios.get(op, 'n/a')} | {dratios.get(op, 'n/a')} |")
    print(f"| interpreter start (python -c, os._exit) | {cli['interpreter']['floor']} | | | | |")
    print()
    print("| in-process through the command bus | ops/s |")
    print("|---|---:|")
    for op, r in bus.items():
        print(f"| {op} | {r} |")
    d = report["daemon_path"]
    print(f"\ndaemon path: {d['served_by_daemon']} of {d['timed_daemon_calls']} lean-ctx calls on that path served by "
          f"the daemon; target <= {DAEMON_TARGET} met for: "
          f"{', '.join(op for op, ok in d['met'].items() if ok) or 'none'}")


if __name__ == "__main__":
    main()
