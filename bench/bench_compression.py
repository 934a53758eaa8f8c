"""Compression benchmark: shell patterns over the real captured corpus, read modes over real files.

Prints markdown tables (o200k_base tokens): per command family and per read mode, raw tokens,
sent tokens, savings and median latency; the median savings over the shell corpus; map and
signatures savings over the source files of installed packages (starlette, typer, msgspec
stubs, mcp, ...) and the tree-sitter snippets; signatures latency per file. Not a test.

    python bench/bench_compression.py [--repeat 7] [--only shell|modes]
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import shutil
import statistics
import sys
import sysconfig
import time
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from leanctx.archive import ArchiveStore  # noqa: E402
from leanctx.context.modes import read  # noqa: E402
from leanctx.context.shell import archive_text, compress, fill_archive  # noqa: E402
from leanctx.context.tokens import count_tokens  # noqa: E402

FIXTURES = ROOT / "tests" / "fixtures" / "shell"
SNIPPETS = ROOT / "tests" / "context" / "snippets"
PACKAGES = ["starlette", "typer", "msgspec", "mcp", "click", "httpx", "rich"]
CORPUS_CAP = 250
SMALL_OUTPUT = 200  # raw tokens: the size split reported beside the shell median
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


def _as_sent(fx: dict, c) -> int:  # type: ignore[no-untyped-def]
    """Tokens of the text an agent receives, as ``leanctx.ops.shell`` sends it: the archive id
    written into every omission marker (``A`` + 16 hex digits, 10-16 tokens, where the engine's
    own count has the 3-token ``{archive}`` placeholder), and the raw output when that filled
    text is not shorter (never worse, on the text actually sent)."""
    if c.pattern == "raw" or not c.omitted_lines:
        return c.sent_tokens
    archive_id, _ = ArchiveStore.id_of(archive_text(fx["stdout"], fx["stderr"], fx["command"]))
    return min(c.raw_tokens, count_tokens(fill_archive(c.text, archive_id)))


def _floor(c) -> int:  # type: ignore[no-untyped-def]
    """Tokens of the engine's must-keep facts alone, each verbatim on a line, plus ``[exit N]``:
    what any output that keeps them costs at least (no structure, no marker, no context)."""
    facts = [f for f in c.must_keep if not f.startswith("exit ")]
    return count_tokens("\n".join([*facts, *([f"[exit {c.exit_code}]"] if c.exit_code else [])]))


def bench_shell(repeat: int) -> list[float]:
    rows = []
    fams: dict[str, list[tuple[int, int, float]]] = defaultdict(list)
    for path in sorted(FIXTURES.glob("*.json")):
        fx = json.loads(path.read_text())
        c, ms = _timed(lambda: compress(fx["command"], fx["stdout"], fx["stderr"], fx["exit_code"]), repeat)
        sent = _as_sent(fx, c)
        rows.append((fx["name"], fx["command"], c.pattern, c.raw_tokens, sent, 1 - sent / c.raw_tokens, ms,
                     c.sent_tokens, 1 - _floor(c) / c.raw_tokens))
        fams[_family(fx["command"])].append((c.raw_tokens, sent, ms))
    target = TARGETS["shell_median"]
    print("## Shell output (real captured corpus, o200k_base)\n")
    print("`sent tok` is what the agent receives (archive id filled in, never worse applied on that "
          "text); `placeholder` counts the engine's text with the `{archive}` placeholder instead; "
          "`must-keep floor` is the savings if only the engine's must-keep facts were sent, verbatim, "
          "one per line (with `[exit N]`): no output that keeps them can save more. For data outputs "
          "(diffs, logs, listings, matches) the facts are only the paths and subjects: the content "
          "itself is what was asked for, so there the floor is no bound.\n")
    print("| fixture | command | pattern | raw tok | sent tok | savings | placeholder | must-keep floor | median ms |")
    print("|---|---|---|---:|---:|---:|---:|---:|---:|")
    for name, cmd, pat, raw, sent, sav, ms, ph, floor in rows:
        print(f"| {name} | `{cmd[:40]}` | {pat} | {raw} | {sent} | {sav:.0%} | {ph} | {floor:.0%} | {ms:.2f} |")
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
    ph_savings = [1 - r[7] / r[3] for r in rows]
    ph_total = sum(r[7] for r in rows)
    print(f"\n**Median savings over {len(rows)} fixtures, as sent: {med:.1%}** (target ≥ {target:.0%}: "
          f"{'met' if med >= target else 'NOT met'}); aggregate over all tokens: "
          f"{1 - total_sent / total_raw:.1%} ({total_raw} → {total_sent}); "
          f"fixtures sent raw (nothing to gain): {sum(1 for r in rows if r[2] == 'raw')}; "
          f"fixtures at or above the target: {sum(1 for x in savings if x >= target)} of {len(rows)}\n")
    print(f"With the `{{archive}}` placeholder counted instead of the id (as earlier reports did): median "
          f"{statistics.median(ph_savings):.1%}, aggregate {1 - ph_total / total_raw:.1%} ({total_raw} → {ph_total}).\n")
    below = sum(1 for r in rows if r[8] < target)
    print(f"Must-keep floor below the target: {below} of {len(rows)} fixtures (their must-keep facts alone "
          f"cost more than {1 - target:.0%} of the raw output); median floor {statistics.median(r[8] for r in rows):.1%}.\n")
    small = [r[5] for r in rows if r[3] < SMALL_OUTPUT]
    large = [r[5] for r in rows if r[3] >= SMALL_OUTPUT]
    if small and large:
        print(f"By size: outputs under {SMALL_OUTPUT} raw tokens ({len(small)} fixtures) median "
              f"{statistics.median(small):.1%}; outputs of {SMALL_OUTPUT} tokens or more ({len(large)} fixtures) "
              f"median {statistics.median(large):.1%}. The target is judged on all fixtures, as above.\n")
    return savings


def _sized(paths: list[Path]) -> list[Path]:
    """The files of 80 to 3000 lines (no stubs of a few lines, no generated giants)."""
    return [p for p in paths if 80 <= len(p.read_text(errors="replace").splitlines()) <= 3000]


def _source_files() -> list[Path]:
    files: list[Path] = []
    for pkg in PACKAGES:
        spec = importlib.util.find_spec(pkg)
        if spec is None or spec.origin is None:
            continue
        root = Path(spec.origin).parent
        found = sorted(p for p in [*root.rglob("*.py"), *root.rglob("*.pyi")] if "__pycache__" not in p.parts)
        files.extend(_sized(found))
    return files


def _every_kth(paths: list[Path], cap: int = CORPUS_CAP) -> list[Path]:
    """A fixed, evenly spread sample: every k-th file of the sorted list, k chosen so at most
    ``cap`` remain. No file is picked or dropped for how well it compresses."""
    paths = sorted(paths)
    k = max(1, -(-len(paths) // cap))
    return paths[::k]


def _tool_root(exe: str, up: int) -> Path | None:
    found = shutil.which(exe)
    return Path(os.path.realpath(found)).parents[up] if found else None


def _corpora() -> dict[str, tuple[str, list[Path]]]:
    """Real source files of several languages, as installed on this machine, each corpus by a
    fixed rule (see ``CORPORA`` in the module docstring); a corpus whose files are absent is left
    out and said so."""
    skip = {"__pycache__", "test", "tests", "testdata", "site-packages", "vendor", "idlelib"}

    def under(root: Path | None, *globs: str) -> list[Path]:
        if root is None or not root.is_dir():
            return []
        got = [p for g in globs for p in root.rglob(g)]
        return _sized([p for p in got if not skip & set(p.relative_to(root).parts)
                       and not p.name.endswith(("_test.go", ".min.js"))])

    stdlib = Path(sysconfig.get_paths()["stdlib"])
    goroot = _tool_root("go", 1)
    npm = _tool_root("npm", 1)
    mypyc = importlib.util.find_spec("mypyc")
    librt = Path(mypyc.origin).parent / "lib-rt" if mypyc and mypyc.origin else None
    return {
        "python-libs": ("Python, typed libraries: " + ", ".join(PACKAGES), _source_files()),
        "python-stdlib": (f"Python standard library ({stdlib.name})", _every_kth(under(stdlib, "*.py"))),
        "go-stdlib": ("Go standard library" + (f" ({goroot.name})" if goroot else ""),
                      _every_kth(under(goroot / "src" if goroot else None, "*.go"))),
        "javascript": ("JavaScript: npm and its bundled dependencies", _every_kth(under(npm, "*.js"))),
        "c": ("C: mypyc's runtime library (lib-rt)", _every_kth(under(librt, "*.c"))),
    }


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
    from leanctx.context.langs import detect_language  # what the signatures figure covers
    from leanctx.context.modes.compact import compact_symbols

    kinds: dict[str, int] = defaultdict(int)
    for p, text in texts.items():
        for s in compact_symbols(str(p), text, detect_language(str(p), text)):
            kinds[s.kind] += 1
    print(f"signatures rows over the real source files: {sum(kinds.values())} declarations ("
          + ", ".join(f"{k} {n}" for k, n in sorted(kinds.items(), key=lambda kv: -kv[1])) + "), "
          "each with its line; public ones with every parameter and the return type, data classes with their"
          " fields (Python private functions and overload implementations are written name(…), their @overload"
          " rows whole)")
    for mode in ("map", "signatures"):
        med = statistics.median(per_mode[mode])
        print(f"**{mode}: median savings {med:.1%}** (target ≥ {TARGETS[mode]:.0%}: "
              f"{'met' if med >= TARGETS[mode] else 'NOT met'})")


def bench_corpora(repeat: int) -> None:
    """``map`` and ``signatures`` over each corpus: the median per corpus and over all files."""
    corpora = _corpora()
    print("\n## map and signatures over real source files of several languages\n")
    print("Each corpus is taken whole by a fixed rule (files of 80-3000 lines; tests, testdata, "
          "vendored and minified files excluded; at most " f"{CORPUS_CAP} files, every k-th of the sorted list).\n")
    print("| corpus | files | raw tok | map sent | map median | signatures sent | signatures median | sig ≥ 90% | sig median ms |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    pooled: dict[str, list[float]] = {"map": [], "signatures": []}
    for key, (label, files) in corpora.items():
        if not files:
            print(f"| {label} | 0 (not installed here) | | | | | | | |")
            continue
        raw_sum = 0
        sent = {"map": 0, "signatures": 0}
        sav: dict[str, list[float]] = {"map": [], "signatures": []}
        ms: list[float] = []
        for p in files:
            text = p.read_text(errors="replace")
            raw = count_tokens(text)
            raw_sum += raw
            for mode in ("map", "signatures"):
                r, t = _timed(lambda: read(str(p), text, mode), repeat if mode == "signatures" else 1)
                n = count_tokens(r.text)
                sent[mode] += n
                sav[mode].append(1 - n / raw)
                if mode == "signatures":
                    ms.append(t)
        for mode in pooled:
            pooled[mode].extend(sav[mode])
        print(f"| {label} | {len(files)} | {raw_sum} | {sent['map']} | {statistics.median(sav['map']):.1%} | "
              f"{sent['signatures']} | {statistics.median(sav['signatures']):.1%} | "
              f"{sum(1 for x in sav['signatures'] if x >= TARGETS['signatures'])} | {statistics.median(ms):.2f} |")
    n = len(pooled["map"])
    for mode in ("map", "signatures"):
        med = statistics.median(pooled[mode])
        print(f"\n**{mode} over all {n} files: median savings {med:.1%}** (target ≥ {TARGETS[mode]:.0%}: "
              f"{'met' if med >= TARGETS[mode] else 'NOT met'})", end="")
    print()


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=7)
    ap.add_argument("--only", choices=["shell", "modes"], help="run one part of the benchmark")
    args = ap.parse_args()
    count_tokens("warm up")
    read("warm.py", "def f():\n    pass\n", "signatures")
    if args.only != "modes":
        bench_shell(args.repeat)
    if args.only != "shell":
        bench_modes(args.repeat)
        bench_corpora(args.repeat)


if __name__ == "__main__":
    main()
