"""The code-search index: FTS5 over chunks of the project's text files, kept current
incrementally, ranked by SQLite's ``bm25()`` alone.

Tables (in the log's database, owned here; not a projection: replay ignores them and
dropping them loses nothing):

- ``code_files (project, path, mtime_ns, size, sha256, status, chunks, hashed_ns)``: what was
  indexed. ``status`` is ``text``, ``binary`` or ``large`` (over the size cap: not read).
- ``code_chunks (id, project, path, start_line, end_line)``: ``AUTOINCREMENT``, so an id is
  never reused (the optional vector index keys embeddings by it).
- ``code_fts``: a *contentless* FTS5 table (``content=''``, ``contentless_delete=1``) with
  columns ``path``, ``body`` (the chunk's text, secrets redacted) and ``terms`` (camelCase
  identifiers split into words, so ``parseConfig`` is found by ``parse``). Contentless: the
  text itself is not stored; snippets are read from the files at query time.
- ``code_index_meta``: a random identity, so that the vector index notices a reset, and the
  engine that built the rows (``ENGINE``: chunking and redaction rules); rows built by another
  engine are dropped, since an unchanged file is never re-read.

``refresh`` brings the index current: a file whose (mtime_ns, size) are unchanged since it
was hashed is skipped without being read (unless it was "racily clean": modified within
``RACY_NS`` of being hashed, where a later same-size write could keep its mtime); otherwise it
is read and hashed, and only when its sha256 changed is it re-chunked (delete its chunks,
insert the new ones). Files gone from the listing are removed. Files are read and chunked
outside any transaction; their rows are written in short transactions of ``BATCH_FILES``
files, so other writers of the log interleave. Two processes refreshing at once do double
work at worst: each write deletes the path's chunks before inserting, so rows never duplicate.

Chunks (``code_chunks``) are windows of at most ``TARGET_LINES`` lines, cut at the last top-level definition
(``def``, ``class``, ``function``, ``fn``, ``func``, ``struct``, ``impl``, a Markdown heading,
... at column 0, with its decorators) that leaves at least ``MIN_LINES`` lines, else at the
window's end.

Queries (``code_chunks.match_expression``): every whitespace-separated term is quoted like
``leanctx.events.fts`` does (any string is a safe query) and the terms are ORed, so ``bm25()``
ranks chunks that match more of them, more often, higher; a one-letter term (``return x``,
``if n``) is searched only as an FTS5 phrase with its neighbours, in ``path`` and ``body``,
and that phrase is required (the whole query, as a phrase, ranks the chunks holding it first).
Secrets are redacted before indexing (``ops.files.redact_text``):
neither the text nor the tokens of a secret reach the database.
"""

from __future__ import annotations

import hashlib
import os
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import msgspec

from ..ops.files import MAX_FILE_BYTES, FileEntry, decode, glob_match, is_binary, redact_text
from .code_chunks import chunk_text, match_expression, split_terms
from .views import RACY_NS, source_digest

PROGRESS_EVERY = 50  # files between two progress(done, total) calls of refresh
BATCH_FILES = 200
BATCH_BYTES = 8_000_000
BM25_WEIGHTS = (2.0, 1.0, 1.0)  # path, body, terms

FTS_DDL = ("CREATE VIRTUAL TABLE IF NOT EXISTS code_fts USING fts5(path, body, terms, content='', "
           "contentless_delete=1, tokenize='unicode61 remove_diacritics 2')")
DDL = (
    "CREATE TABLE IF NOT EXISTS code_index_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)",
    """CREATE TABLE IF NOT EXISTS code_files (
        project   TEXT NOT NULL,
        path      TEXT NOT NULL,
        mtime_ns  INTEGER NOT NULL,
        size      INTEGER NOT NULL,
        sha256    TEXT NOT NULL,
        status    TEXT NOT NULL,
        chunks    INTEGER NOT NULL,
        hashed_ns INTEGER NOT NULL,
        PRIMARY KEY (project, path)
    )""",
    """CREATE TABLE IF NOT EXISTS code_chunks (
        id         INTEGER PRIMARY KEY AUTOINCREMENT,
        project    TEXT NOT NULL,
        path       TEXT NOT NULL,
        start_line INTEGER NOT NULL,
        end_line   INTEGER NOT NULL
    )""",
    "CREATE INDEX IF NOT EXISTS code_chunks_path ON code_chunks (project, path, start_line)",
    FTS_DDL,
    "INSERT OR IGNORE INTO code_index_meta (key, value) VALUES ('identity', lower(hex(randomblob(16))))",
)



def _engine() -> str:
    """sha256 of the rules that decide what the index holds: this module, the chunking and terms
    (``code_chunks.py``) and the redaction rules (``leanctx/context/secret*.py``)."""
    package = Path(__file__).resolve().parents[1]
    rules = sorted((package / "context").glob("secret*.py"))  # secrets.py and the modules it draws on
    return source_digest([package / "cache" / "code_index.py", package / "cache" / "code_chunks.py", *rules],
                         package)[:16]


ENGINE = _engine()

class IndexStats(msgspec.Struct):
    """What a refresh did (counters the tests and ``--json`` read)."""

    files: int = 0  # files in the listing
    unchanged: int = 0  # skipped on (mtime, size) without reading
    rehashed: int = 0  # read and hashed, content unchanged
    chunked: int = 0  # (re-)chunked and (re-)indexed
    removed: int = 0  # gone from the listing, dropped from the index
    skipped: int = 0  # binary, over the size cap, or unreadable
    chunks_written: int = 0
    chunked_paths: list[str] = msgspec.field(default_factory=list)


class ChunkHit(msgspec.Struct, frozen=True):
    chunk_id: int
    path: str
    start_line: int
    end_line: int
    score: float  # bm25() (lower is better)


class ChunkRow(msgspec.Struct, frozen=True):
    chunk_id: int
    path: str
    start_line: int
    end_line: int


# --- the index --------------------------------------------------------------------------------

class _Pending(msgspec.Struct):
    entry: FileEntry
    sha256: str
    status: str
    chunks: list[tuple[int, int, str]]
    hashed_ns: int


class CodeIndex:
    """The code index of one database (any number of projects, keyed by their root)."""

    def __init__(self, store: Any, *, max_file_bytes: int = MAX_FILE_BYTES) -> None:
        self.store = store
        self.max_file_bytes = max_file_bytes
        self._ready = False

    def ensure(self) -> None:
        """Create the tables, and empty them when they were built by another engine (other
        chunking or redaction rules): a chunk indexed under older redaction rules could hold a
        secret's tokens, and unchanged files are never re-read. The reset draws a new identity,
        so the vector index empties too."""
        if self._ready:
            return
        conn = self.store.read_connection()
        have = {r[0] for r in conn.execute(
            "SELECT name FROM sqlite_master WHERE name IN ('code_files', 'code_chunks', 'code_fts', 'code_index_meta')")}
        built = (conn.execute("SELECT value FROM code_index_meta WHERE key = 'engine'").fetchone()
                 if "code_index_meta" in have else None)
        if len(have) < 4 or built is None or built[0] != ENGINE:
            with self.store.transaction() as tx:
                for ddl in DDL:
                    tx.conn.execute(ddl)
                row = tx.conn.execute("SELECT value FROM code_index_meta WHERE key = 'engine'").fetchone()
                if row is not None and row[0] != ENGINE:  # built by another engine: start over
                    tx.conn.execute("DELETE FROM code_files")
                    tx.conn.execute("DELETE FROM code_chunks")
                    tx.conn.execute("DROP TABLE code_fts")
                    tx.conn.execute(FTS_DDL)
                    tx.conn.execute("UPDATE code_index_meta SET value = lower(hex(randomblob(16))) "
                                    "WHERE key = 'identity'")
                tx.conn.execute("INSERT OR REPLACE INTO code_index_meta (key, value) VALUES ('engine', ?)", (ENGINE,))
        self._ready = True

    def identity(self) -> str:
        self.ensure()
        row = self.store.read_connection().execute(
            "SELECT value FROM code_index_meta WHERE key = 'identity'").fetchone()
        return str(row[0])

    # --- refresh ------------------------------------------------------------------------------
    def refresh(self, project: str, root: str, files: Sequence[FileEntry],
                progress: Callable[[int, int], None] | None = None) -> IndexStats:
        """Bring the index of ``project`` (files under ``root``) in line with ``files``;
        ``progress(done, total)`` is called as files are checked (every ``PROGRESS_EVERY``, and
        at the end), for a progress bar on a first index of a large project."""
        self.ensure()
        stats = IndexStats(files=len(files))
        conn = self.store.read_connection()
        known: dict[str, tuple[int, int, str, str, int]] = {
            r[0]: (r[1], r[2], r[3], r[4], r[5])
            for r in conn.execute(
                "SELECT path, mtime_ns, size, sha256, status, hashed_ns FROM code_files WHERE project = ?", (project,))
        }
        listed = {f.path for f in files}
        removed = sorted(p for p in known if p not in listed)
        pending: list[_Pending] = []
        touched: list[tuple[FileEntry, int]] = []
        size = 0
        for k, f in enumerate(files):
            if progress is not None and k % PROGRESS_EVERY == 0:
                progress(k, len(files))
            row = known.get(f.path)
            if row is not None and row[0] == f.mtime_ns and row[1] == f.size and (
                    row[3] == "large" or row[4] - f.mtime_ns > RACY_NS):
                stats.unchanged += 1
                continue
            item = self._read(root, f, row)
            if item is None:
                stats.skipped += 1
                continue
            if isinstance(item, int):
                touched.append((f, item))
                stats.rehashed += 1
                continue
            if item.status != "text":
                stats.skipped += 1
            pending.append(item)
            size += sum(len(c[2]) for c in item.chunks)
            if len(pending) >= BATCH_FILES or size >= BATCH_BYTES:
                self._write(project, pending, touched, [], stats)
                pending, touched, size = [], [], 0
        if pending or touched or removed:
            self._write(project, pending, touched, removed, stats)
        if progress is not None:
            progress(len(files), len(files))
        return stats

    def _read(self, root: str, f: FileEntry, row: tuple[int, int, str, str, int] | None) -> _Pending | int | None:
        """A file's new index state; an int (hash time) when only its stat changed; None if unreadable."""
        now_ns = time.time_ns()
        if f.size > self.max_file_bytes:
            return _Pending(f, "", "large", [], now_ns)
        try:
            with open(os.path.join(root, f.path), "rb") as fh:
                data = fh.read(self.max_file_bytes + 1)
        except OSError:
            return None
        if len(data) > self.max_file_bytes:
            return _Pending(f, "", "large", [], now_ns)
        sha = hashlib.sha256(data).hexdigest()
        status = "binary" if is_binary(data) else "text"
        if row is not None and row[2] == sha and row[3] == status:
            return now_ns
        if status == "binary":
            return _Pending(f, sha, status, [], now_ns)
        text, _ = redact_text(decode(data))
        return _Pending(f, sha, status, chunk_text(text), now_ns)

    def _write(self, project: str, pending: list[_Pending], touched: list[tuple[FileEntry, int]],
               removed: list[str], stats: IndexStats) -> None:
        with self.store.transaction() as tx:
            c = tx.conn
            for path in [*removed, *(p.entry.path for p in pending)]:
                ids = [(r[0],) for r in c.execute(
                    "SELECT id FROM code_chunks WHERE project = ? AND path = ?", (project, path))]
                if ids:
                    c.executemany("DELETE FROM code_fts WHERE rowid = ?", ids)
                    c.execute("DELETE FROM code_chunks WHERE project = ? AND path = ?", (project, path))
            for path in removed:
                c.execute("DELETE FROM code_files WHERE project = ? AND path = ?", (project, path))
            for p in pending:
                for start, end, body in p.chunks:
                    cid = c.execute(
                        "INSERT INTO code_chunks (project, path, start_line, end_line) VALUES (?, ?, ?, ?) RETURNING id",
                        (project, p.entry.path, start, end)).fetchone()[0]
                    c.execute("INSERT INTO code_fts (rowid, path, body, terms) VALUES (?, ?, ?, ?)",
                              (cid, p.entry.path, body, split_terms(body)))
                c.execute(
                    "INSERT INTO code_files (project, path, mtime_ns, size, sha256, status, chunks, hashed_ns)"
                    " VALUES (?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (project, path) DO UPDATE SET"
                    " mtime_ns = excluded.mtime_ns, size = excluded.size, sha256 = excluded.sha256,"
                    " status = excluded.status, chunks = excluded.chunks, hashed_ns = excluded.hashed_ns",
                    (project, p.entry.path, p.entry.mtime_ns, p.entry.size, p.sha256, p.status, len(p.chunks),
                     p.hashed_ns))
            for f, hashed_ns in touched:
                c.execute("UPDATE code_files SET mtime_ns = ?, size = ?, hashed_ns = ? WHERE project = ? AND path = ?",
                          (f.mtime_ns, f.size, hashed_ns, project, f.path))
        stats.removed += len(removed)
        for p in pending:
            if p.status == "text":
                stats.chunked += 1
                stats.chunked_paths.append(p.entry.path)
                stats.chunks_written += len(p.chunks)

    # --- queries ------------------------------------------------------------------------------
    def query(self, project: str, query: str, *, limit: int = 50, glob: str | None = None) -> tuple[list[ChunkHit], int]:
        """Chunks of ``project`` matching ``query``, best first by ``bm25()``, and how many match."""
        self.ensure()
        match = match_expression(query)
        if match is None:
            return [], 0
        where = "code_fts MATCH ? AND c.project = ?"
        params: list[Any] = [match, project]
        conn = self.store.read_connection()
        if glob:  # the regex scan's own matcher (fnmatch), so both scans select the same files
            conn.create_scalar_function("leanctx_glob", glob_match, 2, deterministic=True)
            where += " AND leanctx_glob(c.path, ?)"
            params.append(glob)
        base = f"FROM code_fts JOIN code_chunks c ON c.id = code_fts.rowid WHERE {where}"
        w = ", ".join(str(x) for x in BM25_WEIGHTS)
        rows = conn.execute(
            f"SELECT c.id, c.path, c.start_line, c.end_line, bm25(code_fts, {w}) AS score {base}"
            " ORDER BY score, c.path, c.start_line LIMIT ?", (*params, int(limit))).fetchall()
        total = conn.execute(f"SELECT count(*) {base}", params).fetchone()[0]
        return [ChunkHit(r[0], r[1], r[2], r[3], float(r[4])) for r in rows], int(total)

    def chunks_of(self, project: str, path: str) -> list[ChunkRow]:
        self.ensure()
        return [ChunkRow(*r) for r in self.store.read_connection().execute(
            "SELECT id, path, start_line, end_line FROM code_chunks WHERE project = ? AND path = ? ORDER BY start_line",
            (project, path))]

    def all_chunks(self, project: str) -> list[ChunkRow]:
        self.ensure()
        return [ChunkRow(*r) for r in self.store.read_connection().execute(
            "SELECT id, path, start_line, end_line FROM code_chunks WHERE project = ? ORDER BY path, start_line",
            (project,))]

    def rows(self, ids: Sequence[int]) -> dict[int, ChunkRow]:
        self.ensure()
        out: dict[int, ChunkRow] = {}
        conn = self.store.read_connection()
        for i in range(0, len(ids), 500):
            part = list(ids[i:i + 500])
            marks = ",".join("?" * len(part))
            for r in conn.execute(f"SELECT id, path, start_line, end_line FROM code_chunks WHERE id IN ({marks})", part):
                out[r[0]] = ChunkRow(*r)
        return out

    def file_count(self, project: str) -> int:
        self.ensure()
        return int(self.store.read_connection().execute(
            "SELECT count(*) FROM code_files WHERE project = ?", (project,)).fetchone()[0])
