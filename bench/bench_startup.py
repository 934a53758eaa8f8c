"""CLI start-up benchmark: median wall time of short ``lean-ctx`` calls, in-process and through
the daemon.

Each command runs ``--runs`` times (default 10) as a real subprocess (the console script of this
virtualenv), after one untimed warm-up; the median is printed in milliseconds.

  * ``in-process``: ``$LEAN_CTX_NO_DAEMON=1``, every call imports and builds what it needs;
  * ``daemon``: a daemon of the benchmark's own (``lean-ctx daemon start`` in a scratch data dir,
    ``$LEAN_CTX_DAEMON_WATCH=0``); the column ``served`` says how many timed calls the daemon ran
    (from its ``by_command`` counter): 0 means the verb runs in-process even with a daemon.

The project is a small scratch git repository; the data dir (``$LEAN_CTX_HOME``) is a scratch
directory, so the user's own log, caches and daemon are never touched. A first in-process call
that builds a per-user cache (the tokenizer's ranks) happens during the warm-up, as it would
once per installation.

Usage: python bench/bench_startup.py [--runs N] [--json] [--only in-process|daemon]
It prints what it measured; it asserts nothing.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

BIN = Path(sys.executable).parent
LEAN = str(BIN / "lean-ctx")

COMMANDS: dict[str, list[str]] = {
    "--version": ["--version"],
    "--help": ["--help"],
    "read": ["read", "src/small.py"],
    "tree": ["tree"],
    "search foo": ["search", "foo"],
    "overview": ["overview"],
    "resume": ["session", "resume"],
    "precompact": ["hooks", "precompact"],
    "doctor": ["doctor"],
}
ALLOWED_EXIT = {"doctor": (0, 1)}  # doctor exits 1 when a check fails (no client configured is a warn)


def _project(root: Path) -> Path:
    proj = root / "proj"
    (proj / "src").mkdir(parents=True)
    (proj / "src" / "small.py").write_text("def foo(x):\n    return x + 1\n\n\nprint(foo(2))\n")
    (proj / "src" / "other.py").write_text("import os\n\nFOO = os.getcwd()\n")
    (proj / "README.md").write_text("# demo\n\nfoo bar\n")
    subprocess.run(["git", "init", "-q", str(proj)], check=True)
    return proj


def _env(home: Path, daemon: bool) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items()
           if k not in ("PYTHONDONTWRITEBYTECODE", "LEAN_CTX_DB", "LEAN_CTX_NO_DAEMON", "LEAN_CTX_SESSION_ID")}
    env.update({"LEAN_CTX_HOME": str(home), "LEAN_CTX_AGENT_ID": "bench", "XDG_CACHE_HOME": str(home / "cache")})
    if daemon:
        env["LEAN_CTX_DAEMON_WATCH"] = "0"
    else:
        env["LEAN_CTX_NO_DAEMON"] = "1"
    return env


def _cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def _timed(name: str, env: dict[str, str], cwd: Path) -> tuple[float, float]:
    """(wall, CPU) seconds of one call; CPU is the client process's (the daemon's is not in it)."""
    argv = [LEAN, *COMMANDS[name]]
    c0, t0 = _cpu(), time.perf_counter()
    p = subprocess.run(argv, check=False, env=env, cwd=cwd, stdin=subprocess.DEVNULL, capture_output=True)
    dt, dc = time.perf_counter() - t0, _cpu() - c0
    if p.returncode not in ALLOWED_EXIT.get(name, (0,)):
        raise SystemExit(f"benchmark step failed ({p.returncode}): {' '.join(argv)}\n"
                         f"{p.stdout.decode(errors='replace')}\n{p.stderr.decode(errors='replace')}")
    return dt, dc


def _by_command(env: dict[str, str], cwd: Path) -> dict[str, int]:
    p = subprocess.run([LEAN, "daemon", "status", "--json"], check=False, env=env, cwd=cwd, capture_output=True, text=True)
    return dict(json.loads(p.stdout).get("by_command") or {}) if p.returncode == 0 else {}


def _served(before: dict[str, int], after: dict[str, int]) -> int:
    return sum(after.values()) - sum(before.values())


def _ms(seconds: float) -> float:
    return round(seconds * 1000, 1)


def bench(mode: str, runs: int, work: Path) -> dict[str, dict[str, float | int | None]]:
    daemon = mode == "daemon"
    home = work / f"home-{mode}"
    home.mkdir()
    proj = _project(work / mode)
    env = _env(home, daemon)
    out: dict[str, dict[str, float | int | None]] = {}
    if daemon:
        subprocess.run([LEAN, "daemon", "start"], env=env, cwd=proj, check=True, capture_output=True)
    try:
        for name in COMMANDS:
            _timed(name, env, proj)  # warm-up: bytecode, per-user caches, the daemon's pool
            before = _by_command(env, proj) if daemon else {}
            times = [_timed(name, env, proj) for _ in range(runs)]
            served = _served(before, _by_command(env, proj)) if daemon else None
            out[name] = {"median_ms": _ms(statistics.median(t for t, _ in times)),
                         "min_ms": _ms(min(t for t, _ in times)),
                         "cpu_ms": _ms(statistics.median(c for _, c in times)), "served": served}
    finally:
        if daemon:
            subprocess.run([LEAN, "daemon", "stop"], check=False, env=env, cwd=proj, capture_output=True)
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=10)
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--only", choices=("in-process", "daemon"))
    args = ap.parse_args()
    modes = [args.only] if args.only else ["in-process", "daemon"]
    with tempfile.TemporaryDirectory(prefix="lean-ctx-bench-startup-") as tmp:
        results = {mode: bench(mode, args.runs, Path(tmp)) for mode in modes}
    info = {"python": platform.python_version(), "machine": platform.machine(), "cpus": os.cpu_count(),
            "runs": args.runs, "load": os.getloadavg()[0]}
    if args.json:
        print(json.dumps({"info": info, "results": results}, indent=2))
        return 0
    load = os.getloadavg()[0]
    print(f"lean-ctx start-up, median of {args.runs} runs (ms): wall time, and the client process's CPU time"
          f" (steadier on a busy machine); Python {info['python']}, {info['cpus']} CPUs, load {load:.1f}")
    header = f"{'command':<12}" + "".join(f"{m + ' wall':>18}{'cpu':>8}" for m in modes)
    print(header + ("   served by daemon" if "daemon" in modes else ""))
    for name in COMMANDS:
        row = f"{name:<12}" + "".join(f"{results[m][name]['median_ms']:>18.1f}{results[m][name]['cpu_ms']:>8.1f}"
                                      for m in modes)
        if "daemon" in modes:
            row += f"   {results['daemon'][name]['served']}/{args.runs}"
        print(row)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
