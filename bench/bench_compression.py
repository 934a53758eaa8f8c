"""Compression benchmark: shell patterns over the real captured corpus, read modes over real files.

Prints markdown tables (o200k_base tokens): per command family and per read mode, raw tokens,
sent tokens, savings and median latency; the median savings over the shell corpus; map and
signatures savings over the source files of installed packages (starlette, typer, msgspec
stubs, mcp, ...) and the tree-sitter snippets; signatures latency per file. Not a test.

    python bench/bench_compression.py [--repeat 7]
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import statistics
import sys
import time
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from leanctx.context.modes import read  # noqa: E402
from leanctx.context.shell import compress  # noqa: E402
from leanctx.context.tokens import count_tokens  # noqa: E402

FIXTURES = ROOT / "tests" / "fixtures" / "shell"
SNIPPETS = ROOT / "tests" / "context" / "snippets"
PACKAGES = ["starlette", "typer", "msgspec", "mcp", "click", "httpx", "rich"]
TARGETS = {"shell_median": 0.75, "map": 0.90, "signatures": 0.90, "signatures_ms": 5.0}


def _timed(fn, repeat: int):  # type: ignore[no-untyped-def]
    times = []
    result = None
    for _ in range(repeat):
        t = time.perf_counter()
        result = fn()
        times.append((time.perf_counter() - t) * 1000)
    return result, statistics.median(times)


def _family(command: str) -> str:
    words = command.split()
    tool = words[0]
    if tool in {"python", "python3"} and len(words) > 2 and words[1] == "-m":
        tool = words[2]
    if tool in {"npx"}:
        tool = words[1]
    if tool in {"git", "npm", "cargo", "go", "docker", "kubectl", "pip"} and len(words) > 1:
        return f"{tool} {words[1]}"
    return tool


def bench_shell(repeat: int) -> list[float]:
    rows = []
    fams: dict[str, list[tuple[int, int, float]]] = defaultdict(list)
    for path in sorted(FIXTURES.glob("*.json")):
        fx = json.loads(path.read_text())
        c, ms = _timed(lambda: compress(fx["command"], fx["stdout"], fx["stderr"], fx["exit_code"]), repeat)
        rows.append((fx["name"], fx["command"], c.pattern, c.raw_tokens, c.sent_tokens, c.savings, ms))
        fams[_family(fx["command"])].append((c.raw_tokens, c.sent_tokens, ms))
    print("## Shell output (real captured corpus, o200k_base)\n")
    print("| fixture | command | pattern | raw tok | sent tok | savings | median ms |")
    print("|---|---|---|---:|---:|---:|---:|")
    for name, cmd, pat, raw, sent, sav, ms in rows:
        print(f"| {name} | `{cmd[:40]}` | {pat} | {raw} | {sent} | {sav:.0%} | {ms:.2f} |")
    print("\n### Per command family\n")
    print("| family | fixtures | raw tok | sent tok | savings | median ms |")
    print("|---|---:|---:|---:|---:|---:|")
    for fam in sorted(fams):
        items = fams[fam]
        raw = sum(r for r, _, _ in items)
        sent = sum(s for _, s, _ in items)
        print(f"| {fam} | {len(items)} | {raw} | {sent} | {1 - sent / raw:.0%} | "
              f"{statistics.median(m for _, _, m in items):.2f} |")
    savings = [r[5] for r in rows]
    total_raw = sum(r[3] for r in rows)
    total_sent = sum(r[4] for r in rows)
    med = statistics.median(savings)
    print(f"\n**Median savings over {len(rows)} fixtures: {med:.1%}** (target ≥ {TARGETS['shell_median']:.0%}: "
          f"{'met' if med >= TARGETS['shell_median'] else 'NOT met'}); aggregate over all tokens: "
          f"{1 - total_sent / total_raw:.1%} ({total_raw} → {total_sent}); "
          f"fixtures sent raw (nothing to gain): {sum(1 for r in rows if r[2] == 'raw')}\n")
    return savings


def _source_files() -> list[Path]:
    files: list[Path] = []
    for pkg in PACKAGES:
        spec = importlib.util.find_spec(pkg)
        if spec is None or spec.origin is None:
            continue
        root = Path(spec.origin).parent
        found = sorted(p for p in [*root.rglob("*.py"), *root.rglob("*.pyi")] if "__pycache__" not in p.parts)
        files.extend(p for p in found if 80 <= len(p.read_text(errors="replace").splitlines()) <= 3000)
    return files


def bench_modes(repeat: int) -> None:
    files = _source_files()
    snippets = sorted(SNIPPETS.iterdir())
    print(f"## Read modes ({len(files)} source files of {', '.join(PACKAGES)}; "
          f"{len(snippets)} tree-sitter snippets)\n")
    modes = ["map", "signatures", "aggressive", "entropy", "task", "auto", "lines:1-60"]
    print("| mode | files | raw tok | sent tok | aggregate savings | median savings | median ms |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    per_mode: dict[str, list[float]] = {}
    sig_ms: list[float] = []
    texts = {p: p.read_text(errors="replace") for p in files}
    raw_tokens = {p: count_tokens(t) for p, t in texts.items()}
    for mode in modes:
        raw_sum = sent_sum = 0
        savings: list[float] = []
        times: list[float] = []
        for p, text in texts.items():
            kwargs = {"task": "handle errors and timeouts in the request"} if mode == "task" else {}
            r, ms = _timed(lambda: read(str(p), text, mode, **kwargs), repeat)
            sent = count_tokens(r.text)
            raw_sum += raw_tokens[p]
            sent_sum += sent
            savings.append(1 - sent / raw_tokens[p])
            times.append(ms)
            if mode == "signatures":
                sig_ms.append(ms)
        per_mode[mode] = savings
        print(f"| {mode} | {len(texts)} | {raw_sum} | {sent_sum} | {1 - sent_sum / raw_sum:.1%} | "
              f"{statistics.median(savings):.1%} | {statistics.median(times):.2f} |")
    print("\n### Signatures on the tree-sitter snippets (one per language)\n")
    print("| file | lines | raw tok | sent tok | savings | median ms |")
    print("|---|---:|---:|---:|---:|---:|")
    for p in snippets:
        text = p.read_text()
        r, ms = _timed(lambda: read(str(p), text, "signatures"), repeat)
        raw, sent = count_tokens(text), count_tokens(r.text)
        print(f"| {p.name} | {r.line_count} | {raw} | {sent} | {1 - sent / raw:.0%} | {ms:.2f} |")
    sig_ms.sort()
    p95 = sig_ms[int(0.95 * (len(sig_ms) - 1))]
    med_ms = statistics.median(sig_ms)
    print(f"\n**signatures latency per real source file: median {med_ms:.2f} ms, p95 {p95:.2f} ms, "
          f"max {sig_ms[-1]:.2f} ms** (target < {TARGETS['signatures_ms']:.0f} ms: "
          f"{'met' if med_ms < TARGETS['signatures_ms'] else 'NOT met'})")
    for mode in ("map", "signatures"):
        med = statistics.median(per_mode[mode])
        print(f"**{mode}: median savings {med:.1%}** (target ≥ {TARGETS[mode]:.0%}: "
              f"{'met' if med >= TARGETS[mode] else 'NOT met'})")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=7)
    args = ap.parse_args()
    count_tokens("warm up")
    read("warm.py", "def f():\n    pass\n", "signatures")
    bench_shell(args.repeat)
    bench_modes(args.repeat)


if __name__ == "__main__":
    main()
