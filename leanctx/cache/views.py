"""The view cache: content blobs and compressed views of files, shared by every agent of a project.

Three tables in the project's database (see ``docs/architecture.md``: caches own their tables;
replay does not rebuild them and deleting them loses nothing):

- ``cache_files``: path → the stat of the file when its bytes were last read and hashed
  (mtime_ns, ctime_ns, size, inode, device), when that was (``hashed_ns``), the sha256 of those
  bytes and what decoding them showed (bytes not UTF-8, CR-only line ends). It is the **mtime
  + size fast check**: a read whose fresh ``fstat`` equals the record in every field reuses
  the recorded sha256 (and the cached redacted blob) without reading or hashing the file
  (``stat_is_trusted``), unless the record is *racily clean*: the file was modified (mtime or
  ctime) within ``RACY_NS`` (2 s) of being hashed, when a later write of the same size could
  land in the same timestamp tick (coarse file system clocks, 2 s on FAT) and leave every
  field equal; such a file is read and hashed again until a hash is taken more than 2 s after
  its last change (as git and ``leanctx.cache.code_index`` do). ``ctime`` cannot be set by
  ``utime`` (setting an old mtime back moves ctime to now), so an edit that restores the old
  mtime and size is still seen; an atomic save (rename) changes the inode. What the check
  cannot see: a change that leaves mtime, ctime, size and inode all equal — a write through a
  shared ``mmap`` whose timestamps the kernel has not updated yet, a file system that does
  not keep ctime, or a clock set back; git accepts the same. ``fresh`` and ``raw`` reads never
  use the record: they always read and hash the file (and record it again).
- ``cache_blobs``: sha256 of the file's bytes → its **redacted** text, the number of
  redactions, its line count and its token count (what a plain read would have sent). Used by
  ``diff`` to render against the version a conversation received earlier.
- ``cache_views``: (sha256, mode, options digest) → a rendered view of the redacted text (the
  read mode's output, its line figures and its token count). Options (task, intent, the diff
  base, the token encoding, the engine version) are hashed into the key, never stored.

Nothing unredacted is ever written here: callers pass redacted text (``raw`` reads are not
cached). The engine version (``ENGINE``) covers the redaction rules, the source of the view code
(``leanctx/context``) and the grammars' version, so a change of any makes old entries
unreachable (they are pruned as the oldest).
"""

from __future__ import annotations

import hashlib
import os
import threading
import time
import weakref
from importlib import metadata
from pathlib import Path
from typing import Any

import apsw
import msgspec

from ..context import secrets as _secrets

__all__ = ["ENGINE", "RACY_NS", "Blob", "FileStat", "View", "ViewCache", "options_key", "source_digest",
           "stat_is_trusted", "views_for"]

VIEWS_VERSION = 2  # bump when a read mode's output changes in a way cached views must not outlive
DEFAULT_MAX_BYTES = 256 * 1024 * 1024
PRUNE_EVERY = 200  # writes between size checks
RACY_NS = 2_000_000_000  # a stat within this of its hash is "racily clean": never trusted (code_index too)


# Outside ``leanctx/context``, the modules that shape what a blob or view holds: decoding and
# line endings (``read_load``), redaction of files (``files.redact_text``).
_SHAPERS = ("ops/read_load.py", "ops/files.py")


def source_digest(files: list[Path], base: Path) -> str:
    """sha256 over source files, each with its path relative to ``base`` (a rename counts)."""
    h = hashlib.sha256()
    for path in files:
        h.update(path.relative_to(base).as_posix().encode() + b"\x00" + path.read_bytes() + b"\x00")
    return h.hexdigest()


def _code_digest(root: Path | None = None) -> str:
    """sha256 over the engine's source (``leanctx/context``: read modes, symbols, languages,
    redaction, tokens; plus ``_SHAPERS``) and the installed grammars' version, so a view rendered
    by other code is never served: no release needs to remember to bump ``VIEWS_VERSION``."""
    package = Path(__file__).resolve().parents[1]
    root = root or package / "context"
    h = hashlib.sha256(source_digest(sorted(root.rglob("*.py")), root).encode())
    if root == package / "context":
        h.update(source_digest([package / rel for rel in _SHAPERS], package).encode())
    for dist in ("tree-sitter", "tree-sitter-language-pack"):
        try:
            h.update(f"{dist}={metadata.version(dist)}\x00".encode())
        except metadata.PackageNotFoundError:
            h.update(f"{dist}=-\x00".encode())
    return h.hexdigest()


def _engine_fingerprint() -> str:
    h = hashlib.sha256(f"views:{VIEWS_VERSION}\x00{_code_digest()}\x00".encode())
    for kind, pat in _secrets._PATTERNS:  # the redaction rules are part of the key
        h.update(f"{kind}\x00{pat.pattern}\x00".encode())
    h.update(_secrets._ASSIGN.pattern.encode())
    h.update(_secrets._PLACEHOLDER.pattern.encode())
    return h.hexdigest()[:16]


ENGINE = _engine_fingerprint()

_DDL = (
    """CREATE TABLE IF NOT EXISTS cache_files (
        path      TEXT PRIMARY KEY,
        mtime_ns  INTEGER NOT NULL,
        size      INTEGER NOT NULL,
        inode     INTEGER NOT NULL,
        sha256    TEXT NOT NULL,
        seen_at   REAL NOT NULL,
        ctime_ns  INTEGER NOT NULL DEFAULT 0,
        dev       INTEGER NOT NULL DEFAULT 0,
        hashed_ns INTEGER NOT NULL DEFAULT 0,
        bad_bytes INTEGER NOT NULL DEFAULT 0,
        cr_breaks INTEGER NOT NULL DEFAULT 0
    )""",
    """CREATE TABLE IF NOT EXISTS cache_blobs (
        sha256     TEXT PRIMARY KEY,
        engine     TEXT NOT NULL,
        text       TEXT NOT NULL,
        redactions INTEGER NOT NULL,
        lines      INTEGER NOT NULL,
        tokens     INTEGER NOT NULL,
        encoding   TEXT NOT NULL,
        bytes      INTEGER NOT NULL,
        used_at    REAL NOT NULL
    )""",
    """CREATE TABLE IF NOT EXISTS cache_views (
        sha256        TEXT NOT NULL,
        mode          TEXT NOT NULL,
        options       TEXT NOT NULL,
        resolved      TEXT NOT NULL,
        text          TEXT NOT NULL,
        line_count    INTEGER NOT NULL,
        shown_lines   INTEGER NOT NULL,
        omitted_lines INTEGER NOT NULL,
        omitted       TEXT,
        reason        TEXT,
        tokens        INTEGER NOT NULL,
        bytes         INTEGER NOT NULL,
        used_at       REAL NOT NULL,
        hits          INTEGER NOT NULL DEFAULT 0,
        PRIMARY KEY (sha256, mode, options)
    )""",
    "CREATE INDEX IF NOT EXISTS cache_views_used ON cache_views (used_at)",
    "CREATE INDEX IF NOT EXISTS cache_blobs_used ON cache_blobs (used_at)",
)


_FILES_COLUMNS = frozenset({"path", "mtime_ns", "size", "inode", "sha256", "seen_at", "ctime_ns", "dev", "hashed_ns",
                            "bad_bytes", "cr_breaks"})
_STAT_COLS = "mtime_ns, size, inode, sha256, ctime_ns, dev, hashed_ns, bad_bytes, cr_breaks"


class FileStat(msgspec.Struct, frozen=True):
    """A file's stat when its bytes were hashed, the hash, and what decoding those bytes showed
    (kept here because the redacted blob cannot tell: it holds U+FFFD and LF instead)."""

    mtime_ns: int
    size: int
    inode: int
    sha256: str
    ctime_ns: int = 0
    dev: int = 0
    hashed_ns: int = 0  # wall clock (time.time_ns) taken before the file was stat'ed and read; 0: never trust
    bad_bytes: int = 0  # bytes that are not UTF-8 (each shown as U+FFFD)
    cr_breaks: int = 0  # CR-only line ends (old Mac files), read as line breaks


def stat_is_trusted(known: FileStat | None, st: os.stat_result) -> bool:
    """Whether ``st`` (a fresh stat of the file) lets ``known.sha256`` stand for its bytes
    without reading them: every recorded field equal, and not racily clean (see the module doc)."""
    if known is None or known.hashed_ns <= 0:
        return False
    if (st.st_mtime_ns, st.st_ctime_ns, st.st_size, st.st_ino, st.st_dev) != (
            known.mtime_ns, known.ctime_ns, known.size, known.inode, known.dev):
        return False
    return known.hashed_ns - max(known.mtime_ns, known.ctime_ns) > RACY_NS


class Blob(msgspec.Struct, frozen=True):
    """A file's content as lean-ctx may keep it: redacted."""

    sha256: str
    text: str
    redactions: int
    lines: int
    tokens: int  # of ``text``, in ``encoding``
    encoding: str


class View(msgspec.Struct, frozen=True):
    """A rendered view of a blob."""

    mode: str  # the resolved mode (``auto`` picks one)
    text: str
    line_count: int
    shown_lines: int
    omitted_lines: int
    omitted: str | None
    reason: str | None
    tokens: int
    cached: bool = False


def options_key(**options: Any) -> str:
    """A digest of a view's options (task, intent, diff base, encoding...) plus the engine."""
    items = {k: v for k, v in sorted(options.items()) if v is not None}
    raw = msgspec.json.encode({"engine": ENGINE, **items})
    return hashlib.sha256(raw).hexdigest()[:32]


class ViewCache:
    """The cache tables of one database, on a connection of their own."""

    def __init__(self, db_path: str | os.PathLike[str], *, max_bytes: int | None = None,
                 busy_timeout_ms: int = 2_000) -> None:
        self.path = os.fspath(db_path)
        env = os.environ.get("LEAN_CTX_CACHE_MAX_MB")
        self.max_bytes = max_bytes if max_bytes is not None else (
            int(float(env) * 1024 * 1024) if env else DEFAULT_MAX_BYTES)
        self._conn = apsw.Connection(self.path)
        self._conn.set_busy_timeout(30_000)  # creating the tables waits like any writer
        self._conn.execute("PRAGMA synchronous=NORMAL")  # WAL: no corruption; a lost cache write costs nothing
        self._lock = threading.Lock()
        self._writes = 0
        self.skipped = 0  # writes given up because the database stayed locked
        have = {r[0] for r in self._conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        if not {"cache_files", "cache_blobs", "cache_views"} <= have or not self._files_current():
            with self._lock, self._conn:
                if "cache_files" in have and not self._files_current():  # an older layout: a cache, dropped
                    self._conn.execute("DROP TABLE cache_files")
                for ddl in _DDL:
                    self._conn.execute(ddl)
        self._conn.set_busy_timeout(busy_timeout_ms)

    def close(self) -> None:
        self._conn.close()

    # --- stat records (the fast check) -------------------------------------------------
    def _files_current(self) -> bool:
        cols = {r[1] for r in self._conn.execute("PRAGMA table_info(cache_files)")}
        return _FILES_COLUMNS <= cols

    def last_stat(self, path: str) -> FileStat | None:
        with self._lock:
            row = self._conn.execute(f"SELECT {_STAT_COLS} FROM cache_files WHERE path = ?", (path,)).fetchone()
        return FileStat(*row) if row else None

    def record_stat(self, path: str, st: FileStat) -> None:
        """Record the stat a file had when its bytes (hash ``st.sha256``) were read, replacing
        the path's previous record whole."""
        self._write(
            f"INSERT OR REPLACE INTO cache_files (path, {_STAT_COLS}, seen_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (path, st.mtime_ns, st.size, st.inode, st.sha256, st.ctime_ns, st.dev, st.hashed_ns, st.bad_bytes,
             st.cr_breaks, time.time()),
        )

    # --- blobs -----------------------------------------------------------------------
    def get_blob(self, sha256: str, encoding: str) -> Blob | None:
        with self._lock:
            row = self._conn.execute(
                "SELECT text, redactions, lines, tokens FROM cache_blobs WHERE sha256 = ? AND engine = ?"
                " AND encoding = ?",
                (sha256, ENGINE, encoding),
            ).fetchone()
        return Blob(sha256, row[0], row[1], row[2], row[3], encoding) if row else None

    def put_blob(self, blob: Blob) -> None:
        self._write(
            "INSERT INTO cache_blobs (sha256, engine, text, redactions, lines, tokens, encoding, bytes, used_at)"
            " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT(sha256) DO UPDATE SET engine = excluded.engine,"
            " text = excluded.text, redactions = excluded.redactions, lines = excluded.lines,"
            " tokens = excluded.tokens, encoding = excluded.encoding, bytes = excluded.bytes,"
            " used_at = excluded.used_at",
            (blob.sha256, ENGINE, blob.text, blob.redactions, blob.lines, blob.tokens, blob.encoding,
             len(blob.text.encode("utf-8", "surrogatepass")), time.time()),
        )

    def blob_text(self, sha256: str) -> str | None:
        """The redacted text of a content hash, whatever encoding counted it (for ``diff``)."""
        with self._lock:
            row = self._conn.execute(
                "SELECT text FROM cache_blobs WHERE sha256 = ? AND engine = ?", (sha256, ENGINE)
            ).fetchone()
        return row[0] if row else None

    # --- views -----------------------------------------------------------------------
    def get_view(self, sha256: str, mode: str, options: str) -> View | None:
        with self._lock:
            row = self._conn.execute(
                "SELECT resolved, text, line_count, shown_lines, omitted_lines, omitted, reason, tokens"
                " FROM cache_views WHERE sha256 = ? AND mode = ? AND options = ?",
                (sha256, mode, options),
            ).fetchone()
        if row is None:
            return None
        return View(row[0], row[1], row[2], row[3], row[4], row[5], row[6], row[7], cached=True)

    def put_view(self, sha256: str, mode: str, options: str, view: View) -> None:
        self._write(
            "INSERT INTO cache_views (sha256, mode, options, resolved, text, line_count, shown_lines, omitted_lines,"
            " omitted, reason, tokens, bytes, used_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
            " ON CONFLICT(sha256, mode, options) DO UPDATE SET used_at = excluded.used_at, hits = hits + 1",
            (sha256, mode, options, view.mode, view.text, view.line_count, view.shown_lines, view.omitted_lines,
             view.omitted, view.reason, view.tokens, len(view.text.encode("utf-8", "surrogatepass")), time.time()),
        )

    def touch_view(self, sha256: str, mode: str, options: str) -> None:
        self._write(
            "UPDATE cache_views SET used_at = ?, hits = hits + 1 WHERE sha256 = ? AND mode = ? AND options = ?",
            (time.time(), sha256, mode, options),
        )

    # --- housekeeping ----------------------------------------------------------------
    def size(self) -> int:
        with self._lock:
            total = 0
            for table in ("cache_views", "cache_blobs"):
                row = self._conn.execute(f"SELECT coalesce(sum(bytes), 0) FROM {table}").fetchone()
                total += int(row[0]) if row else 0
        return total

    def prune(self, max_bytes: int | None = None) -> int:
        """Drop the least recently used views and blobs until the cache fits; returns rows dropped."""
        limit = self.max_bytes if max_bytes is None else max_bytes
        dropped = 0
        total = self.size()
        if total <= limit:
            return 0
        with self._lock, self._conn:
            rows = self._conn.execute(
                "SELECT 'v', rowid, bytes, used_at FROM cache_views UNION ALL"
                " SELECT 'b', rowid, bytes, used_at FROM cache_blobs ORDER BY 4"
            ).fetchall()
            for table, rowid, size, _ in rows:
                if total <= limit:
                    break
                self._conn.execute(
                    f"DELETE FROM {'cache_views' if table == 'v' else 'cache_blobs'} WHERE rowid = ?", (rowid,)
                )
                total -= int(size or 0)  # type: ignore[arg-type]
                dropped += 1
        return dropped

    def _write(self, sql: str, params: tuple[Any, ...]) -> None:
        """Best effort: when the database stays locked by a long writer, the entry is skipped
        (a cache miss later costs a recomputation, nothing else)."""
        try:
            with self._lock:
                self._conn.execute(sql, params)
                self._writes += 1
                due = self._writes % PRUNE_EVERY == 0
            if due:
                self.prune()
        except apsw.BusyError:
            self.skipped += 1


_caches: weakref.WeakKeyDictionary[Any, ViewCache] = weakref.WeakKeyDictionary()
_caches_lock = threading.Lock()


def views_for(app: Any) -> ViewCache:
    """The view cache of a ``LeanCtx`` (one per app object, on its database)."""
    with _caches_lock:
        cache = _caches.get(app)
        if cache is None:
            cache = ViewCache(app.db)
            _caches[app] = cache
        return cache
