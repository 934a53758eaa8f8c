"""``search.record``: record a search that ``leanctx.ops.search`` ran (outside the lock).

Appends ``search.ran`` on ``search:<session or agent>`` with the real token counts, and
``archive.created`` on ``archive:<id>`` when the full listing was archived and that archive has
no event yet (archives are content-addressed: the same listing archived twice is one archive),
and ``budget.consumed`` for the searching agent (tool ``ctx_search``): the answer went into its
context like a read's or a shell run's. A search is not refused past the budget (reads are).
The query is redacted again here, defensively, before it is cut to ``MAX_QUERY_CHARS`` (a
secret cut in two would no longer be recognised): text that reaches the log cannot be taken out.
"""

from __future__ import annotations

import msgspec

from ..archive import ArchiveInfo
from ..context.secrets import redact
from ..errors import InvalidInput
from ..events.kinds.context import SearchRan
from .archives import record_archive
from .budgets import consume
from .bus import Command, CommandContext, handles

MAX_QUERY_CHARS = 1000


class RecordSearch(Command, frozen=True):
    name = "search.record"
    query: str
    method: str
    results: int
    raw_tokens: int
    sent_tokens: int
    redactions: int = 0
    encoding: str = "o200k_base"
    archive_id: str | None = None
    archive_sha256: str | None = None
    archive_bytes: int = 0
    archive_lines: int = 0
    archive_tokens: int = 0


class SearchRecorded(msgspec.Struct, frozen=True):
    stream: str
    archive_created: bool


@handles(RecordSearch, emits=("search.ran", "archive.created", "budget.consumed"), result=SearchRecorded)
def record(ctx: CommandContext, cmd: RecordSearch) -> SearchRecorded:
    if cmd.method not in ("regex", "bm25", "semantic", "fused"):
        raise InvalidInput("SEARCH_INVALID_METHOD", f"no search method {cmd.method!r}; use regex, bm25, semantic or fused")
    if min(cmd.results, cmd.raw_tokens, cmd.sent_tokens, cmd.redactions) < 0:
        raise InvalidInput("SEARCH_INVALID_COUNT", "result and token counts cannot be negative")
    q = redact(cmd.query)
    stream = f"search:{ctx.session_id or ctx.actor or 'anonymous'}"
    created = False
    if cmd.archive_id is not None:
        created = record_archive(ctx, ArchiveInfo(cmd.archive_id, cmd.archive_sha256 or "", cmd.archive_bytes,
                                                  cmd.archive_lines, cmd.archive_tokens, source="search"))
    ctx.emit(stream, SearchRan(query=q.text[:MAX_QUERY_CHARS], method=cmd.method, results=cmd.results, raw_tokens=cmd.raw_tokens,
                               sent_tokens=cmd.sent_tokens, archive_id=cmd.archive_id,
                               redactions=cmd.redactions + q.count, session_id=ctx.session_id,
                               encoding=cmd.encoding))
    if ctx.actor and cmd.sent_tokens:  # the answer went into the agent's context: its budget pays
        consume(ctx, ctx.actor, cmd.sent_tokens, "ctx_search")
    return SearchRecorded(stream, created)
