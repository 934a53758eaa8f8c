"""``tree.record``: record the archive of a capped ``ctx_tree`` answer (``leanctx.ops.tree``).

The listing itself is read from the file system outside the lock and archived beside the log
before this is dispatched; the handler only records, inside the bus's write transaction:
``archive.created`` (``source`` ``"tree"``) on ``archive:<id>`` the first time the log hears of
that archive. Archives are content-addressed, so the same listing capped again is the same
archive: the stream already holds its event and nothing more is emitted (the dispatch's
``tool.called`` record still says the call happened). With the archive on record, an expansion
of it (``archive.expand``) is charged by the savings projection to ``tree``, the tool whose
answer was archived, instead of to ``expand``.

It is dispatched only for a capped answer: a listing that fits appends nothing (from the CLI it
does not even open or create the log). Tree answers are deliberately not in the savings: there
is no ``tree`` context event and no plain tool whose answer a listing could be measured against,
so no ``raw`` / ``sent`` figures are recorded and no budget is consumed; an expansion of a tree
archive therefore counts what it sends as a cost (``saved = −sent``), charged to ``tree``.

Text never enters the log: only the archive's id, sha256 and counts (bytes, lines, tokens in the
caller's encoding), all of the archived text itself.
"""

from __future__ import annotations

import msgspec

from ..archive import ArchiveInfo
from .archives import check_archive, record_archive
from .bus import Command, CommandContext, handles


class RecordTree(Command, frozen=True):
    name = "tree.record"
    archive_id: str  # "A" + the first 16 hex digits of sha256
    sha256: str  # of the archived listing's UTF-8 bytes
    bytes: int
    lines: int
    tokens: int  # the whole listing, counted with the caller's encoding


class TreeRecorded(msgspec.Struct, frozen=True):
    archive_created: bool  # False: the log already knew this archive


@handles(RecordTree, emits=("archive.created",), result=TreeRecorded)
def record(ctx: CommandContext, cmd: RecordTree) -> TreeRecorded:
    info = ArchiveInfo(cmd.archive_id, cmd.sha256, cmd.bytes, cmd.lines, cmd.tokens, source="tree")
    check_archive(info, "TREE_INVALID_RECORD")
    return TreeRecorded(archive_created=record_archive(ctx, info))
