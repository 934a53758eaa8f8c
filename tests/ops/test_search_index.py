"""The FTS5 code index: chunking, incremental refresh, bm25 ranking, hostile queries."""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from leanctx.app import LeanCtx
from leanctx.cache.code_chunks import boundaries, chunk_spans, chunk_text, match_expression, split_terms
from leanctx.cache.code_index import CodeIndex
from leanctx.ops.files import list_files


@pytest.fixture()
def lc(tmp_path: Path) -> Iterator[LeanCtx]:
    with LeanCtx(tmp_path / "e.db") as app:
        yield app


def write(root: Path, rel: str, text: str) -> Path:
    p = root / rel
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(text)
    return p


def age(root: Path, seconds: float = 3600) -> None:
    """Move every mtime into the past (so that no file is 'racily clean')."""
    t = time.time() - seconds
    for p in root.rglob("*"):
        if p.is_file():
            os.utime(p, (t, t))


def refresh(lc: LeanCtx, root: Path, index: CodeIndex | None = None):  # type: ignore[no-untyped-def]
    index = index or CodeIndex(lc.store)
    return index.refresh(str(root), str(root), list_files(root, use_git=False).files)


def count(lc: LeanCtx, sql: str, *args: object) -> int:
    return lc.store.read_connection().execute(sql, args).fetchone()[0]


# --- chunking ----------------------------------------------------------------------------------

def test_chunks_align_to_top_level_definitions() -> None:
    lines = ["import os", ""]
    for name in ("a", "b", "c", "d"):
        lines += ["@decorator", f"def {name}():"] + [f"    x = {i}" for i in range(13)] + [""]
    # 2 + 4 * 16 = 66 lines; definitions (with decorators) start at 2, 18, 34, 50 (0-based)
    assert boundaries(lines) == [2, 18, 34, 50]
    spans = chunk_spans(lines)
    assert spans == [(1, 34), (35, 66)]
    assert all(e - s + 1 <= 40 for s, e in spans)
    assert lines[spans[1][0] - 1] == "@decorator"  # a chunk starts at a definition
    # no definitions at all: plain 40-line windows
    assert chunk_spans([f"x{i}" for i in range(100)]) == [(1, 40), (41, 80), (81, 100)]
    assert chunk_spans([]) == []
    # blank windows are not indexed
    assert chunk_text("\n" * 50 + "x\n") == [(41, 51, "\n" * 10 + "x")]


def test_camel_case_terms_and_safe_match_expressions() -> None:
    assert split_terms("parseConfig(HTTPServer, user_id, plain)") == "http server\nparse config"
    assert match_expression('foo "bar" AND') == '"foo" OR """bar""" OR "AND"'
    assert match_expression("  * ( ) -- ") is None
    assert match_expression("pre*") == '"pre"*'


# --- incremental refresh --------------------------------------------------------------------------

def test_only_changed_files_are_rechunked(lc: LeanCtx, tmp_path: Path) -> None:
    root = tmp_path / "p"
    for name in ("a", "b", "c"):
        write(root, f"{name}.py", f"def {name}_fn():\n    return '{name} word{name}'\n")
    age(root)
    first = refresh(lc, root)
    assert (first.files, first.chunked, sorted(first.chunked_paths)) == (3, 3, ["a.py", "b.py", "c.py"])
    again = refresh(lc, root)
    assert (again.unchanged, again.rehashed, again.chunked) == (3, 0, 0)  # nothing read at all

    write(root, "b.py", "def b_fn():\n    return 'b changed wordz'\n")
    changed = refresh(lc, root)
    assert changed.chunked_paths == ["b.py"] and changed.chunked == 1
    assert changed.unchanged == 2

    # a touch without a content change is re-hashed, not re-chunked
    age(root)
    refresh(lc, root)
    os.utime(root / "a.py", None)
    touched = refresh(lc, root)
    assert (touched.rehashed, touched.chunked) == (1, 0)

    # deleted files leave the index (rows and FTS entries)
    (root / "c.py").unlink()
    gone = refresh(lc, root)
    assert gone.removed == 1
    idx = CodeIndex(lc.store)
    assert idx.query(str(root), "wordc")[1] == 0
    assert idx.query(str(root), "wordz")[0][0].path == "b.py"
    assert idx.query(str(root), "wordb")[1] == 0  # the old content of b.py is gone from FTS
    assert count(lc, "SELECT count(*) FROM code_chunks WHERE project = ?", str(root)) == 2
    assert count(lc, "SELECT count(*) FROM code_files WHERE project = ?", str(root)) == 2


def test_racily_clean_files_are_rehashed_not_trusted(lc: LeanCtx, tmp_path: Path) -> None:
    root = tmp_path / "p"
    p = write(root, "a.txt", "alpha\n")
    refresh(lc, root)  # hashed within the same second it was written
    st = p.stat()
    p.write_text("omega\n")  # same size; force the same mtime
    os.utime(p, ns=(st.st_atime_ns, st.st_mtime_ns))
    s = refresh(lc, root)
    assert s.chunked_paths == ["a.txt"]
    assert CodeIndex(lc.store).query(str(root), "omega")[1] == 1


def test_binaries_and_large_files_are_not_indexed(lc: LeanCtx, tmp_path: Path) -> None:
    root = tmp_path / "p"
    (root / "bin").mkdir(parents=True)
    (root / "bin" / "blob.dat").write_bytes(b"needle\0\x01\x02")
    write(root, "big.txt", "needle " * 1000)
    write(root, "small.txt", "needle\n")
    s = CodeIndex(lc.store, max_file_bytes=1000).refresh(str(root), str(root), list_files(root).files)
    assert (s.chunked, s.skipped) == (1, 2)
    hits, total = CodeIndex(lc.store).query(str(root), "needle")
    assert [h.path for h in hits] == ["small.txt"] and total == 1


def test_projects_sharing_a_database_stay_apart(lc: LeanCtx, tmp_path: Path) -> None:
    a, b = tmp_path / "a", tmp_path / "b"
    write(a, "x.py", "shared_word alpha\n")
    write(b, "x.py", "shared_word beta\n")
    refresh(lc, a)
    refresh(lc, b)
    idx = CodeIndex(lc.store)
    assert idx.query(str(a), "shared_word")[1] == 1 and idx.query(str(b), "beta")[1] == 1
    assert idx.query(str(a), "beta")[1] == 0


# --- ranking ----------------------------------------------------------------------------------------

def test_bm25_orders_by_sqlite_bm25(lc: LeanCtx, tmp_path: Path) -> None:
    root = tmp_path / "p"
    write(root, "many.txt", "token token token counting words here\n")
    write(root, "both.txt", "token budget for the agent\n")
    write(root, "budget_only.txt", "budget planning\n")
    write(root, "other.txt", "nothing relevant at all\n")
    refresh(lc, root)
    idx = CodeIndex(lc.store)
    hits, total = idx.query(str(root), "token")
    assert [h.path for h in hits] == ["many.txt", "both.txt"] and total == 2
    assert hits[0].score < hits[1].score  # bm25(): lower is better
    hits, total = idx.query(str(root), "token budget")
    assert hits[0].path == "both.txt" and total == 3  # OR: more query terms rank higher
    # the path column counts too: a file named after the word
    hits, _ = idx.query(str(root), "budget_only")
    assert hits[0].path == "budget_only.txt"
    # ranking equals SQLite's own bm25() order
    raw = lc.store.read_connection().execute(
        "SELECT c.path FROM code_fts JOIN code_chunks c ON c.id = code_fts.rowid WHERE code_fts MATCH ?"
        " ORDER BY bm25(code_fts, 2.0, 1.0, 1.0)", (match_expression("token budget"),)).fetchall()
    assert [r[0] for r in raw] == [h.path for h in idx.query(str(root), "token budget")[0]]
    # glob filter, in SQL
    assert [h.path for h in idx.query(str(root), "token budget", glob="b*")[0]] == ["both.txt", "budget_only.txt"]


HOSTILE = ['"', '""', "'", "NEAR(", "a AND", "OR", "NOT", "AND OR NOT", "*", "**", "(", ")", "col:val", "^", "-",
           "\x00", "a\x00b", "🙂", "x" * 999, "[", "(a+)+$", "\\", "{", 'foo"bar', "path:*", "a OR b NOT c",
           "\u202e", "%", "_", "NEAR(a b, 3)", "{a b}", "-a", "+b", ":", "a:", "\n\t", "'; DROP TABLE code_fts; --"]


@pytest.mark.parametrize("q", HOSTILE)
def test_hostile_queries_never_raise(lc: LeanCtx, tmp_path: Path, q: str) -> None:
    root = tmp_path / "p"
    write(root, "a.txt", "col val foo bar NEAR AND OR x\n")
    refresh(lc, root)
    hits, total = CodeIndex(lc.store).query(str(root), q, glob=q)
    assert total >= 0 and isinstance(hits, list)
    assert count(lc, "SELECT count(*) FROM code_chunks") == 1


def test_rows_built_by_another_engine_are_dropped_and_rebuilt(lc: LeanCtx, tmp_path: Path) -> None:
    """Unchanged files are never re-read, so rows chunked or redacted by other rules would stay
    forever: an index built by another engine starts over, with a new identity (the vector
    index keyed by it empties too)."""
    root = tmp_path / "p"
    write(root, "a.py", "def alpha():\n    return 1\n")
    age(root)
    refresh(lc, root)
    first = CodeIndex(lc.store).identity()
    assert count(lc, "SELECT count(*) FROM code_chunks") == 1
    with lc.store.transaction() as tx:  # as an older engine would have left it
        tx.conn.execute("UPDATE code_index_meta SET value = 'older' WHERE key = 'engine'")
    again = CodeIndex(lc.store)
    assert again.identity() != first
    assert count(lc, "SELECT count(*) FROM code_chunks") == 0
    assert count(lc, "SELECT count(*) FROM code_files") == 0
    stats = refresh(lc, root, again)
    assert stats.unchanged == 0  # read again, not skipped on (mtime, size)
    hits, _ = again.query(str(root), "alpha")
    assert [h.path for h in hits] == ["a.py"]
    assert CodeIndex(lc.store).identity() == again.identity()  # same engine: kept


def test_refresh_reports_progress_through_the_files(lc: LeanCtx, tmp_path: Path) -> None:
    """A first index of a large project takes a while: refresh reports (done, total) as it goes,
    ending at (total, total); ``search`` passes the callback through (the CLI draws a bar)."""
    from leanctx.ops.search import search

    root = tmp_path / "p"
    for k in range(130):
        write(root, f"m{k}.py", f"def f{k}():\n    return {k}\n")
    age(root)
    seen: list[tuple[int, int]] = []
    CodeIndex(lc.store).refresh(str(root), str(root), list_files(root, use_git=False).files,
                                progress=lambda d, t: seen.append((d, t)))
    assert seen[0] == (0, 130) and seen[-1] == (130, 130)
    assert [d for d, _ in seen] == sorted(d for d, _ in seen) and len(seen) >= 3
    calls: list[tuple[int, int]] = []
    search(lc, root, "f7", method="bm25", progress=lambda d, t: calls.append((d, t)))
    assert calls[-1] == (130, 130)
