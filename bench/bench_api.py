"""API benchmark: runs the three delivery benchmarks in one go and prints their tables.

  * MCP over stdio: ``ctx_read`` (cached stub) and ``ctx_agent post`` round trips, p50/p99
    (bench/bench_api_mcp.py);
  * HTTP append → SSE delivery p50/p99, target p99 <= 50 ms (bench/bench_api_http.py);
  * CLI through the daemon vs agent-chat, in one run (bench/bench_coordination.py).

Usage: python bench/bench_api.py [--quick]
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent


def main() -> int:
    quick = "--quick" in sys.argv
    runs = [
        ["bench_api_mcp.py"],
        ["bench_api_http.py"],
        ["bench_coordination.py", "--rounds", "5" if quick else "15"],
    ]
    rc = 0
    for args in runs:
        print(f"\n## {' '.join(args)}\n", flush=True)
        p = subprocess.run([sys.executable, str(HERE / args[0]), *args[1:]])
        rc = rc or p.returncode
    return rc


if __name__ == "__main__":
    raise SystemExit(main())
