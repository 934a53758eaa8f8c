"""The answer of ``ctx_search`` (``ops.search``): the listing sent, its archive, its footer.

At most ``limit`` lines and ``MAX_ANSWER_TOKENS`` tokens of ``path:line: snippet`` are sent
(well under the answer cap of ``ops.cap``, the same as reads; the whole text is checked
against that cap too). When more hits were found than are sent, the listing of at most
``MAX_LISTED`` hits, with whole lines (a chunk hit whose file ``ops.search`` did not read,
being past the first ``limit``, is listed at its chunk's start as ``UNREAD``), is archived next
to the log; the footer says how many
are listed there and, when that is fewer than were found, that the rest are not listed
(``2000 of 3000 listed in archive A…; refine the query``). When the token limit, not ``limit``,
stopped the lines sent, the footer says how many more ``limit`` asked for were not shown, that
the ``MAX_ANSWER_TOKENS`` listing limit is why, and where they are: the archive lists the hits
in the order sent, so they are its lines ``shown+1``-``min(limit, hits)`` (``240 of 5000
results; 760 more within the limit of 1000 not shown: over the 6,000-token listing limit (they
are lines 241-1000 of archive A…: lean-ctx expand A… --lines 241-1000); …``). ``search.record``
is dispatched with the tokens actually sent.
"""

from __future__ import annotations

from typing import Any

import msgspec

from ..context.secrets import redact
from .cap import ANSWER_CAP_TOKENS, Cut, cap_lines

MAX_LISTED = 2000  # hits kept in a listing (and its archive)
UNREAD = "[chunk of lines {start}-{end}, not read]"  # the snippet of an archived hit whose file was not read
MAX_ANSWER_TOKENS = 6000  # lines of hits sent (the footer and notes come on top, under ANSWER_CAP_TOKENS)


class Hit(msgspec.Struct, frozen=True):
    path: str
    line: int
    snippet: str
    sources: list[str]  # the rankers that found it: regex, bm25, semantic
    score: float = 0.0  # fused: RRF score; bm25: bm25() (lower is better); semantic: distance; regex: 0
    start_line: int = 0  # the chunk's span (0 for a regex line hit)
    end_line: int = 0


class SearchAnswer(msgspec.Struct):
    query: str  # redacted
    method: str  # regex | bm25 | semantic | fused
    text: str  # what the agent receives
    hits: list[Hit]  # the hits shown
    total: int  # hits found (may exceed the listing for bm25: every matching chunk)
    shown: int
    archive_id: str | None
    notes: list[str]
    raw_tokens: int
    sent_tokens: int
    redactions: int
    partial: bool = False  # results may be missing: the regex scan stopped early, or files were skipped for size
    semantic: bool = False  # semantic search took part
    index: Any = None  # IndexStats of the refresh, when the index was used
    call_position: int | None = None
    listed: int = 0  # hits listed in the archive (at most MAX_LISTED)
    skipped_large: int = 0  # files in scope not searched because of their size (see the notes)


NAMED_LARGE = 3  # files not searched for their size that a note names


def large_note(query: str, paths: list[str], why: str, then: str, grep: list[str]) -> str:
    """The note on files not searched for their size: how many, the first ``NAMED_LARGE`` of
    them, and the command that searches those over the read limit (``grep``), which only a
    ``lines:`` read can reach (streamed): the query itself as the pattern when it holds no secret, else ``PATTERN``;
    a ``grep -n`` behind ``read_load.crlf_as_lines``, so that its numbers are the ``lines:`` read's
    (a lone CR ends a line for lean-ctx, not for grep)."""
    import shlex

    n = len(paths)
    names = ", ".join(paths[:NAMED_LARGE]) + (f" and {n - NAMED_LARGE:,} more" if n > NAMED_LARGE else "")
    note = f"{n:,} file{'s' if n != 1 else ''} {why} ({names}): {then}"
    if grep:
        pattern = shlex.quote(query) if redact(query).count == 0 else "PATTERN"
        flags = "-nE" if any(c.isupper() for c in query) else "-niE"
        from .read_load import numbered_grep

        one = "it" if len(grep) == 1 else f"them one at a time, {grep[0]} first"
        note += (f"; search {one} with: lean-ctx shell -- {shlex.quote(numbered_grep(grep[0], pattern, flags))}"
                 " (numbered as lean-ctx numbers lines: a lone CR ends one too, which grep -n alone does not count),"
                 " then read the lines it finds with --mode lines:N-M (streamed)")
    return note


def _full_line(texts: Any, h: Hit) -> str:
    """The archive's line of a hit: the whole line, or ``UNREAD`` for a chunk hit whose file
    was not read (``ops.search`` reads only the files of the hits that may be shown)."""
    if h.start_line and not texts.read(h.path):
        return f"{h.path}:{h.line}: " + UNREAD.format(start=h.start_line, end=h.end_line)
    return f"{h.path}:{h.line}: {texts.line(h.path, h.line).strip() or h.snippet}"


def _footer(label: str, shown: int, total: int, listed: int, archive_id: str | None, query: str,
            limit: int = 0, wanted: int = 0) -> str:
    """``wanted``: the hits ``limit`` asks for (at most those found); when the listing limit
    sent fewer, the footer says how many were left out, why, and which archive lines hold them."""
    if shown:
        footer = f"[search {label}: {shown} of {total} result{'s' if total != 1 else ''}"
    else:
        footer = f"[search {label}: no results for {query!r}"
    if archive_id and wanted > shown:
        more = wanted - shown
        footer += (f"; {more} more within the limit of {limit} not shown: over the {MAX_ANSWER_TOKENS:,}-token listing"
                   f" limit (they are lines {shown + 1}-{wanted} of archive {archive_id}: lean-ctx expand {archive_id}"
                   f" --lines {shown + 1}-{wanted})")
    if archive_id:
        call = f"lean-ctx expand {archive_id}"
        if listed >= total:
            footer += f"; all {listed} listed in archive {archive_id} ({call})"
        else:
            footer += (f"; {listed} of {total} listed in archive {archive_id} ({call}; at most {MAX_LISTED:,} are"
                       " listed); refine the query")
    return footer + "]"


def answer(lc: Any, texts: Any, query: str, method: str, hits: list[Hit], total: int, notes: list[str], partial: bool,
           semantic: bool, stats: Any, *, limit: int, actor: str | None, session_id: str | None, project: str,
           now: float | None, record: bool, encoding: str, skipped_large: int = 0) -> SearchAnswer:
    from ..archive import ArchiveStore
    from ..context.tokens import count_tokens

    rq = redact(query)
    listing = [f"{h.path}:{h.line}: {h.snippet}" for h in hits]
    full_lines = [_full_line(texts, h) for h in hits]
    raw_text = "\n".join(full_lines)
    shown: list[str] = []
    used = 0
    for line in listing[:limit]:
        n = count_tokens(line + "\n", encoding)
        if shown and used + n > MAX_ANSWER_TOKENS:
            break
        shown.append(line)
        used += n
    archive_id = None
    archive: tuple[str, str, int, int, int] | None = None
    if len(shown) < len(hits):
        archive_text = raw_text + "\n"
        archive_id, sha, _ = ArchiveStore.beside(lc.db).put(archive_text)
        archive = (archive_id, sha, len(archive_text.encode("utf-8")), len(full_lines),
                   count_tokens(archive_text, encoding))
    label = method if method != "fused" else "fused " + "+".join(
        s for s in ("bm25", "regex", "semantic") if s != "semantic" or semantic)
    footer = _footer(label, len(shown), total, len(full_lines), archive_id, rq.text, limit,
                     min(limit, len(listing)))
    lines = [*shown, footer, *(f"[{n}]" for n in notes)]

    def notice(cut: Cut) -> str:  # a guard: the limits above keep answers far below the cap
        return f"[… {cut.unsent} more lines not sent: over the {ANSWER_CAP_TOKENS:,}-token answer cap]"

    text, cut = cap_lines(lines, ANSWER_CAP_TOKENS, notice, encoding=encoding)
    if cut is not None:
        shown = shown[: cut.head]
    raw_tokens = count_tokens(raw_text, encoding)
    sent_tokens = count_tokens(text, encoding)
    redactions = rq.count + raw_text.count("[REDACTED:")
    ans = SearchAnswer(rq.text, method, text, hits[:len(shown)], total, len(shown), archive_id, notes, raw_tokens,
                       sent_tokens, redactions, partial, semantic, stats, listed=len(full_lines) if archive else 0,
                       skipped_large=skipped_large)
    if record:
        from ..commands.search import RecordSearch

        cmd = RecordSearch(query=rq.text, method=method, results=total, raw_tokens=raw_tokens,
                           sent_tokens=sent_tokens, redactions=redactions, encoding=encoding,
                           archive_id=archive[0] if archive else None,
                           archive_sha256=archive[1] if archive else None,
                           archive_bytes=archive[2] if archive else 0, archive_lines=archive[3] if archive else 0,
                           archive_tokens=archive[4] if archive else 0)
        res = lc.bus.dispatch(cmd, actor=actor, session_id=session_id, project=project, now=now)
        ans.call_position = res.call_position
    return ans
