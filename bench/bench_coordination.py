"""Coordination benchmark: lean-ctx's CLI next to agent-chat's doing the same work.

In one run, on this machine:
  * median wall time per CLI `post`, `read` and `task claim` for lean-ctx and for agent-chat
    (PyPI `agent-chat-plugin`, a dev dependency), and the ratio lean-ctx / agent-chat;
  * the import floor of each CLI (`--help` / `--version`), to show what start-up costs;
  * in-process operations per second through the command bus (no process start-up).

Usage: python bench/bench_coordination.py [--rounds N] [--json]
It prints what it measured; it asserts nothing. The daemon path (ratio target <= 0.5) comes
with the MCP/HTTP delivery issue and is reported as not measured until then.
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


def timed(argv: list[str], env: dict[str, str], cwd: str) -> float:
    t0 = time.perf_counter()
    p = subprocess.run(argv, env=env, cwd=cwd, capture_output=True, text=True)
    dt = time.perf_counter() - t0
    if p.returncode != 0:
        raise SystemExit(f"benchmark step failed ({p.returncode}): {' '.join(argv)}\n{p.stdout}\n{p.stderr}")
    return dt


def median_ms(xs: list[float]) -> float:
    return round(statistics.median(xs) * 1000, 1)


def bench_cli(rounds: int, work: Path) -> dict[str, dict[str, float]]:
    out: dict[str, dict[str, float]] = {}
    env = {**os.environ, "LEAN_CTX_DB": str(work / "lean.db"), "LEAN_CTX_AGENT_ID": "a"}
    env_b = {**env, "LEAN_CTX_AGENT_ID": "b"}
    proj = str(work)
    lean: dict[str, list[float]] = {"post": [], "read": [], "task claim": [], "floor": []}
    subprocess.run([LEAN, "chat", "init", "dev", "--members", "a,b"], env=env, cwd=proj, check=True,
                   capture_output=True)
    for i in range(rounds):
        lean["post"].append(timed([LEAN, "chat", "post", "--channel", "dev", "--to", "all", "--title", f"m{i}",
                                   "--body", "hello from a"], env, proj))
        lean["read"].append(timed([LEAN, "chat", "read", "--channel", "dev"], env_b, proj))
        subprocess.run([LEAN, "chat", "task", "create", "--channel", "dev", "--id", f"t{i}", "--title", f"task {i}"],
                       env=env, cwd=proj, check=True, capture_output=True)
        lean["task claim"].append(timed([LEAN, "chat", "task", "claim", f"t{i}", "--channel", "dev",
                                         "--lease-seconds", "600"], env, proj))
        lean["floor"].append(timed([LEAN, "--version"], env, proj))
    out["lean-ctx"] = {k: median_ms(v) for k, v in lean.items()}

    if ACHAT is None:
        out["agent-chat"] = {}
        return out
    root = str(work / "achat")
    ach: dict[str, list[float]] = {"post": [], "read": [], "task claim": [], "floor": []}
    subprocess.run([ACHAT, "--root", root, "init", "dev", "--members", "a,b"], cwd=proj, check=True,
                   capture_output=True)
    for i in range(rounds):
        ach["post"].append(timed([ACHAT, "--root", root, "post", "dev", "--from", "a", "--to", "all", "--title",
                                  f"m{i}", "--body", "hello from a"], dict(os.environ), proj))
        ach["read"].append(timed([ACHAT, "--root", root, "read", "dev", "--as", "b"], dict(os.environ), proj))
        subprocess.run([ACHAT, "--root", root, "task", "create", "dev", f"t{i}", "--from", "a", "--title",
                        f"task {i}"], cwd=proj, check=True, capture_output=True)
        ach["task claim"].append(timed([ACHAT, "--root", root, "task", "claim", "dev", f"t{i}", "--as", "a",
                                        "--lease-seconds", "600"], dict(os.environ), proj))
        ach["floor"].append(timed([ACHAT, "--help"], dict(os.environ), proj))
    out["agent-chat"] = {k: median_ms(v) for k, v in ach.items()}
    return out


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
        cli = bench_cli(args.rounds, work)
        bus = bench_bus(args.bus_ops, work)
    ratios = {
        op: round(cli["lean-ctx"][op] / cli["agent-chat"][op], 2)
        for op in ("post", "read", "task claim", "floor")
        if cli.get("agent-chat")
    }
    report = {
        "machine": {"cores": os.cpu_count(), "python": platform.python_version()},
        "rounds": args.rounds,
        "cli_median_ms": cli,
        "ratio_lean_over_agent_chat": ratios,
        "bus_ops_per_second": bus,
        "daemon_path": "not measured: the daemon (MCP/HTTP) path arrives with the delivery issue",
    }
    if args.json:
        print(json.dumps(report, indent=2))
        return
    print(f"# coordination benchmark ({report['machine']['cores']} cores, Python {report['machine']['python']}, "
          f"{args.rounds} rounds, medians)\n")
    print("| operation | lean-ctx CLI ms | agent-chat CLI ms | ratio |")
    print("|---|---:|---:|---:|")
    for op in ("post", "read", "task claim", "floor"):
        name = "start-up floor (--version / --help)" if op == "floor" else op
        print(f"| {name} | {cli['lean-ctx'][op]} | {cli.get('agent-chat', {}).get(op, 'n/a')} | "
              f"{ratios.get(op, 'n/a')} |")
    print()
    print("| in-process through the command bus | ops/s |")
    print("|---|---:|")
    for op, r in bus.items():
        print(f"| {op} | {r} |")
    print(f"\ndaemon path: {report['daemon_path']}")


if __name__ == "__main__":
    main()
