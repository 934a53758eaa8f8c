"""ctx_search: regex, bm25 and semantic search over the project, fused by reciprocal rank fusion.

The slow part runs here, outside the log's write transaction (list the files, bring the code
index current, scan, rank, read snippets); then ``search.record`` is dispatched, which appends
``search.ran`` (and ``archive.created`` when the full listing was archived).

Methods (``method=``):

- ``regex``: the pattern over every listed text file (``ops.files``: gitignore-aware, binaries
  skipped, well-known secret files such as ``.env`` skipped) up to the read limit
  (``SCAN_MAX_FILE_BYTES`` = ``ops.read.MAX_FILE_BYTES``, 8 MiB); larger files are counted in a
  note that names the first few and the command that searches them (``lean-ctx shell -- grep
  -nE PATTERN FILE``: ``search_answer.large_note``), and make the answer ``partial``.
  Smart case: case-insensitive unless the pattern has an upper-case letter. It runs on the
  ``regex`` module with a time budget (``REGEX_BUDGET``), so a pathological pattern ends the
  scan early ("partial") instead of hanging; a pattern that does not compile is refused
  (``SEARCH_INVALID_REGEX``; compiling is in ``ops.search_regex``). Hits are lines, in path then line order.
- ``bm25``: the FTS5 code index (``cache.code_index``), ranked by ``bm25()`` only. Hits are
  chunks, shown at their best line (``ops.search_terms``: the first line holding the query's
  words in order, when it has several; else the first holding the most query terms). The index
  holds files up to ``ops.files.MAX_FILE_BYTES`` (1,000,000 bytes): with bm25 or semantic
  alone, larger files in scope are counted and named in a note and the answer is ``partial``
  (``auto`` covers them through its regex scan, up to the read limit; past it the note gives
  the grep command).
- ``semantic``: nearest chunks by cosine distance in sqlite-vec (``cache.vectors``), when the
  ``semantic`` extra is installed; otherwise the answer says ``semantic search is off (install
  lean-ctx[semantic])`` and bm25 answers instead.
- ``auto`` (default): bm25 + regex (the query as a pattern when it compiles, else literally;
  a one-letter word at either end of it matched as a whole word, as the index matches such a
  term: ``ops.search_terms``),
  + semantic when available, fused by RRF (``k = 60``) over chunks: a regex hit counts for the
  chunk holding it; a chunk found by several methods rises.

Answers are compact ``path:line: snippet`` lines, secrets redacted (files are redacted before
they are matched, so the snippet of a hit and the line numbers agree). At most ``limit`` lines
and ``MAX_ANSWER_TOKENS`` tokens are sent (``ops.search_answer``); when more were found the
listing (at most ``MAX_LISTED`` hits, which the footer states when fewer than found) is
archived (``ArchiveStore.beside(db)``) and the answer names the archive id. Only the files of
the first ``limit`` hits (those that may be shown) are read to place a chunk hit at its best
line; a chunk hit further down whose file was not read anyway (by the regex scan, or for a hit
above it) is listed in the archive at its chunk's start line, as ``path:start: [chunk of lines
start-end, not read]`` (``search_answer.UNREAD``): reading and redacting hundreds of whole files
for lines nobody is shown made ``--bm25`` twice as slow as the fused search. Token counts are real
(tiktoken): ``raw_tokens`` is the full listing with whole lines (what an uncapped grep-style
answer would send; an unread hit counts as its ``UNREAD`` line), ``sent_tokens`` the answer sent. ``redactions`` counts the redaction
markers in that listing plus those in the query.

The query is redacted (``context.secrets.redact``) before anything is recorded: ``search.ran``
holds the redacted query, and so does the answer (its ``query`` and the ``no results for ...``
footer): the agent gets back its own words with the secret marked, which shows what the log kept.
The search itself runs on the query as given.

``glob`` (``--path``, ``glob=``) scopes the search to matching paths (``ops.files.glob_match``);
a glob with a ``[`` set never closed is refused with ``SEARCH_INVALID_GLOB`` (:func:`check_glob`)
on every surface, rather than answering "no results".
"""

from __future__ import annotations

import bisect
import os
import time
from collections.abc import Callable, Sequence
from typing import Any

from ..context.secrets import is_secret_path
from ..ranking import rrf
from .files import MAX_FILE_BYTES as INDEX_MAX_FILE_BYTES
from .files import (
    FileEntry,
    decode,
    glob_match,
    list_files,
    read_bytes,
    redact_text,
)
from .read import MAX_FILE_BYTES as SCAN_MAX_FILE_BYTES
from .search_answer import MAX_LISTED, Hit, SearchAnswer, answer, large_note
from .search_input import (
    MAX_GLOB_CHARS,
    MAX_LIMIT,
    MAX_QUERY_CHARS,
    METHODS,
    check_glob,
    check_input,
)
from .search_regex import MAX_REPEAT_WEIGHT, _compile, _repeat_weight, _too_large  # noqa: F401 (kept importable here)
from .search_terms import QueryTerms, auto_pattern, best_line, query_terms

__all__ = ["MAX_GLOB_CHARS", "MAX_LIMIT", "MAX_QUERY_CHARS", "METHODS", "check_glob", "regex_scan", "rrf", "search"]

DEFAULT_LIMIT = 20
POOL = 200  # hits taken from each ranker before fusion
MAX_REGEX_MATCHES = 5000
REGEX_BUDGET = 5.0  # seconds for a whole regex scan
SNIPPET_CHARS = 160



# --- helpers ----------------------------------------------------------------------------------

class _Texts:
    """Redacted lines of files, read once per search."""

    def __init__(self, root: str) -> None:
        self.root = root
        self.cache: dict[str, list[str] | None] = {}

    def put(self, path: str, text: str) -> None:
        self.cache[path] = text.split("\n")

    def lines(self, path: str) -> list[str] | None:
        if path not in self.cache:
            data = read_bytes(self.root, path, SCAN_MAX_FILE_BYTES)
            self.cache[path] = None if data is None else redact_text(decode(data))[0].split("\n")
        return self.cache[path]

    def read(self, path: str) -> bool:
        """True when the file's redacted lines are already here (nothing read for it)."""
        return path in self.cache

    def line(self, path: str, n: int) -> str:
        lines = self.lines(path)
        return lines[n - 1] if lines is not None and 0 < n <= len(lines) else ""

    def chunk(self, path: str, start: int, end: int) -> str | None:
        lines = self.lines(path)
        return None if lines is None else path + "\n" + "\n".join(lines[start - 1:end])


def _snippet(text: str) -> str:
    s = text.strip()
    return s if len(s) <= SNIPPET_CHARS else s[: SNIPPET_CHARS - 1] + "…"


def _chunk_hit(texts: _Texts, path: str, start: int, end: int, terms: QueryTerms, sources: list[str],
               score: float, *, read: bool = True) -> Hit:
    """The hit of a chunk at its best line; with ``read=False`` (a hit only the archive lists)
    and its file not read yet, at the chunk's start line with no snippet (see ``UNREAD``)."""
    if not read and not texts.read(path):
        return Hit(path, start, "", sources, score, start, end)
    line = best_line(texts.lines(path) or [], start, end, terms)
    return Hit(path, line, _snippet(texts.line(path, line)), sources, score, start, end)


def regex_scan(root: str, files: Sequence[FileEntry], pattern: Any, texts: _Texts, *,
               budget: float = REGEX_BUDGET, max_matches: int = MAX_REGEX_MATCHES,
               max_bytes: int = SCAN_MAX_FILE_BYTES) -> tuple[list[tuple[str, int]], bool]:
    """(path, line) of every matching line, in path and line order; True when cut short.
    Files over ``max_bytes`` are not read (the caller counts them)."""
    deadline = time.monotonic() + budget
    out: list[tuple[str, int]] = []
    for f in files:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            return out, True
        if f.size > max_bytes:
            continue
        data = read_bytes(root, f.path, max_bytes)
        if data is None:
            continue
        try:
            if pattern.search(decode(data), timeout=remaining) is None:
                continue
            red, _ = redact_text(decode(data))
            texts.put(f.path, red)
            n_lines = red.count("\n") + (0 if red.endswith("\n") else 1)
            line, pos, last = 1, 0, 0
            for m in pattern.finditer(red, timeout=max(deadline - time.monotonic(), 0.001)):
                line += red.count("\n", pos, m.start())
                pos = m.start()
                if line > n_lines:
                    break
                if line != last:
                    out.append((f.path, line))
                    last = line
                    if len(out) >= max_matches:
                        return out, True
        except TimeoutError:
            return out, True
    return out, False


# --- the operation ----------------------------------------------------------------------------

def search(lc: Any, root: str | os.PathLike[str], query: str, *, method: str = "auto", limit: int = DEFAULT_LIMIT,
           glob: str | None = None, actor: str | None = None, session_id: str | None = None,
           embedder: Any = None, now: float | None = None, record: bool = True,
           encoding: str = "o200k_base", regex_budget: float = REGEX_BUDGET,
           progress: Callable[[int, int], None] | None = None) -> SearchAnswer:
    """Search the project at ``root`` and record the search in ``lc``'s log (see the module doc);
    ``progress(done, total)`` follows the code index's refresh (a first index can take a while)."""
    from ..cache.code_index import CodeIndex
    from ..cache.vectors import (
        OFF,
        VectorIndex,
        VectorsUnavailable,
        default_embedder,
        vectors_path,
    )
    from ..paths import workspace_root

    check_input(query, method, limit)
    check_glob(glob)
    pattern = auto_pattern(query) if method == "auto" else _compile(query, literal_fallback=False) \
        if method == "regex" else None
    project = workspace_root(os.fspath(root), invalid_code="SEARCH_INVALID_ROOT")
    listing = list_files(project)
    files = [f for f in listing.files if not is_secret_path(f.path)]
    scoped = [f for f in files if glob_match(f.path, glob)] if glob else files
    notes: list[str] = []
    texts = _Texts(project)
    terms = query_terms(query)

    use_regex = method in ("auto", "regex")
    use_bm25 = method in ("auto", "bm25")
    use_sem = method in ("auto", "semantic")
    emb = None
    if use_sem:
        emb = embedder if embedder is not None else default_embedder()
        if emb is None:
            use_sem = False
            notes.append(OFF)
            if method == "semantic":
                notes.append("showing bm25 results instead")
                use_bm25 = True

    index = None
    stats = None
    if use_bm25 or use_sem:
        index = CodeIndex(lc.store)
        stats = index.refresh(project, project, files, progress=progress)

    regex_hits: list[tuple[str, int]] = []
    partial = False
    large: list[FileEntry] = []
    if use_regex:
        regex_hits, partial = regex_scan(project, scoped, pattern, texts, budget=regex_budget)
        if partial:
            notes.append("regex scan stopped early (time budget or match cap): results are partial")
        large = _too_large(project, scoped, SCAN_MAX_FILE_BYTES)
        if large:
            partial = True
            notes.append(large_note(query, [f.path for f in large], f"over {SCAN_MAX_FILE_BYTES:,} bytes (the read"
                                    " limit) not searched", "results are partial", [f.path for f in large]))
    elif use_bm25 or use_sem:
        large = _too_large(project, scoped, INDEX_MAX_FILE_BYTES)
        if large:
            partial = True
            notes.append(large_note(query, [f.path for f in large], f"over {INDEX_MAX_FILE_BYTES:,} bytes not in the"
                                    " code index, not searched", "results are partial" + (
                                        " (search them with --regex)" if any(f.size <= SCAN_MAX_FILE_BYTES
                                                                             for f in large) else ""),
                                    [f.path for f in large if f.size > SCAN_MAX_FILE_BYTES]))
    skipped_large = len(large)

    bm25_hits: list[Any] = []
    bm25_total = 0
    if use_bm25 and index is not None:
        bm25_hits, bm25_total = index.query(project, query, limit=POOL if method == "auto" else MAX_LISTED,
                                            glob=glob)

    sem_hits: list[tuple[Any, float]] = []
    if use_sem and index is not None and emb is not None:
        chunks = index.all_chunks(project)
        by_id = {c.chunk_id: c for c in chunks}

        def chunk_texts(ids: list[int]) -> dict[int, str]:
            out = {}
            for i in ids:
                c = by_id[i]
                t = texts.chunk(c.path, c.start_line, c.end_line)
                if t is not None:
                    out[i] = t
            return out

        try:
            with VectorIndex(vectors_path(lc.db), emb, identity=index.identity()) as vi:
                vi.sync(project, list(by_id), chunk_texts)
                want = (POOL if method == "auto" else MAX_LISTED) * (4 if glob else 1)
                for cid, dist in vi.query(project, query, min(want, 4096)):
                    c = by_id.get(cid)
                    if c is not None and (not glob or glob_match(c.path, glob)):
                        sem_hits.append((c, dist))
        except VectorsUnavailable as exc:  # the model is there, the vector store is not: bm25 instead
            use_sem = False
            notes.append(f"semantic search is off ({exc})")
            if method == "semantic":
                notes.append("showing bm25 results instead")
                method = "bm25"
                bm25_hits, bm25_total = index.query(project, query, limit=MAX_LISTED, glob=glob)

    # --- assemble hits ------------------------------------------------------------------------
    if method == "regex":
        resolved = "regex"
        hits = [Hit(p, n, _snippet(texts.line(p, n)), ["regex"]) for p, n in regex_hits[:MAX_LISTED]]
        total = len(regex_hits)
    elif not use_regex and not use_sem:  # bm25 (asked for, or standing in for semantic)
        resolved = "bm25"
        hits = [_chunk_hit(texts, h.path, h.start_line, h.end_line, terms, ["bm25"], h.score, read=i < limit)
                for i, h in enumerate(bm25_hits)]
        total = bm25_total
    elif method == "semantic":
        resolved = "semantic"
        hits = [_chunk_hit(texts, c.path, c.start_line, c.end_line, terms, ["semantic"], round(d, 6), read=i < limit)
                for i, (c, d) in enumerate(sem_hits[:MAX_LISTED])]
        total = len(sem_hits)
    else:
        resolved = "fused"
        hits, total = _fuse(index, project, texts, terms, regex_hits, bm25_hits, sem_hits, limit)
    if use_bm25 and bm25_total > len(bm25_hits):
        notes.append(f"{bm25_total - len(bm25_hits)} more chunks match the words but are not ranked here; "
                     "narrow the query")
    return answer(lc, texts, query, resolved, hits, total, notes, partial, use_sem, stats, limit=limit, actor=actor,
                  session_id=session_id, project=project, now=now, record=record, encoding=encoding,
                  skipped_large=skipped_large)


def _fuse(index: Any, project: str, texts: _Texts, terms: QueryTerms, regex_hits: list[tuple[str, int]],
          bm25_hits: list[Any], sem_hits: list[tuple[Any, float]], limit: int) -> tuple[list[Hit], int]:
    spans: dict[Any, tuple[str, int, int]] = {}
    first_line: dict[Any, int] = {}
    counts: dict[Any, int] = {}
    chunk_cache: dict[str, tuple[list[int], list[Any]]] = {}
    for path, line in regex_hits:
        if path not in chunk_cache:
            rows = index.chunks_of(project, path) if index is not None else []
            chunk_cache[path] = ([r.start_line for r in rows], rows)
        starts, rows = chunk_cache[path]
        i = bisect.bisect_right(starts, line) - 1
        if i >= 0 and rows[i].start_line <= line <= rows[i].end_line:
            key: Any = ("c", rows[i].chunk_id)
            spans[key] = (path, rows[i].start_line, rows[i].end_line)
        else:
            key = ("l", path, line)
            spans[key] = (path, 0, 0)
        counts[key] = counts.get(key, 0) + 1
        first_line.setdefault(key, line)
    regex_rank = sorted(counts, key=lambda k: (-counts[k], spans[k][0], first_line[k]))[:POOL]
    bm25_rank = []
    for h in bm25_hits:
        key = ("c", h.chunk_id)
        spans[key] = (h.path, h.start_line, h.end_line)
        bm25_rank.append(key)
    sem_rank = []
    for c, _ in sem_hits:
        key = ("c", c.chunk_id)
        spans[key] = (c.path, c.start_line, c.end_line)
        sem_rank.append(key)
    lists = [("regex", regex_rank), ("bm25", bm25_rank), ("semantic", sem_rank)]
    members = {name: set(r) for name, r in lists}
    fused = rrf([r for _, r in lists])
    hits = []
    for i, (key, score) in enumerate(fused[:MAX_LISTED]):
        path, start, end = spans[key]
        sources = [n for n, _ in lists if key in members[n]]
        at = first_line.get(key)
        if at is None:
            hits.append(_chunk_hit(texts, path, start, end, terms, sources, round(score, 6), read=i < limit))
        else:
            hits.append(Hit(path, at, _snippet(texts.line(path, at)), sources, round(score, 6), start, end))
    return hits, len(fused)
