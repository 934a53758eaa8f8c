"""MCP round-trip benchmark over stdio: the official ``mcp`` client against a spawned
``lean-ctx mcp`` (initialize handshake, as agent clients do).

Measures, client side, call to result: ``ctx_read`` of an unchanged file in the same session (the
cached stub path: read + hash the file, decide under the write lock, record ``file.read``) and
``ctx_agent post`` (one ``message.posted`` through the bus). Also prints the size of the default
``tools/list`` (o200k tokens) and the start-up time (spawn + initialize). Not a test.

    python bench/bench_api_mcp.py [--n 300] [--warmup 20]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

import anyio

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from mcp import Client
from mcp.client.stdio import StdioServerParameters
from mcp_types import Implementation

from leanctx.context.tokens import count_tokens

LEAN_CTX = str(Path(sys.executable).parent / "lean-ctx")
STRUCTURED = {"lean-ctx/structured": True}  # the reads whose fields are read below ask for them


def _pct(values: list[float], p: float) -> float:
    s = sorted(values)
    k = min(len(s) - 1, max(0, round(p / 100 * (len(s) - 1))))
    return s[k]


async def _timed(n: int, warmup: int, call) -> list[float]:  # type: ignore[no-untyped-def]
    for _ in range(warmup):
        await call()
    out = []
    for _ in range(n):
        t = time.perf_counter()
        await call()
        out.append((time.perf_counter() - t) * 1000)
    return out


async def run(n: int, warmup: int) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        project = Path(tmp) / "proj"
        project.mkdir()
        source = "\n".join(f"def f{i}(x):\n    return x + {i}\n" for i in range(200))
        (project / "module.py").write_text(source)
        params = StdioServerParameters(command=LEAN_CTX, args=["mcp"], cwd=str(project),
                                       env={"LEAN_CTX_DB": str(Path(tmp) / "events.db"),
                                            "LEAN_CTX_HOME": str(Path(tmp) / "home")})
        t0 = time.perf_counter()
        async with Client(params, mode="legacy", client_info=Implementation(name="claude-code", version="bench"),
                          read_timeout_seconds=60) as c:
            startup = (time.perf_counter() - t0) * 1000
            listed = await c.list_tools()
            wire = json.dumps(listed.model_dump(by_alias=True, mode="json", exclude_none=True)["tools"],
                              separators=(",", ":"))
            first = await c.call_tool("ctx_read", {"paths": ["module.py"], "mode": "full"}, meta=STRUCTURED)
            assert not first.is_error, first.content

            async def read() -> None:
                r = await c.call_tool("ctx_read", {"paths": ["module.py"], "mode": "full"}, meta=STRUCTURED)
                assert not r.is_error and r.structured_content["files"][0]["stub"], r.content

            k = 0

            async def post() -> None:
                nonlocal k
                k += 1
                r = await c.call_tool("ctx_agent", {"action": "post", "title": f"bench {k}", "body": "x"})
                assert not r.is_error, r.content

            reads = await _timed(n, warmup, read)
            posts = await _timed(n, warmup, post)
            stub_tokens = (await c.call_tool("ctx_read", {"paths": ["module.py"], "mode": "full"}, meta=STRUCTURED)) \
                .structured_content["files"][0]["sent_tokens"]
    print(f"MCP over stdio, {n} calls each after {warmup} warm-up calls (client-side round trip)\n")
    print("| operation | p50 ms | p99 ms | mean ms |")
    print("|---|---:|---:|---:|")
    for name, xs in (("ctx_read, unchanged file (stub)", reads), ("ctx_agent post", posts)):
        print(f"| {name} | {statistics.median(xs):.2f} | {_pct(xs, 99):.2f} | {statistics.fmean(xs):.2f} |")
    print(f"\nstub answer: {stub_tokens} tokens (first read: {first.structured_content['files'][0]['sent_tokens']})")
    print(f"default tools/list ({len(listed.tools)} tools, core+session): {count_tokens(wire)} tokens (o200k)")
    print(f"start-up (spawn + initialize + agent registration): {startup:.0f} ms")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=300)
    ap.add_argument("--warmup", type=int, default=20)
    args = ap.parse_args()
    anyio.run(run, args.n, args.warmup)


if __name__ == "__main__":
    main()
